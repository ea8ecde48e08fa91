package timer

import (
	"cmp"
	"container/heap"
	"context"
	"math"
	"sync/atomic"
	"time"
)

// How a worker shares itself among topics.
//
// Each topic has a token bucket (its share of the topic's rate_limit,
// refilled continuously, holding at most its share of burst) and a cap on
// the leases it holds (its share of max_in_flight). A claim from one of
// the topic's slots takes at most what both allow, so over-quota jobs stay
// in Redis (Store), never in worker memory or in a lease that could
// expire. A rate-limited topic whose bucket ran dry rests until it holds a
// claim's worth of tokens (claimTick of its rate, at least one job); one
// at its in-flight cap rests until one of its leases is released.
//
// Among the topics that are due and allowed, the worker serves the one
// with the least virtual time (weighted fair queueing by stride: a claim
// of n jobs advances the topic's virtual time by n/weight, and a topic
// that was idle starts at the virtual time of the topic served last, so it
// banks no credit). When the worker is saturated, a freed lease thus goes
// to the topic that has had least of the worker for its weight, never to
// the one with the most due jobs.

// claimTick is the spacing of the claims of a topic limited by its rate:
// it waits for rate×claimTick tokens (at least 1, at most a batch) rather
// than claiming one job per token.
const claimTick = 10 * time.Millisecond

// DefaultTopicRefresh is how often a worker re-reads topic limits from the
// task store, and how often AllSlots re-reads the topic list.
const DefaultTopicRefresh = 2 * time.Second

// topicState is one worker's view of one topic.
type topicState struct {
	name string
	// conf is written by the claim loop and read by the dispatchers.
	conf atomic.Pointer[topicConf]

	held       atomic.Int64 // leases in this worker, claimed and not yet released
	inFlight   atomic.Int64 // handler calls running
	dispatched atomic.Int64 // handler calls started
	throttled  atomic.Int64 // claims held back by the rate or in-flight limit
	refunds    atomic.Int64 // rate tokens given back by jobs claimed but not sent
	rate       atomic.Uint64

	// The rest is the claim loop's alone.
	known   bool // limits read from the store at least once
	topic   Topic
	owned   int
	slots   slotHeap
	index   int // in the worker's topic heap; -1 when idle
	tokens  float64
	filled  time.Time
	readyAt time.Time // rate-limited until then
	parked  bool      // at its in-flight cap until a lease is released
	pass    float64   // virtual time
	counted int64     // dispatched at the last rate sample
}

// topicConf is what follows from a topic's limits and this worker's share
// of its slots.
type topicConf struct {
	rate    float64 // jobs per second for this worker; 0 unlimited
	burst   float64
	want    float64 // tokens a rate-limited claim waits for
	maxHeld int64   // 0 unlimited
	weight  float64
	lease   time.Duration
	timeout time.Duration
	retry   RetryPolicy
}

// configure recomputes tp's conf from its topic and share. Unknown limits
// are the worker's defaults: no rate or in-flight limit.
func (w *Worker) configure(tp *topicState, share float64) {
	l := tp.topic.Limits
	c := &topicConf{
		weight:  float64(cmp.Or(l.Weight, 1)),
		timeout: cmp.Or(l.CallbackTimeout, w.cfg.AttemptTimeout),
		retry:   RetryPolicy{Base: cmp.Or(l.Retry.Base, w.cfg.Retry.Base), Max: cmp.Or(l.Retry.Max, w.cfg.Retry.Max)},
	}
	c.lease = cmp.Or(l.Lease, max(w.cfg.Lease, c.timeout+LeaseMargin))
	if l.RateLimit > 0 && share > 0 {
		c.rate = l.RateLimit * share
		burst := float64(l.Burst)
		if burst == 0 {
			burst = l.RateLimit / 10
		}
		c.burst = max(1, burst*share)
		c.want = min(max(1, c.rate*claimTick.Seconds()), c.burst, float64(w.cfg.BatchSize))
	}
	if l.MaxInFlight > 0 && share > 0 {
		c.maxHeld = max(1, int64(math.Round(float64(l.MaxInFlight)*share)))
	}
	old := tp.conf.Swap(c)
	if old == nil || old.rate != c.rate {
		tp.tokens, tp.filled, tp.readyAt = c.burst, w.cfg.Now(), time.Time{}
	}
}

// share is the fraction of tp's slots this worker owns.
func (w *Worker) share(tp *topicState) float64 {
	if w.ownsAll || tp.topic.Slots <= 0 {
		return 1
	}
	return min(1, float64(tp.owned)/float64(tp.topic.Slots))
}

