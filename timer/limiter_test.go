package timer

import (
	"fmt"
	"testing"
	"time"
)

func newTestLimiter(now *time.Time, batch, capacity int) *limiter {
	return newLimiter(limiterConfig{
		batch:    batch,
		capacity: capacity,
		timing:   timing{timeout: DefaultAttemptTimeout, lease: DefaultLease},
		now:      func() time.Time { return *now },
		obs:      NopObserver{},
	})
}

// dueSlot makes one slot of tp due at at.
func dueSlot(l *limiter, tp *topicState, index int, at time.Time) *slotState {
	st := &slotState{slot: Slot{Topic: tp.name, Index: index}, topic: tp, due: at, index: -1, isDue: true}
	l.slotDue(st)
	return st
}

// The bucket allows a burst, then a claim's worth every claimTick; a
// worker owning half the slots gets half the rate and in-flight cap.
func TestAllowanceSplitsTheTopicLimits(t *testing.T) {
	t0 := time.Unix(1000, 0)
	now := t0
	l := newTestLimiter(&now, 100, 1000)
	tp := l.topic("t")
	tp.topic = Topic{Name: "t", Slots: 16, Limits: Limits{RateLimit: 2000, Burst: 400, MaxInFlight: 10}}
	l.configure(tp, 0.5)

	c := tp.conf.Load()
	if c.rate != 1000 || c.burst != 200 || c.maxHeld != 5 || c.want != 10 {
		t.Fatalf("half the slots: rate %v burst %v maxHeld %v want %v; want 1000, 200, 5, 10", c.rate, c.burst, c.maxHeld, c.want)
	}
	if n := l.allowance(tp, now, 100); n != 5 {
		t.Fatalf("allowance = %d, want the in-flight cap 5", n)
	}
	l.took(tp, 5)
	if n := l.allowance(tp, now, 100); n != 0 || tp.place != parked {
		t.Fatalf("at the in-flight cap: allowance %d place %v, want 0 and parked", n, tp.place)
	}
	l.release("t", 5)
	l.unpark()
	if tp.place == parked {
		t.Fatal("still parked after its leases were released")
	}

	// Without the in-flight cap: the burst, then nothing until a claim's
	// worth (10 ms at 1,000/s) has come in.
	tp.topic.MaxInFlight = 0
	l.configure(tp, 0.5)
	tp.place = serving
	tp.tokens = c.burst
	if n := l.allowance(tp, now, 100); n != 100 {
		t.Fatalf("allowance = %d, want the batch 100 out of a burst of 200", n)
	}
	l.took(tp, 100)
	l.took(tp, l.allowance(tp, now, 100))
	if n := l.allowance(tp, now, 100); n != 0 || !tp.readyAt.Equal(t0.Add(10*time.Millisecond)) || tp.place != resting {
		t.Fatalf("after the burst: allowance %d, ready at %v, place %v; want 0, ready 10ms later, resting", n, tp.readyAt.Sub(t0), tp.place)
	}
	if got := l.nextRest(); !got.Equal(tp.readyAt) {
		t.Fatalf("nextRest = %v, want %v", got, tp.readyAt)
	}
	now = t0.Add(10 * time.Millisecond)
	l.leave(tp)
	tp.place = serving
	if n := l.allowance(tp, now, 100); n != 10 {
		t.Fatalf("10 ms later: allowance %d, want 10", n)
	}
	// A job claimed but not sent gives its token back.
	l.took(tp, 10)
	l.refund("t")
	now = now.Add(9 * time.Millisecond)
	if n := l.allowance(tp, now, 100); n != 10 {
		t.Fatalf("9 ms later with one refund: allowance %d, want 10", n)
	}
}

// A topic that was idle starts at the current virtual time: it goes next,
// but banks no credit for its idle spell.
func TestPickByVirtualTime(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTestLimiter(&now, 100, 1000)
	busy, idleTp := l.topic("busy"), l.topic("idle")
	busy.pass = 1000
	dueSlot(l, busy, 0, now)
	got := l.pick(now)
	if got != busy {
		t.Fatalf("pick = %v, want busy, the only due topic", got)
	}
	l.requeue(busy)
	dueSlot(l, idleTp, 0, now)
	if got := l.pick(now); got != idleTp {
		t.Fatalf("pick = %v, want idle (least virtual time)", got.name)
	}
	if idleTp.pass != 1000 {
		t.Fatalf("idle topic's virtual time %v, want 1000: no credit for being idle", idleTp.pass)
	}
}

