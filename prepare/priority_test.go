package prepare

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// TestPrioritiesAgree checks that package lua encodes timer's priorities
// and that the claim script gets timer's aging.
func TestPrioritiesAgree(t *testing.T) {
	for _, c := range []struct {
		p   timer.Priority
		lua int
	}{{timer.PriorityHigh, lua.PriorityHigh}, {timer.PriorityNormal, lua.PriorityNormal}, {timer.PriorityLow, lua.PriorityLow}} {
		if int(c.p) != c.lua {
			t.Errorf("timer priority %v = %d, lua's = %d", c.p, c.p, c.lua)
		}
		l, err := leaseOf(timer.Slot{}, member(42, c.p), 0, 0)
		if err != nil || l.ID != 42 || l.Priority != c.p {
			t.Errorf("leaseOf(member(42, %v)) = %+v, %v", c.p, l, err)
		}
	}
	want := lua.Aging{High: 0, Normal: 10_000, Low: 60_000}
	if aging != want {
		t.Errorf("aging = %+v, want %+v (timer.PriorityAging)", aging, want)
	}
	for _, p := range []timer.Priority{timer.PriorityHigh, timer.PriorityNormal, timer.PriorityLow} {
		if got := dueIndex(p); got < 0 || got > 2 {
			t.Errorf("dueIndex(%v) = %d", p, got)
		}
	}
	if dueIndex(timer.PriorityHigh) != 0 || dueIndex(timer.PriorityLow) != 2 {
		t.Error("dueIndex does not follow KeySet.Dues")
	}
	for _, m := range []string{"", "h", "12!", "12hh", "-1", "0l", "01", "zzzzzzzzzzz"} {
		if _, err := leaseOf(timer.Slot{}, m, 0, 0); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("leaseOf(%q) = %v, want ErrInvalid", m, err)
		}
	}
}

func tmp(id timer.JobID, due time.Time, p timer.Priority) timer.Timer {
	t := tm(id, "orders", 1, due)
	t.Priority = p
	return t
}

func TestPriorityCycle(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		k := q.Keys(s)
		high, normal, low := timer.PriorityHigh, timer.PriorityNormal, timer.PriorityLow
		wakes, err := q.Add(ctx, []timer.Timer{
			tmp(1, at(5000), high),   // rank 5000
			tmp(2, at(0), normal),    // rank 10000
			tmp(3, at(-61_000), low), // rank -1000
			tmp(4, at(0), high),      // rank 0
			tmp(5, at(9000), low),    // rank 69000
			tmp(6, at(80_000), high), // not due at 70000
		})
		if err != nil || !slices.Equal(wakes, []timer.Wake{{Slot: s, DueAt: at(-61_000)}}) {
			t.Fatalf("Add = %v, %v", wakes, err)
		}
		if got := setOf(t, b, k.DueHigh); !slices.Equal(got, []string{"4h@0/0", "1h@5000/0", "6h@80000/0"}) {
			t.Errorf("DueHigh = %v", got)
		}
		if got := setOf(t, b, k.DueLow); !slices.Equal(got, []string{"3l@-61000/0", "5l@9000/0"}) {
			t.Errorf("DueLow = %v", got)
		}
		if next, err := q.Peek(ctx, s); err != nil || next != at(-61_000) {
			t.Errorf("Peek = %v, %v; want the low job's due time", next, err)
		}

		c, err := q.Claim(ctx, s, at(70_000), 10, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var ids []timer.JobID
		var ps []timer.Priority
		for _, l := range c.Leases {
			ids = append(ids, l.ID)
			ps = append(ps, l.Priority)
		}
		if !slices.Equal(ids, []timer.JobID{3, 4, 1, 2, 5}) || !slices.Equal(ps, []timer.Priority{low, high, high, normal, low}) {
			t.Errorf("claimed %v %v", ids, ps)
		}
		if c.NextDue != at(80_000) {
			t.Errorf("next due %v, want the high job's at 80000", c.NextDue)
		}
		lease := map[timer.JobID]timer.Lease{}
		for _, l := range c.Leases {
			lease[l.ID] = l
		}

		// Ack, Retry and Defer find each lease by its priority's member.
		if n, err := q.Ack(ctx, []timer.Lease{lease[3], lease[4]}); err != nil || n != 2 {
			t.Errorf("Ack = %d, %v", n, err)
		}
		if o, err := q.Retry(ctx, lease[1], at(71_000), 5, at(70_001)); err != nil || o != timer.Retried {
			t.Errorf("Retry = %v, %v", o, err)
		}
		if o, err := q.Retry(ctx, lease[5], at(71_000), 1, at(70_001)); err != nil || o != timer.Buried {
			t.Errorf("Retry = %v, %v", o, err)
		}
		if ok, err := q.Defer(ctx, lease[2], at(75_000)); err != nil || !ok {
			t.Errorf("Defer = %v, %v", ok, err)
		}
		if got := setOf(t, b, k.DueHigh); !slices.Equal(got, []string{"1h@71000/1", "6h@80000/0"}) {
			t.Errorf("DueHigh = %v", got)
		}
		if got := dueOf(t, b, q, s); !slices.Equal(got, []string{"2@75000/0"}) {
			t.Errorf("due = %v", got)
		}
		if got := setOf(t, b, k.Dead); !slices.Equal(got, []string{"5l@70001/1"}) {
			t.Errorf("Dead = %v", got)
		}
		// A lease of the wrong priority is another member: not held.
		wrong := lease[2]
		wrong.Priority = high
		if ok, err := q.Defer(ctx, wrong, at(1)); err != nil || ok {
			t.Errorf("Defer of a wrong priority = %v, %v", ok, err)
		}

		// Revive and Remove use the timer's priority.
		ok, wakes, err := q.Revive(ctx, tmp(5, at(60_000), low))
		if err != nil || !ok || !slices.Equal(wakes, []timer.Wake{{Slot: s, DueAt: at(60_000)}}) {
			t.Errorf("Revive = %v, %v, %v", ok, wakes, err)
		}
		if got := setOf(t, b, k.DueLow); !slices.Equal(got, []string{"5l@60000/0"}) {
			t.Errorf("DueLow = %v", got)
		}
		stored, leased, dead, next, err := q.Stats(ctx, "orders", 1)
		if err != nil || stored != 4 || leased != 0 || dead != 0 || next != at(60_000) {
			t.Errorf("Stats = %d %d %d %v %v; want 4 stored over three sets, next at 60000", stored, leased, dead, next, err)
		}
		n, err := q.Remove(ctx, []timer.Timer{tmp(1, t0, high), tmp(2, t0, normal), tmp(5, t0, low), tmp(6, t0, low)})
		if err != nil || n != 3 {
			t.Errorf("Remove = %d, %v; want 3 (6 is high, not low)", n, err)
		}
		if got := setOf(t, b, k.DueHigh); !slices.Equal(got, []string{"6h@80000/0"}) {
			t.Errorf("DueHigh after Remove = %v", got)
		}
	})
}

