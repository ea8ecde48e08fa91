package timertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// IndexLeaser is the Redis timer index whole: the scheduling path's side
// and the worker's.
type IndexLeaser interface {
	timer.Index
	timer.Leaser
}

// TestIndex runs the timer index contract, the semantics of the Lua
// scripts behind prepare's Redis index, against the indexes open returns:
// each fresh and empty. Its subtests run in parallel. prepare runs it on
// miniredis and redis-server, and timertest against Index, so that the
// fake cannot drift from the scripts. Where miniredis and redis-server
// differ, the suite follows redis-server.
//
// It passes every time explicitly and reads no clock. Jobs that tie on
// due time and attempt have ids below 60, whose Redis members sort as
// their ids do (see Index).
func TestIndex(t *testing.T, open func(t *testing.T) IndexLeaser) {
	tests := []struct {
		name string
		run  func(t *testing.T, x IndexLeaser)
	}{
		{"AddWakes", testAddWakes},
		{"AddReplaces", testAddReplaces},
		{"AddSlots", testAddSlots},
		{"ClaimOrder", testClaimOrder},
		{"ClaimEmpty", testClaimEmpty},
		{"ClaimLimits", testClaimLimits},
		{"Priorities", testPriorities},
		{"PriorityTies", testPriorityTies},
		{"Ack", testAck},
		{"Retry", testRetry},
		{"Defer", testDefer},
		{"Sweep", testSweep},
		{"SweepKeepsReadded", testSweepKeepsReadded},
		{"Reclaim", testReclaim},
		{"ClaimReadded", testClaimReadded},
		{"BuryReadded", testBuryReadded},
		{"Restore", testRestore},
		{"Remove", testRemove},
		{"Revive", testRevive},
		{"Forget", testForget},
		{"Invalid", testIndexInvalid},
		{"ConcurrentClaims", testConcurrentClaims},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// t0 is the clock of the index suite, in the Local location as
// timer.TimeOf returns times.
var t0 = timer.TimeOf(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())

// at returns t0+ms.
func at(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// one is the only slot of topic "orders" with one slot.
var one = timer.Slot{Topic: "orders"}

// tm returns a normal timer of job id due at t0+ms in topic orders with
// one slot.
func tm(id timer.JobID, ms int64) timer.Timer {
	return timer.Timer{ID: id, Topic: "orders", Slots: 1, Basis: uint64(id), DueAt: at(ms)}
}

func withAttempt(t timer.Timer, attempt int) timer.Timer { t.Attempt = attempt; return t }

func withPriority(t timer.Timer, p timer.Priority) timer.Timer { t.Priority = p; return t }

func mustAdd(t *testing.T, x IndexLeaser, timers ...timer.Timer) []timer.Wake {
	t.Helper()
	wakes, err := x.Add(t.Context(), timers)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return wakes
}

func mustClaim(t *testing.T, x IndexLeaser, slot timer.Slot, now time.Time, limit int, lease time.Duration) timer.Claim {
	t.Helper()
	c, err := x.Claim(t.Context(), slot, now, limit, lease)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return c
}

// token is the token of a lease claimed at nowMs for leaseMs, of a job
// with attempt attempts made.
func token(nowMs, leaseMs int64, attempt int) float64 {
	return float64((at(nowMs).UnixMilli()+leaseMs)*128 + int64(attempt))
}

// ids returns the job ids of leases, in order.
func ids(leases []timer.Lease) []timer.JobID {
	out := []timer.JobID{}
	for _, l := range leases {
		out = append(out, l.ID)
	}
	return out
}

// byID returns the lease of each job.
func byID(leases []timer.Lease) map[timer.JobID]timer.Lease {
	m := map[timer.JobID]timer.Lease{}
	for _, l := range leases {
		m[l.ID] = l
	}
	return m
}

// drain claims everything in slot due by nowMs, with a long lease, and
// returns the leases as "id/attempt" strings in claim order.
func drain(t *testing.T, x IndexLeaser, slot timer.Slot, nowMs int64) []string {
	t.Helper()
	c := mustClaim(t, x, slot, at(nowMs), MaxBatch, time.Hour)
	out := []string{}
	for _, l := range c.Leases {
		out = append(out, fmt.Sprintf("%d/%d", l.ID, l.Attempt))
	}
	return out
}

func sameTime(a, b time.Time) bool { return a.Equal(b) && a.IsZero() == b.IsZero() }

func sameWakes(a, b []timer.Wake) bool {
	return slices.EqualFunc(a, b, func(x, y timer.Wake) bool { return x.Slot == y.Slot && sameTime(x.DueAt, y.DueAt) })
}

func testAddWakes(t *testing.T, x IndexLeaser) {
	// The first timers of an empty slot wake it at the earliest.
	if w := mustAdd(t, x, tm(1, 50), tm(2, 20), tm(3, 30)); !sameWakes(w, []timer.Wake{{Slot: one, DueAt: at(20)}}) {
		t.Errorf("Add to an empty slot: wakes %v, want one at +20", w)
	}
	// Later, or the same millisecond: no wake.
	if w := mustAdd(t, x, tm(4, 40)); len(w) != 0 {
		t.Errorf("Add later: wakes %v", w)
	}
	if w := mustAdd(t, x, withAttempt(tm(5, 20), 0)); len(w) != 0 {
		t.Errorf("Add at the earliest millisecond: wakes %v", w)
	}
	// Earlier: a wake at the new earliest.
	if w := mustAdd(t, x, tm(6, 10), tm(7, 15)); !sameWakes(w, []timer.Wake{{Slot: one, DueAt: at(10)}}) {
		t.Errorf("Add earlier: wakes %v, want one at +10", w)
	}
	if w, err := x.Add(t.Context(), nil); err != nil || len(w) != 0 {
		t.Errorf("Add(nil) = %v, %v", w, err)
	}
	// A job leased does not count: the slot's due sets are empty again.
	mustClaim(t, x, one, at(100), 100, time.Second)
	if w := mustAdd(t, x, tm(8, 500)); !sameWakes(w, []timer.Wake{{Slot: one, DueAt: at(500)}}) {
		t.Errorf("Add after the slot was claimed empty: wakes %v, want one at +500", w)
	}
}

func testAddReplaces(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 10), tm(2, 20))
	// Moving the earliest job later wakes nothing; its old time is gone.
	if w := mustAdd(t, x, withAttempt(tm(1, 30), 3)); len(w) != 0 {
		t.Errorf("Add later: wakes %v", w)
	}
	c := mustClaim(t, x, one, at(10), 10, time.Second)
	if len(c.Leases) != 0 || !sameTime(c.NextDue, at(20)) {
		t.Errorf("Claim at the old due time = %v next due %v; want none, next due +20", ids(c.Leases), c.NextDue)
	}
	// The same job twice in one call takes its last due time and attempt.
	mustAdd(t, x, tm(3, 40), withAttempt(tm(3, 25), 2))
	if got := drain(t, x, one, 40); !slices.Equal(got, []string{"2/0", "3/2", "1/3"}) {
		t.Errorf("claimed %v, want 2/0 3/2 1/3", got)
	}
}

func testAddSlots(t *testing.T, x IndexLeaser) {
	// Timers land in the slot of their basis, CRC32 of its decimal form
	// modulo the slot count (slots.Of); wakes come in the order of the
	// slots' first timers.
	var timers []timer.Timer
	var order []timer.Slot
	want := map[timer.Slot][]timer.JobID{}
	for id := timer.JobID(1); id <= 40; id++ {
		tt := timer.Timer{ID: id, Topic: "mail", Slots: 8, Basis: uint64(id), DueAt: at(int64(id))}
		if id > 30 {
			tt.Basis = 777 // jobs of one business object share a slot
		}
		s := timer.Slot{Topic: "mail", Index: slots.Of(tt.Basis, 8)}
		if _, ok := want[s]; !ok {
			order = append(order, s)
		}
		want[s] = append(want[s], id)
		timers = append(timers, tt)
	}
	wakes := mustAdd(t, x, timers...)
	var woken []timer.Slot
	for _, w := range wakes {
		woken = append(woken, w.Slot)
		if !sameTime(w.DueAt, at(int64(want[w.Slot][0]))) {
			t.Errorf("wake of %v at %v, want %v", w.Slot, w.DueAt, at(int64(want[w.Slot][0])))
		}
	}
	if !slices.Equal(woken, order) {
		t.Errorf("woke %v, want %v", woken, order)
	}
	for s, w := range want {
		c := mustClaim(t, x, s, at(100), 100, time.Second)
		if got := ids(c.Leases); !slices.Equal(got, w) {
			t.Errorf("slot %v: claimed %v, want %v", s, got, w)
		}
	}
}

func testClaimOrder(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, withAttempt(tm(3, 0), 2), tm(2, 0), tm(1, 0), tm(4, 5), tm(5, 10), tm(6, 6))
	// Due at or before now, by due time, then attempt, then id; each
	// leased until now+lease with its token.
	c := mustClaim(t, x, one, at(5), 10, 2*time.Second)
	if got := ids(c.Leases); !slices.Equal(got, []timer.JobID{1, 2, 3, 4}) {
		t.Errorf("claimed %v, want 1 2 3 4", got)
	}
	for _, l := range c.Leases {
		if l.Slot != one || l.Priority != timer.PriorityNormal || l.Token != token(5, 2000, l.Attempt) {
			t.Errorf("lease %+v: want slot %v, normal, token %v", l, one, token(5, 2000, l.Attempt))
		}
	}
	if l := byID(c.Leases)[3]; l.Attempt != 2 {
		t.Errorf("lease of job 3 has attempt %d, want 2", l.Attempt)
	}
	if !sameTime(c.NextDue, at(6)) || !sameTime(c.NextExpiry, at(2005)) {
		t.Errorf("next due %v, next expiry %v; want +6, +2005", c.NextDue, c.NextExpiry)
	}
	// A limit takes the first ones; the lease is cut to milliseconds.
	c = mustClaim(t, x, one, at(10), 1, 1500*time.Microsecond)
	if got := ids(c.Leases); !slices.Equal(got, []timer.JobID{6}) || c.Leases[0].Token != token(10, 1, 0) {
		t.Errorf("claim of 1 = %+v, want job 6 leased for 1ms", c.Leases)
	}
	if !sameTime(c.NextDue, at(10)) || !sameTime(c.NextExpiry, at(11)) {
		t.Errorf("next due %v, next expiry %v; want +10, +11", c.NextDue, c.NextExpiry)
	}
}

