package prepare

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// t0 is the base time of the tests, in the Local location as
// timer.TimeOf returns times, so that == compares them.
var t0 = timer.TimeOf(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())

func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// newIndex returns an Index over b with the scripts loaded, so that the
// first calls need no NOSCRIPT fallback. Its clock reads an hour after
// t0, so the timers of these tests, due about then, go to the due sets
// they look in; later_test.go has the later buckets.
func newIndex(t *testing.T, b *luatest.Backend) *Index {
	t.Helper()
	if err := lua.Load(t.Context(), b.Client); err != nil {
		t.Fatal(err)
	}
	q, err := New(b.Client, Config{Prefix: b.Prefix, WakeChannel: b.Prefix + "wake", Now: func() time.Time { return t0.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// groupedCalls returns how many calls b's client made of the scripts
// that hold several slots a call (lua.SlotGroups: add and ack).
func groupedCalls(b *luatest.Backend) int {
	n := 0
	for sha := range lua.SlotGroups() {
		n += b.Calls.Seen(sha)
	}
	return n
}

func tm(id timer.JobID, topic string, n int, due time.Time) timer.Timer {
	return timer.Timer{ID: id, Topic: topic, Slots: n, Basis: uint64(id), DueAt: due}
}

// dueOf returns the members of slot's normal due set in order, as "id@ms/attempt"
// with ms relative to t0.
func dueOf(t *testing.T, b *luatest.Backend, q *Index, s timer.Slot) []string {
	t.Helper()
	return setOf(t, b, q.Keys(s).Due)
}

func setOf(t *testing.T, b *luatest.Backend, key string) []string {
	t.Helper()
	zs, err := b.Client.ZRangeWithScores(t.Context(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, z := range zs {
		e, err := lua.DecodeEntry(z)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d/%d", readable(e.Member), e.Ms-t0.UnixMilli(), e.Attempt))
	}
	return out
}

// readable returns member m with its id in decimal: "1038", "4h", "3l".
func readable(m string) string {
	id, p, ok := lua.ParseMember(m)
	if !ok {
		return m
	}
	return timer.JobID(id).String() + strings.TrimPrefix(lua.Member(0, p), "0")
}

func TestConfig(t *testing.T) {
	var fe *timer.FieldError
	if err := (Config{Prefix: "toc{x}:"}).Validate(); !errors.As(err, &fe) || fe.Field != "Prefix" {
		t.Errorf("Validate with braces in Prefix = %v, want a FieldError naming Prefix", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Validate(zero) = %v", err)
	}
	c := Config{}.withDefaults()
	if c.Prefix != "toc:" || c.WakeChannel != "toc:wake" || c.Logger == nil {
		t.Errorf("defaults = %+v", c)
	}
	if c := (Config{Prefix: "x:"}).withDefaults(); c.WakeChannel != "x:wake" {
		t.Errorf("wake channel for prefix x: = %q", c.WakeChannel)
	}
	if q, err := New(nil, Config{Prefix: "{"}); !errors.As(err, &fe) || !errors.Is(err, timer.ErrInvalid) ||
		!strings.HasPrefix(err.Error(), "prepare config: Prefix: ") || q != nil {
		t.Errorf("New with an invalid Config = %v, %v", q, err)
	}
}

// TestLimitsAgree checks constants that live in packages that do not
// import each other.
func TestLimitsAgree(t *testing.T) {
	if slots.Max != timer.MaxSlots {
		t.Errorf("slots.Max = %d, timer.MaxSlots = %d", slots.Max, timer.MaxSlots)
	}
	if timer.MaxAttemptsLimit > lua.MaxAttempt {
		t.Errorf("timer.MaxAttemptsLimit %d does not fit a score (lua.MaxAttempt %d)", timer.MaxAttemptsLimit, lua.MaxAttempt)
	}
	if !slots.Valid(timer.DefaultSlots) {
		t.Errorf("timer.DefaultSlots %d is not a valid slot count", timer.DefaultSlots)
	}
}

func TestAddGroupsBySlot(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		var timers []timer.Timer
		want := map[timer.Slot][]string{}
		earliest := map[timer.Slot]int64{}
		for i := range 40 {
			id := timer.JobID(1000 + i)
			due := int64(40 - i)
			tt := tm(id, "orders", 8, at(due))
			if i%10 == 0 {
				tt.Topic = "mail"
			}
			timers = append(timers, tt)
			s := timer.Slot{Topic: tt.Topic, Index: slots.Of(uint64(id), 8)}
			want[s] = append(want[s], fmt.Sprintf("%d@%d/0", id, due))
			if e, ok := earliest[s]; !ok || due < e {
				earliest[s] = due
			}
		}
		// One server: one script call holds every slot (on a cluster, each
		// slot has its own, in one pipeline: TestClusterIndex).
		b.Calls.Pipelines()
		calls := groupedCalls(b)
		wakes, err := q.Add(ctx, timers)
		if err != nil {
			t.Fatal(err)
		}
		if p, n := b.Calls.Pipelines(), groupedCalls(b)-calls; len(p) != 0 || n != 1 {
			t.Errorf("%d script calls, pipelines %v, want one call for the %d slots", n, p, len(want))
		}
		if len(wakes) != len(want) {
			t.Errorf("%d wakes, want %d (every slot was empty)", len(wakes), len(want))
		}
		for _, w := range wakes {
			if w.DueAt != at(earliest[w.Slot]) {
				t.Errorf("wake %v at %v, want %v", w.Slot, w.DueAt, at(earliest[w.Slot]))
			}
		}
		for s, members := range want {
			slices.Reverse(members) // due times fall as ids rise
			if got := dueOf(t, b, q, s); !slices.Equal(got, members) {
				t.Errorf("store %v = %v, want %v", s, got, members)
			}
		}

		// Later times: no wake. One earlier time: one wake.
		if wakes, err = q.Add(ctx, []timer.Timer{tm(1000, "orders", 8, at(100))}); err != nil || len(wakes) != 0 {
			t.Errorf("Add later = %v, %v; want no wake", wakes, err)
		}
		s := timer.Slot{Topic: "orders", Index: slots.Of(1001, 8)}
		wakes, err = q.Add(ctx, []timer.Timer{tm(1001, "orders", 8, at(-5))})
		if err != nil || !slices.Equal(wakes, []timer.Wake{{Slot: s, DueAt: at(-5)}}) {
			t.Errorf("Add earlier = %v, %v; want a wake of %v at -5", wakes, err, s)
		}
		if wakes, err := q.Add(ctx, nil); err != nil || wakes != nil {
			t.Errorf("Add(nil) = %v, %v", wakes, err)
		}
	})
}

func TestAddBasis(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	// Jobs of one business object share a slot, whatever their ids.
	var timers []timer.Timer
	for id := timer.JobID(1); id <= 20; id++ {
		tt := tm(id, "orders", 1024, at(int64(id)))
		tt.Basis = 777
		timers = append(timers, tt)
	}
	if _, err := q.Add(t.Context(), timers); err != nil {
		t.Fatal(err)
	}
	s := timer.Slot{Topic: "orders", Index: slots.Of(777, 1024)}
	if got := dueOf(t, b, q, s); len(got) != 20 {
		t.Errorf("slot %v holds %v, want all 20", s, got)
	}
}

func TestAddBigBatch(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		q := newIndex(t, b)
		var timers []timer.Timer
		n := 2*lua.MaxBatch + 500
		for i := range n {
			timers = append(timers, tm(timer.JobID(i+1), "orders", 1, at(int64(n-i))))
		}
		b.Calls.Pipelines()
		wakes, err := q.Add(t.Context(), timers)
		if err != nil {
			t.Fatal(err)
		}
		if p := b.Calls.Pipelines(); len(p) != 1 || p[0] != 3 {
			t.Errorf("pipelines %v, want one of 3 calls (batches of %d)", p, lua.MaxBatch)
		}
		s := timer.Slot{Topic: "orders"}
		if !slices.Equal(wakes, []timer.Wake{{Slot: s, DueAt: at(1)}}) {
			t.Errorf("wakes %v, want one for the slot at +1ms", wakes)
		}
		stored, _, _, next, err := q.Stats(t.Context(), "orders", 1)
		if err != nil || stored != int64(n) || next != at(1) {
			t.Errorf("Stats = %d, %v, %v", stored, next, err)
		}
	})
}

func TestAddInvalid(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	good := tm(1, "orders", 16, t0)
	tests := map[string]func(*timer.Timer){
		"zero id":        func(t *timer.Timer) { t.ID = 0 },
		"id 2^63":        func(t *timer.Timer) { t.ID = 1 << 63 },
		"topic":          func(t *timer.Timer) { t.Topic = "Bad{x}" },
		"empty topic":    func(t *timer.Timer) { t.Topic = "" },
		"slots 0":        func(t *timer.Timer) { t.Slots = 0 },
		"slots 12":       func(t *timer.Timer) { t.Slots = 12 },
		"slots 2^17":     func(t *timer.Timer) { t.Slots = 1 << 17 },
		"before 1970":    func(t *timer.Timer) { t.DueAt = time.UnixMilli(-1) },
		"after 4199":     func(t *timer.Timer) { t.DueAt = time.UnixMilli(lua.MaxMillis + 1) },
		"attempt -1":     func(t *timer.Timer) { t.Attempt = -1 },
		"attempt 128":    func(t *timer.Timer) { t.Attempt = 128 },
		"zero time":      func(t *timer.Timer) { t.DueAt = time.Time{} },
		"slot count neg": func(t *timer.Timer) { t.Slots = -16 },
	}
	for name, mutate := range tests {
		bad := good
		mutate(&bad)
		if _, err := q.Add(t.Context(), []timer.Timer{good, bad}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: Add = %v, want ErrInvalid", name, err)
		}
		if _, _, err := q.Restore(t.Context(), []timer.Timer{bad}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: Restore = %v, want ErrInvalid", name, err)
		}
	}
	if stored, _, _, _, err := q.Stats(t.Context(), "orders", 16); err != nil || stored != 0 {
		t.Errorf("invalid batches wrote %d timers (%v)", stored, err)
	}
}

func TestRestore(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		if _, err := q.Add(ctx, []timer.Timer{tm(1, "orders", 1, at(0)), tm(2, "orders", 1, at(0)), tm(3, "orders", 1, at(50))}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(0), 2, time.Second) // 1 and 2 leased
		if err != nil || len(c.Leases) != 2 {
			t.Fatalf("Claim = %+v, %v", c, err)
		}
		if o, err := q.Retry(ctx, c.Leases[1], at(10), 1, at(1)); err != nil || o != timer.Buried {
			t.Fatalf("Retry = %v, %v", o, err) // 2 dead
		}
		n, wakes, err := q.Restore(ctx, []timer.Timer{
			tm(1, "orders", 1, at(-100)), tm(2, "orders", 1, at(-100)), tm(3, "orders", 1, at(-100)),
			tm(4, "orders", 1, at(20)),
		})
		if err != nil || n != 1 || !slices.Equal(wakes, []timer.Wake{{Slot: s, DueAt: at(20)}}) {
			t.Errorf("Restore = %d, %v, %v; want 1 and a wake at +20", n, wakes, err)
		}
		if got := dueOf(t, b, q, s); !slices.Equal(got, []string{"4@20/0", "3@50/0"}) {
			t.Errorf("store = %v", got)
		}
	})
}

func TestRemove(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		var timers []timer.Timer
		for id := timer.JobID(1); id <= 10; id++ {
			timers = append(timers, tm(id, "orders", 4, at(int64(id))))
		}
		if _, err := q.Add(ctx, timers); err != nil {
			t.Fatal(err)
		}
		leased := timers[0]
		ls := timer.Slot{Topic: "orders", Index: slots.Of(uint64(leased.ID), 4)}
		if c, err := q.Claim(ctx, ls, at(1), 1, time.Second); err != nil || len(c.Leases) != 1 || c.Leases[0].ID != leased.ID {
			t.Fatalf("Claim = %+v, %v", c, err)
		}
		// Removing all, plus one never added: the leased one stays leased.
		n, err := q.Remove(ctx, append(timers, tm(99, "orders", 4, t0)))
		if err != nil || n != 9 {
			t.Errorf("Remove = %d, %v; want 9", n, err)
		}
		stored, leasedN, _, _, err := q.Stats(ctx, "orders", 4)
		if err != nil || stored != 0 || leasedN != 1 {
			t.Errorf("after Remove: stored %d, leased %d, %v", stored, leasedN, err)
		}
		if n, err := q.Remove(ctx, []timer.Timer{{ID: 1, Topic: "orders", Slots: 3}}); !errors.Is(err, timer.ErrInvalid) || n != 0 {
			t.Errorf("Remove invalid = %d, %v", n, err)
		}
	})
}

