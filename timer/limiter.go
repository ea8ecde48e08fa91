package timer

import (
	"cmp"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The limiter decides which topic the claimer serves next and how many of
// its jobs it may claim.
//
// Each topic has a token bucket (its share of the topic's rate_limit,
// refilled continuously, holding at most its share of burst) and a cap on
// the leases it holds (its share of max_in_flight); the worker as a whole
// holds at most Concurrency+Prefetch leases. A claim takes at most what
// all three allow, so over-quota jobs stay in Redis, never in worker
// memory or in a lease that could expire. A rate-limited topic whose
// bucket ran dry rests until it holds a claim's worth of tokens
// (claimTick of its rate, at least one job); one at its in-flight cap is
// parked until one of its leases is released. A paused topic is parked
// until it is resumed.
//
// A pull topic (WayPull) claims only what workers wait for: at most its
// Demand, less the jobs claimed and not yet handed to the handler; with
// none waiting it is parked until the demand rises. Its leases do not
// count in the worker's capacity: a worker's lease lasts as long as its
// job runs, and a slow pull worker must not starve the other topics.
//
// Among the topics with a due slot, the limiter picks the one with the
// least virtual time (then the earliest due, then the one that was
// furthest behind before it left idle) (weighted fair queueing by stride: a claim of n jobs
// advances the topic's virtual time by n/weight, and a topic that was idle
// starts at the virtual time of the topic served last, so it banks no
// credit). When the worker is saturated, a freed lease thus goes to the
// topic that has had least of the worker for its weight, never to the one
// with the most due jobs.
//
// Only topics with work are in the limiter's queues: a topic is in
// exactly one of ready (it has a due slot and may claim), resting (its
// bucket is refilling) and parked (at its in-flight cap), or in none
// (idle). Picking costs O(log n) in the topics with due work, whatever
// the number of idle ones.

// claimTick is the spacing of the claims of a topic limited by its rate:
// it waits for rate×claimTick tokens (at least 1, at most a batch) rather
// than claiming one job per token.
const claimTick = 10 * time.Millisecond

// topicPlace says which of the limiter's queues a topic is in.
type topicPlace uint8

const (
	idle    topicPlace = iota // in no queue: no due slot
	ready                     // in limiter.ready
	resting                   // in limiter.resting until readyAt
	parked                    // in limiter.parked until a lease is released
	serving                   // picked; the claimer puts it back with requeue
)

// topicState is one worker's view of one topic. The atomic counters are
// shared with the executor and completer; the rest is the claim loop's.
type topicState struct {
	name string
	conf atomic.Pointer[topicConf]

	held atomic.Int64 // leases in this worker, claimed and not yet released
	// ahead is how many of held are loaded and wait for their due time
	// (claimed ahead, see WorkerConfig.ClaimAhead).
	ahead atomic.Int64
	// inCapacity is how many of held count in the worker's capacity
	// (limiter.held): a pull topic's do not.
	inCapacity atomic.Int64
	inFlight   atomic.Int64 // handler calls running
	dispatched atomic.Int64 // handler calls started
	throttled  atomic.Int64 // claims held back by the rate or in-flight limit
	sloCalls   atomic.Int64 // handler calls started under a lateness objective
	withinSLO  atomic.Int64 // of them, those that started within it
	// first calls of jobs with a window that started after its end
	windowMissed atomic.Int64
	refunds      atomic.Int64 // rate tokens given back by jobs claimed but not sent
	rate         atomic.Uint64
	late         lateness // of the calls started, over the last minutes

	// The claim loop's alone.
	topic   Topic
	known   bool              // limits read at least once
	slots   queue[*slotState] // due slots, earliest first
	place   topicPlace
	index   int // in ready or resting; -1 otherwise
	tokens  float64
	filled  time.Time
	readyAt time.Time // resting until then
	pass    float64   // virtual time
	raw     float64   // virtual time before it was raised on leaving idle
	counted int64     // dispatched at the last rate sample
	// perClaim is a moving average of the jobs a claim of the topic
	// takes, a full one counted twice: what the claimer asks of its next
	// claim (see claimer.plan).
	perClaim float64
}

func (tp *topicState) heapIndex() *int { return &tp.index }

// head is when tp's earliest due slot needs serving.
func (tp *topicState) head() time.Time {
	if st, ok := tp.slots.peek(); ok {
		return st.at()
	}
	return time.Time{}
}

// topicConf is what follows from a topic's limits and this worker's share
// of its slots.
type topicConf struct {
	paused  bool    // claims nothing: parked until reconfigured
	rate    float64 // jobs per second for this worker; 0 unlimited
	burst   float64
	want    float64 // tokens a rate-limited claim waits for
	maxHeld int64   // 0 unlimited
	weight  float64
	slo     time.Duration // the topic's lateness objective; 0 none
	dest    Destination   // where its jobs go
	pull    bool          // dest is WayPull: claims follow the demand
	timing
}

// limiterConfig is what the limiter takes from the worker's config.
type limiterConfig struct {
	batch    int
	capacity int // leases the worker may hold at once
	// aheadRoom is how many leases of jobs claimed ahead, loaded and
	// waiting for their due time, the worker may hold beyond capacity.
	aheadRoom int
	timing    timing
	now       func() time.Time
	obs       Observer
	// demand is how many jobs of each pull topic workers wait for; nil:
	// none ever, and pull topics claim nothing.
	demand Demand
}

type limiter struct {
	cfg limiterConfig

	mu     sync.RWMutex // guards the map, not the states
	topics map[string]*topicState

	ready   queue[*topicState]
	resting queue[*topicState]
	parked  map[*topicState]struct{}
	vtime   float64

	held  atomic.Int64
	ahead atomic.Int64  // of held, loaded and waiting for their due time
	freed chan struct{} // a lease was released
}

func newLimiter(cfg limiterConfig) *limiter {
	return &limiter{
		cfg:    cfg,
		topics: make(map[string]*topicState),
		ready: queue[*topicState]{less: func(a, b *topicState) bool {
			if a.pass != b.pass {
				return a.pass < b.pass
			}
			if ah, bh := a.head(), b.head(); !ah.Equal(bh) {
				return ah.Before(bh)
			}
			return a.raw < b.raw // the one that was further behind
		}},
		resting: queue[*topicState]{less: func(a, b *topicState) bool { return a.readyAt.Before(b.readyAt) }},
		parked:  make(map[*topicState]struct{}),
		freed:   make(chan struct{}, 1),
	}
}

// topic returns the state of the named topic, creating it with the
// worker's defaults. Safe for any goroutine.
func (l *limiter) topic(name string) *topicState {
	l.mu.RLock()
	tp := l.topics[name]
	l.mu.RUnlock()
	if tp != nil {
		return tp
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if tp = l.topics[name]; tp == nil {
		tp = &topicState{name: name, index: -1, topic: Topic{Name: name}, perClaim: 1}
		tp.slots.less = func(a, b *slotState) bool { return a.at().Before(b.at()) }
		tp.conf.Store(&topicConf{weight: 1, timing: l.cfg.timing})
		l.topics[name] = tp
	}
	return tp
}

// lookup returns the state of the named topic, or nil if the limiter has
// none. Safe for any goroutine.
func (l *limiter) lookup(name string) *topicState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.topics[name]
}

// each calls fn for every topic state, under the map's read lock.
func (l *limiter) each(fn func(*topicState)) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, tp := range l.topics {
		fn(tp)
	}
}

