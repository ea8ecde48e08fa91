package timertest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
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
		{"ClaimReadded", testClaimReadded},
		{"BuryReadded", testBuryReadded},
		{"Restore", testRestore},
		{"Remove", testRemove},
		{"Revive", testRevive},
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

func testAck(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0), tm(2, 0), tm(3, 0))
	c := mustClaim(t, x, one, at(0), 10, time.Second)
	l := byID(c.Leases)
	stale := l[2]
	stale.Token++
	other := l[3]
	other.Priority = timer.PriorityHigh
	if n, err := x.Ack(t.Context(), []timer.Lease{l[1], l[1], stale, other}); err != nil || n != 1 {
		t.Errorf("Ack = %d, %v; want 1 (the others not held)", n, err)
	}
	if n, err := x.Ack(t.Context(), []timer.Lease{l[1]}); err != nil || n != 0 {
		t.Errorf("Ack again = %d, %v; want 0", n, err)
	}
	if n, err := x.Ack(t.Context(), nil); err != nil || n != 0 {
		t.Errorf("Ack(nil) = %d, %v", n, err)
	}
	if n, err := x.Ack(t.Context(), []timer.Lease{l[2], l[3]}); err != nil || n != 2 {
		t.Errorf("Ack of the rest = %d, %v; want 2", n, err)
	}
	// Acked leases are gone: nothing expires.
	sw, err := x.Sweep(t.Context(), one, at(5000), 10)
	if err != nil || sw.Returned != 0 || len(sw.Dead) != 0 || !sw.NextExpiry.IsZero() {
		t.Errorf("Sweep after Ack = %+v, %v", sw, err)
	}
}

func testRetry(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0), withAttempt(tm(2, 0), 2), tm(3, 0))
	c := mustClaim(t, x, one, at(5), 10, 2*time.Second)
	l := byID(c.Leases)
	// Back due at at with one more attempt.
	if o, err := x.Retry(t.Context(), l[1], at(500), 16, at(6)); err != nil || o != timer.Retried {
		t.Errorf("Retry = %v, %v", o, err)
	}
	if o, err := x.Retry(t.Context(), l[1], at(500), 16, at(6)); err != nil || o != timer.Lost {
		t.Errorf("Retry twice = %v, %v; want Lost", o, err)
	}
	// The attempt that makes maxAttempts buries it: 2 made, this third.
	if o, err := x.Retry(t.Context(), l[2], at(500), 3, at(7)); err != nil || o != timer.Buried {
		t.Errorf("Retry at max = %v, %v; want Buried", o, err)
	}
	stale := l[3]
	stale.Token = token(5, 1000, 0)
	if o, err := x.Retry(t.Context(), stale, at(500), 16, at(7)); err != nil || o != timer.Lost {
		t.Errorf("Retry with another token = %v, %v; want Lost", o, err)
	}
	if n, err := x.Ack(t.Context(), []timer.Lease{l[1], l[2]}); err != nil || n != 0 {
		t.Errorf("Ack after Retry = %d, %v; want 0", n, err)
	}
	if got := drain(t, x, one, 499); len(got) != 0 {
		t.Errorf("claimed %v before the retry time", got)
	}
	if got := drain(t, x, one, 500); !slices.Equal(got, []string{"1/1"}) {
		t.Errorf("claimed %v, want 1/1", got)
	}
	// The buried job is dead: Restore skips it, Revive brings it back
	// with no attempts.
	if n, _, err := x.Restore(t.Context(), []timer.Timer{tm(2, 0)}); err != nil || n != 0 {
		t.Errorf("Restore of a dead job = %d, %v; want 0", n, err)
	}
	if ok, _, err := x.Revive(t.Context(), tm(2, 600)); err != nil || !ok {
		t.Errorf("Revive = %v, %v", ok, err)
	}
	if got := drain(t, x, one, 600); !slices.Equal(got, []string{"2/0"}) {
		t.Errorf("claimed %v, want 2/0", got)
	}
}