func TestLeaseCycle(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		retried := tm(3, "orders", 1, at(0))
		retried.Attempt = 2
		if _, err := q.Add(ctx, []timer.Timer{tm(1, "orders", 1, at(0)), tm(2, "orders", 1, at(0)), retried, tm(4, "orders", 1, at(10))}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(5), 10, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ids []timer.JobID
		for _, l := range c.Leases {
			ids = append(ids, l.ID)
			if l.Slot != s {
				t.Errorf("lease %d in slot %v", l.ID, l.Slot)
			}
			if want := float64(at(2005).UnixMilli()*128) + float64(l.Attempt); l.Token != want {
				t.Errorf("lease %d: token %v, want %v", l.ID, l.Token, want)
			}
		}
		if !slices.Equal(ids, []timer.JobID{1, 2, 3}) || c.Leases[2].Attempt != 2 {
			t.Errorf("claimed %v %+v", ids, c.Leases)
		}
		if c.NextDue != at(10) || c.NextExpiry != at(2005) {
			t.Errorf("next due %v, next expiry %v", c.NextDue, c.NextExpiry)
		}
		n, err := q.Ack(ctx, []timer.Lease{c.Leases[0]})
		if err != nil || n != 1 {
			t.Errorf("Ack = %d, %v", n, err)
		}
		if n, err = q.Ack(ctx, []timer.Lease{c.Leases[0]}); err != nil || n != 0 {
			t.Errorf("second Ack = %d, %v", n, err)
		}
		if o, err := q.Retry(ctx, c.Leases[1], at(500), 16, at(6)); err != nil || o != timer.Retried {
			t.Errorf("Retry = %v, %v", o, err)
		}
		if o, err := q.Retry(ctx, c.Leases[1], at(500), 16, at(6)); err != nil || o != timer.Lost {
			t.Errorf("Retry twice = %v, %v; want Lost", o, err)
		}
		if o, err := q.Retry(ctx, c.Leases[2], at(500), 3, at(7)); err != nil || o != timer.Buried {
			t.Errorf("Retry at max = %v, %v; want Buried", o, err)
		}
		if got := dueOf(t, b, q, s); !slices.Equal(got, []string{"4@10/0", "2@500/1"}) {
			t.Errorf("store = %v", got)
		}
		if got := setOf(t, b, q.Keys(s).Dead); !slices.Equal(got, []string{"3@7/3"}) {
			t.Errorf("dead = %v", got)
		}
		ok, wakes, err := q.Revive(ctx, tm(3, "orders", 1, at(900)))
		if err != nil || !ok || len(wakes) != 0 {
			t.Errorf("Revive = %v, %v, %v (900 is not the slot's earliest)", ok, wakes, err)
		}
		if ok, _, err = q.Revive(ctx, tm(3, "orders", 1, at(900))); err != nil || ok {
			t.Errorf("second Revive = %v, %v", ok, err)
		}
		if got := dueOf(t, b, q, s); !slices.Equal(got, []string{"4@10/0", "2@500/1", "3@900/0"}) {
			t.Errorf("store after Revive = %v", got)
		}
		if next, err := q.Peek(ctx, s); err != nil || next != at(10) {
			t.Errorf("Peek = %v, %v", next, err)
		}
		if next, err := q.Peek(ctx, timer.Slot{Topic: "orders", Index: 1}); err != nil || !next.IsZero() {
			t.Errorf("Peek(empty) = %v, %v", next, err)
		}
	})
}

