// The index contract, continued: acks, retries, deferrals, sweeps,
// restores, removals, revivals, bad input and concurrent claims.

package timertest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

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

// testReclaim: a Reclaimer takes back leases that have not ended, due
// at once with one more attempt, and their holder's ack fails.
func testReclaim(t *testing.T, x IndexLeaser) {
	r, ok := x.(timer.Reclaimer)
	if !ok {
		t.Skip("not a timer.Reclaimer")
	}
	mustAdd(t, x, tm(1, 0), tm(2, 0))
	held := mustClaim(t, x, one, at(0), 10, time.Minute)
	if len(held.Leases) != 2 {
		t.Fatalf("Claim = %v", ids(held.Leases))
	}
	sw, err := r.Reclaim(t.Context(), one, at(10), 10)
	if err != nil || sw.Returned != 2 || len(sw.Dead) != 0 || !sw.NextExpiry.IsZero() {
		t.Fatalf("Reclaim = %+v, %v", sw, err)
	}
	if n, err := x.Ack(t.Context(), held.Leases); err != nil || n != 0 {
		t.Errorf("Ack of reclaimed leases = %d, %v", n, err)
	}
	if got := drain(t, x, one, 10); !slices.Equal(got, []string{"1/1", "2/1"}) {
		t.Errorf("claimed %v, want 1/1 2/1", got)
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

// Forget takes a buried job out of its Dead set, whatever its priority;
// revived after that, it is not found there.
func testForget(t *testing.T, x IndexLeaser) {
	ctx := t.Context()
	mustAdd(t, x, tm(1, 0), withPriority(tm(2, 0), timer.PriorityLow))
	for _, l := range mustClaim(t, x, one, at(0), 10, time.Second).Leases {
		if o, err := x.Retry(ctx, l, at(1), 1, at(0)); err != nil || o != timer.Buried {
			t.Fatalf("Retry = %v, %v", o, err)
		}
	}
	for _, id := range []timer.JobID{1, 2} {
		if ok, err := x.Forget(ctx, one, id); err != nil || !ok {
			t.Errorf("Forget(%d) = %v, %v; want true", id, ok, err)
		}
	}
	if ok, err := x.Forget(ctx, one, 1); err != nil || ok {
		t.Errorf("second Forget = %v, %v; want false", ok, err)
	}
	if ok, _, err := x.Revive(ctx, tm(1, 5)); err != nil || ok {
		t.Errorf("Revive of a forgotten job = %v, %v; want false", ok, err)
	}
	if _, err := x.Forget(ctx, timer.Slot{Topic: "orders", Index: -1}, 1); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("Forget of slot -1 = %v, want ErrInvalid", err)
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
