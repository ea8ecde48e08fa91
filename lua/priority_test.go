package lua

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
)

// dueKey returns the due set of priority p.
func dueKey(k slots.KeySet, p int) string {
	switch p {
	case PriorityHigh:
		return k.DueHigh
	case PriorityLow:
		return k.DueLow
	}
	return k.Due
}

func TestMember(t *testing.T) {
	tests := []struct {
		id       uint64
		priority int
		member   string
	}{
		{0, PriorityNormal, "0"},
		{7, PriorityHigh, "7h"},
		{59, PriorityLow, "zl"},
		{60, PriorityNormal, "10"},
		{123, PriorityNormal, "23"},               // 2*60 + 3
		{1<<63 - 1, PriorityHigh, "FFDYWVvKFU7h"}, // the largest job id: 11 digits
		{math.MaxUint64, PriorityNormal, "UUR953qeV0F"},
	}
	for _, tt := range tests {
		if got := Member(tt.id, tt.priority); got != tt.member {
			t.Errorf("Member(%d, %d) = %q, want %q", tt.id, tt.priority, got, tt.member)
		}
		if id, p, ok := splitMember(tt.member); !ok || id != tt.id || p != tt.priority {
			t.Errorf("splitMember(%q) = %d, %d, %v; want %d, %d", tt.member, id, p, ok, tt.id, tt.priority)
		}
	}
	// No digit is a suffix, so a member's last byte names its priority
	// whatever the id.
	for i := range len(digits) {
		if digits[i] == suffixHigh || digits[i] == suffixLow {
			t.Errorf("digit %q is a suffix", digits[i])
		}
	}
	for id := uint64(1); id < 1<<40; id = id*7 + 3 {
		for _, p := range []int{PriorityHigh, PriorityNormal, PriorityLow} {
			m := Member(id, p)
			if got, gp, ok := splitMember(m); !ok || got != id || gp != p {
				t.Fatalf("splitMember(Member(%d, %d) = %q) = %d, %d, %v", id, p, m, got, gp, ok)
			}
		}
	}
	bad := []string{"", "h", "l", "x h", "01", "00h", "12-", "é", "123456789012", "zzzzzzzzzzz"}
	for _, m := range bad {
		if id, p, ok := splitMember(m); ok {
			t.Errorf("splitMember(%q) = %d, %d, true; want not ok", m, id, p)
		}
	}
	// ParseMember also wants a job id: 1 to 2^63-1.
	if id, p, ok := ParseMember("FFDYWVvKFU7h"); !ok || id != 1<<63-1 || p != PriorityHigh {
		t.Errorf("ParseMember of the largest job id = %d, %d, %v", id, p, ok)
	}
	for _, id := range []uint64{0, 1 << 63, math.MaxUint64} {
		if _, _, ok := ParseMember(Member(id, PriorityLow)); ok {
			t.Errorf("ParseMember(Member(%d)) ok; want not a job id", id)
		}
	}
	for _, m := range bad {
		if _, _, ok := ParseMember(m); ok {
			t.Errorf("ParseMember(%q) ok", m)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Member with priority 2 did not panic")
		}
	}()
	Member(1, 2)
}

// TestMemberRouting checks that the scripts route a member to the due
// set its last byte names, as splitMember reads it; members Member would
// not make follow the same rule.
func TestMemberRouting(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 40)
		for _, m := range []string{"1", "2h", "3l", "FFDYWVvKFU7h", "4x", "hl", "lh", "h", "l"} {
			addSet(t, b, k, Entry{m, t0, 0})
			p := PriorityNormal
			switch m[len(m)-1] {
			case suffixHigh:
				p = PriorityHigh
			case suffixLow:
				p = PriorityLow
			}
			if _, sp, ok := splitMember(m); ok && sp != p {
				t.Errorf("splitMember(%q) priority %d, want %d", m, sp, p)
			}
			for _, key := range k.Dues() {
				n, err := b.Client.ZScore(t.Context(), key, m).Result()
				in := err == nil && n == float64(t0*128)
				if want := key == dueKey(k, p); in != want {
					t.Errorf("%q in %s: %v, want %v", m, key, in, want)
				}
			}
		}
	})
}