// Weighted fair queueing: served in turn, a topic of weight 3 gets three
// jobs for each one of a topic of weight 1.
func TestPickByWeight(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTestLimiter(&now, 100, 1_000_000)
	heavy, light := l.topic("heavy"), l.topic("light")
	heavy.topic.Weight = 3
	l.configure(heavy, 1)
	l.configure(light, 1)
	dueSlot(l, heavy, 0, now)
	dueSlot(l, light, 0, now)
	served := map[string]int{}
	for range 400 {
		tp := l.pick(now)
		l.took(tp, 1)
		served[tp.name]++
		l.requeue(tp) // its slot stays due
	}
	if served["heavy"] != 300 || served["light"] != 100 {
		t.Fatalf("served %v, want heavy 300 and light 100", served)
	}
}

// Idle topics are in none of the limiter's queues, so picking costs the
// same with 3,000 idle topics as with none; a resting topic comes back
// when its rest is over, a parked one when a lease is released.
func TestIdleTopicsAreNotVisited(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTestLimiter(&now, 100, 1000)
	for i := range 3000 {
		tp := l.topic(fmt.Sprintf("t%d", i))
		l.configure(tp, 1)
	}
	if l.ready.len() != 0 || l.resting.len() != 0 || len(l.parked) != 0 {
		t.Fatalf("idle topics queued: ready %d resting %d parked %d", l.ready.len(), l.resting.len(), len(l.parked))
	}
	if tp := l.pick(now); tp != nil {
		t.Fatalf("pick = %s with nothing due", tp.name)
	}

	limited := l.topic("t7")
	limited.topic.RateLimit, limited.topic.Burst = 100, 1
	l.configure(limited, 1)
	capped := l.topic("t8")
	capped.topic.MaxInFlight = 1
	l.configure(capped, 1)
	dueSlot(l, limited, 0, now)
	dueSlot(l, capped, 0, now)
	if l.ready.len() != 2 {
		t.Fatalf("ready queue holds %d topics, want the 2 with a due slot", l.ready.len())
	}
	for tp := l.pick(now); tp != nil; tp = l.pick(now) {
		if n := l.allowance(tp, now, 100); n > 0 {
			l.took(tp, n)
		}
		l.requeue(tp)
	}
	if limited.place != resting || capped.place != parked {
		t.Fatalf("places: limited %v capped %v, want resting and parked", limited.place, capped.place)
	}
	if l.ready.len() != 0 {
		t.Fatalf("ready queue holds %d topics after both were limited", l.ready.len())
	}
	now = now.Add(10 * time.Millisecond)
	if tp := l.pick(now); tp != limited {
		t.Fatalf("after the rest: pick = %v, want the rate-limited topic back", tp)
	}
	l.release("t8", 1)
	l.unpark()
	if capped.place != ready {
		t.Fatalf("after a release: capped topic is %v, want ready", capped.place)
	}
}

// A job scheduled already past due is late from when it was scheduled,
// not from its due time; a retry is late from its due time.
func TestLatenessBase(t *testing.T) {
	due := time.Unix(1000, 0)
	j := &Job{DueAt: due, CreatedAt: due.Add(time.Hour)}
	if got := latenessBase(j, 1); !got.Equal(j.CreatedAt) {
		t.Errorf("first attempt of a job scheduled past due: base %v, want its schedule time", got)
	}
	if got := latenessBase(j, 2); !got.Equal(due) {
		t.Errorf("retry: base %v, want the due time", got)
	}
	j.CreatedAt = due.Add(-time.Hour)
	if got := latenessBase(j, 1); !got.Equal(due) {
		t.Errorf("a job scheduled ahead: base %v, want the due time", got)
	}
}

