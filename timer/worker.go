package timer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of a Worker.
const (
	DefaultBatchSize   = 100
	DefaultConcurrency = 64
	DefaultGrace       = 10 * time.Second
	DefaultRescan      = 5 * time.Minute
	DefaultClaimAhead  = 50 * time.Millisecond
)

// aheadLeases is how many jobs claimed ahead (WorkerConfig.ClaimAhead)
// may wait in memory for their due time beyond Concurrency + Prefetch,
// which bound the jobs due. Without it a worker at 5,000 jobs a second
// held its look-ahead's 250-500 jobs within those 264 leases (the
// defaults), and claimed as many as calls ended, about ten a pass: ten
// rows marked firing a statement. With it, a pass every half look-ahead
// takes that time's jobs, 250 a statement (BENCHMARKS.md, issue 35).
const aheadLeases = 1024

// WorkerConfig configures a Worker. The zero value is usable.
type WorkerConfig struct {
	// BatchSize caps the jobs claimed from one slot at once.
	BatchSize int
	// Concurrency caps the handler calls in flight.
	Concurrency int
	// Prefetch caps the leases held beyond those being dispatched
	// (default 2×BatchSize: enough that the row load before each dispatch,
	// an UPDATE and a SELECT, does not leave the dispatchers idle). The worker never claims more than it can
	// dispatch soon, so over-capacity work waits in Redis, not in memory;
	// jobs claimed ahead of their due time (ClaimAhead) wait in room of
	// their own, aheadLeases.
	Prefetch int
	// Lease is how long a claimed job stays with this worker before
	// another may take it back (default LeaseFor(0, AttemptTimeout)); it
	// must exceed AttemptTimeout by LeaseMargin.
	Lease time.Duration
	// AttemptTimeout bounds one handler call (default
	// DefaultAttemptTimeout).
	AttemptTimeout time.Duration
	Retry          RetryPolicy
	// Grace is how long shutdown waits for handler calls in flight.
	Grace time.Duration
	// Horizon is the scheduler's: a job found rescheduled beyond it is
	// left to the backstop.
	Horizon time.Duration
	// Rescan is the period over which every owned slot's heads are read
	// again, spread over the period in pipelines: a safety net. A wake-up
	// is lost only when the subscription drops (a message published while
	// this worker was reconnecting), and then the worker reads every
	// owned slot's heads at once when it is back; the rescan bounds the
	// delay of a job whose wake-up was lost in any other way.
	Rescan time.Duration
	// TopicRefresh is how often the topic list is re-read when the worker
	// makes its own catalog (see Catalog).
	TopicRefresh time.Duration
	// ClaimAhead is how early jobs are claimed (default
	// DefaultClaimAhead; negative: only when due). The worker wakes when a
	// slot's next job is ClaimAhead from due and claims, from every owned
	// slot, the jobs due within another ClaimAhead: one wake-up claims
	// many slots and loads their rows in one query, done before the jobs
	// are due. The handler is still called at each job's due time, never
	// before; a cancel that lands in those last milliseconds may not stop
	// the call.
	ClaimAhead time.Duration
	// AttemptRetention is how long the attempt history is kept when the
	// store implements AttemptLog: older attempts are deleted every
	// minute. Zero keeps them forever.
	AttemptRetention time.Duration
	// ReclaimAtStart says that the previous run of this member (the same
	// member id, or the same node number under the same holder) died
	// holding leases: as the worker first learns the slots it owns, it
	// takes back every lease it finds in them at once, rather than
	// waiting for them to end, since it has claimed nothing there yet.
	// Only for a member that owns its slots alone: in a standalone
	// process, only when no other process shares the store.
	ReclaimAtStart bool
	// Tracer, when set, records the spans of each attempt of the jobs
	// that have a traceparent (see Tracer); nil traces nothing.
	Tracer Tracer
	// Demand says how many jobs of each pull topic workers wait for: the
	// worker claims a pull topic's jobs only then. nil: pull topics claim
	// nothing.
	Demand   Demand
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer
}

func (c WorkerConfig) withDefaults() WorkerConfig {
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.Concurrency = cmp.Or(c.Concurrency, DefaultConcurrency)
	c.Prefetch = cmp.Or(c.Prefetch, 2*c.BatchSize)
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, DefaultAttemptTimeout)
	c.Lease = LeaseFor(c.Lease, c.AttemptTimeout)
	c.Grace = cmp.Or(c.Grace, DefaultGrace)
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.Rescan = cmp.Or(c.Rescan, DefaultRescan)
	c.TopicRefresh = cmp.Or(c.TopicRefresh, DefaultTopicRefresh)
	switch {
	case c.ClaimAhead == 0:
		c.ClaimAhead = DefaultClaimAhead
	case c.ClaimAhead < 0:
		c.ClaimAhead = 0
	}
	fillCommon(&c.Now, &c.Logger, &c.Observer)
	return c
}