// AckHeads acks as Ack does and tells each slot's next lease end after
// the ack: the earliest lease left, or zero when none is.
func TestAckHeads(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		slot := timer.Slot{Topic: "orders", Index: 0}
		var timers []timer.Timer
		for id := timer.JobID(1); len(timers) < 3; id++ {
			if slots.Of(uint64(id), 4) == slot.Index {
				timers = append(timers, tm(id, "orders", 4, at(1)))
			}
		}
		if _, err := q.Add(ctx, timers); err != nil {
			t.Fatal(err)
		}
		var leases []timer.Lease
		for i, lease := range []time.Duration{time.Second, 2 * time.Second} {
			cl, err := q.Claim(ctx, slot, at(10), 1+i, lease) // one, then two
			if err != nil {
				t.Fatal(err)
			}
			leases = append(leases, cl.Leases...)
		}
		if len(leases) != 3 {
			t.Fatalf("claimed %d, want 3", len(leases))
		}
		n, next, err := q.AckHeads(ctx, leases[:1])
		if err != nil || n != 1 || len(next) != 1 || next[0].Slot != slot || !next[0].NextExpiry.Equal(at(2010)) {
			t.Fatalf("AckHeads(first) = %d, %+v, %v; want 1 and the others' end, %v", n, next, err, at(2010))
		}
		n, next, err = q.AckHeads(ctx, leases[1:])
		if err != nil || n != 2 || len(next) != 1 || !next[0].NextExpiry.IsZero() {
			t.Errorf("AckHeads(rest) = %d, %+v, %v; want 2 and none left", n, next, err)
		}
	})
}

