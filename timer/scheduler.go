package timer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHorizon is how far ahead jobs are put in the Redis index. Jobs due
// later live in the task store alone until the backstop loads them.
const DefaultHorizon = time.Hour

// SchedulerConfig configures a Scheduler. The zero value is usable.
type SchedulerConfig struct {
	// Horizon: jobs due within it go to Redis at once (default
	// DefaultHorizon).
	Horizon time.Duration
	// Slots of a topic created on first use (default DefaultSlots).
	Slots int
	// Node numbers this process's job ids (0..MaxNode).
	Node int
	// Now is the clock (default time.Now).
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer
	// OnTopic, when set, hears of each topic the first time this scheduler
	// uses it (a cluster member tells its leader to re-read the topics).
	OnTopic func(Topic)
	// NoAutoCreate refuses jobs of unknown topics instead of creating the
	// topic with the defaults (PUT /v1/topics/{topic} creates one).
	NoAutoCreate bool
	// MaxTopics caps how many topics there may be: a job that would create
	// one more on first use, or a PutTopic of a new one, is refused with a
	// *FieldError on "topic" (0: no cap). Topics past it cost memory, and
	// one client with a token could otherwise create them without end.
	// The cap holds exactly within one process; cluster members that
	// create topics at once may pass it by those created since their
	// catalogs last refreshed.
	MaxTopics int
	// Catalog is where the scheduler looks topics up and records those it
	// creates (default: a catalog of its own, read once per topic and kept;
	// the Engine passes the one its worker uses and refreshes).
	Catalog *Catalog
}

func (c SchedulerConfig) withDefaults() SchedulerConfig {
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.Slots = cmp.Or(c.Slots, DefaultSlots)
	fillCommon(&c.Now, &c.Logger, &c.Observer)
	return c
}

// Validate reports the first field of c that is out of range.
func (c SchedulerConfig) Validate() error {
	switch {
	case c.Horizon < 0:
		return invalid("Horizon", "must not be negative")
	case c.Slots != 0 && !validSlots(c.Slots):
		return invalid("Slots", "must be a power of two within 1..%d", MaxSlots)
	case c.Node < 0 || c.Node > MaxNode:
		return invalid("Node", "must be within 0..%d", MaxNode)
	case c.MaxTopics < 0:
		return invalid("MaxTopics", "must not be negative")
	}
	return nil
}

func validSlots(n int) bool { return n >= 1 && n <= MaxSlots && n&(n-1) == 0 }

// Scheduler is the write path: it commits jobs to the task store, then
// indexes those due within the horizon in Redis. A Redis failure after the
// commit does not fail the call: the backstop repairs it.
type Scheduler struct {
	store Store
	index Index
	ids   *IDGen
	cfg   SchedulerConfig

	// shards is how many task store shards new jobs go to, spread the
	// turn of jobs placed by neither key nor business id, and groups the
	// group commit of each shard.
	shards int
	spread spreader
	groups []group

	topics *Catalog
	// creating serialises the creation of topics under MaxTopics, so that
	// the count checked is the count created.
	creating sync.Mutex

	// indexAway, while in the future (Unix ns), skips the index write
	// after a commit: the last one failed, so Redis is away, and a request
	// should not wait for it. The backstop restores what was skipped.
	indexAway atomic.Int64

	mu      sync.Mutex
	wakers  []func(Wake)
	onPut   []func(Topic)
	repairs []func()
	onEnded []func(group string)
}

// Timing of the index writes after a commit.
const (
	// indexTimeout bounds one index write after a commit: the commit is
	// the promise, and a Redis that went away must not hold the answer up
	// (a refused connection is retried by the client with backoff, 250 ms
	// to a second of it). A write takes a millisecond or two, a batch of
	// 1,000 timers a few; one cut short costs a repair by the backstop,
	// which it is asked for at once.
	indexTimeout = 50 * time.Millisecond
	// indexProbe is how long index writes are skipped after one failed;
	// then one request tries again.
	indexProbe = time.Second
)

// NewScheduler returns a Scheduler writing to store and index.
func NewScheduler(store Store, index Index, cfg SchedulerConfig) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	cfg = cfg.withDefaults()
	s := &Scheduler{
		store:  store,
		index:  index,
		ids:    NewIDGen(cfg.Node, cfg.Now),
		cfg:    cfg,
		topics: cfg.Catalog,
	}
	if s.topics == nil {
		s.topics = NewCatalog(store, 0, cfg.Now)
	}
	s.shards = ShardsOf(store)
	s.groups = make([]group, s.shards)
	for i := range s.groups {
		s.groups[i].commit = s.scheduleEach
	}
	return s, nil
}

