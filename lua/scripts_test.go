package lua

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
)

const topic = "orders"

// t0 is the base time of the tests, in Unix ms.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

var y2400 = time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

func keysOf(b *luatest.Backend, slot int) slots.KeySet { return slots.Keys(b.Prefix, topic, slot) }

// members returns a sorted set's entries in order.
func members(t *testing.T, b *luatest.Backend, key string) []Entry {
	t.Helper()
	zs, err := b.Client.ZRangeWithScores(t.Context(), key, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE %s: %v", key, err)
	}
	out := []Entry{}
	for _, z := range zs {
		e, err := DecodeEntry(z)
		if err != nil {
			t.Fatalf("ZRANGE %s: %v", key, err)
		}
		out = append(out, e)
	}
	return out
}

func wantSet(t *testing.T, b *luatest.Backend, key string, want ...Entry) {
	t.Helper()
	if want == nil {
		want = []Entry{}
	}
	if got := members(t, b, key); !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", key, got, want)
	}
}

func addOne(t *testing.T, b *luatest.Backend, ac AddCall) AddResult {
	t.Helper()
	r, err := Add(t.Context(), b.Client, ac)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return r[0]
}

func addSet(t *testing.T, b *luatest.Backend, k slots.KeySet, es ...Entry) AddResult {
	t.Helper()
	return addOne(t, b, AddCall{Keys: k, Mode: ModeSet, Entries: es})
}

// testAging is timer.PriorityAging in ms, which this package does not
// import.
var testAging = Aging{High: 0, Normal: 10_000, Low: 60_000}

func claim(t *testing.T, b *luatest.Backend, k slots.KeySet, now int64, limit int, lease int64) ClaimResult {
	t.Helper()
	r, err := Claim(t.Context(), b.Client, k, now, limit, lease, testAging)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return r
}

func held(l Leased) Held { return Held{Member: l.Member, Token: l.Token} }

func memberNames(ls []Leased) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Member)
	}
	return out
}

func TestAddWake(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 3)
		steps := []struct {
			name    string
			entries []Entry
			added   int
			wake    Head
		}{
			{"first into empty", []Entry{{"1", t0 + 100, 0}}, 1, Head{t0 + 100, 0, true}},
			{"later", []Entry{{"2", t0 + 200, 0}}, 1, Head{}},
			{"earlier", []Entry{{"3", t0 + 50, 2}}, 1, Head{t0 + 50, 2, true}},
			{"same ms lower attempt", []Entry{{"4", t0 + 50, 0}}, 1, Head{}},
			{"replace a head later, head ms same", []Entry{{"3", t0 + 300, 2}}, 0, Head{}},
			{"replace head later", []Entry{{"4", t0 + 400, 0}}, 0, Head{}},
			{"replace to earlier", []Entry{{"2", t0 + 10, 1}}, 0, Head{t0 + 10, 1, true}},
			{"nothing", nil, 0, Head{}},
			{"batch, one earlier", []Entry{{"5", t0 + 500, 0}, {"6", t0 + 5, 0}, {"7", t0 + 6, 0}}, 3, Head{t0 + 5, 0, true}},
			// The head's score is the first of the next ms: still earlier.
			{"a ms before the head, late attempt", []Entry{{"8", t0 + 4, 3}}, 1, Head{t0 + 4, 3, true}},
		}
		for _, s := range steps {
			r := addSet(t, b, k, s.entries...)
			if r.Added != s.added || r.Earliest != s.wake {
				t.Errorf("%s: Add = %+v, want added %d, earliest %+v", s.name, r, s.added, s.wake)
			}
		}
		wantSet(t, b, k.Due,
			Entry{"8", t0 + 4, 3}, Entry{"6", t0 + 5, 0}, Entry{"7", t0 + 6, 0}, Entry{"2", t0 + 10, 1}, Entry{"1", t0 + 100, 0},
			Entry{"3", t0 + 300, 2}, Entry{"4", t0 + 400, 0}, Entry{"5", t0 + 500, 0})
	})
}

func TestAddPublishes(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx, channel, sub := subscribeWakes(t, b)
		k := keysOf(b, 9)
		call := func(e Entry) {
			addOne(t, b, AddCall{Keys: k, Mode: ModeSet, WakeChannel: channel, WakeMessage: topic + " 9", Entries: []Entry{e}})
		}
		call(Entry{"1", y2400, 0})     // publishes: the slot was empty
		call(Entry{"2", y2400 + 1, 0}) // publishes nothing
		call(Entry{"3", MaxMillis, 0}) // nothing
		call(Entry{"4", t0, 7})        // publishes
		for _, want := range []int64{y2400, t0} {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatalf("receive: %v", err)
			}
			if w := fmt.Sprintf("%s 9 %d", topic, want); msg.Channel != channel || msg.Payload != w {
				t.Errorf("message %q on %q, want %q on %q", msg.Payload, msg.Channel, w, channel)
			}
		}
		// No channel: the script publishes nothing, but still reports.
		r := addOne(t, b, AddCall{Keys: k, Mode: ModeSet, Entries: []Entry{{"5", t0 - 1, 0}}})
		if !r.Earliest.OK {
			t.Errorf("Add without channel: no earliest reported")
		}
		call(Entry{"6", t0 - 2, 0})
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if w := fmt.Sprintf("%s 9 %d", topic, t0-2); msg.Payload != w {
			t.Errorf("message %q, want %q", msg.Payload, w)
		}
	})
}