func testClaimEmpty(t *testing.T, x IndexLeaser) {
	c := mustClaim(t, x, timer.Slot{Topic: "none", Index: 3}, at(0), 10, time.Second)
	if len(c.Leases) != 0 || !c.NextDue.IsZero() || !c.NextExpiry.IsZero() {
		t.Errorf("Claim of an empty slot = %+v", c)
	}
	mustAdd(t, x, tm(1, 10))
	c = mustClaim(t, x, one, at(9), 10, time.Second)
	if len(c.Leases) != 0 || !sameTime(c.NextDue, at(10)) || !c.NextExpiry.IsZero() {
		t.Errorf("Claim before the due time = %+v", c)
	}
}

func testClaimLimits(t *testing.T, x IndexLeaser) {
	var timers []timer.Timer
	for id := timer.JobID(1); id <= MaxBatch+500; id++ {
		timers = append(timers, tm(id, 0))
	}
	mustAdd(t, x, timers...)
	// Above MaxBatch, one batch: the next due time says more are waiting.
	c := mustClaim(t, x, one, at(0), 5000, 10*time.Millisecond)
	if len(c.Leases) != MaxBatch || !sameTime(c.NextDue, at(0)) {
		t.Fatalf("Claim = %d leases, next due %v; want %d, +0", len(c.Leases), c.NextDue, MaxBatch)
	}
	if c = mustClaim(t, x, one, at(0), 5000, 10*time.Millisecond); len(c.Leases) != 500 || !c.NextDue.IsZero() {
		t.Fatalf("second Claim = %d leases, next due %v", len(c.Leases), c.NextDue)
	}
	sw, err := x.Sweep(t.Context(), one, at(10), 5000)
	if err != nil || sw.Returned != MaxBatch || !sameTime(sw.NextExpiry, at(10)) {
		t.Fatalf("Sweep = %d returned, next expiry %v, %v; want %d, +10", sw.Returned, sw.NextExpiry, err, MaxBatch)
	}
}

