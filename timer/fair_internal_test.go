package timer

import (
	"testing"
	"time"
)

// newTestWorker returns a worker with no store or Redis, for the claim
// loop's arithmetic.
func newTestWorker(t *testing.T, cfg WorkerConfig) *Worker {
	t.Helper()
	w, err := NewWorker(nil, nil, nil, nil, StaticSlots(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The bucket allows a burst, then a claim's worth every claimTick; a
// worker owning half the slots gets half the rate and in-flight cap.
func TestAllowanceSplitsTheTopicLimits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	w := newTestWorker(t, WorkerConfig{BatchSize: 100, Now: func() time.Time { return now }})
	tp := w.topicOf("t")
	tp.topic = Topic{Name: "t", Slots: 16, Limits: Limits{RateLimit: 2000, Burst: 400, MaxInFlight: 10}}
	tp.owned = 8
	w.configure(tp, w.share(tp))

	c := tp.conf.Load()
	if c.rate != 1000 || c.burst != 200 || c.maxHeld != 5 || c.want != 10 {
		t.Fatalf("half the slots: rate %v burst %v maxHeld %v want %v; want 1000, 200, 5, 10", c.rate, c.burst, c.maxHeld, c.want)
	}
	if n := w.allowance(tp, now, 100); n != 5 {
		t.Fatalf("allowance = %d, want the in-flight cap 5", n)
	}
	w.took(tp, 5)
	if n := w.allowance(tp, now, 100); n != 0 || !tp.parked {
		t.Fatalf("at the in-flight cap: allowance %d parked %v, want 0 and parked", n, tp.parked)
	}
	tp.held.Add(-5) // released
	w.unparkReleased()
	if tp.parked {
		t.Fatal("still parked after its leases were released")
	}

	// Without the in-flight cap: the burst, then nothing until a claim's
	// worth (10 ms at 1,000/s) has come in.
	tp.topic.MaxInFlight = 0
	w.configure(tp, w.share(tp))
	tp.tokens = c.burst
	if n := w.allowance(tp, now, 100); n != 100 {
		t.Fatalf("allowance = %d, want the batch 100 out of a burst of 200", n)
	}
	w.took(tp, 100)
	w.took(tp, w.allowance(tp, now, 100))
	if n := w.allowance(tp, now, 100); n != 0 || !tp.readyAt.Equal(t0.Add(10*time.Millisecond)) {
		t.Fatalf("after the burst: allowance %d, ready at %v; want 0, ready 10ms later", n, tp.readyAt.Sub(t0))
	}
	now = t0.Add(10 * time.Millisecond)
	if n := w.allowance(tp, now, 100); n != 10 {
		t.Fatalf("10 ms later: allowance %d, want 10", n)
	}
	// A job claimed but not sent gives its token back.
	w.took(tp, 10)
	w.refund("t")
	now = now.Add(9 * time.Millisecond)
	if n := w.allowance(tp, now, 100); n != 10 {
		t.Fatalf("9 ms later with one refund: allowance %d, want 10", n)
	}
}

// A topic that was idle starts at the current virtual time: it goes next,
// but banks no credit for its idle spell.
func TestPickByVirtualTime(t *testing.T) {
	now := time.Unix(1000, 0)
	w := newTestWorker(t, WorkerConfig{Now: func() time.Time { return now }})
	busy, idle := w.topicOf("busy"), w.topicOf("idle")
	for _, tp := range []*topicState{busy, idle} {
		st := &slotState{slot: Slot{Topic: tp.name}, topic: tp, due: now, index: -1}
		tp.slots.set(st)
	}
	busy.pass = 1000
	w.topicHeap.set(busy)
	if got := w.pick(now); got != busy {
		t.Fatalf("pick = %v, want busy, the only due topic", got.name)
	}
	w.topicHeap.set(idle)
	if got := w.pick(now); got != idle {
		t.Fatalf("pick = %v, want idle (least virtual time)", got.name)
	}
	if idle.pass != 1000 {
		t.Fatalf("idle topic's virtual time %v, want 1000: no credit for being idle", idle.pass)
	}
}