// OnPut registers fn to hear of each topic PutTopic stored, so that the
// worker of this process applies new limits at once.
func (s *Scheduler) OnPut(fn func(Topic)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onPut = append(s.onPut, fn)
}

// OnRepair registers fn to hear that an index write after a commit failed
// or was skipped: the backstop's cue to restore the index at once rather
// than at its next full scan.
func (s *Scheduler) OnRepair(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repairs = append(s.repairs, fn)
}

// indexFailed records that an index write after a commit failed (err) or
// was skipped (nil): later writes are skipped for indexProbe, and the
// backstop is asked to repair.
func (s *Scheduler) indexFailed(op string, n int, err error) {
	if err != nil {
		s.indexAway.Store(s.cfg.Now().Add(indexProbe).UnixNano())
		s.cfg.Observer.IndexFailed(op, err)
		s.cfg.Logger.Warn("index write failed after commit; the backstop will repair it", "dep", "redis", "op", op, "jobs", n, "err", err)
	}
	s.askRepair()
}

// askRepair asks the backstop (OnRepair) for a full scan at once.
func (s *Scheduler) askRepair() {
	s.mu.Lock()
	repairs := s.repairs
	s.mu.Unlock()
	for _, fn := range repairs {
		fn()
	}
}

// indexUp reports whether an index write should be tried now.
func (s *Scheduler) indexUp() bool { return s.cfg.Now().UnixNano() >= s.indexAway.Load() }

// OnWake registers fn to hear of slots whose earliest job moved earlier
// because of this scheduler's writes: how an in-process worker learns to
// wake sooner.
func (s *Scheduler) OnWake(fn func(Wake)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakers = append(s.wakers, fn)
}

func (s *Scheduler) wake(wakes []Wake) {
	if len(wakes) == 0 {
		return
	}
	s.mu.Lock()
	fns := s.wakers
	s.mu.Unlock()
	for _, fn := range fns {
		for _, w := range wakes {
			fn(w)
		}
	}
}

// Result is the outcome of one scheduling request.
type Result struct {
	Job *Job
	// Created is false when an idempotency key matched an existing job.
	Created bool
	Err     error
}

// Schedule commits one job. With an idempotency key already used for the
// topic it returns the existing job (Created false) when the request is
// the same, and an error wrapping ErrConflict when it differs.
//
// Concurrent calls to one task store shard are committed together (group
// commit): one multi-row INSERT and one Redis pipeline for every request
// that arrived while the previous group's INSERT ran. Each call returns
// only once its row is committed and its Redis write has ended (a failed
// one is left to the backstop), or with an error when nothing of it was
// written.
func (s *Scheduler) Schedule(ctx context.Context, r Request) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{Err: err}, err
	}
	spread := -1
	shard := s.place(&r, &spread)
	r.shard = shard + 1
	return s.groups[shard].do(ctx, r)
}

// indexNew adds the jobs due within the horizon to Redis. Failure is
// logged and counted, not returned: the rows are committed, and the
// backstop will index them.
//
// It adds only the timers in none of their slot's sets (Restore, or an
// index's IndexNew, not Add): between the commit and this write, the
// backstop may have found a row missing from Redis, restored it, and a
// worker claimed it; adding it again to Store would fire it twice.
func (s *Scheduler) indexNew(ctx context.Context, jobs []*Job, now time.Time) {
	timers := make([]Timer, 0, len(jobs))
	for _, j := range jobs {
		if s.withinHorizon(j.DueAt, now) {
			timers = append(timers, s.timerOf(j))
		}
	}
	if len(timers) == 0 {
		return
	}
	if !s.indexUp() {
		s.indexFailed("add", len(timers), nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, indexTimeout)
	defer cancel()
	restore := s.index.Restore
	if n, ok := s.index.(NewIndexer); ok {
		restore = n.IndexNew
	}
	_, wakes, err := restore(ctx, timers)
	if err != nil {
		s.indexFailed("add", len(timers), err)
		return
	}
	s.wake(wakes)
}

func (s *Scheduler) withinHorizon(due, now time.Time) bool {
	return due.Before(now.Add(s.cfg.Horizon))
}

func (s *Scheduler) timerOf(j *Job) Timer {
	t, _ := s.topics.Get(j.Topic)
	return Timer{ID: j.ID, Topic: j.Topic, Slots: t.Slots, Basis: j.SlotBasis(), DueAt: j.DueAt, Attempt: j.Attempts, Priority: j.Priority, Window: timerWindow(j, j.Attempts)}
}