// TestAddSlots: on one server, calls of several slots share a script
// call, up to MaxBatch entries, and each slot answers as a call of its
// own would: its members in its own sets, its own count and earliest, its
// own wake message.
func TestAddSlots(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx, channel, sub := subscribeWakes(t, b)
		k1, k2, k3 := keysOf(b, 40), keysOf(b, 41), keysOf(b, 42)
		addSet(t, b, k2, Entry{"early", t0, 0})
		add := AddCall{Mode: ModeNew, WakeChannel: channel, LaterFromMs: t0 + 60_000, BucketWidthsMs: []int64{1000, 32000}}
		c1, c2, c3 := add, add, add
		c1.Keys, c1.WakeMessage, c1.Entries = k1, "a 40", []Entry{{"1", t0 + 20, 0}, {"2", t0 + 10, 1}}
		c2.Keys, c2.WakeMessage, c2.Entries = k2, "a 41", []Entry{{"3", t0 + 5, 0}, {"early", t0 + 1, 0}}
		c3.Keys, c3.WakeMessage, c3.Entries = k3, "a 42", []Entry{{"4", t0 + 90_000, 0}}
		c3.WindowMs = []int64{0}
		addSHA := addScript.Hash()
		calls := b.Calls.Seen(addSHA)
		rs, err := Add(ctx, b.Client, c1, c2, c3)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Calls.Seen(addSHA) - calls; got != 1 {
			t.Errorf("%d script calls for three slots of one mode, want 1", got)
		}
		want := []AddResult{{2, Head{t0 + 10, 1, true}}, {1, Head{}}, {1, Head{t0 + 90_000, 0, true}}}
		if !slices.Equal(rs, want) {
			t.Errorf("Add = %+v, want %+v", rs, want)
		}
		wantSet(t, b, k1.Due, Entry{"2", t0 + 10, 1}, Entry{"1", t0 + 20, 0})
		wantSet(t, b, k2.Due, Entry{"early", t0, 0}, Entry{"3", t0 + 5, 0})
		wantSet(t, b, k3.Due)
		wantSet(t, b, k3.Later+":32000:"+fmt.Sprint((t0+90_000)/32000), Entry{"4", t0 + 90_000, 0})
		for _, w := range []string{fmt.Sprintf("a 40 %d", t0+10), fmt.Sprintf("a 42 %d", t0+90_000)} {
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatalf("receive: %v", err)
			}
			if msg.Payload != w {
				t.Errorf("message %q, want %q", msg.Payload, w)
			}
		}

		// More than MaxBatch entries in all: a second script call, in the
		// same pipeline; another mode: a call of its own.
		big := func(k slots.KeySet, from int) AddCall {
			es := make([]Entry, 400)
			for i := range es {
				es[i] = Entry{fmt.Sprint(from + i), t0 + int64(i), 0}
			}
			return AddCall{Keys: k, Mode: ModeSet, Entries: es}
		}
		restore := AddCall{Keys: k1, Mode: ModeRestore, Entries: []Entry{{"1", t0, 0}, {"5", t0 + 30, 0}}}
		calls = b.Calls.Seen(addSHA)
		b.Calls.Pipelines()
		rs, err = Add(ctx, b.Client, big(k1, 1000), big(k2, 2000), big(k3, 3000), restore)
		if err != nil {
			t.Fatal(err)
		}
		if got, p := b.Calls.Seen(addSHA)-calls, b.Calls.Pipelines(); got != 3 || !slices.Equal(p, []int{3}) {
			t.Errorf("%d script calls in pipelines %v, want 3 in one", got, p)
		}
		if len(rs) != 4 || rs[0].Added != 400 || rs[1].Added != 400 || rs[2].Added != 400 || rs[3].Added != 1 {
			t.Errorf("Add = %+v, want 400, 400, 400 and 1 added", rs)
		}
	})
}

// TestAckSlots: acks of more than MaxBatch leases in all take a second
// script call, and each slot answers for its own leases.
func TestAckSlots(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		var calls []AckCall
		for slot := range 3 {
			k := keysOf(b, 60+slot)
			es := make([]Entry, 400)
			for i := range es {
				es[i] = Entry{fmt.Sprint(slot*1000 + i), t0, 0}
			}
			addSet(t, b, k, es...)
			r := claim(t, b, k, t0, MaxBatch, 1000)
			hs := make([]Held, 0, len(r.Leased))
			for _, l := range r.Leased[:len(r.Leased)-1] { // one left leased
				hs = append(hs, held(l))
			}
			calls = append(calls, AckCall{Keys: k, Leases: hs})
		}
		// Loaded: no NOSCRIPT to count.
		if err := Load(ctx, b.Client); err != nil {
			t.Fatal(err)
		}
		before := b.Calls.Seen(ackScript.Hash())
		b.Calls.Pipelines()
		rs, err := AckEach(ctx, b.Client, calls...)
		if err != nil {
			t.Fatal(err)
		}
		if got, p := b.Calls.Seen(ackScript.Hash())-before, b.Calls.Pipelines(); got != 2 || !slices.Equal(p, []int{2}) {
			t.Errorf("%d script calls in pipelines %v, want 2 in one", got, p)
		}
		for i, r := range rs {
			if r.Removed != 399 || r.PrepareHead != (Head{Ms: t0 + 1000, OK: true}) {
				t.Errorf("slot %d: %+v, want 399 removed and one lease left", i, r)
			}
		}
		if len(rs) != 3 {
			t.Errorf("%d results for 3 calls", len(rs))
		}
	})
}

// TestAckRefusesLayout: an ack whose counts do not match its keys
// removes nothing.
func TestAckRefusesLayout(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k1, k2 := keysOf(b, 70), keysOf(b, 71)
		addSet(t, b, k1, Entry{"1", t0, 0})
		r := claim(t, b, k1, t0, 10, 1000)
		tok := strconv.FormatFloat(r.Leased[0].Token, 'f', -1, 64)
		for _, c := range []struct {
			name string
			keys []string
			args []any
		}{
			{"a count beyond the arguments", []string{k1.Prepare, k2.Prepare}, []any{1, "1", tok, 2, "2", tok}},
			{"a count that is no number", []string{k1.Prepare, k2.Prepare}, []any{1, "1", tok, "x"}},
			{"a slot without a key", []string{k1.Prepare}, []any{1, "1", tok, 0}},
			{"a key without a slot", []string{k1.Prepare, k2.Prepare}, []any{1, "1", tok}},
		} {
			err := ackScript.Run(ctx, b.Client, c.keys, c.args...).Err()
			if err == nil || !strings.Contains(err.Error(), "ERR ack:") {
				t.Errorf("%s: %v, want the script's refusal", c.name, err)
			}
			wantSet(t, b, k1.Prepare, Entry{"1", t0 + 1000, 0})
		}
	})
}