func testDefer(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, withAttempt(tm(1, 0), 4), tm(2, 0))
	c := mustClaim(t, x, one, at(0), 10, time.Second)
	l := byID(c.Leases)
	// Back due at at, the attempt count unchanged.
	if ok, err := x.Defer(t.Context(), l[1], at(300)); err != nil || !ok {
		t.Errorf("Defer = %v, %v", ok, err)
	}
	if ok, err := x.Defer(t.Context(), l[1], at(300)); err != nil || ok {
		t.Errorf("Defer again = %v, %v; want false", ok, err)
	}
	stale := l[2]
	stale.Token--
	if ok, err := x.Defer(t.Context(), stale, at(300)); err != nil || ok {
		t.Errorf("Defer with another token = %v, %v; want false", ok, err)
	}
	if got := drain(t, x, one, 299); len(got) != 0 {
		t.Errorf("claimed %v before the deferred time", got)
	}
	if got := drain(t, x, one, 300); !slices.Equal(got, []string{"1/4"}) {
		t.Errorf("claimed %v, want 1/4", got)
	}
}

func testSweep(t *testing.T, x IndexLeaser) {
	last := withAttempt(tm(2, 0), timer.MaxAttemptsLimit-1)
	mustAdd(t, x, tm(1, 0), last, tm(3, 1), withPriority(tm(4, 0), timer.PriorityHigh))
	first := mustClaim(t, x, one, at(0), 10, 100*time.Millisecond)
	if len(first.Leases) != 3 {
		t.Fatalf("Claim = %v", ids(first.Leases))
	}
	if c := mustClaim(t, x, one, at(1), 10, time.Second); len(c.Leases) != 1 {
		t.Fatalf("second Claim = %v", ids(c.Leases))
	}
	// Nothing expired yet.
	sw, err := x.Sweep(t.Context(), one, at(99), 10)
	if err != nil || sw.Returned != 0 || len(sw.Dead) != 0 || !sameTime(sw.NextExpiry, at(100)) {
		t.Errorf("early Sweep = %+v, %v", sw, err)
	}
	// Expired at or before now: back with one more attempt, or dead at
	// timer.MaxAttemptsLimit. A limit takes the earliest.
	sw, err = x.Sweep(t.Context(), one, at(100), 1)
	if err != nil || sw.Returned+len(sw.Dead) != 1 || !sameTime(sw.NextExpiry, at(100)) {
		t.Errorf("Sweep of 1 = %+v, %v", sw, err)
	}
	sw2, err := x.Sweep(t.Context(), one, at(100), 10)
	if err != nil {
		t.Fatal(err)
	}
	sw.Returned += sw2.Returned
	sw.Dead = append(sw.Dead, sw2.Dead...)
	wantDead := []timer.Lease{{ID: 2, Slot: one, Attempt: timer.MaxAttemptsLimit}}
	if sw.Returned != 2 || !slices.Equal(sw.Dead, wantDead) || !sameTime(sw2.NextExpiry, at(1001)) {
		t.Errorf("Sweep = %d returned, dead %+v, next expiry %v; want 2, %+v, +1001", sw.Returned, sw.Dead, sw2.NextExpiry, wantDead)
	}
	// The swept lease's holder lost it.
	if n, err := x.Ack(t.Context(), first.Leases); err != nil || n != 0 {
		t.Errorf("Ack of swept leases = %d, %v", n, err)
	}
	// Returned due at once (the sweep's now) with one more attempt.
	if got := drain(t, x, one, 100); !slices.Equal(got, []string{"4/1", "1/1"}) {
		t.Errorf("claimed %v, want 4/1 1/1", got)
	}
	if ok, _, err := x.Revive(t.Context(), tm(2, 0)); err != nil || !ok {
		t.Errorf("Revive of the swept-dead job = %v, %v", ok, err)
	}
}

func testSweepKeepsReadded(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0))
	mustClaim(t, x, one, at(0), 10, 10*time.Millisecond)
	// Added again while leased (rescheduled): that entry wins over the
	// sweep's, and the lease counts as returned all the same.
	mustAdd(t, x, tm(1, 500))
	sw, err := x.Sweep(t.Context(), one, at(10), 10)
	if err != nil || sw.Returned != 1 || len(sw.Dead) != 0 {
		t.Errorf("Sweep = %+v, %v", sw, err)
	}
	if got := drain(t, x, one, 499); len(got) != 0 {
		t.Errorf("claimed %v before the re-added time", got)
	}
	if got := drain(t, x, one, 500); !slices.Equal(got, []string{"1/0"}) {
		t.Errorf("claimed %v, want 1/0", got)
	}
}