func TestClaimPriorityOrder(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 41)
		now := t0 + 100_000
		// Ranks (due ms + aging, relative to t0) in the comments.
		addSet(t, b, k,
			Entry{"10h", t0 + 5000, 0},     // 5000
			Entry{"20", t0, 0},             // 10000: a high due 5 s later goes first
			Entry{"30l", t0 - 61_000, 0},   // -1000: before a high due 61 s later
			Entry{"40h", t0, 0},            // 0
			Entry{"50l", t0 - 59_000, 0},   // 1000: after a high due 59 s later
			Entry{"60h", t0 + 20_000, 0},   // 20000: ties go high,
			Entry{"70", t0 + 10_000, 0},    // 20000  normal (by score),
			Entry{"90", t0 + 10_000, 1},    // 20000
			Entry{"80l", t0 - 40_000, 0},   // 20000  low
			Entry{"110l", now, 3},          // 160000: due exactly now
			Entry{"100h", t0 + 200_000, 0}, // not due
			Entry{"120", now + 1, 0},       // not due
			Entry{"130l", now + 60_000, 0}) // not due
		r := claim(t, b, k, now, 4, 1000)
		if got, want := memberNames(r.Leased), []string{"30l", "40h", "50l", "10h"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
		// The head is the lowest score over the three sets: here a low job.
		if r.DueHead != (Head{t0 - 40_000, 0, true}) {
			t.Errorf("due head %+v, want 80l's at t0-40000", r.DueHead)
		}
		r = claim(t, b, k, now, 10, 1000)
		if got, want := memberNames(r.Leased), []string{"20", "60h", "70", "90", "80l", "110l"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
		for _, l := range r.Leased {
			_, attempt, _ := SplitScore(l.Token)
			if want := map[string]int{"90": 1, "110l": 3}[l.Member]; l.Attempt != want || attempt != want ||
				l.Token != float64((now+1000)*128+int64(want)) {
				t.Errorf("%s: attempt %d, token %v; want attempt %d kept", l.Member, l.Attempt, l.Token, want)
			}
		}
		if r.DueHead != (Head{now + 1, 0, true}) || r.PrepareHead != (Head{now + 1000, 0, true}) {
			t.Errorf("heads %+v %+v", r.DueHead, r.PrepareHead)
		}
		wantSet(t, b, k.DueHigh, Entry{"100h", t0 + 200_000, 0})
		wantSet(t, b, k.Due, Entry{"120", now + 1, 0})
		wantSet(t, b, k.DueLow, Entry{"130l", now + 60_000, 0})
		if n, _ := b.Client.ZCard(t.Context(), k.Prepare).Result(); n != 10 {
			t.Errorf("prepare holds %d, want all 10 leases", n)
		}

		// Nothing due: nothing claimed, the head still the lowest.
		if r = claim(t, b, k, now, 10, 1000); len(r.Leased) != 0 || r.DueHead != (Head{now + 1, 0, true}) {
			t.Errorf("claim with nothing due = %+v", r)
		}
		// Only high left: the head is found in DueHigh.
		b.Client.Del(t.Context(), k.Due, k.DueLow)
		if r = claim(t, b, k, now, 10, 1000); r.DueHead != (Head{t0 + 200_000, 0, true}) {
			t.Errorf("due head %+v, want 100h's", r.DueHead)
		}
	})
}