// TestAddRefusesLayout: a call whose groups do not match its keys writes
// nothing, not even the groups before the one that is wrong.
func TestAddRefusesLayout(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k1, k2 := keysOf(b, 50), keysOf(b, 51)
		keys := func(ks ...slots.KeySet) []string {
			var out []string
			for _, k := range ks {
				out = append(out, k.DueHigh, k.Due, k.DueLow, k.Prepare, k.Dead, k.Window, k.WindowEnd, k.Later)
			}
			return out
		}
		head := []any{"set", "", 0, ""}
		slot1 := []any{"a 50", 1, "1", t0 * 128, "0"}
		for _, c := range []struct {
			name string
			keys []string
			args []any
		}{
			{"a count beyond the arguments", keys(k1, k2), append(append(slices.Clone(head), slot1...), "a 51", 2, "2", t0*128, "0")},
			{"a count that is no number", keys(k1, k2), append(append(slices.Clone(head), slot1...), "a 51", "x")},
			{"a negative count", keys(k1, k2), append(append(slices.Clone(head), slot1...), "a 51", -1)},
			{"a slot without keys", keys(k1), append(append(slices.Clone(head), slot1...), "a 51", 0)},
			{"keys without a slot", keys(k1, k2), append(slices.Clone(head), slot1...)},
		} {
			err := addScript.Run(ctx, b.Client, c.keys, c.args...).Err()
			if err == nil || !strings.Contains(err.Error(), "ERR add:") {
				t.Errorf("%s: %v, want the script's refusal", c.name, err)
			}
			wantSet(t, b, k1.Due)
		}
	})
}

func TestAddRestore(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 0)
		addSet(t, b, k, Entry{"leased", t0, 0}, Entry{"stored", t0 + 50, 3})
		claim(t, b, k, t0, 10, 1000)
		if err := b.Client.ZAdd(ctx, k.Dead, redis.Z{Score: float64(t0*128 + 4), Member: "dead"}).Err(); err != nil {
			t.Fatal(err)
		}
		r := addOne(t, b, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{
			{"leased", t0 - 10, 0}, {"stored", t0 - 10, 0}, {"dead", t0 - 10, 0}, {"new", t0 + 20, 1},
		}})
		if r.Added != 1 || r.Earliest != (Head{t0 + 20, 1, true}) {
			t.Errorf("restore = %+v, want 1 added, earliest at t0+20", r)
		}
		wantSet(t, b, k.Due, Entry{"new", t0 + 20, 1}, Entry{"stored", t0 + 50, 3})
		wantSet(t, b, k.Prepare, Entry{"leased", t0 + 1000, 0})
		wantSet(t, b, k.Dead, Entry{"dead", t0, 4})
		// Restore again: nothing new, no wake.
		r = addOne(t, b, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{{"new", t0 - 100, 0}}})
		if r.Added != 0 || r.Earliest.OK {
			t.Errorf("second restore = %+v, want nothing", r)
		}
	})
}

func TestScoreEdgesRoundTrip(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 1)
		es := []Entry{
			{"a0", 0, 0},
			{"a127", 0, MaxAttempt},
			{"now0", t0, 0},
			{"now127", t0, 127},
			{"y2400", y2400, 5},
			{"max0", MaxMillis, 0},
			{"max127", MaxMillis, MaxAttempt},
		}
		addSet(t, b, k, es...)
		wantSet(t, b, k.Due, es...)

		bad := []Entry{{"neg", -1, 0}, {"big", MaxMillis + 1, 0}, {"att", t0, 128}, {"natt", t0, -1}}
		for _, e := range bad {
			_, err := Add(t.Context(), b.Client, AddCall{Keys: k, Mode: ModeSet, Entries: []Entry{e}})
			if !errors.Is(err, ErrRange) {
				t.Errorf("Add(%+v) error = %v, want ErrRange", e, err)
			}
		}
		wantSet(t, b, k.Due, es...)
	})
}

func TestClaimOrder(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 2)
		addSet(t, b, k,
			Entry{"3", t0, 1}, Entry{"2", t0, 0}, Entry{"10", t0, 0}, Entry{"1", t0 - 1, 5},
			Entry{"9", t0 + 1, 0}, Entry{"far", y2400, 0})
		r := claim(t, b, k, t0, 10, 30_000)
		if got, want := memberNames(r.Leased), []string{"1", "10", "2", "3"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v (by ms, then attempt, then member)", got, want)
		}
		for _, l := range r.Leased {
			want := float64((t0+30_000)*128) + float64(l.Attempt)
			if l.Token != want {
				t.Errorf("%s: token %v, want %v", l.Member, l.Token, want)
			}
		}
		if a := []int{r.Leased[0].Attempt, r.Leased[1].Attempt, r.Leased[3].Attempt}; !slices.Equal(a, []int{5, 0, 1}) {
			t.Errorf("attempts %v, want [5 0 1] (kept from the due set)", a)
		}
		if r.DueHead != (Head{t0 + 1, 0, true}) || r.PrepareHead != (Head{t0 + 30_000, 0, true}) {
			t.Errorf("heads %+v %+v", r.DueHead, r.PrepareHead)
		}
		wantSet(t, b, k.Due, Entry{"9", t0 + 1, 0}, Entry{"far", y2400, 0})
		wantSet(t, b, k.Prepare,
			Entry{"10", t0 + 30_000, 0}, Entry{"2", t0 + 30_000, 0}, Entry{"3", t0 + 30_000, 1}, Entry{"1", t0 + 30_000, 5})

		// Due exactly now is claimed; one millisecond later is not.
		r = claim(t, b, k, t0+1, 10, 100)
		if got := memberNames(r.Leased); !slices.Equal(got, []string{"9"}) {
			t.Errorf("claim at t0+1 = %v, want [9]", got)
		}
		if r.PrepareHead != (Head{t0 + 101, 0, true}) {
			t.Errorf("prepare head %+v, want the new lease at t0+101", r.PrepareHead)
		}
		// Years ahead: not due until then.
		if r = claim(t, b, k, y2400-1, 10, 100); len(r.Leased) != 0 || r.DueHead != (Head{y2400, 0, true}) {
			t.Errorf("claim before 2400 = %+v", r)
		}
		if r = claim(t, b, k, y2400, 10, 100); !slices.Equal(memberNames(r.Leased), []string{"far"}) || r.DueHead.OK {
			t.Errorf("claim at 2400 = %+v", r)
		}
	})
}