func TestDefer(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		tt := tmp(1, at(0), timer.PriorityLow)
		tt.Attempt = 4
		if _, err := q.Add(ctx, []timer.Timer{tt}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(0), 1, time.Second)
		if err != nil || len(c.Leases) != 1 {
			t.Fatal(c, err)
		}
		l := c.Leases[0]
		if ok, err := q.Defer(ctx, l, at(30_000)); err != nil || !ok {
			t.Errorf("Defer = %v, %v", ok, err)
		}
		// The attempt count is kept: the job was not sent.
		if got := setOf(t, b, q.Keys(s).DueLow); !slices.Equal(got, []string{"1l@30000/4"}) {
			t.Errorf("DueLow = %v", got)
		}
		if ok, err := q.Defer(ctx, l, at(1)); err != nil || ok {
			t.Errorf("second Defer = %v, %v; want false", ok, err)
		}
		// A lease that expired and was swept is lost.
		c, err = q.Claim(ctx, s, at(30_000), 1, time.Second)
		if err != nil || len(c.Leases) != 1 || c.Leases[0].Attempt != 4 {
			t.Fatal(c, err)
		}
		if _, err := q.Sweep(ctx, s, at(31_000), 10); err != nil {
			t.Fatal(err)
		}
		if ok, err := q.Defer(ctx, c.Leases[0], at(1)); err != nil || ok {
			t.Errorf("Defer of a swept lease = %v, %v; want false", ok, err)
		}
		if got := setOf(t, b, q.Keys(s).DueLow); !slices.Equal(got, []string{"1l@31000/5"}) {
			t.Errorf("DueLow = %v", got)
		}
	})
}

func TestPriorityInvalid(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	ctx := t.Context()
	s := timer.Slot{Topic: "orders"}
	bad := tmp(1, t0, 2)
	l := timer.Lease{ID: 1, Slot: s, Priority: -2, Token: 128}
	for name, err := range map[string]error{
		"add":          second(q.Add(ctx, []timer.Timer{bad})),
		"restore":      third(q.Restore(ctx, []timer.Timer{bad})),
		"remove":       second(q.Remove(ctx, []timer.Timer{bad})),
		"revive":       third(q.Revive(ctx, bad)),
		"ack":          second(q.Ack(ctx, []timer.Lease{l})),
		"retry":        second(q.Retry(ctx, l, t0, 3, t0)),
		"defer":        second(q.Defer(ctx, l, t0)),
		"defer slot":   second(q.Defer(ctx, timer.Lease{ID: 1, Token: 128}, t0)),
		"defer token":  second(q.Defer(ctx, timer.Lease{ID: 1, Slot: s, Token: 0.5}, t0)),
		"defer at":     second(q.Defer(ctx, timer.Lease{ID: 1, Slot: s, Token: 128}, time.Time{})),
		"defer beyond": second(q.Defer(ctx, timer.Lease{ID: 1, Slot: s, Token: 128}, time.UnixMilli(lua.MaxMillis+1))),
	} {
		if !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}
