package timer_test

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// unclaimCount counts the leases of lost claims taken back.
type unclaimCount struct {
	timer.NopObserver
	n atomic.Int64
}

func (u *unclaimCount) Unclaimed(_ timer.Slot, n int) { u.n.Add(int64(n)) }

// errLost is a connection error after a claim ran: its reply never came.
var errLost = errors.New("read tcp: connection reset by peer")

// A claim that ran but whose reply was lost (a Redis failover) leaves a
// lease nobody holds. The worker takes it back once Redis answers again,
// retrying while it does not, and the job fires then, on its first
// attempt, not a lease (30 s) later on its second.
func TestLostClaimTakenBack(t *testing.T) {
	obs := &unclaimCount{}
	r := newRig(t, timer.WorkerConfig{Observer: obs})
	ctx := t.Context()
	j := r.scheduleWith(t, timer.Request{Topic: "orders", Delay: 10 * time.Millisecond})
	slot := timer.Slot{Topic: "orders", Index: slots.Of(j.SlotBasis(), timer.DefaultSlots)}
	r.clock.Advance(20 * time.Millisecond)
	r.index.LoseReplyNext("Claim", errLost, 1)
	if claimed, fired := r.steps.Step(ctx); claimed != 0 || fired != 0 || len(r.index.Leased(slot)) != 1 {
		t.Fatalf("the lost claim: claimed %d, fired %d, %d leases in Redis; want 0, 0, 1", claimed, fired, len(r.index.Leased(slot)))
	}

	// Redis still fails: the lease stays, to be taken back later.
	r.index.FailNext("Unclaim", errLost, 1)
	r.clock.Advance(300 * time.Millisecond)
	if _, fired := r.steps.Step(ctx); fired != 0 || len(r.index.Leased(slot)) != 1 {
		t.Fatalf("while Redis fails: fired %d, %d leases; want 0, 1", fired, len(r.index.Leased(slot)))
	}
	r.clock.Advance(300 * time.Millisecond)
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatalf("once Redis answers: fired %d, want 1", fired)
	}
	ds := r.handler.deliveries(j.ID)
	if len(ds) != 1 || ds[0].Attempt != 1 || ds[0].At.Sub(j.DueAt) > time.Second {
		t.Fatalf("deliveries %+v; want one, attempt 1, within a second of its due time", ds)
	}
	if s := r.status(t, j.ID); s != timer.StatusDone || r.steps.Held() != 0 || len(r.index.Leased(slot)) != 0 {
		t.Fatalf("job %s, %d held, %d leases; want done, none, none", s, r.steps.Held(), len(r.index.Leased(slot)))
	}
	if n := r.index.Calls("Unclaim"); n != 2 || obs.n.Load() != 1 {
		t.Fatalf("Unclaim called %d times, %d leases counted; want 2 (one failed), 1", n, obs.n.Load())
	}
}

// A lost claim with the same tokens as an answered claim of its slot (the
// same pass: the same now and lease) is not taken back: the answered
// claim's leases, in flight, would go with it and fire twice. Its lease
// waits out its end, as before.
func TestLostClaimSameTokensLeft(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	a := r.scheduleWith(t, timer.Request{Topic: "orders", BizID: 7, Delay: 10 * time.Millisecond})
	slot := timer.Slot{Topic: "orders", Index: slots.Of(a.SlotBasis(), timer.DefaultSlots)}
	r.clock.Advance(10 * time.Millisecond)
	if claimed := r.steps.Claim(ctx); claimed != 1 {
		t.Fatalf("claimed %d, want a", claimed)
	}
	b := r.scheduleWith(t, timer.Request{Topic: "orders", BizID: 7})
	if b.SlotBasis() != a.SlotBasis() {
		t.Fatal("a and b in different slots")
	}
	r.index.LoseReplyNext("Claim", errLost, 1)
	if claimed := r.steps.Claim(ctx); claimed != 0 || len(r.index.Leased(slot)) != 2 {
		t.Fatalf("the lost claim: claimed %d, %d leases; want 0, 2", claimed, len(r.index.Leased(slot)))
	}
	r.clock.Advance(300 * time.Millisecond)
	r.steps.Step(ctx)
	if n := r.index.Calls("Unclaim"); n != 0 {
		t.Fatalf("Unclaim called %d times, want none", n)
	}
	if da, db := r.handler.deliveries(a.ID), r.handler.deliveries(b.ID); len(da) != 1 || len(db) != 0 {
		t.Fatalf("a called %d times, b %d; want once, not yet", len(da), len(db))
	}
	if ls := r.index.Leased(slot); len(ls) != 1 || ls[0].ID != b.ID {
		t.Fatalf("leases %+v, want b's alone", ls)
	}
}

// A claim whose connection was never made cannot have run: nothing is
// taken back for it. One that failed on a connection that was open may
// have run: the worker asks, and a claim that never ran gives nothing
// back.
func TestFailedClaimNeverSent(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, c := range []struct {
		err      error
		unclaims int // calls of Unclaim so far
	}{{dial, 0}, {errLost, 1}} {
		j := r.scheduleWith(t, timer.Request{Topic: "orders", Delay: 10 * time.Millisecond})
		r.clock.Advance(20 * time.Millisecond)
		r.index.FailNext("Claim", c.err, 1)
		r.steps.Step(ctx)
		r.clock.Advance(300 * time.Millisecond)
		r.steps.Step(ctx)
		if n := r.index.Calls("Unclaim"); n != c.unclaims {
			t.Fatalf("after %v: Unclaim called %d times in all, want %d", c.err, n, c.unclaims)
		}
		if ds := r.handler.deliveries(j.ID); len(ds) != 1 || ds[0].Attempt != 1 {
			t.Fatalf("after %v: deliveries %+v, want one on attempt 1", c.err, ds)
		}
	}
}