// configure recomputes tp's conf from its topic and the share of its
// slots this worker owns. Unset limits are the worker's defaults: no rate
// or in-flight limit.
func (l *limiter) configure(tp *topicState, share float64) {
	lim := tp.topic.Limits
	c := &topicConf{paused: tp.topic.Paused, weight: float64(cmp.Or(lim.Weight, 1)), slo: lim.LatenessSLO, dest: tp.topic.Destination, timing: timingOf(lim, l.cfg.timing)}
	c.pull = c.dest.Of() == WayPull
	if lim.RateLimit > 0 && share > 0 {
		c.rate = lim.RateLimit * share
		burst := float64(lim.Burst)
		if burst == 0 {
			burst = lim.RateLimit / 10
		}
		c.burst = max(1, burst*share)
		c.want = min(max(1, c.rate*claimTick.Seconds()), c.burst, float64(l.cfg.batch))
	}
	if lim.MaxInFlight > 0 && share > 0 {
		c.maxHeld = max(1, int64(math.Round(float64(lim.MaxInFlight)*share)))
	}
	old := tp.conf.Swap(c)
	if old == nil || old.rate != c.rate {
		tp.tokens, tp.filled, tp.readyAt = c.burst, l.cfg.now(), time.Time{}
	}
	if tp.place == parked || tp.place == resting {
		l.leave(tp)
		l.requeue(tp) // the new limits may let it claim at once
	}
}