// addOrders adds jobs 1 to 12 of topic "orders" of 4 slots, job n due at
// n ms, and returns the topic's slot i.
func addOrders(t *testing.T, q *Index) func(i int) timer.Slot {
	t.Helper()
	var timers []timer.Timer
	for id := timer.JobID(1); id <= 12; id++ {
		timers = append(timers, tm(id, "orders", 4, at(int64(id))))
	}
	if _, err := q.Add(t.Context(), timers); err != nil {
		t.Fatal(err)
	}
	return func(i int) timer.Slot { return timer.Slot{Topic: "orders", Index: i} }
}

// SweepEach answers each call as Sweep (or Reclaim, with All) would, in
// one pipeline, and a bad call fails alone.
func TestSweepEach(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		slot := addOrders(t, q)
		leased := make([]int, 4)
		for i := range 4 {
			lease := time.Millisecond // ends at 13
			if i == 2 {
				lease = time.Hour // still held at 20: only a reclaim takes it
			}
			cl, err := q.Claim(ctx, slot(i), at(12), 100, lease)
			if err != nil || len(cl.Leases) == 0 {
				t.Fatalf("Claim slot %d = %d leases, %v", i, len(cl.Leases), err)
			}
			leased[i] = len(cl.Leases)
		}
		calls := []timer.SweepCall{
			{Slot: slot(0), Limit: 100},
			{Slot: slot(1), Limit: 0}, // bad: fails alone
			{Slot: slot(2), Limit: 100, All: true},
			{Slot: timer.Slot{Topic: "orders", Index: -1}, Limit: 1},
			{Slot: slot(3), Limit: 1},
		}
		sws, errs := q.SweepEach(ctx, at(20), calls)
		if len(sws) != len(calls) || len(errs) != len(calls) {
			t.Fatalf("%d sweeps, %d errors for %d calls", len(sws), len(errs), len(calls))
		}
		for _, i := range []int{1, 3} {
			if errs[i] == nil || sws[i].Returned != 0 {
				t.Errorf("call %d = %+v, %v; want an error", i, sws[i], errs[i])
			}
		}
		for _, c := range []struct {
			call, returned int
			next           time.Time
		}{{0, leased[0], time.Time{}}, {2, leased[2], time.Time{}}, {4, 1, at(13)}} {
			if errs[c.call] != nil {
				t.Fatalf("call %d: %v", c.call, errs[c.call])
			}
			if sw := sws[c.call]; sw.Returned != c.returned || !sw.NextExpiry.Equal(c.next) {
				t.Errorf("call %d = %+v; want %d returned, next expiry %v", c.call, sw, c.returned, c.next)
			}
		}
		if got := dueOf(t, b, q, slot(1)); len(got) != 0 {
			t.Errorf("slot 1 after a bad call = %v, want its leases left alone", got)
		}
		for _, c := range []struct{ slot, due int }{{0, leased[0]}, {2, leased[2]}, {3, 1}} {
			if got := dueOf(t, b, q, slot(c.slot)); len(got) != c.due {
				t.Errorf("slot %d due after the sweep: %v, want %d", c.slot, got, c.due)
			}
		}
	})
}