// Validate reports the first field of c that is out of range, after
// defaults are applied.
func (c WorkerConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.BatchSize < 1:
		return invalid("BatchSize", "must be positive")
	case c.Concurrency < 1:
		return invalid("Concurrency", "must be positive")
	case c.Prefetch < 0:
		return invalid("Prefetch", "must not be negative")
	case c.AttemptRetention < 0:
		return invalid("AttemptRetention", "must not be negative")
	}
	return checkLease(c.Lease, c.AttemptTimeout, "Lease", "AttemptTimeout")
}

// Demand is how many jobs of each pull topic (WayPull) the workers that
// lease them wait for. It must be safe for concurrent use.
type Demand interface {
	// Waiting is how many more jobs of topic the waiting workers would
	// take now.
	Waiting(topic string) int
	// Changed receives when the demand of some topic may have risen.
	Changed() <-chan struct{}
}

// Worker fires the jobs of the slots it owns. It is a pipeline of four
// parts, each a type with its own file and a step function that tests
// drive directly:
//
//   - the claimer (claimer.go) knows the owned slots and when each next
//     needs serving, hears wake-ups and claims due jobs;
//   - the limiter (limiter.go) orders topics fairly and caps each one's
//     rate and leases in flight;
//   - the loader (loader.go) reads the claimed rows in one query a pass
//     and routes each lease;
//   - the executor (executor.go) calls the handler with bounded
//     concurrency and a timeout;
//   - the completer (completer.go) records each outcome: done, retried,
//     dead, deferred or acked.
//
// The worker's own loop (this file) only waits and selects: for a
// wake-up, the next due time, a freed lease, an assignment change, a
// catalog change or the rescan, and then runs one pass of the claimer.
type Worker struct {
	cfg WorkerConfig
	log *slog.Logger

	owner   Assignment
	catalog *Catalog
	// ownCatalog: the worker made the catalog and runs its refresh.
	ownCatalog bool
	own        *ownership

	lim      *limiter
	claim    *claimer
	load     *loader
	exec     *executor
	complete *completer
	// history records attempts; nil when the store keeps none.
	history *attemptRecorder

	loadCh   chan claimed
	execCh   chan task
	finishCh chan outcome
	// holds counts the jobs loaded ahead of their due time and waiting
	// for it before they go to the executor.
	holds sync.WaitGroup

	wakeMu sync.Mutex
	wakes  map[Slot]time.Time
	resync bool
	// acked holds the slots' next lease ends as acks saw them, for the
	// claimer (claimer.acked), and when each ack began.
	acked map[Slot]ackedSlot
	woken chan struct{}

	// rescan holds the slot ranges of the current rescan, read at a pace
	// that spreads them over cfg.Rescan; unknown those of newly owned
	// slots, read at once.
	rescan, unknown []slotRange
	rescanAt        time.Time
	rescanStep      time.Duration
	// headsAsk and heads carry chunks of slots to the peeker and back;
	// asked says a chunk is out.
	headsAsk chan headsAnswer
	heads    chan headsAnswer
	asked    bool
	// inheriting: the slots learnt until the first assignment is learnt
	// whole may hold a dead previous run's leases (ReclaimAtStart);
	// inherited counts those marked to be taken back.
	inheriting bool
	inherited  int

	// ownedAt is when the worker last asked the assignment what it owns
	// (see ownedChanged); catalogAt is where it is in the catalog's log
	// of changes (see applyCatalog).
	ownedAt   time.Time
	catalogAt uint64
}