// slotDue records that st, a slot of st.topic, needs serving now: it joins
// its topic's due slots, and the topic the ready queue unless it rests.
func (l *limiter) slotDue(st *slotState) {
	tp := st.topic
	tp.slots.fix(st)
	switch tp.place {
	case idle:
		tp.raw = tp.pass
		tp.pass = max(tp.pass, l.vtime) // an idle topic banks no credit
		tp.place = ready
		l.ready.push(tp)
	case ready:
		l.ready.fix(tp)
	}
}

// slotGone takes st out of its topic's due slots (served and no longer
// due, or no longer owned).
func (l *limiter) slotGone(st *slotState) {
	tp := st.topic
	tp.slots.remove(st)
	if tp.place == ready {
		if tp.slots.len() == 0 {
			l.leave(tp)
		} else {
			l.ready.fix(tp)
		}
	}
}

// pick returns the topic to serve next, out of the queues until requeue,
// or nil when no topic may claim now. Topics whose rest is over rejoin
// the ready queue first.
func (l *limiter) pick(now time.Time) *topicState {
	for {
		tp, ok := l.resting.peek()
		if !ok || tp.readyAt.After(now) {
			break
		}
		l.resting.pop()
		tp.place = idle
		l.requeue(tp)
	}
	if l.ready.len() == 0 {
		return nil
	}
	tp := l.ready.pop()
	tp.place = serving
	l.vtime = tp.pass
	return tp
}

// requeue puts tp, just served or just reconfigured, where it belongs.
func (l *limiter) requeue(tp *topicState) {
	switch {
	case tp.place == resting || tp.place == parked || tp.place == ready:
		// already placed by allowance or slotDue
	case tp.slots.len() == 0:
		tp.place = idle
	default:
		tp.place = ready
		l.ready.push(tp)
	}
}

// leave takes tp out of whichever queue holds it.
func (l *limiter) leave(tp *topicState) {
	switch tp.place {
	case ready:
		l.ready.remove(tp)
	case resting:
		l.resting.remove(tp)
	case parked:
		delete(l.parked, tp)
	}
	tp.place = idle
}

// room is how many more leases the worker may hold: capacity, less the
// leases held, of which those of jobs waiting for their due time count
// only beyond aheadRoom. Capacity bounds the leases of due jobs, and
// aheadRoom those claimed ahead, so that at thousands of jobs a second a
// pass claims all the look-ahead's jobs, not as many as calls ended.
func (l *limiter) room() int {
	ahead := min(int(l.ahead.Load()), l.cfg.aheadRoom)
	return max(0, l.cfg.capacity-int(l.held.Load())+ahead)
}

// allowance is how many jobs tp, being served, may claim now, at most
// limit. When it is 0, tp rests until its bucket holds a claim's worth,
// or is parked until one of its leases is released.
func (l *limiter) allowance(tp *topicState, now time.Time, limit int) int {
	c := tp.conf.Load()
	if c.paused {
		tp.place = parked // until configure resumes it
		l.parked[tp] = struct{}{}
		return 0
	}
	if c.maxHeld > 0 {
		room := c.maxHeld - tp.held.Load()
		if room <= 0 {
			tp.place = parked
			l.parked[tp] = struct{}{}
			l.throttled(tp)
			return 0
		}
		limit = int(min(int64(limit), room))
	}
	if c.pull {
		room := l.wanted(tp)
		if room <= 0 {
			tp.place = parked // until the demand rises (Demand.Changed)
			l.parked[tp] = struct{}{}
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
			tp.place = resting
			l.resting.push(tp)
			l.throttled(tp)
			return 0
		}
		limit = min(limit, int(tp.tokens))
	}
	return limit
}

func (l *limiter) throttled(tp *topicState) {
	tp.throttled.Add(1)
	l.cfg.obs.Throttled(tp.name)
}

// took charges n claimed jobs to tp.
func (l *limiter) took(tp *topicState, n int) {
	if n == 0 {
		return
	}
	tp.held.Add(int64(n))
	c := tp.conf.Load()
	if !c.pull {
		tp.inCapacity.Add(int64(n))
		l.held.Add(int64(n))
	}
	if c.rate > 0 {
		tp.tokens -= float64(n)
	}
	tp.pass += float64(n) / c.weight
	tp.raw = tp.pass
	l.vtime = tp.pass
}