// topicOf returns the state of the named topic, creating it. It is safe
// for any goroutine; only the loop creates topics in practice.
func (w *Worker) topicOf(name string) *topicState {
	w.topicsMu.RLock()
	tp := w.topics[name]
	w.topicsMu.RUnlock()
	if tp != nil {
		return tp
	}
	w.topicsMu.Lock()
	defer w.topicsMu.Unlock()
	if tp = w.topics[name]; tp == nil {
		tp = &topicState{name: name, index: -1, topic: Topic{Name: name}}
		tp.conf.Store(&topicConf{weight: 1, lease: w.cfg.Lease, timeout: w.cfg.AttemptTimeout, retry: w.cfg.Retry})
		w.topics[name] = tp
	}
	return tp
}

// learn reads the limits of a topic seen for the first time, so that a
// flood of a new topic is limited from its first claim, not from the next
// refresh. On error the topic runs unlimited until then.
func (w *Worker) learn(ctx context.Context, tp *topicState) {
	if tp.known {
		return
	}
	tp.known = true
	if t, err := w.store.Topic(ctx, tp.name); err == nil {
		tp.topic = t
	}
	w.configure(tp, w.share(tp))
}

// SetTopic applies a topic's new limits at once (the scheduler's hook
// after PUT /v1/topics); other processes learn them at their next refresh.
func (w *Worker) SetTopic(t Topic) {
	w.limitsMu.Lock()
	w.limits = append(w.limits, t)
	w.limitsMu.Unlock()
	w.poke()
}

// refreshTopics re-reads every topic's limits each TopicRefresh and hands
// them to the claim loop.
func (w *Worker) refreshTopics(ctx context.Context) {
	t := time.NewTicker(w.cfg.TopicRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		topics, err := w.store.Topics(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("read topic limits failed; keeping the current ones", "err", err)
			}
			continue
		}
		w.limitsMu.Lock()
		w.limits = append(w.limits, topics...)
		w.limitsMu.Unlock()
		w.poke()
	}
}

// applyLimits takes the topics handed over by refreshTopics and SetTopic.
func (w *Worker) applyLimits() {
	w.limitsMu.Lock()
	topics := w.limits
	w.limits = nil
	w.limitsMu.Unlock()
	for _, t := range topics {
		tp := w.topicOf(t.Name)
		if tp.known && tp.topic.Limits == t.Limits && tp.topic.Slots == t.Slots {
			continue
		}
		tp.known, tp.topic = true, t
		w.configure(tp, w.share(tp))
		w.unpark(tp)
		w.topicHeap.set(tp)
	}
}

// sampleRates sets each topic's current dispatch rate from the calls
// started since the last sample.
func (w *Worker) sampleRates(elapsed time.Duration) {
	w.topicsMu.RLock()
	defer w.topicsMu.RUnlock()
	for _, tp := range w.topics {
		n := tp.dispatched.Load()
		tp.rate.Store(math.Float64bits(float64(n-tp.counted) / elapsed.Seconds()))
		tp.counted = n
	}
}

// allowance is how many jobs tp may claim now, at most limit. When it is
// 0, tp rests: until its bucket holds a claim's worth, or parked until a
// lease is released.
func (w *Worker) allowance(tp *topicState, now time.Time, limit int) int {
	c := tp.conf.Load()
	if c.maxHeld > 0 {
		room := c.maxHeld - tp.held.Load()
		if room <= 0 {
			tp.parked = true
			w.parked[tp] = true
			tp.throttled.Add(1)
			w.obs.Throttled(tp.name)
			return 0
		}
		limit = int(min(int64(limit), room))
	}
	if c.rate > 0 {
		tp.tokens = min(c.burst, tp.tokens+now.Sub(tp.filled).Seconds()*c.rate+float64(tp.refunds.Swap(0)))
		tp.filled = now
		if tp.tokens < c.want {
			wait := time.Duration((c.want - tp.tokens) / c.rate * float64(time.Second))
			tp.readyAt = now.Add(max(wait, time.Millisecond))
			tp.throttled.Add(1)
			w.obs.Throttled(tp.name)
			return 0
		}
		limit = min(limit, int(tp.tokens))
	}
	return limit
}

// took charges n claimed jobs to tp.
func (w *Worker) took(tp *topicState, n int) {
	if n == 0 {
		return
	}
	tp.held.Add(int64(n))
	c := tp.conf.Load()
	if c.rate > 0 {
		tp.tokens -= float64(n)
	}
	tp.pass += float64(n) / c.weight
}

// unparkReleased lets the parked topics that are below their in-flight
// cap again claim.
func (w *Worker) unparkReleased() {
	for tp := range w.parked {
		if c := tp.conf.Load(); c.maxHeld == 0 || tp.held.Load() < c.maxHeld {
			w.unpark(tp)
			w.topicHeap.set(tp)
		}
	}
}