// TestClaimLimitAcrossSets: limit bounds the leases of all three sets
// together, and each set loses exactly the members taken from it.
func TestClaimLimitAcrossSets(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 42)
		var es []Entry
		for _, p := range []int{PriorityHigh, PriorityNormal, PriorityLow} {
			for i := range 5 {
				es = append(es, Entry{Member(uint64(i), p), t0, 0})
			}
		}
		addSet(t, b, k, es...)
		r := claim(t, b, k, t0, 7, 100)
		if got, want := memberNames(r.Leased), []string{"0h", "1h", "2h", "3h", "4h", "0", "1"}; !slices.Equal(got, want) {
			t.Errorf("claimed %v, want %v", got, want)
		}
		for key, n := range map[string]int64{k.DueHigh: 0, k.Due: 3, k.DueLow: 5, k.Prepare: 7} {
			if got, _ := b.Client.ZCard(t.Context(), key).Result(); got != n {
				t.Errorf("%s holds %d, want %d", key, got, n)
			}
		}
		// Ranks do not depend on now: however late the claim, the normal
		// ones go before the low ones due at the same time.
		r = claim(t, b, k, t0+50_001, 4, 100)
		if got, want := memberNames(r.Leased), []string{"2", "3", "4", "0l"}; !slices.Equal(got, want) {
			t.Errorf("claimed %v, want %v", got, want)
		}
		r = claim(t, b, k, t0, 1, 100)
		if got := memberNames(r.Leased); !slices.Equal(got, []string{"1l"}) || r.DueHead != (Head{t0, 0, true}) {
			t.Errorf("claimed %v, head %+v", got, r.DueHead)
		}
		// Aging out of range.
		for _, a := range []Aging{{-1, 0, 0}, {0, -1, 0}, {0, 0, MaxAgingMillis + 1}} {
			if _, err := Claim(t.Context(), b.Client, k, t0, 1, 100, a); !errors.Is(err, ErrRange) {
				t.Errorf("Claim with aging %+v: %v, want ErrRange", a, err)
			}
		}
	})
}

// TestClaimAgingFromARGV: the offsets come from the caller, not the
// script.
func TestClaimAgingFromARGV(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 43)
		addSet(t, b, k, Entry{"1h", t0 + 10, 0}, Entry{"2", t0, 0}, Entry{"3l", t0 + 5, 0})
		r, err := Claim(t.Context(), b.Client, k, t0+10, 10, 100, Aging{})
		if err != nil {
			t.Fatal(err)
		}
		// No aging: due order.
		if got, want := memberNames(r.Leased), []string{"2", "3l", "1h"}; !slices.Equal(got, want) {
			t.Errorf("claimed %v, want %v", got, want)
		}
	})
}

func TestAddWakePriorities(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 44)
		steps := []struct {
			name  string
			entry Entry
			wake  Head
		}{
			{"high into empty slot", Entry{"1h", t0 + 100, 0}, Head{t0 + 100, 0, true}},
			{"low, earlier", Entry{"2l", t0 + 50, 0}, Head{t0 + 50, 0, true}},
			// The due sets were empty, but the slot was not: the worker already
			// claims at +50.
			{"normal, later", Entry{"3", t0 + 200, 0}, Head{}},
			{"high, later than low", Entry{"4h", t0 + 60, 0}, Head{}},
			{"normal, earliest", Entry{"5", t0 + 10, 0}, Head{t0 + 10, 0, true}},
		}
		for _, s := range steps {
			if r := addSet(t, b, k, s.entry); r.Added != 1 || r.Earliest != s.wake {
				t.Errorf("%s: Add = %+v, want earliest %+v", s.name, r, s.wake)
			}
		}
		r := addSet(t, b, k, Entry{"6h", t0 + 1, 0}, Entry{"7l", t0 + 2, 0}, Entry{"2l", t0 + 3, 0})
		if r.Added != 2 || r.Earliest != (Head{t0 + 1, 0, true}) {
			t.Errorf("batch Add = %+v, want 2 added (2l replaced), earliest +1", r)
		}
		wantSet(t, b, k.DueHigh, Entry{"6h", t0 + 1, 0}, Entry{"4h", t0 + 60, 0}, Entry{"1h", t0 + 100, 0})
		wantSet(t, b, k.Due, Entry{"5", t0 + 10, 0}, Entry{"3", t0 + 200, 0})
		wantSet(t, b, k.DueLow, Entry{"7l", t0 + 2, 0}, Entry{"2l", t0 + 3, 0})
	})
}