func testPriorities(t *testing.T, x IndexLeaser) {
	high, normal, low := timer.PriorityHigh, timer.PriorityNormal, timer.PriorityLow
	// Claimed in the order of due time plus timer.PriorityAging.
	w := mustAdd(t, x,
		withPriority(tm(1, 5000), high),   // rank 5000
		withPriority(tm(2, 0), normal),    // rank 10000
		withPriority(tm(3, -61_000), low), // rank -1000
		withPriority(tm(4, 0), high),      // rank 0
		withPriority(tm(5, 9000), low),    // rank 69000
		withPriority(tm(6, 80_000), high), // not due at 70000
	)
	if !sameWakes(w, []timer.Wake{{Slot: one, DueAt: at(-61_000)}}) {
		t.Errorf("wakes %v, want one at the low job's due time", w)
	}
	c := mustClaim(t, x, one, at(70_000), 10, time.Second)
	var ps []timer.Priority
	for _, l := range c.Leases {
		ps = append(ps, l.Priority)
	}
	if got := ids(c.Leases); !slices.Equal(got, []timer.JobID{3, 4, 1, 2, 5}) || !slices.Equal(ps, []timer.Priority{low, high, high, normal, low}) {
		t.Errorf("claimed %v %v, want 3 4 1 2 5, low high high normal low", got, ps)
	}
	if !sameTime(c.NextDue, at(80_000)) {
		t.Errorf("next due %v, want the high job's +80000", c.NextDue)
	}
	// Ack, Retry and Defer find each lease by its priority.
	l := byID(c.Leases)
	if n, err := x.Ack(t.Context(), []timer.Lease{l[3], l[4]}); err != nil || n != 2 {
		t.Errorf("Ack = %d, %v", n, err)
	}
	if o, err := x.Retry(t.Context(), l[1], at(71_000), 5, at(70_001)); err != nil || o != timer.Retried {
		t.Errorf("Retry = %v, %v", o, err)
	}
	if o, err := x.Retry(t.Context(), l[5], at(71_000), 1, at(70_001)); err != nil || o != timer.Buried {
		t.Errorf("Retry at max = %v, %v", o, err)
	}
	if ok, err := x.Defer(t.Context(), l[2], at(75_000)); err != nil || !ok {
		t.Errorf("Defer = %v, %v", ok, err)
	}
	// The same job at another priority is another member.
	if ok, _, err := x.Revive(t.Context(), withPriority(tm(5, 0), normal)); err != nil || ok {
		t.Errorf("Revive at another priority = %v, %v; want false", ok, err)
	}
	if ok, _, err := x.Revive(t.Context(), withPriority(tm(5, 72_000), low)); err != nil || !ok {
		t.Errorf("Revive = %v, %v", ok, err)
	}
	c = mustClaim(t, x, one, at(100_000), 10, time.Second)
	var got []string
	for _, l := range c.Leases {
		got = append(got, fmt.Sprintf("%d%s/%d", l.ID, l.Priority, l.Attempt))
	}
	// Ranks: 1 71000, 5 132000, 2 85000, 6 80000.
	if want := []string{"1high/1", "6high/0", "2normal/0", "5low/0"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v", got, want)
	}
}

func testPriorityTies(t *testing.T, x IndexLeaser) {
	// Equal ranks go high, normal, low; a low job is overtaken only by
	// jobs that came due less than its aging offset after it.
	mustAdd(t, x,
		withPriority(tm(1, 60_000), timer.PriorityHigh),   // rank 60000
		withPriority(tm(2, 50_000), timer.PriorityNormal), // rank 60000
		withPriority(tm(3, 0), timer.PriorityLow),         // rank 60000
		withPriority(tm(4, 60_001), timer.PriorityHigh),   // rank 60001
		withPriority(tm(5, 59_999), timer.PriorityHigh),   // rank 59999
	)
	if got := ids(mustClaim(t, x, one, at(70_000), 10, time.Second).Leases); !slices.Equal(got, []timer.JobID{5, 1, 2, 3, 4}) {
		t.Errorf("claimed %v, want 5 1 2 3 4", got)
	}
}