// ClaimEach answers each call as Claim would, in one pipeline, and a bad
// call fails alone.
func TestClaimEach(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		slot := addOrders(t, q)
		before := make([][]string, 4)
		for i := range 4 {
			before[i] = dueOf(t, b, q, slot(i))
		}
		calls := []timer.ClaimCall{
			{Slot: slot(0), Limit: 100, Lease: time.Second},
			{Slot: slot(1), Limit: 0, Lease: time.Second}, // bad: fails alone
			{Slot: slot(2), Limit: 1, Lease: time.Second},
			{Slot: timer.Slot{Topic: "orders", Index: -1}, Limit: 1, Lease: time.Second},
			{Slot: slot(3), Limit: 100, Lease: time.Millisecond},
		}
		cls, errs := q.ClaimEach(ctx, at(12), calls)
		if len(cls) != len(calls) || len(errs) != len(calls) {
			t.Fatalf("%d claims, %d errors for %d calls", len(cls), len(errs), len(calls))
		}
		for _, i := range []int{1, 3} {
			if !errors.Is(errs[i], timer.ErrInvalid) || len(cls[i].Leases) != 0 {
				t.Errorf("call %d = %+v, %v; want ErrInvalid", i, cls[i], errs[i])
			}
		}
		if got := dueOf(t, b, q, slot(1)); !slices.Equal(got, before[1]) {
			t.Errorf("slot 1 after a bad call = %v, want %v", got, before[1])
		}
		for _, c := range []struct{ call, slot, leased int }{{0, 0, len(before[0])}, {2, 2, 1}, {4, 3, len(before[3])}} {
			if errs[c.call] != nil {
				t.Fatalf("call %d: %v", c.call, errs[c.call])
			}
			cl := cls[c.call]
			if len(cl.Leases) != c.leased {
				t.Errorf("call %d leased %d, want %d", c.call, len(cl.Leases), c.leased)
			}
			for _, l := range cl.Leases {
				if l.Slot != slot(c.slot) {
					t.Errorf("call %d: lease %d in slot %v", c.call, l.ID, l.Slot)
				}
			}
			if left := dueOf(t, b, q, slot(c.slot)); len(left) != len(before[c.slot])-c.leased {
				t.Errorf("slot %d left %v", c.slot, left)
			}
		}
		if c := cls[2]; c.NextDue.IsZero() || c.NextExpiry != at(1012) {
			t.Errorf("call 2: next due %v, next expiry %v", c.NextDue, c.NextExpiry)
		}
		if c := cls[4]; !c.NextDue.IsZero() || c.NextExpiry != at(13) {
			t.Errorf("call 4: next due %v, next expiry %v", c.NextDue, c.NextExpiry)
		}
	})
}