func TestAddRestorePriorities(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 45)
		addSet(t, b, k, Entry{"1h", t0, 0}, Entry{"2l", t0, 0}, Entry{"3h", t0 + 50, 1}, Entry{"4", t0 + 60, 0})
		claim(t, b, k, t0, 2, 1000) // 1h, 2l leased
		if o, err := Retry(t.Context(), b.Client, k, Held{"1h", float64((t0 + 1000) * 128)}, t0, 1, t0+5); err != nil || o != Buried {
			t.Fatalf("Retry = %v, %v", o, err) // 1h dead
		}
		r := addOne(t, b, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{
			{"1h", t0 - 10, 0}, {"2l", t0 - 10, 0}, {"3h", t0 - 10, 0}, {"4", t0 - 10, 0},
			{"5l", t0 + 70, 0}, {"6h", t0 + 40, 2},
		}})
		// The slot's earliest is 3h at +50: 6h at +40 moves it.
		if r.Added != 2 || r.Earliest != (Head{t0 + 40, 2, true}) {
			t.Errorf("restore = %+v, want 2 added, earliest at t0+40", r)
		}
		wantSet(t, b, k.DueHigh, Entry{"6h", t0 + 40, 2}, Entry{"3h", t0 + 50, 1})
		wantSet(t, b, k.Due, Entry{"4", t0 + 60, 0})
		wantSet(t, b, k.DueLow, Entry{"5l", t0 + 70, 0})
		wantSet(t, b, k.Prepare, Entry{"2l", t0 + 1000, 0})
		wantSet(t, b, k.Dead, Entry{"1h", t0 + 5, 1})
		// Presence is checked in the member's own due set: restoring 7l,
		// in DueLow, finds it there.
		addSet(t, b, k, Entry{"7l", t0 + 80, 0})
		if r = addOne(t, b, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{{"7l", t0 - 100, 0}}}); r.Added != 0 || r.Earliest.OK {
			t.Errorf("restore of 7l = %+v, want nothing", r)
		}
	})
}

func TestSweepRouting(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 46)
		addSet(t, b, k, Entry{"1h", t0, 0}, Entry{"2", t0, 1}, Entry{"3l", t0, 2}, Entry{"4h", t0, 4}, Entry{"5l", t0, 4},
			Entry{"6h", t0, 3})
		claim(t, b, k, t0, 10, 100)
		// 6h is added again while leased: that newer entry wins.
		addSet(t, b, k, Entry{"6h", t0 + 9999, 0}, Entry{"5l", t0 + 9999, 0})
		s, err := Sweep(ctx, b.Client, k, t0+100, 10, 5)
		if err != nil {
			t.Fatal(err)
		}
		if s.Returned != 4 || !slices.Equal(s.Dead, []Entry{{"4h", t0 + 100, 5}, {"5l", t0 + 100, 5}}) || s.PrepareHead.OK {
			t.Errorf("Sweep = %+v", s)
		}
		wantSet(t, b, k.DueHigh, Entry{"1h", t0 + 100, 1}, Entry{"6h", t0 + 9999, 0})
		wantSet(t, b, k.Due, Entry{"2", t0 + 100, 2})
		wantSet(t, b, k.DueLow, Entry{"3l", t0 + 100, 3}) // 5l left DueLow for Dead
		wantSet(t, b, k.Dead, Entry{"4h", t0 + 100, 5}, Entry{"5l", t0 + 100, 5})
	})
}

func TestRetryRouting(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 47)
		addSet(t, b, k, Entry{"1h", t0, 0}, Entry{"2l", t0, 0}, Entry{"3l", t0, 1}, Entry{"4h", t0, 2})
		leases := map[string]Held{}
		for _, l := range claim(t, b, k, t0, 10, 1000).Leased {
			leases[l.Member] = held(l)
		}
		addSet(t, b, k, Entry{"3l", t0 + 9999, 0}, Entry{"4h", t0 + 9999, 0})
		for _, c := range []struct {
			member string
			want   RetryResult
		}{{"1h", Retried}, {"2l", Retried}, {"3l", Buried}, {"4h", Buried}} {
			if o, err := Retry(ctx, b.Client, k, leases[c.member], t0+500, 2, t0+10); err != nil || o != c.want {
				t.Errorf("Retry(%s) = %v, %v; want %v", c.member, o, err, c.want)
			}
		}
		// Buried, 3l and 4h also left the due set they were added to
		// again while leased.
		wantSet(t, b, k.DueHigh, Entry{"1h", t0 + 500, 1})
		wantSet(t, b, k.Due)
		wantSet(t, b, k.DueLow, Entry{"2l", t0 + 500, 1})
		wantSet(t, b, k.Dead, Entry{"3l", t0 + 10, 2}, Entry{"4h", t0 + 10, 3})
		wantSet(t, b, k.Prepare)
	})
}