// untake gives back n of the jobs tp was charged for in advance (took)
// that its claim did not take.
func (l *limiter) untake(tp *topicState, n int) {
	if n == 0 {
		return
	}
	tp.held.Add(int64(-n))
	l.uncount(tp, int64(n))
	c := tp.conf.Load()
	if c.rate > 0 {
		tp.tokens += float64(n)
	}
	tp.pass -= float64(n) / c.weight
	tp.raw = tp.pass
	switch {
	case tp.place == ready:
		l.ready.fix(tp)
	case tp.place == parked && c.unparks(tp, l), tp.place == resting && tp.tokens >= c.want:
		// The advance charge parked the topic, or made it rest for tokens
		// that it now has back.
		l.leave(tp)
		l.requeue(tp)
	}
}

// release gives back n leases of topic, to the worker and to the topic.
// Safe for any goroutine.
func (l *limiter) release(topic string, n int) {
	tp := l.topic(topic)
	tp.held.Add(int64(-n))
	l.uncount(tp, int64(n))
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// waiting counts one more (n 1) or one fewer (n -1) lease of tp's loaded
// and waiting for its due time. One more frees room (see room): a worker
// that held all it may claims again. Safe for any goroutine.
func (l *limiter) waiting(tp *topicState, n int64) {
	tp.ahead.Add(n)
	if l.ahead.Add(n) <= int64(l.cfg.aheadRoom) && n > 0 {
		select {
		case l.freed <- struct{}{}:
		default:
		}
	}
}

// uncount takes n of tp's leases out of the worker's capacity, as far as
// they count in it. A topic whose way changed with leases out may release
// uncounted ones first and counted ones later: the total comes out right.
func (l *limiter) uncount(tp *topicState, n int64) {
	for {
		c := tp.inCapacity.Load()
		d := min(n, c)
		if tp.inCapacity.CompareAndSwap(c, c-d) {
			l.held.Add(-d)
			return
		}
	}
}

// wanted is how many more jobs pull topic tp may claim: what workers wait
// for, less what this worker claimed and has not yet handed over. Of
// those, up to the demand again may be claimed ahead of their due time:
// a worker that waits for n jobs gets the n due next at their due time,
// while as many due after them are already on their way, rather than
// claimed only once the first are handed over.
func (l *limiter) wanted(tp *topicState) int64 {
	if l.cfg.demand == nil {
		return 0
	}
	waiting := int64(l.cfg.demand.Waiting(tp.name))
	pending := tp.held.Load() - tp.inFlight.Load()
	return waiting - (pending - min(tp.ahead.Load(), max(waiting, 0)))
}

// refund gives a rate token back to topic for a job claimed but not sent.
// Safe for any goroutine.
func (l *limiter) refund(topic string) { l.topic(topic).refunds.Add(1) }

// unpark lets the parked topics below their in-flight cap claim again.
func (l *limiter) unpark() {
	for tp := range l.parked {
		if tp.conf.Load().unparks(tp, l) {
			l.leave(tp)
			l.requeue(tp)
		}
	}
}

// unparks reports whether tp, parked, may claim again under c: it is not
// paused, holds fewer leases than its in-flight cap and, pulled, has
// workers waiting.
func (c *topicConf) unparks(tp *topicState, l *limiter) bool {
	return !c.paused && (c.maxHeld == 0 || tp.held.Load() < c.maxHeld) && (!c.pull || l.wanted(tp) > 0)
}

// nextRest is when the first resting topic may claim again; zero when
// none rests.
func (l *limiter) nextRest() time.Time {
	if tp, ok := l.resting.peek(); ok {
		return tp.readyAt
	}
	return time.Time{}
}

// sampleRates sets each topic's current dispatch rate from the calls
// started since the last sample.
func (l *limiter) sampleRates(elapsed time.Duration) {
	l.each(func(tp *topicState) {
		n := tp.dispatched.Load()
		tp.rate.Store(math.Float64bits(float64(n-tp.counted) / elapsed.Seconds()))
		tp.counted = n
	})
}

// usage returns the live use of each topic the limiter has seen.
func (l *limiter) usage() map[string]TopicUsage {
	out := make(map[string]TopicUsage)
	l.each(func(tp *topicState) {
		c := tp.conf.Load()
		out[tp.name] = TopicUsage{
			InFlight:      tp.inFlight.Load(),
			Held:          tp.held.Load(),
			Rate:          math.Float64frombits(tp.rate.Load()),
			Dispatched:    tp.dispatched.Load(),
			Throttled:     tp.throttled.Load(),
			RateShare:     c.rate,
			InFlightShare: c.maxHeld,
			Lateness:      tp.late.counts(l.cfg.now()),
			SLOCalls:      tp.sloCalls.Load(),
			WithinSLO:     tp.withinSLO.Load(),
			WindowMissed:  tp.windowMissed.Load(),
		}
	})
	return out
}