func testClaimReadded(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0))
	c1 := mustClaim(t, x, one, at(0), 10, time.Second)
	// Added again while leased: claimable again, and the new lease's token
	// replaces the old one, whose holder can no longer ack.
	mustAdd(t, x, tm(1, 5))
	c2 := mustClaim(t, x, one, at(5), 10, time.Second)
	if len(c2.Leases) != 1 || c2.Leases[0].Token == c1.Leases[0].Token {
		t.Fatalf("second Claim = %+v", c2.Leases)
	}
	if n, err := x.Ack(t.Context(), c1.Leases); err != nil || n != 0 {
		t.Errorf("Ack of the replaced lease = %d, %v", n, err)
	}
	if n, err := x.Ack(t.Context(), c2.Leases); err != nil || n != 1 {
		t.Errorf("Ack of the new lease = %d, %v", n, err)
	}
}

func testBuryReadded(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0), withAttempt(tm(2, 0), timer.MaxAttemptsLimit-1))
	c := mustClaim(t, x, one, at(0), 10, 10*time.Millisecond)
	// Both added again while leased, then buried: by Retry and by Sweep.
	// A dead job leaves its due set too.
	mustAdd(t, x, tm(1, 5), withAttempt(tm(2, 5), timer.MaxAttemptsLimit-1))
	if o, err := x.Retry(t.Context(), byID(c.Leases)[1], at(5), 1, at(5)); err != nil || o != timer.Buried {
		t.Errorf("Retry = %v, %v; want Buried", o, err)
	}
	if sw, err := x.Sweep(t.Context(), one, at(10), 10); err != nil || len(sw.Dead) != 1 || sw.Returned != 0 {
		t.Errorf("Sweep = %+v, %v; want job 2 dead", sw, err)
	}
	if got := drain(t, x, one, 100); len(got) != 0 {
		t.Errorf("claimed %v after both were buried", got)
	}
}

func testRestore(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0), tm(2, 0), tm(3, 50))
	c := mustClaim(t, x, one, at(0), 2, time.Second) // 1 and 2 leased
	if o, err := x.Retry(t.Context(), byID(c.Leases)[2], at(10), 1, at(1)); err != nil || o != timer.Buried {
		t.Fatalf("Retry = %v, %v", o, err) // 2 dead
	}
	// Only 4 is in none of the sets: 1 leased, 2 dead, 3 due.
	n, wakes, err := x.Restore(t.Context(), []timer.Timer{tm(1, -100), tm(2, -100), tm(3, -100), tm(4, 20)})
	if err != nil || n != 1 || !sameWakes(wakes, []timer.Wake{{Slot: one, DueAt: at(20)}}) {
		t.Errorf("Restore = %d, %v, %v; want 1 and a wake at +20", n, wakes, err)
	}
	if got := drain(t, x, one, 100); !slices.Equal(got, []string{"4/0", "3/0"}) {
		t.Errorf("claimed %v, want 4/0 3/0", got)
	}
	if n, wakes, err := x.Restore(t.Context(), nil); err != nil || n != 0 || len(wakes) != 0 {
		t.Errorf("Restore(nil) = %d, %v, %v", n, wakes, err)
	}
}