func TestClaimLimit(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 4)
		var es []Entry
		for i := range 25 {
			es = append(es, Entry{fmt.Sprintf("m%02d", i), t0 + int64(i), 0})
		}
		addSet(t, b, k, es...)
		now := t0 + 100
		for i, want := range []int{10, 10, 5, 0} {
			r := claim(t, b, k, now, 10, 1000)
			if len(r.Leased) != want {
				t.Fatalf("claim %d: %d leased, want %d", i, len(r.Leased), want)
			}
			if want > 0 && r.Leased[0].Member != es[i*10].Member {
				t.Errorf("claim %d starts at %s, want %s (oldest first)", i, r.Leased[0].Member, es[i*10].Member)
			}
			if wantHead := i < 2; r.DueHead.OK != wantHead {
				t.Errorf("claim %d: due head %+v", i, r.DueHead)
			}
		}
		if n, _ := b.Client.ZCard(t.Context(), k.Prepare).Result(); n != 25 {
			t.Errorf("prepare holds %d, want 25", n)
		}
	})
}

func TestClaimEdges(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 5)
		addSet(t, b, k, Entry{"top", MaxMillis - 10, MaxAttempt})
		r := claim(t, b, k, MaxMillis-10, 1, 10)
		if len(r.Leased) != 1 || r.Leased[0].Token != 1<<53-1 || r.Leased[0].Attempt != MaxAttempt {
			t.Fatalf("claim at the top of the range = %+v, want token 2^53-1", r)
		}
		if n, err := Ack(ctx, b.Client, AckCall{Keys: k, Leases: []Held{held(r.Leased[0])}}); err != nil || n != 1 {
			t.Errorf("Ack = %d, %v; want 1", n, err)
		}
		for _, c := range []struct {
			now   int64
			limit int
			lease int64
		}{
			{t0, 0, 10}, {t0, MaxBatch + 1, 10}, {t0, 1, 0}, {-1, 1, 10},
			{MaxMillis + 1, 1, 10}, {MaxMillis - 5, 1, 6},
		} {
			if _, err := Claim(ctx, b.Client, k, c.now, c.limit, c.lease, testAging); err == nil {
				t.Errorf("Claim(now %d, limit %d, lease %d) succeeded", c.now, c.limit, c.lease)
			}
		}
		if r := claim(t, b, k, t0, 1, 1); len(r.Leased) != 0 || r.DueHead.OK || r.PrepareHead.OK {
			t.Errorf("claim of empty slot = %+v", r)
		}
	})
}

func TestAck(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k1, k2 := keysOf(b, 6), keysOf(b, 7)
		addSet(t, b, k1, Entry{"1", t0, 0}, Entry{"2", t0, 1}, Entry{"3", t0, 2})
		addSet(t, b, k2, Entry{"4", t0, 0})
		r1, r2 := claim(t, b, k1, t0, 10, 1000), claim(t, b, k2, t0, 10, 1000)
		wrong := held(r1.Leased[2])
		wrong.Token += 128 // same attempt, another lease deadline
		// Loaded: no NOSCRIPT to count.
		if err := Load(ctx, b.Client); err != nil {
			t.Fatal(err)
		}
		calls := b.Calls.Seen(ackScript.Hash())
		n, err := Ack(ctx, b.Client,
			AckCall{Keys: k1, Leases: []Held{held(r1.Leased[0]), held(r1.Leased[1]), wrong, {Member: "absent", Token: wrong.Token}}},
			AckCall{Keys: k2, Leases: []Held{held(r2.Leased[0])}})
		if err != nil || n != 3 {
			t.Fatalf("Ack = %d, %v; want 3", n, err)
		}
		// One server: both slots in one script call.
		if got := b.Calls.Seen(ackScript.Hash()) - calls; got != 1 {
			t.Errorf("%d script calls for two slots, want 1", got)
		}
		wantSet(t, b, k1.Prepare, Entry{"3", t0 + 1000, 2})
		wantSet(t, b, k2.Prepare)
		// Each call tells the lease end left first in its Prepare set.
		rs, err := AckEach(ctx, b.Client, AckCall{Keys: k1, Leases: []Held{held(r1.Leased[0])}}, AckCall{Keys: k2})
		if err != nil || len(rs) != 2 || rs[0].Removed != 0 || rs[0].PrepareHead != (Head{Ms: t0 + 1000, Attempt: 2, OK: true}) || rs[1].PrepareHead.OK {
			t.Errorf("AckEach = %+v, %v; want k1's head at %d, k2 empty", rs, err, t0+1000)
		}
		// Acking again removes nothing.
		if n, err := Ack(ctx, b.Client, AckCall{Keys: k1, Leases: []Held{held(r1.Leased[0])}}); err != nil || n != 0 {
			t.Errorf("second Ack = %d, %v; want 0", n, err)
		}
		if _, err := Ack(ctx, b.Client, AckCall{Keys: k1, Leases: []Held{{Member: "x", Token: 0.5}}}); !errors.Is(err, ErrRange) {
			t.Errorf("Ack with a fractional token: %v, want ErrRange", err)
		}
	})
}

// TestLeaseTakenOver: a lease that expired, was swept and claimed again
// cannot be acked or retried with the old token.
func TestLeaseTakenOver(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 8)
		addSet(t, b, k, Entry{"1", t0, 0})
		old := claim(t, b, k, t0, 1, 1000).Leased[0]
		if s, err := Sweep(ctx, b.Client, k, t0+1000, 10, 64); err != nil || s.Returned != 1 {
			t.Fatalf("Sweep = %+v, %v", s, err)
		}
		cur := claim(t, b, k, t0+1000, 1, 1000).Leased[0]
		if cur.Attempt != 1 {
			t.Errorf("attempt after sweep = %d, want 1", cur.Attempt)
		}
		if n, err := Ack(ctx, b.Client, AckCall{Keys: k, Leases: []Held{held(old)}}); err != nil || n != 0 {
			t.Errorf("Ack(old) = %d, %v; want 0", n, err)
		}
		if o, err := Retry(ctx, b.Client, k, held(old), t0+5000, 16, t0+1500); err != nil || o != Lost {
			t.Errorf("Retry(old) = %v, %v; want Lost", o, err)
		}
		wantSet(t, b, k.Prepare, Entry{"1", t0 + 2000, 1})
		if n, err := Ack(ctx, b.Client, AckCall{Keys: k, Leases: []Held{held(cur)}}); err != nil || n != 1 {
			t.Errorf("Ack(current) = %d, %v; want 1", n, err)
		}
	})
}