func (w *Worker) unpark(tp *topicState) {
	tp.parked = false
	delete(w.parked, tp)
}

// pick returns the due topic to serve next: the least virtual time, then
// the earliest due, then the one that was furthest behind (an idle topic
// that just became due). It returns nil when no topic is due at now.
//
// A topic is due when one of its slots' at (see slotState.at) is within
// the look-ahead of now, and it is not resting for its rate: its readyAt
// is now or earlier.
func (w *Worker) pick(now time.Time) *topicState {
	var (
		best    *topicState
		bestRaw float64
	)
	horizon := now.Add(w.cfg.ClaimAhead)
	w.scratch = w.scratch[:0]
	for {
		tp := w.topicHeap.peek()
		if tp == nil || tp.at().After(horizon) {
			break
		}
		heap.Pop(&w.topicHeap)
		w.scratch = append(w.scratch, tp)
		if tp.readyAt.After(now) {
			continue
		}
		raw := tp.pass
		tp.pass = max(tp.pass, w.vtime) // an idle topic banks no credit
		switch {
		case best == nil, tp.pass < best.pass:
		case tp.pass > best.pass:
			continue
		case tp.at().Before(best.at()):
		case tp.at().After(best.at()) || raw >= bestRaw:
			continue
		}
		best, bestRaw = tp, raw
	}
	for _, tp := range w.scratch {
		heap.Push(&w.topicHeap, tp)
	}
	if best != nil {
		w.vtime = best.pass
	}
	return best
}

// at is when tp next needs serving; zero when idle or parked.
func (tp *topicState) at() time.Time {
	next := tp.slots.next()
	if next.IsZero() || tp.parked {
		return time.Time{}
	}
	if tp.readyAt.After(next) {
		return tp.readyAt
	}
	return next
}

func (tp *topicState) heapIndex() *int { return &tp.index }

// TopicUsage is a worker's live use of one topic.
type TopicUsage struct {
	// InFlight counts the handler calls running; Held the leases this
	// worker holds (running, or waiting for a dispatcher).
	InFlight, Held int64
	// Rate is the dispatches per second over the last second.
	Rate float64
	// Dispatched and Throttled count handler calls started and claims held
	// back by the topic's rate or in-flight limit, since the worker
	// started.
	Dispatched, Throttled int64
	// RateShare and InFlightShare are this worker's shares of the topic's
	// limits (0: unlimited).
	RateShare     float64
	InFlightShare int64
}

// Usage returns the worker's live use of each topic it has seen.
func (w *Worker) Usage() map[string]TopicUsage {
	w.topicsMu.RLock()
	defer w.topicsMu.RUnlock()
	out := make(map[string]TopicUsage, len(w.topics))
	for name, tp := range w.topics {
		c := tp.conf.Load()
		out[name] = TopicUsage{
			InFlight:      tp.inFlight.Load(),
			Held:          tp.held.Load(),
			Rate:          math.Float64frombits(tp.rate.Load()),
			Dispatched:    tp.dispatched.Load(),
			Throttled:     tp.throttled.Load(),
			RateShare:     c.rate,
			InFlightShare: c.maxHeld,
		}
	}
	return out
}

// timeHeap orders items by when they next need serving; an item at the
// zero time is idle and out of the heap.
type timeHeap[T interface {
	at() time.Time
	heapIndex() *int
}] []T

func (h timeHeap[T]) Len() int           { return len(h) }
func (h timeHeap[T]) Less(i, j int) bool { return h[i].at().Before(h[j].at()) }
func (h timeHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	*h[i].heapIndex(), *h[j].heapIndex() = i, j
}
func (h *timeHeap[T]) Push(x any) {
	s := x.(T)
	*s.heapIndex() = len(*h)
	*h = append(*h, s)
}
func (h *timeHeap[T]) Pop() any {
	old := *h
	s := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	*h = old[:len(old)-1]
	*s.heapIndex() = -1
	return s
}

// set puts s at its place, or takes it out when it is idle.
func (h *timeHeap[T]) set(s T) {
	switch i := *s.heapIndex(); {
	case s.at().IsZero():
		h.remove(s)
	case i < 0:
		heap.Push(h, s)
	default:
		heap.Fix(h, i)
	}
}

func (h *timeHeap[T]) remove(s T) {
	if i := *s.heapIndex(); i >= 0 {
		heap.Remove(h, i)
	}
}

func (h timeHeap[T]) peek() (s T) {
	if len(h) > 0 {
		s = h[0]
	}
	return s
}

func (h timeHeap[T]) next() time.Time {
	if len(h) == 0 {
		return time.Time{}
	}
	return h[0].at()
}

type (
	slotHeap  = timeHeap[*slotState]
	topicHeap = timeHeap[*topicState]
)