func testRemove(t *testing.T, x IndexLeaser) {
	var timers []timer.Timer
	for id := timer.JobID(1); id <= 10; id++ {
		timers = append(timers, tm(id, int64(id)))
	}
	mustAdd(t, x, timers...)
	c := mustClaim(t, x, one, at(1), 1, time.Second)
	if got := ids(c.Leases); !slices.Equal(got, []timer.JobID{1}) {
		t.Fatalf("Claim = %v", got)
	}
	// At another priority job 2 is another member: not removed.
	remove := append(timers[2:], tm(1, 0), withPriority(tm(2, 2), timer.PriorityHigh), tm(99, 0))
	if n, err := x.Remove(t.Context(), remove); err != nil || n != 8 {
		t.Errorf("Remove = %d, %v; want 8", n, err)
	}
	// The leased one stays leased.
	if n, err := x.Ack(t.Context(), c.Leases); err != nil || n != 1 {
		t.Errorf("Ack after Remove = %d, %v; want 1", n, err)
	}
	if got := drain(t, x, one, 100); !slices.Equal(got, []string{"2/0"}) {
		t.Errorf("claimed %v, want 2/0", got)
	}
	if n, err := x.Remove(t.Context(), nil); err != nil || n != 0 {
		t.Errorf("Remove(nil) = %d, %v", n, err)
	}
}

func testRevive(t *testing.T, x IndexLeaser) {
	mustAdd(t, x, tm(1, 0), tm(2, 0))
	c := mustClaim(t, x, one, at(0), 10, time.Second)
	for _, l := range c.Leases {
		if o, err := x.Retry(t.Context(), l, at(1), 1, at(0)); err != nil || o != timer.Buried {
			t.Fatalf("Retry = %v, %v", o, err)
		}
	}
	mustAdd(t, x, tm(3, 100))
	// Not the earliest: no wake.
	if ok, w, err := x.Revive(t.Context(), withAttempt(tm(1, 200), 9)); err != nil || !ok || len(w) != 0 {
		t.Errorf("Revive later = %v, %v, %v; want true, no wake", ok, w, err)
	}
	if ok, w, err := x.Revive(t.Context(), tm(1, 50)); err != nil || ok || len(w) != 0 {
		t.Errorf("Revive again = %v, %v, %v; want false", ok, w, err)
	}
	// Earlier: a wake.
	if ok, w, err := x.Revive(t.Context(), tm(2, 50)); err != nil || !ok || !sameWakes(w, []timer.Wake{{Slot: one, DueAt: at(50)}}) {
		t.Errorf("Revive earlier = %v, %v, %v; want true, a wake at +50", ok, w, err)
	}
	if ok, _, err := x.Revive(t.Context(), tm(7, 0)); err != nil || ok {
		t.Errorf("Revive of an unknown job = %v, %v", ok, err)
	}
	// Revived with attempt 0, whatever the timer says.
	if got := drain(t, x, one, 300); !slices.Equal(got, []string{"2/0", "3/0", "1/0"}) {
		t.Errorf("claimed %v, want 2/0 3/0 1/0", got)
	}
}