func TestRetry(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		tests := []struct {
			name        string
			attempt     int
			maxAttempts int
			tamper      func(Held) Held
			readd       bool // the job is added to its due set again while leased
			want        RetryResult
			due, dead   []Entry
			prepare     bool // lease left in Prepare
		}{
			{name: "retried", attempt: 0, maxAttempts: 3, want: Retried,
				due: []Entry{{"j", t0 + 5000, 1}}},
			{name: "retried below max", attempt: 1, maxAttempts: 3, want: Retried,
				due: []Entry{{"j", t0 + 5000, 2}}},
			{name: "buried at max", attempt: 2, maxAttempts: 3, want: Buried,
				dead: []Entry{{"j", t0 + 100, 3}}},
			{name: "max 1 buries the first failure", attempt: 0, maxAttempts: 1, want: Buried,
				dead: []Entry{{"j", t0 + 100, 1}}},
			{name: "buried leaves the due set", attempt: 4, maxAttempts: 5, readd: true, want: Buried,
				dead: []Entry{{"j", t0 + 100, 5}}},
			{name: "retried replaces the due entry", attempt: 0, maxAttempts: 5, readd: true, want: Retried,
				due: []Entry{{"j", t0 + 5000, 1}}},
			{name: "126 to 127", attempt: 126, maxAttempts: MaxAttempt, want: Buried,
				dead: []Entry{{"j", t0 + 100, 127}}},
			{name: "127 saturates", attempt: 127, maxAttempts: MaxAttempt, want: Buried,
				dead: []Entry{{"j", t0 + 100, 127}}},
			{name: "wrong token", attempt: 0, maxAttempts: 3, want: Lost, prepare: true,
				tamper: func(h Held) Held { h.Token++; return h }},
			{name: "absent", attempt: 0, maxAttempts: 3, want: Lost, prepare: true,
				tamper: func(h Held) Held { h.Member = "other"; return h }},
		}
		for i, tt := range tests {
			k := keysOf(b, 100+i)
			addSet(t, b, k, Entry{"j", t0, tt.attempt})
			l := claim(t, b, k, t0, 1, 1000).Leased[0]
			if tt.readd {
				addSet(t, b, k, Entry{"j", t0 + 9999, 0})
			}
			h := held(l)
			if tt.tamper != nil {
				h = tt.tamper(h)
			}
			got, err := Retry(t.Context(), b.Client, k, h, t0+5000, tt.maxAttempts, t0+100)
			if err != nil || got != tt.want {
				t.Errorf("%s: Retry = %v, %v; want %v", tt.name, got, err, tt.want)
			}
			wantSet(t, b, k.Due, tt.due...)
			wantSet(t, b, k.Dead, tt.dead...)
			if tt.prepare {
				wantSet(t, b, k.Prepare, Entry{"j", t0 + 1000, tt.attempt})
			} else {
				wantSet(t, b, k.Prepare)
			}
		}
		k := keysOf(b, 99)
		for _, c := range []struct {
			h           Held
			at          int64
			maxAttempts int
			now         int64
		}{
			{Held{"j", -1}, t0, 3, t0}, {Held{"j", 1 << 53}, t0, 3, t0}, {Held{"j", 128}, -1, 3, t0},
			{Held{"j", 128}, MaxMillis + 1, 3, t0}, {Held{"j", 128}, t0, 0, t0}, {Held{"j", 128}, t0, 128, t0},
			{Held{"j", 128}, t0, 3, -1},
		} {
			if _, err := Retry(t.Context(), b.Client, k, c.h, c.at, c.maxAttempts, c.now); err == nil {
				t.Errorf("Retry(%+v, %d, %d, %d) succeeded", c.h, c.at, c.maxAttempts, c.now)
			}
		}
	})
}

func TestSweep(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 11)
		addSet(t, b, k, Entry{"short", t0, 0}, Entry{"long", t0, 0}, Entry{"tired", t0, 4}, Entry{"readded", t0, 2},
			Entry{"tired2", t0, 4})
		// Claim one by one, in due-set order (attempt, then member), so each
		// gets its own lease length.
		for _, c := range []struct {
			member string
			lease  int64
		}{{"long", 500}, {"short", 100}, {"readded", 100}, {"tired", 100}, {"tired2", 100}} {
			r := claim(t, b, k, t0, 1, c.lease)
			if len(r.Leased) != 1 || r.Leased[0].Member != c.member {
				t.Fatalf("claim = %+v, want %s", r.Leased, c.member)
			}
		}
		addSet(t, b, k, Entry{"readded", t0 + 9999, 0}, Entry{"tired2", t0 + 9999, 0})

		// Nothing has expired before t0+100.
		s, err := Sweep(ctx, b.Client, k, t0+99, 10, 5)
		if err != nil || s.Returned != 0 || len(s.Dead) != 0 || s.PrepareHead != (Head{t0 + 100, 0, true}) {
			t.Fatalf("early Sweep = %+v, %v", s, err)
		}
		// At t0+100 four leases ended (a deadline equal to now counts).
		s, err = Sweep(ctx, b.Client, k, t0+100, 10, 5)
		if err != nil {
			t.Fatal(err)
		}
		if s.Returned != 2 || !slices.Equal(s.Dead, []Entry{{"tired", t0 + 100, 5}, {"tired2", t0 + 100, 5}}) ||
			s.PrepareHead != (Head{t0 + 500, 0, true}) {
			t.Errorf("Sweep = %+v", s)
		}
		wantSet(t, b, k.Due, Entry{"short", t0 + 100, 1}, Entry{"readded", t0 + 9999, 0})
		wantSet(t, b, k.Prepare, Entry{"long", t0 + 500, 0})
		wantSet(t, b, k.Dead, Entry{"tired", t0 + 100, 5}, Entry{"tired2", t0 + 100, 5})

		// Limit.
		k = keysOf(b, 12)
		var es []Entry
		for i := range 5 {
			es = append(es, Entry{fmt.Sprint(i), t0, 0})
		}
		addSet(t, b, k, es...)
		claim(t, b, k, t0, 10, 10)
		s, err = Sweep(ctx, b.Client, k, t0+10, 2, 64)
		if err != nil || s.Returned != 2 || s.PrepareHead != (Head{t0 + 10, 0, true}) {
			t.Errorf("limited Sweep = %+v, %v", s, err)
		}
		if n, _ := b.Client.ZCard(ctx, k.Prepare).Result(); n != 3 {
			t.Errorf("prepare holds %d after a sweep of 2, want 3", n)
		}
		if s, err = Sweep(ctx, b.Client, k, t0+10, 10, 64); err != nil || s.Returned != 3 || s.PrepareHead.OK {
			t.Errorf("second Sweep = %+v, %v", s, err)
		}
		for _, c := range []struct {
			now        int64
			limit, cap int
		}{{t0, 0, 5}, {t0, MaxBatch + 1, 5}, {t0, 1, 0}, {t0, 1, 128}, {-1, 1, 5}} {
			if _, err := Sweep(ctx, b.Client, k, c.now, c.limit, c.cap); err == nil {
				t.Errorf("Sweep(%+v) succeeded", c)
			}
		}
	})
}