func TestSweep(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		last := tm(2, "orders", 1, at(0))
		last.Attempt = timer.MaxAttemptsLimit - 1
		if _, err := q.Add(ctx, []timer.Timer{tm(1, "orders", 1, at(0)), last, tm(3, "orders", 1, at(1))}); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Claim(ctx, s, at(0), 10, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(1), 10, time.Second)
		if err != nil || len(c.Leases) != 1 {
			t.Fatal(c, err)
		}
		sw, err := q.Sweep(ctx, s, at(99), 10)
		if err != nil || sw.Returned != 0 || len(sw.Dead) != 0 || sw.NextExpiry != at(100) {
			t.Errorf("early Sweep = %+v, %v", sw, err)
		}
		sw, err = q.Sweep(ctx, s, at(100), 10)
		wantDead := []timer.Lease{{ID: 2, Slot: s, Attempt: timer.MaxAttemptsLimit}}
		if err != nil || sw.Returned != 1 || !slices.Equal(sw.Dead, wantDead) || sw.NextExpiry != at(1001) {
			t.Errorf("Sweep = %+v, %v; want 1 returned, job 2 dead at attempt %d", sw, err, timer.MaxAttemptsLimit)
		}
		if got := dueOf(t, b, q, s); !slices.Equal(got, []string{"1@100/1"}) {
			t.Errorf("store = %v", got)
		}
		// The swept lease's holder lost it.
		if n, err := q.Ack(ctx, []timer.Lease{{ID: 1, Slot: s, Token: float64(at(100).UnixMilli() * 128)}}); err != nil || n != 0 {
			t.Errorf("Ack of swept lease = %d, %v", n, err)
		}
	})
}