// A claim is charged in advance (took) and gives back what it did not
// take (untake): a topic that the advance charge made rest, or parked at
// its in-flight cap, may claim again at once when that gives it back what
// it waits for.
func TestUntakeEndsARestTheChargeCaused(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTestLimiter(&now, 100, 1000)
	tp := l.topic("t")
	tp.topic = Topic{Name: "t", Slots: 2, Limits: Limits{RateLimit: 1000, Burst: 20}}
	l.configure(tp, 1)
	dueSlot(l, tp, 0, now)
	dueSlot(l, tp, 1, now)

	if got := l.pick(now); got != tp {
		t.Fatalf("picked %v", got)
	}
	n := l.allowance(tp, now, 100)
	if n != 20 {
		t.Fatalf("allowance %d, want the burst 20", n)
	}
	l.took(tp, n) // the first slot's claim, charged in advance
	if n := l.allowance(tp, now, 100); n != 0 || tp.place != resting {
		t.Fatalf("the second slot: allowance %d, place %v; want 0 and resting", n, tp.place)
	}
	l.untake(tp, 19) // the first claim took one job
	if tp.place != ready {
		t.Fatalf("after the charge came back: place %v, want ready", tp.place)
	}
	if got := l.pick(now); got != tp {
		t.Fatalf("picked %v, want the topic again at once", got)
	}
	if n := l.allowance(tp, now, 100); n != 19 {
		t.Fatalf("allowance %d, want the 19 tokens given back", n)
	}
	l.requeue(tp)

	// The in-flight cap likewise.
	tp.topic.Limits = Limits{MaxInFlight: 3}
	l.configure(tp, 1)
	tp.place = serving
	l.took(tp, l.allowance(tp, now, 100)) // up to the cap, charged in advance
	if n := l.allowance(tp, now, 100); n != 0 || tp.place != parked {
		t.Fatalf("at the cap: allowance %d, place %v; want 0 and parked", n, tp.place)
	}
	l.untake(tp, 2)
	if tp.place == parked {
		t.Fatal("still parked after the charge came back")
	}
}

// testDemand is a Demand set by the test.
type testDemand struct{ n map[string]int }

func (d testDemand) Waiting(topic string) int { return d.n[topic] }
func (d testDemand) Changed() <-chan struct{} { return nil }

// A pull topic claims what its workers wait for and no more, is parked
// while none wait, and its leases take none of the worker's capacity.
func TestPullTopicFollowsDemand(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newTestLimiter(&now, 100, 10)
	demand := testDemand{n: map[string]int{}}
	l.cfg.demand = demand
	tp := l.topic("p")
	tp.topic = Topic{Name: "p", Slots: 16, Destination: Destination{Way: WayPull}}
	l.configure(tp, 1)
	tp.place = serving

	if n := l.allowance(tp, now, 100); n != 0 || tp.place != parked {
		t.Fatalf("no worker waiting: allowance %d place %v, want 0 and parked", n, tp.place)
	}
	demand.n["p"] = 30
	l.unpark()
	if tp.place == parked {
		t.Fatal("still parked with 30 jobs wanted")
	}
	tp.place = serving
	if n := l.allowance(tp, now, 100); n != 30 {
		t.Fatalf("allowance = %d, want the 30 wanted", n)
	}
	l.took(tp, 30)
	if l.room() != 10 {
		t.Errorf("room = %d after a pull topic took 30, want the whole capacity 10", l.room())
	}
	// Claimed, not yet handed over: not wanted again.
	tp.place = serving
	if n := l.allowance(tp, now, 100); n != 0 {
		t.Errorf("allowance = %d with the 30 wanted claimed, want 0", n)
	}
	// Claimed ahead of their due time: up to the demand again may be.
	tp.ahead.Add(30)
	tp.place = serving
	if n := l.allowance(tp, now, 100); n != 30 {
		t.Errorf("allowance = %d with the 30 claimed ahead of their due time, want 30 more", n)
	}
	tp.ahead.Add(-30)
	tp.inFlight.Add(30) // handed over: the demand falls as workers take them
	demand.n["p"] = 5
	tp.place = serving
	if n := l.allowance(tp, now, 100); n != 5 {
		t.Errorf("allowance = %d with 5 more wanted, want 5", n)
	}
	l.release("p", 30)
	if l.room() != 10 || tp.held.Load() != 0 {
		t.Errorf("after release: room %d held %d, want 10 and 0", l.room(), tp.held.Load())
	}

	// A webhook topic's leases count; released after its way became pull,
	// the capacity still comes back whole.
	wp := l.topic("w")
	wp.topic = Topic{Name: "w", Slots: 16}
	l.configure(wp, 1)
	l.took(wp, 4)
	if l.room() != 6 {
		t.Fatalf("room = %d after a webhook topic took 4, want 6", l.room())
	}
	wp.topic.Destination = Destination{Way: WayPull}
	l.configure(wp, 1)
	l.release("w", 4)
	if l.room() != 10 {
		t.Errorf("room = %d after the 4 were released, want 10", l.room())
	}
}