// Reclaim takes back leases that have not ended, due now with one more
// attempt, and the old holder's ack no longer holds.
func TestReclaim(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 15)
		addSet(t, b, k, Entry{"a", t0, 0}, Entry{"b", t0, 2})
		leased := claim(t, b, k, t0, 2, 60000)
		if len(leased.Leased) != 2 {
			t.Fatalf("claim = %+v", leased)
		}
		if s, err := Sweep(t.Context(), b.Client, k, t0+10, 10, 64); err != nil || s.Returned != 0 {
			t.Fatalf("Sweep before the leases end = %+v, %v", s, err)
		}
		s, err := Reclaim(t.Context(), b.Client, k, t0+10, 10, 64)
		if err != nil || s.Returned != 2 || len(s.Dead) != 0 || s.PrepareHead.OK {
			t.Fatalf("Reclaim = %+v, %v", s, err)
		}
		wantSet(t, b, k.Due, Entry{"a", t0 + 10, 1}, Entry{"b", t0 + 10, 3})
		wantSet(t, b, k.Prepare)
		n, err := Ack(t.Context(), b.Client, AckCall{Keys: k, Leases: []Held{held(leased.Leased[0]), held(leased.Leased[1])}})
		if err != nil || n != 0 {
			t.Errorf("the old holder's Ack = %d, %v; want 0", n, err)
		}
	})
}

func TestSweepSaturates(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 13)
		addSet(t, b, k, Entry{"a", t0, MaxAttempt})
		claim(t, b, k, t0, 1, 10)
		s, err := Sweep(t.Context(), b.Client, k, t0+10, 1, MaxAttempt)
		if err != nil || !slices.Equal(s.Dead, []Entry{{"a", t0 + 10, MaxAttempt}}) {
			t.Errorf("Sweep = %+v, %v", s, err)
		}
		wantSet(t, b, k.Dead, Entry{"a", t0 + 10, MaxAttempt})
	})
}

func TestRevive(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx, channel, sub := subscribeWakes(t, b)
		k := keysOf(b, 14)
		revive := func(member string, ms int64) ReviveResult {
			t.Helper()
			r, err := Revive(ctx, b.Client, ReviveCall{Keys: k, Member: member, Ms: ms, WakeChannel: channel, WakeMessage: "orders 14"})
			if err != nil {
				t.Fatalf("Revive(%s): %v", member, err)
			}
			return r
		}
		addSet(t, b, k, Entry{"d", t0, 0}, Entry{"e", t0, 1}, Entry{"s", t0 + 10, 0})
		for _, l := range claim(t, b, k, t0, 2, 10).Leased {
			if o, err := Retry(ctx, b.Client, k, held(l), t0, 1, t0+5); err != nil || o != Buried {
				t.Fatalf("Retry = %v, %v", o, err)
			}
		}
		wantSet(t, b, k.Dead, Entry{"d", t0 + 5, 1}, Entry{"e", t0 + 5, 2})

		// Later than the due set's head: no wake.
		if r := revive("d", y2400); !r.Revived || r.Earliest.OK {
			t.Errorf("Revive(d) = %+v, want revived, no wake", r)
		}
		// Earlier: a wake, published.
		if r := revive("e", t0+1); !r.Revived || r.Earliest != (Head{t0 + 1, 0, true}) {
			t.Errorf("Revive(e) = %+v, want revived, earliest t0+1", r)
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if want := fmt.Sprintf("orders 14 %d", t0+1); msg.Payload != want {
			t.Errorf("message %q, want %q (and none for d)", msg.Payload, want)
		}
		wantSet(t, b, k.Due, Entry{"e", t0 + 1, 0}, Entry{"s", t0 + 10, 0}, Entry{"d", y2400, 0})
		wantSet(t, b, k.Dead)
		for _, m := range []string{"d", "s", "absent"} {
			if r := revive(m, t0-100); r.Revived || r.Earliest.OK {
				t.Errorf("Revive(%s) = %+v; want nothing", m, r)
			}
		}
		wantSet(t, b, k.Due, Entry{"e", t0 + 1, 0}, Entry{"s", t0 + 10, 0}, Entry{"d", y2400, 0})
		if _, err := Revive(ctx, b.Client, ReviveCall{Keys: k, Member: "d", Ms: MaxMillis + 1}); !errors.Is(err, ErrRange) {
			t.Errorf("Revive out of range: %v", err)
		}
	})
}