// NewWorker returns a worker that fires the slots owner gives it through
// handler. catalog is the process's topic catalog (nil: the worker makes
// its own over store). When index implements HeadReader the worker reads
// slots' heads to learn their state; otherwise it claims from them.
func NewWorker(store Store, index Index, leaser Leaser, handler Handler, owner Assignment, catalog *Catalog, cfg WorkerConfig) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	cfg = cfg.withDefaults()
	ownCatalog := catalog == nil
	if ownCatalog {
		catalog = NewCatalog(store, cfg.TopicRefresh, cfg.Now)
	}
	_, whole := owner.(TopicAssignment)
	held := cfg.Concurrency + cfg.Prefetch
	aheadRoom := 0
	if cfg.ClaimAhead > 0 {
		aheadRoom = aheadLeases
	}
	tokens := held + aheadRoom // the most leases held, each a pass, a task or an outcome at most
	w := &Worker{
		cfg:        cfg,
		log:        cfg.Logger,
		owner:      owner,
		catalog:    catalog,
		ownCatalog: ownCatalog,
		own:        newOwnership(whole),
		loadCh:     make(chan claimed, tokens),
		execCh:     make(chan task, tokens),
		finishCh:   make(chan outcome, tokens),
		wakes:      make(map[Slot]time.Time),
		acked:      make(map[Slot]ackedSlot),
		woken:      make(chan struct{}, 1),
		headsAsk:   make(chan headsAnswer, 1),
		heads:      make(chan headsAnswer, 1),
		inheriting: cfg.ReclaimAtStart,
	}
	record := func(ctx context.Context, o outcome) { w.complete.record(ctx, []outcome{o}) }
	def := timing{timeout: cfg.AttemptTimeout, lease: cfg.Lease, retry: cfg.Retry}
	w.lim = newLimiter(limiterConfig{batch: cfg.BatchSize, capacity: held, aheadRoom: aheadRoom, timing: def, now: cfg.Now, obs: cfg.Observer, demand: cfg.Demand})
	reader, _ := leaser.(HeadReader)
	w.claim = newClaimer(leaser, w.lim, w.own, claimerConfig{
		batch: cfg.BatchSize, ahead: cfg.ClaimAhead, now: cfg.Now, obs: cfg.Observer, logf: cfg.Logger.Warn, reader: reader,
	})
	w.claim.cfg.learn = w.learnTopic
	w.complete = &completer{
		cfg: completerConfig{now: cfg.Now, obs: cfg.Observer, logf: cfg.Logger.Warn, horizon: cfg.Horizon, tracer: cfg.Tracer,
			acked: w.acks},
		store: store, index: index, leaser: leaser, lim: w.lim, cat: catalog, wake: w.Wake,
	}
	w.load = &loader{
		cfg:   loaderConfig{now: cfg.Now, logf: cfg.Logger.Warn, ahead: cfg.ClaimAhead, retries: 3, tracer: cfg.Tracer},
		store: store, lim: w.lim, dispatch: w.hold, finish: w.finish, record: record,
	}
	if log, ok := store.(AttemptLog); ok {
		w.history = newAttemptRecorder(log, cfg.AttemptRetention, cfg.Now, cfg.Logger.Warn)
		w.complete.history = w.history
	}
	w.exec = &executor{
		cfg:     executorConfig{now: cfg.Now, obs: cfg.Observer, tracer: cfg.Tracer},
		handler: handler, lim: w.lim, finish: w.finish, record: record, history: w.history,
	}
	return w, nil
}

// RecentLateness is the largest lateness of the calls this worker
// started in the last quarter to half second; 0 when it started none.
// The retirer yields while it is high (RetirerConfig.Lateness).
func (w *Worker) RecentLateness() time.Duration { return w.exec.recent.max(w.cfg.Now()) }

// finish hands an outcome to the completer's batches.
func (w *Worker) finish(o outcome) { w.finishCh <- o }

// hold hands t to the executor at its due time: at once when it is due,
// else (claimed ahead, by at most 2×ClaimAhead) from a timer.
func (w *Worker) hold(t task) {
	wait := t.job.DueAt.Sub(w.cfg.Now())
	if wait <= 0 {
		w.execCh <- t
		return
	}
	w.holds.Add(1)
	tp := w.lim.topic(t.lease.Slot.Topic)
	w.lim.waiting(tp, 1)
	time.AfterFunc(wait, func() {
		defer w.holds.Done()
		w.lim.waiting(tp, -1)
		w.execCh <- t
	})
}

// Wake tells the worker that wk.Slot has a job due at wk.DueAt. A Wake
// with an empty topic says that wake-ups may have been lost (the
// subscription was re-established): the worker rescans every slot. It
// never blocks and is safe to call from any goroutine.
func (w *Worker) Wake(wk Wake) {
	w.wakeMu.Lock()
	if wk.Slot.Topic == "" {
		w.resync = true
	} else if at, ok := w.wakes[wk.Slot]; !ok || wk.DueAt.Before(at) {
		w.wakes[wk.Slot] = wk.DueAt
	}
	w.wakeMu.Unlock()
	w.poke()
}

// ackedSlot is a slot's next lease end as the ack that began at at saw it.
type ackedSlot struct{ next, at time.Time }

// acks records what an ack that began at at saw of its slots, for the
// loop's next pass. It does not wake the loop: what an ack tells spares
// sweeps, and the loop wakes anyway for the earliest it knows of.
func (w *Worker) acks(at time.Time, next []SlotExpiry) {
	w.wakeMu.Lock()
	defer w.wakeMu.Unlock()
	for _, e := range next {
		if a, ok := w.acked[e.Slot]; !ok || !a.at.After(at) {
			w.acked[e.Slot] = ackedSlot{next: e.NextExpiry, at: at}
		}
	}
}

// poke interrupts the loop's wait.
func (w *Worker) poke() {
	select {
	case w.woken <- struct{}{}:
	default:
	}
}

// OnEnded registers fn to hear of the group of each member the worker
// ends (see GroupCompleter.Notify). Call it before Run.
func (w *Worker) OnEnded(fn func(group string)) { w.complete.ended = fn }

// SetTopic applies a topic's new limits at once (the scheduler's hook
// after PUT /v1/topics); other processes learn them at their next catalog
// refresh.
func (w *Worker) SetTopic(t Topic) { w.catalog.Put(t) }

// Usage returns the worker's live use of each topic it has seen.
func (w *Worker) Usage() map[string]TopicUsage { return w.lim.usage() }