func TestLeaserInvalid(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	ctx := t.Context()
	s := timer.Slot{Topic: "orders"}
	for name, err := range map[string]error{
		"claim limit 0":      second(q.Claim(ctx, s, t0, 0, time.Second)),
		"claim lease 0":      second(q.Claim(ctx, s, t0, 1, 0)),
		"claim lease 1us":    second(q.Claim(ctx, s, t0, 1, time.Microsecond)),
		"claim bad topic":    second(q.Claim(ctx, timer.Slot{Topic: "A"}, t0, 1, time.Second)),
		"claim slot -1":      second(q.Claim(ctx, timer.Slot{Topic: "a", Index: -1}, t0, 1, time.Second)),
		"claim slot 65536":   second(q.Claim(ctx, timer.Slot{Topic: "a", Index: slots.Max}, t0, 1, time.Second)),
		"claim before 1970":  second(q.Claim(ctx, s, time.UnixMilli(-5), 1, time.Second)),
		"claim lease beyond": second(q.Claim(ctx, s, time.UnixMilli(lua.MaxMillis-5), 1, time.Second)),
		"sweep limit 0":      second(q.Sweep(ctx, s, t0, 0)),
		"sweep bad slot":     second(q.Sweep(ctx, timer.Slot{Topic: "-"}, t0, 1)),
		"retry max 0":        second(q.Retry(ctx, timer.Lease{ID: 1, Slot: s, Token: 128}, t0, 0, t0)),
		"retry max 128":      second(q.Retry(ctx, timer.Lease{ID: 1, Slot: s, Token: 128}, t0, 128, t0)),
		"retry token":        second(q.Retry(ctx, timer.Lease{ID: 1, Slot: s, Token: 0.5}, t0, 3, t0)),
		"retry at":           second(q.Retry(ctx, timer.Lease{ID: 1, Slot: s, Token: 128}, time.Time{}, 3, t0)),
		"ack token":          second(q.Ack(ctx, []timer.Lease{{ID: 1, Slot: s, Token: -128}})),
		"ack slot":           second(q.Ack(ctx, []timer.Lease{{ID: 1, Token: 128}})),
		"revive due":         third(q.Revive(ctx, tm(1, "orders", 1, time.Time{}))),
		"stats slots":        errOf(q.Stats(ctx, "orders", 3)),
		"stats topic":        errOf(q.Stats(ctx, "", 1)),
		"peek slot":          second(q.Peek(ctx, timer.Slot{})),
	} {
		if !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

func errOf(_, _, _ int64, _ time.Time, err error) error { return err }

func TestStats(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		if stored, leased, dead, next, err := q.Stats(ctx, "orders", 16); err != nil || stored+leased+dead != 0 || !next.IsZero() {
			t.Errorf("Stats(empty) = %d %d %d %v %v", stored, leased, dead, next, err)
		}
		var timers []timer.Timer
		for id := timer.JobID(1); id <= 50; id++ {
			timers = append(timers, tm(id, "orders", 16, at(1000-int64(id))))
		}
		timers = append(timers, tm(51, "other", 16, at(0)))
		if _, err := q.Add(ctx, timers); err != nil {
			t.Fatal(err)
		}
		leased := 0
		for i := range 16 {
			c, err := q.Claim(ctx, timer.Slot{Topic: "orders", Index: i}, at(955), 1, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			leased += len(c.Leases)
		}
		stored, leasedN, dead, next, err := q.Stats(ctx, "orders", 16)
		if err != nil || stored != int64(50-leased) || leasedN != int64(leased) || dead != 0 {
			t.Errorf("Stats = %d %d %d, %v; want %d %d 0", stored, leasedN, dead, err, 50-leased, leased)
		}
		if want := at(1000 - 50); leased > 0 && !next.After(want.Add(-time.Millisecond)) {
			t.Errorf("next due %v, want at least %v", next, want)
		}
		// Slots counted in chunks: a topic with more slots than one chunk.
		if stored, _, _, _, err := q.Stats(ctx, "orders", 4*statsChunk); err != nil || stored == 0 {
			t.Errorf("Stats over %d slots = %d, %v", 4*statsChunk, stored, err)
		}
	})
}

// TestNoScriptPipelined: after SCRIPT FLUSH, Add over several slots,
// more timers than one script call takes, still works in one round of
// EVALSHA, then one of EVAL.
func TestNoScriptPipelined(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		q := newIndex(t, b)
		b.FlushScripts(t)
		before := b.Calls.NoScript()
		var timers []timer.Timer
		for id := timer.JobID(1); id <= 1200; id++ {
			timers = append(timers, tm(id, "orders", 4, at(int64(id))))
		}
		wakes, err := q.Add(t.Context(), timers)
		if err != nil || len(wakes) != 4 {
			t.Fatalf("Add = %v, %v", wakes, err)
		}
		if got := b.Calls.NoScript() - before; got != 2 {
			t.Errorf("NOSCRIPT %d times, want 2 (1,200 timers: two script calls)", got)
		}
		stored, _, _, _, err := q.Stats(t.Context(), "orders", 4)
		if err != nil || stored != 1200 {
			t.Errorf("stored %d, %v", stored, err)
		}
	})
}