func TestNoScriptFallback(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k1, k2, k3 := keysOf(b, 20), keysOf(b, 21), keysOf(b, 22)

		// Pipelined: three slots in one pipeline, a script call each (their
		// modes differ, so none shares a call).
		b.FlushScripts(t)
		before := b.Calls.NoScript()
		rs, err := Add(ctx, b.Client,
			AddCall{Keys: k1, Mode: ModeSet, Entries: []Entry{{"1", t0, 0}}},
			AddCall{Keys: k2, Mode: ModeRestore, Entries: []Entry{{"2", t0, 0}}},
			AddCall{Keys: k3, Mode: ModeNew, Entries: []Entry{{"3", t0, 0}}})
		if err != nil || len(rs) != 3 || rs[0].Added+rs[1].Added+rs[2].Added != 3 {
			t.Fatalf("Add after SCRIPT FLUSH = %+v, %v", rs, err)
		}
		if b.Calls.NoScript() < before+3 {
			t.Errorf("NOSCRIPT replies %d, want at least 3: the fallback was not exercised", b.Calls.NoScript()-before)
		}
		wantSet(t, b, k3.Due, Entry{"3", t0, 0})

		// Single call.
		b.FlushScripts(t)
		before = b.Calls.NoScript()
		r := claim(t, b, k1, t0, 10, 100)
		if len(r.Leased) != 1 || b.Calls.NoScript() != before+1 {
			t.Errorf("Claim after SCRIPT FLUSH = %+v, NOSCRIPT %d", r, b.Calls.NoScript()-before)
		}
		r2 := claim(t, b, k2, t0, 10, 100)

		// An ack of two slots, one script call on one server.
		b.FlushScripts(t)
		before = b.Calls.NoScript()
		n, err := Ack(ctx, b.Client, AckCall{Keys: k1, Leases: []Held{held(r.Leased[0])}},
			AckCall{Keys: k2, Leases: []Held{held(r2.Leased[0])}})
		if err != nil || n != 2 || b.Calls.NoScript() != before+1 {
			t.Errorf("Ack after SCRIPT FLUSH = %d, %v; NOSCRIPT %d", n, err, b.Calls.NoScript()-before)
		}
		// The fallback cached the script: no more NOSCRIPT.
		before = b.Calls.NoScript()
		if _, err := Ack(ctx, b.Client, AckCall{Keys: k1}, AckCall{Keys: k2}); err != nil || b.Calls.NoScript() != before {
			t.Errorf("Ack after fallback: %v, NOSCRIPT %d", err, b.Calls.NoScript()-before)
		}
		if err := Load(ctx, b.Client); err != nil {
			t.Errorf("Load: %v", err)
		}
	})
}