// Unclaim takes back exactly the leases one claim made, by the end its
// tokens hold, with their attempts as they were; the leases of other
// claims stay, and a member added again while leased keeps that entry.
func TestUnclaim(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 49)
		addSet(t, b, k, Entry{"1", t0, 0}, Entry{"2h", t0 + 1, 2})
		first := claim(t, b, k, t0+5, 10, 1000).Leased
		addSet(t, b, k, Entry{"3l", t0 + 6, 4}, Entry{"4", t0 + 6, 0}, Entry{"5", t0 + 6, MaxAttempt})
		lost := claim(t, b, k, t0+10, 10, 1000).Leased
		if len(first) != 2 || len(lost) != 3 {
			t.Fatalf("claimed %d then %d, want 2 then 3", len(first), len(lost))
		}
		addSet(t, b, k, Entry{"4", t0 + 9999, 0}) // added again while leased
		addSet(t, b, k, Entry{"6", t0 + 7, 1})    // due, never claimed
		if ns, errs := UnclaimEach(ctx, b.Client, t0+20, UnclaimCall{k, t0 + 10, 1000}); errs[0] != nil || ns[0] != 3 {
			t.Fatalf("Unclaim = %d, %v; want the 3 leases of the lost claim", ns[0], errs[0])
		}
		wantSet(t, b, k.Prepare, Entry{"1", t0 + 1005, 0}, Entry{"2h", t0 + 1005, 2})
		wantSet(t, b, k.DueHigh)
		wantSet(t, b, k.Due, Entry{"6", t0 + 7, 1}, Entry{"5", t0 + 20, MaxAttempt}, Entry{"4", t0 + 9999, 0})
		wantSet(t, b, k.DueLow, Entry{"3l", t0 + 20, 4})

		// Again, or for claims that never ran, in one pipeline: nothing
		// to take back; a bad call fails alone.
		ns, errs := UnclaimEach(ctx, b.Client, t0+20, UnclaimCall{k, t0 + 10, 1000}, UnclaimCall{k, t0 + 11, 1000},
			UnclaimCall{k, t0, 0}, UnclaimCall{k, t0 + 4, 1000})
		for i, n := range ns {
			if bad := i == 2; n != 0 || (errs[i] != nil) != bad {
				t.Errorf("call %d = %d, %v; want none, failed %v", i, n, errs[i], bad)
			}
		}
		wantSet(t, b, k.Prepare, Entry{"1", t0 + 1005, 0}, Entry{"2h", t0 + 1005, 2})

		for _, c := range []struct{ now, lease, at int64 }{{-1, 10, t0}, {t0, 0, t0}, {MaxMillis, 1, t0}, {t0, 10, -1}} {
			if _, errs := UnclaimEach(ctx, b.Client, c.at, UnclaimCall{k, c.now, c.lease}); !errors.Is(errs[0], ErrRange) {
				t.Errorf("Unclaim(%+v) = %v, want ErrRange", c, errs[0])
			}
		}
	})
}