var _ redis.UniversalClient = (*redis.Client)(nil)

// TestLimitsClamp: a limit above lua.MaxBatch claims and sweeps one
// batch, and the next due time and expiry say that more are waiting.
func TestLimitsClamp(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		var timers []timer.Timer
		for id := timer.JobID(1); id <= lua.MaxBatch+500; id++ {
			timers = append(timers, tm(id, "orders", 1, at(0)))
		}
		if _, err := q.Add(ctx, timers); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(0), 5000, 10*time.Millisecond)
		if err != nil || len(c.Leases) != lua.MaxBatch || c.NextDue != at(0) {
			t.Fatalf("Claim = %d leases, next due %v, %v", len(c.Leases), c.NextDue, err)
		}
		if c, err = q.Claim(ctx, s, at(0), 5000, 10*time.Millisecond); err != nil || len(c.Leases) != 500 || !c.NextDue.IsZero() {
			t.Fatalf("second Claim = %d leases, next due %v, %v", len(c.Leases), c.NextDue, err)
		}
		sw, err := q.Sweep(ctx, s, at(10), 5000)
		if err != nil || sw.Returned != lua.MaxBatch || sw.NextExpiry != at(10) {
			t.Fatalf("Sweep = %d returned, next expiry %v, %v", sw.Returned, sw.NextExpiry, err)
		}
	})
}

// Heads reads each slot's next due time over its three due sets and its
// next lease expiry, and nothing of an empty slot.
func TestHeads(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		slot := func(i int) timer.Slot { return timer.Slot{Topic: "heads", Index: i} }
		add := func(id timer.JobID, index int, due int64, p timer.Priority) {
			t.Helper()
			basis := uint64(0)
			for slots.Of(basis, 8) != index {
				basis++
			}
			tt := timer.Timer{ID: id, Topic: "heads", Slots: 8, Basis: basis, DueAt: at(due), Priority: p}
			if _, err := q.Add(ctx, []timer.Timer{tt}); err != nil {
				t.Fatal(err)
			}
		}
		add(1, 1, 50, timer.PriorityNormal)
		add(2, 2, 70, timer.PriorityHigh)
		add(3, 2, 40, timer.PriorityLow)
		add(4, 3, 10, timer.PriorityNormal) // leased below: slot 3 holds only a lease
		add(5, 4, 10, timer.PriorityLow)    // leased below
		add(6, 4, 90, timer.PriorityLow)
		for _, s := range []int{3, 4} {
			if c, err := q.Claim(ctx, slot(s), at(10), 1, time.Second); err != nil || len(c.Leases) != 1 {
				t.Fatalf("claim slot %d = %+v, %v", s, c, err)
			}
		}
		var ss []timer.Slot
		for i := range 6 {
			ss = append(ss, slot(i))
		}
		got, err := q.Heads(ctx, ss)
		if err != nil {
			t.Fatal(err)
		}
		want := []timer.SlotHeads{
			{},
			{NextDue: at(50)},
			{NextDue: at(40)},
			{NextExpiry: at(1010)},
			{NextDue: at(90), NextExpiry: at(1010)},
			{},
		}
		if !slices.Equal(got, want) {
			t.Errorf("Heads = %+v, want %+v", got, want)
		}
		if _, err := q.Heads(ctx, []timer.Slot{{Topic: "heads", Index: -1}}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("Heads of a bad slot: %v, want ErrInvalid", err)
		}
	})
}