// TestScriptKeysShareOneSlot runs every wrapper through a client whose hook
// fails the test when a script's keys span Redis Cluster slots.
func TestScriptKeysShareOneSlot(t *testing.T) {
	b := luatest.Mini(t)
	ctx := t.Context()
	for _, topicName := range []string{"a", "orders", "x_9-z"} {
		for _, slot := range []int{0, 1, 4095, slots.Max - 1} {
			k := slots.Keys(b.Prefix, topicName, slot)
			if _, err := Add(ctx, b.Client, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{{"1", t0, 0}}}); err != nil {
				t.Fatal(err)
			}
			r, err := Claim(ctx, b.Client, k, t0, 1, 10, testAging)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Defer(ctx, b.Client, k, held(r.Leased[0]), t0); err != nil {
				t.Fatal(err)
			}
			if _, errs := UnclaimEach(ctx, b.Client, t0, UnclaimCall{k, t0, 10}); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if _, err := Ack(ctx, b.Client, AckCall{Keys: k, Leases: []Held{held(r.Leased[0])}}); err != nil {
				t.Fatal(err)
			}
			if _, err := Retry(ctx, b.Client, k, held(r.Leased[0]), t0, 2, t0); err != nil {
				t.Fatal(err)
			}
			if _, err := Sweep(ctx, b.Client, k, t0, 1, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := Revive(ctx, b.Client, ReviveCall{Keys: k, Member: "1", Ms: t0}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, s := range scripts {
		if b.Calls.Seen(s.Hash()) == 0 {
			t.Errorf("script %s was not run; its keys went unchecked", name)
		}
	}
}

func TestCheckScriptKeys(t *testing.T) {
	k := slots.Keys("toc:", "orders", 1)
	if err := luatest.CheckScriptKeys([]any{"evalsha", "x", 3, k.Due, k.Prepare, k.Dead, "arg"}); err != nil {
		t.Errorf("keys of one slot: %v", err)
	}
	other := slots.Keys("toc:", "orders", 2)
	if err := luatest.CheckScriptKeys([]any{"evalsha", "x", 2, k.Due, other.Prepare}); err == nil {
		t.Error("keys of two slots passed")
	}
	if err := luatest.CheckScriptKeys([]any{"eval", "x", 2, "toc:orders:1:store", "toc:orders:1:prepare"}); err == nil {
		t.Error("untagged keys passed")
	}
	// add's keys: a group of eight a slot (TestMain named it to GroupKeys).
	group := func(k slots.KeySet) []any {
		return []any{k.DueHigh, k.Due, k.DueLow, k.Prepare, k.Dead, k.Window, k.WindowEnd, k.Later}
	}
	addArgs := func(keys ...any) []any { return append([]any{"evalsha", addScript.Hash(), len(keys)}, keys...) }
	if err := luatest.CheckScriptKeys(addArgs(append(group(k), group(other)...)...)); err != nil {
		t.Errorf("add over two slots: %v", err)
	}
	mixed := group(k)
	mixed[7] = other.Later
	if err := luatest.CheckScriptKeys(addArgs(mixed...)); err == nil {
		t.Error("add with a group over two slots passed")
	}
	if err := luatest.CheckScriptKeys(addArgs(group(k)[:7]...)); err == nil {
		t.Error("add with seven keys passed")
	}
	claimArgs := append([]any{"evalsha", claimScript.Hash(), 16}, append(group(k), group(other)...)...)
	if err := luatest.CheckScriptKeys(claimArgs); err == nil || !strings.Contains(err.Error(), "span") {
		t.Errorf("claim over two slots: %v, want keys spanning slots refused", err)
	}
}

// TestScriptSources checks what miniredis and a single redis-server do
// not: each script documents itself, never reads the clock, bounds its
// ranges, and touches only keys it was passed, or a later bucket, named
// by a passed key and a suffix (key .. ':' .. n), which shares the passed
// key's hash tag and so its cluster slot.
func TestScriptSources(t *testing.T) {
	srcs := map[string]string{"add": addSrc, "claim": claimSrc, "ack": ackSrc, "retry": retrySrc, "sweep": sweepSrc,
		"revive": reviveSrc, "defer": deferSrc, "unclaim": unclaimSrc}
	if len(srcs) != len(scripts) {
		t.Fatalf("%d sources for %d scripts", len(srcs), len(scripts))
	}
	// A key is KEYS[n], or KEYS[base + n] in a function over one of a
	// call's groups of keys (add's slots).
	keyLocal := regexp.MustCompile(`(?m)^\s*local ([A-Za-z, ]+) = (KEYS\[(?:base \+ )?\d\](?:, KEYS\[(?:base \+ )?\d\])*)$`)
	keyTable := regexp.MustCompile(`(?m)^\s*local (\w+) = \{([A-Za-z, ]+)\}$`)
	derived := regexp.MustCompile(`^(\w+) \.\. ':' \.\. \w+$`)
	derivedLocal := regexp.MustCompile(`(?m)^\s*local (\w+) = (\w+) \.\. ':' \.\. \w+(?:\([\w, ]*\))?$`)
	redisCall := regexp.MustCompile(`redis\.p?call\('(\w+)', ([^,)]+)`)
	for name, src := range srcs {
		if !strings.HasPrefix(src, "-- "+name+": ") {
			t.Errorf("%s: does not open with its header", name)
		}
		var header strings.Builder
		for line := range strings.Lines(src) {
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line)
		}
		for _, w := range []string{"-- KEYS[1] ", "-- ARGV[1]", "-- Reply: "} {
			if !strings.Contains(header.String(), w) {
				t.Errorf("%s: header lacks %q", name, w)
			}
		}
		if strings.Contains(strings.ToUpper(src), "'TIME'") {
			t.Errorf("%s: calls TIME", name)
		}
		keys := map[string]bool{}
		for _, m := range keyLocal.FindAllStringSubmatch(src, -1) {
			for _, n := range strings.Split(m[1], ",") {
				keys[strings.TrimSpace(n)] = true
			}
		}
		for _, m := range derivedLocal.FindAllStringSubmatch(src, -1) {
			if keys[m[2]] {
				keys[m[1]] = true
			}
		}
		// A table of keys only: indexing it gives a key.
		tables := map[string]bool{}
		for _, m := range keyTable.FindAllStringSubmatch(src, -1) {
			all := true
			for _, n := range strings.Split(m[2], ",") {
				all = all && keys[strings.TrimSpace(n)]
			}
			tables[m[1]] = all
		}
		if strings.Contains(src, "local function level") {
			t.Errorf("%s: defines level, which member.lua, its prelude, defines", name)
		}
		calls := redisCall.FindAllStringSubmatch(src, -1)
		if len(calls) == 0 {
			t.Errorf("%s: no redis.call found", name)
		}
		for _, c := range calls {
			cmd, arg := c[1], strings.TrimSpace(c[2])
			if cmd == "PUBLISH" {
				continue
			}
			table, _, indexed := strings.Cut(arg, "[")
			if d := derived.FindStringSubmatch(arg); d != nil && keys[d[1]] {
				continue
			}
			if !keys[arg] && !strings.HasPrefix(arg, "KEYS[") && !(indexed && tables[table]) {
				t.Errorf("%s: %s on %q, not a key passed in KEYS", name, cmd, arg)
			}
			if cmd == "ZRANGEBYSCORE" && !strings.Contains(src[strings.Index(src, c[0]):], "'LIMIT'") {
				t.Errorf("%s: ZRANGEBYSCORE without LIMIT", name)
			}
		}
	}
}

// TestMaxBatch runs every batch script at its cap, where unpack() takes
// 2*MaxBatch values.
func TestMaxBatch(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 30)
		es := make([]Entry, MaxBatch)
		for i := range es {
			es[i] = Entry{fmt.Sprint(i + 1), t0 + int64(i%7), i % 3}
		}
		if r := addSet(t, b, k, es...); r.Added != MaxBatch {
			t.Fatalf("Add = %+v", r)
		}
		if r := addOne(t, b, AddCall{Keys: keysOf(b, 31), Mode: ModeRestore, Entries: es}); r.Added != MaxBatch {
			t.Fatalf("restore Add = %+v", r)
		}
		c := claim(t, b, k, t0+10, MaxBatch, 100)
		if len(c.Leased) != MaxBatch || c.DueHead.OK {
			t.Fatalf("Claim leased %d, due head %+v", len(c.Leased), c.DueHead)
		}
		hs := make([]Held, 0, MaxBatch)
		for _, l := range c.Leased[:MaxBatch/2] {
			hs = append(hs, held(l))
		}
		if n, err := Ack(ctx, b.Client, AckCall{Keys: k, Leases: hs}); err != nil || n != MaxBatch/2 {
			t.Fatalf("Ack = %d, %v", n, err)
		}
		s, err := Sweep(ctx, b.Client, k, t0+110, MaxBatch, 2)
		if err != nil || s.Returned+len(s.Dead) != MaxBatch/2 || len(s.Dead) == 0 || s.Returned == 0 {
			t.Fatalf("Sweep = %d returned, %d dead, %v", s.Returned, len(s.Dead), err)
		}
		if _, err := Add(ctx, b.Client, AddCall{Keys: k, Mode: ModeSet, Entries: make([]Entry, MaxBatch+1)}); err == nil {
			t.Error("Add of MaxBatch+1 entries succeeded")
		}
	})
}

// subscribeWakes subscribes to b's wake channel; ctx ends after 10 s, so
// a message that never comes fails the test instead of hanging it.
func subscribeWakes(t *testing.T, b *luatest.Backend) (context.Context, string, *redis.PubSub) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	channel := b.Prefix + "wake"
	sub := b.Client.Subscribe(ctx, channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	return ctx, channel, sub
}