func testIndexInvalid(t *testing.T, x IndexLeaser) {
	ctx := t.Context()
	good := tm(1, 0)
	beyond := time.UnixMilli(maxMillis + 1)
	badTimers := map[string]func(*timer.Timer){
		"zero id":     func(t *timer.Timer) { t.ID = 0 },
		"id 2^63":     func(t *timer.Timer) { t.ID = 1 << 63 },
		"topic":       func(t *timer.Timer) { t.Topic = "Bad{x}" },
		"empty topic": func(t *timer.Timer) { t.Topic = "" },
		"slots 0":     func(t *timer.Timer) { t.Slots = 0 },
		"slots 12":    func(t *timer.Timer) { t.Slots = 12 },
		"slots 2^17":  func(t *timer.Timer) { t.Slots = 1 << 17 },
		"priority 2":  func(t *timer.Timer) { t.Priority = 2 },
		"before 1970": func(t *timer.Timer) { t.DueAt = time.UnixMilli(-1) },
		"after 4199":  func(t *timer.Timer) { t.DueAt = beyond },
		"zero time":   func(t *timer.Timer) { t.DueAt = time.Time{} },
		"attempt -1":  func(t *timer.Timer) { t.Attempt = -1 },
		"attempt 128": func(t *timer.Timer) { t.Attempt = 128 },
	}
	for name, mutate := range badTimers {
		bad := good
		mutate(&bad)
		if _, err := x.Add(ctx, []timer.Timer{good, bad}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: Add = %v, want ErrInvalid", name, err)
		}
		if _, _, err := x.Restore(ctx, []timer.Timer{good, bad}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: Restore = %v, want ErrInvalid", name, err)
		}
	}
	// Nothing of a refused batch was written.
	if c := mustClaim(t, x, one, at(0), 10, time.Second); len(c.Leases) != 0 || !c.NextDue.IsZero() {
		t.Errorf("refused batches wrote %v", ids(c.Leases))
	}
	s := one
	held := timer.Lease{ID: 1, Slot: s, Token: 128}
	withToken := func(tok float64) timer.Lease { l := held; l.Token = tok; return l }
	for name, err := range map[string]error{
		"claim limit 0":      second(x.Claim(ctx, s, t0, 0, time.Second)),
		"claim lease 0":      second(x.Claim(ctx, s, t0, 1, 0)),
		"claim lease 1us":    second(x.Claim(ctx, s, t0, 1, time.Microsecond)),
		"claim bad topic":    second(x.Claim(ctx, timer.Slot{Topic: "A"}, t0, 1, time.Second)),
		"claim slot -1":      second(x.Claim(ctx, timer.Slot{Topic: "a", Index: -1}, t0, 1, time.Second)),
		"claim slot 65536":   second(x.Claim(ctx, timer.Slot{Topic: "a", Index: timer.MaxSlots}, t0, 1, time.Second)),
		"claim before 1970":  second(x.Claim(ctx, s, time.UnixMilli(-5), 1, time.Second)),
		"claim lease beyond": second(x.Claim(ctx, s, time.UnixMilli(maxMillis-5), 1, time.Second)),
		"sweep limit 0":      second(x.Sweep(ctx, s, t0, 0)),
		"sweep bad slot":     second(x.Sweep(ctx, timer.Slot{Topic: "-"}, t0, 1)),
		"sweep before 1970":  second(x.Sweep(ctx, s, time.UnixMilli(-1), 1)),
		"retry max 0":        second(x.Retry(ctx, held, t0, 0, t0)),
		"retry max 128":      second(x.Retry(ctx, held, t0, 128, t0)),
		"retry token":        second(x.Retry(ctx, withToken(0.5), t0, 3, t0)),
		"retry at":           second(x.Retry(ctx, held, time.Time{}, 3, t0)),
		"retry now":          second(x.Retry(ctx, held, t0, 3, beyond)),
		"retry priority":     second(x.Retry(ctx, timer.Lease{ID: 1, Slot: s, Token: 128, Priority: -2}, t0, 3, t0)),
		"defer token":        second(x.Defer(ctx, withToken(-128), t0)),
		"defer at":           second(x.Defer(ctx, held, beyond)),
		"ack token":          second(x.Ack(ctx, []timer.Lease{held, withToken(-128)})),
		"ack token 2^53":     second(x.Ack(ctx, []timer.Lease{withToken(1 << 53)})),
		"ack slot":           second(x.Ack(ctx, []timer.Lease{{ID: 1, Token: 128}})),
		"remove slots":       second(x.Remove(ctx, []timer.Timer{{ID: 1, Topic: "orders", Slots: 3}})),
		"revive due":         third(x.Revive(ctx, timer.Timer{ID: 1, Topic: "orders", Slots: 1})),
		"revive id":          third(x.Revive(ctx, tm(0, 0))),
	} {
		if !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

func testConcurrentClaims(t *testing.T, x IndexLeaser) {
	const jobs, claimers = 400, 8
	var timers []timer.Timer
	for id := timer.JobID(1); id <= jobs; id++ {
		timers = append(timers, tm(id, int64(id%7)))
	}
	mustAdd(t, x, timers...)
	var mu sync.Mutex
	seen := map[timer.JobID]int{}
	var wg sync.WaitGroup
	for range claimers {
		wg.Go(func() {
			for {
				c, err := x.Claim(t.Context(), one, at(10), 7, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(c.Leases) == 0 {
					return
				}
				if n, err := x.Ack(t.Context(), c.Leases); err != nil || n != len(c.Leases) {
					t.Errorf("Ack = %d, %v; want %d", n, err, len(c.Leases))
				}
				mu.Lock()
				for _, l := range c.Leases {
					seen[l.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(seen), jobs)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("job %d claimed %d times", id, n)
		}
	}
}