func TestDefer(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 48)
		addSet(t, b, k, Entry{"1h", t0, 3}, Entry{"2", t0, 0}, Entry{"3l", t0, MaxAttempt}, Entry{"4", t0, 5})
		leases := map[string]Held{}
		for _, l := range claim(t, b, k, t0, 10, 1000).Leased {
			leases[l.Member] = held(l)
		}
		addSet(t, b, k, Entry{"4", t0 + 9999, 0}) // added again while leased
		for _, m := range []string{"1h", "2", "3l", "4"} {
			if ok, err := Defer(ctx, b.Client, k, leases[m], t0+30_000); err != nil || !ok {
				t.Errorf("Defer(%s) = %v, %v; want deferred", m, ok, err)
			}
		}
		// The attempt is kept, saturated or not; the entry added while
		// leased is replaced, as Retry does.
		wantSet(t, b, k.DueHigh, Entry{"1h", t0 + 30_000, 3})
		wantSet(t, b, k.Due, Entry{"2", t0 + 30_000, 0}, Entry{"4", t0 + 30_000, 5})
		wantSet(t, b, k.DueLow, Entry{"3l", t0 + 30_000, MaxAttempt})
		wantSet(t, b, k.Prepare)

		// A stale token, or a lease gone: nothing changes.
		if ok, err := Defer(ctx, b.Client, k, leases["2"], t0+1); err != nil || ok {
			t.Errorf("Defer of a deferred lease = %v, %v", ok, err)
		}
		l := claim(t, b, k, t0+30_000, 1, 50).Leased[0]
		if l.Member != "1h" || l.Attempt != 3 {
			t.Fatalf("claimed %+v, want 1h at attempt 3", l)
		}
		stale := held(l)
		stale.Token -= 128
		if ok, err := Defer(ctx, b.Client, k, stale, t0+1); err != nil || ok {
			t.Errorf("Defer with a stale token = %v, %v", ok, err)
		}
		if ok, err := Defer(ctx, b.Client, k, Held{"9h", l.Token}, t0+1); err != nil || ok {
			t.Errorf("Defer of an absent member = %v, %v", ok, err)
		}
		wantSet(t, b, k.Prepare, Entry{"1h", t0 + 30_050, 3})
		if ok, err := Defer(ctx, b.Client, k, held(l), t0+40_000); err != nil || !ok {
			t.Errorf("Defer = %v, %v", ok, err)
		}
		wantSet(t, b, k.DueHigh, Entry{"1h", t0 + 40_000, 3})

		for _, c := range []struct {
			h  Held
			at int64
		}{{Held{"1", -1}, t0}, {Held{"1", 0.5}, t0}, {Held{"1", 128}, -1}, {Held{"1", 128}, MaxMillis + 1}} {
			if _, err := Defer(ctx, b.Client, k, c.h, c.at); !errors.Is(err, ErrRange) {
				t.Errorf("Defer(%+v, %d) = %v, want ErrRange", c.h, c.at, err)
			}
		}
	})
}

func TestReviveRouting(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx, channel, sub := subscribeWakes(t, b)
		k := keysOf(b, 49)
		addSet(t, b, k, Entry{"1h", t0, 0}, Entry{"2l", t0, 0}, Entry{"3", t0 + 100, 0})
		for _, l := range claim(t, b, k, t0, 2, 10).Leased {
			if o, err := Retry(ctx, b.Client, k, held(l), t0, 1, t0+5); err != nil || o != Buried {
				t.Fatalf("Retry = %v, %v", o, err)
			}
		}
		revive := func(member string, ms int64) ReviveResult {
			t.Helper()
			r, err := Revive(ctx, b.Client, ReviveCall{Keys: k, Member: member, Ms: ms, WakeChannel: channel, WakeMessage: "orders 49"})
			if err != nil {
				t.Fatalf("Revive(%s): %v", member, err)
			}
			return r
		}
		// DueHigh is empty, but 3 is due sooner: no wake.
		if r := revive("1h", t0+200); !r.Revived || r.Earliest.OK {
			t.Errorf("Revive(1h) = %+v, want revived, no wake", r)
		}
		if r := revive("2l", t0+50); !r.Revived || r.Earliest != (Head{t0 + 50, 0, true}) {
			t.Errorf("Revive(2l) = %+v, want revived, earliest t0+50", r)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if want := fmt.Sprintf("orders 49 %d", t0+50); msg.Payload != want {
			t.Errorf("message %q, want %q (and none for 1h)", msg.Payload, want)
		}
		wantSet(t, b, k.DueHigh, Entry{"1h", t0 + 200, 0})
		wantSet(t, b, k.Due, Entry{"3", t0 + 100, 0})
		wantSet(t, b, k.DueLow, Entry{"2l", t0 + 50, 0})
		wantSet(t, b, k.Dead)
		// The member names the set: "1" is not "1h".
		if r := revive("1", t0); r.Revived {
			t.Errorf("Revive(1) = %+v, want nothing", r)
		}
	})
}
