package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

	group group

	topics *Catalog

	// indexAway, while in the future (Unix ns), skips the index write
	// after a commit: the last one failed, so Redis is away, and a request
	// should not wait for it. The backstop restores what was skipped.
	indexAway atomic.Int64

	mu      sync.Mutex
	wakers  []func(Wake)
	onPut   []func(Topic)
	repairs []func()
}

// Timing of the index writes after a commit.
const (
	// indexTimeout bounds one index write: the commit is the promise, and
	// a slow Redis must not hold the answer up for long.
	indexTimeout = time.Second
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
	s.group.commit = s.scheduleEach
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
// Concurrent calls are committed together (group commit): one multi-row
// INSERT and one Redis pipeline for every request that arrived while the
// previous commit ran. Each call returns only once its row is committed,
// or with an error when nothing of it was written.
func (s *Scheduler) Schedule(ctx context.Context, r Request) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{Err: err}, err
	}
	return s.group.do(ctx, r)
}

// ScheduleBatch commits many jobs all or nothing: in one transaction and
// one Redis pipeline, or not at all. When any request is refused (invalid,
// of an unknown topic with NoAutoCreate, or with an idempotency key already
// used for other content) it writes nothing, not even a topic created on
// first use, and returns a *BatchError naming every refused request with
// the results. Otherwise each request gets its own Result, in order: a
// key already used for the same content answers the existing job (Created
// false), as Schedule does, and so does a key repeated within the batch.
//
// A key taken by a concurrent request while the batch commits makes the
// transaction write nothing; the batch then looks up its keys once more
// and commits again, answering the existing job where the content is the
// same and failing whole with a *BatchError where it is not. Should a key
// be taken again during that second commit, it returns an error wrapping
// ErrConflict and nothing was written: the caller may retry the batch.
// Any other error is a failure of the whole batch, when nothing of it was
// written.
func (s *Scheduler) ScheduleBatch(ctx context.Context, reqs []Request) ([]Result, error) {
	now := s.cfg.Now()
	b, err := s.plan(ctx, reqs, now)
	if err != nil {
		return nil, err
	}
	if err := b.refused(); err != nil {
		return b.results, err
	}
	if err := s.createTopics(ctx, b); err != nil {
		return nil, err
	}
	if err := s.insertAll(ctx, b); err != nil {
		return nil, err
	}
	s.scheduled(ctx, b.fresh, now)
	return b.results, nil
}

// scheduleEach commits a group of independent Schedule calls: unlike a
// batch, a refused request fails alone, and so does one whose key was
// taken concurrently.
func (s *Scheduler) scheduleEach(ctx context.Context, reqs []Request) ([]Result, error) {
	now := s.cfg.Now()
	b, err := s.plan(ctx, reqs, now)
	if err != nil {
		return nil, err
	}
	if err := s.createTopics(ctx, b); err != nil {
		return nil, err
	}
	fresh := b.fresh
	if err := s.store.Insert(ctx, fresh); err != nil {
		if !errors.Is(err, ErrConflict) {
			return nil, fmt.Errorf("insert %d jobs: %w", len(fresh), err)
		}
		// A key was taken concurrently: insert one at a time so that only
		// the requests that collided are affected.
		if fresh, err = s.insertEach(ctx, b.reqs, b.results, fresh, b.at); err != nil {
			return nil, err
		}
	}
	s.scheduled(ctx, fresh, now)
	return b.results, nil
}

// batch is what plan makes of a list of requests.
type batch struct {
	reqs    []Request // copies, with the topics' defaults filled in
	results []Result
	fresh   []*Job // the jobs to insert
	at      []int  // index in reqs of each fresh job
	// unknown holds the topics of fresh jobs that are not stored yet and
	// are created on first use, by createTopics.
	unknown map[string]bool
}

// refused returns a *BatchError naming every request that failed, or nil.
func (b *batch) refused() error {
	var items []ItemError
	for i, r := range b.results {
		if r.Err != nil {
			items = append(items, ItemError{Index: i, Err: r.Err})
		}
	}
	if items == nil {
		return nil
	}
	return &BatchError{Items: items}
}

// plan checks every request, answers those whose idempotency key names an
// existing job, and builds the rows of the others, writing nothing. A
// refused request gets a Result with Err; the error is for a failure of
// the whole (a task store that does not answer).
func (s *Scheduler) plan(ctx context.Context, reqs []Request, now time.Time) (*batch, error) {
	b := &batch{reqs: slices.Clone(reqs), results: make([]Result, len(reqs))}
	type topicState struct {
		t     Topic
		known bool
	}
	topics := make(map[string]topicState)
	byKey := make(map[[2]string]*Job) // the job each key of the batch names
	for i := range b.reqs {
		r := &b.reqs[i]
		if err := r.Validate(); err != nil {
			b.results[i].Err = err
			continue
		}
		if _, err := r.due(now); err != nil {
			b.results[i].Err = err
			continue
		}
		ts, seen := topics[r.Topic]
		if !seen {
			t, known, err := s.findTopic(ctx, r.Topic)
			if err != nil {
				return nil, err
			}
			ts = topicState{t, known}
			topics[r.Topic] = ts
		}
		if !ts.known && s.cfg.NoAutoCreate {
			b.results[i].Err = &FieldError{Field: "topic", Message: "unknown topic " + r.Topic + "; create it first (PUT /v1/topics/" + r.Topic + ")"}
			continue
		}
		if r.MaxAttempts == 0 {
			r.MaxAttempts = ts.t.MaxAttempts // 0 still means DefaultMaxAttempts
		}
		if r.Key != "" {
			k := [2]string{r.Topic, r.Key}
			if j, ok := byKey[k]; ok {
				b.results[i] = s.repeat(r, j)
				continue
			}
			if ts.known { // a topic not stored yet has no jobs
				existing, err := s.store.GetByKey(ctx, r.Topic, r.Key)
				switch {
				case err == nil:
					byKey[k] = existing
					b.results[i] = s.repeat(r, existing)
					continue
				case !errors.Is(err, ErrNotFound):
					return nil, fmt.Errorf("look up key: %w", err)
				}
			}
		}
		j := r.job(s.ids.Next(), now)
		if r.Key != "" {
			byKey[[2]string{r.Topic, r.Key}] = j
		}
		if !ts.known {
			if b.unknown == nil {
				b.unknown = make(map[string]bool)
			}
			b.unknown[r.Topic] = true
		}
		b.results[i] = Result{Job: j, Created: true}
		b.fresh = append(b.fresh, j)
		b.at = append(b.at, i)
	}
	return b, nil
}

// findTopic returns the topic named name and whether it is stored,
// without creating it.
func (s *Scheduler) findTopic(ctx context.Context, name string) (Topic, bool, error) {
	if t, ok := s.topics.Get(name); ok {
		return t, true, nil
	}
	_, err := s.store.Topic(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return Topic{}, false, nil
	}
	if err != nil {
		return Topic{}, false, fmt.Errorf("topic %s: %w", name, err)
	}
	t, err := s.topic(ctx, name) // known to the catalog from now on
	return t, err == nil, err
}

// createTopics creates the topics of b's fresh jobs that are not stored
// yet, and gives their jobs the topic's default attempts (a topic may
// have been created with other defaults since plan looked).
func (s *Scheduler) createTopics(ctx context.Context, b *batch) error {
	if len(b.unknown) == 0 {
		return nil
	}
	created := make(map[string]Topic, len(b.unknown))
	for name := range b.unknown {
		t, err := s.topic(ctx, name)
		if err != nil {
			return err
		}
		created[name] = t
	}
	for n, j := range b.fresh {
		t, ok := created[j.Topic]
		if ok && reqOf(b, n).MaxAttempts == 0 {
			j.MaxAttempts = cmp.Or(t.MaxAttempts, DefaultMaxAttempts)
		}
	}
	return nil
}

// reqOf returns the request of b's nth fresh job.
func reqOf(b *batch, n int) *Request { return &b.reqs[b.at[n]] }

// insertAll inserts b's fresh jobs in one transaction. When a key was
// taken concurrently (the transaction wrote nothing), it looks the keys
// up again and tries once more; see ScheduleBatch.
func (s *Scheduler) insertAll(ctx context.Context, b *batch) error {
	err := s.store.Insert(ctx, b.fresh)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrConflict) {
		return fmt.Errorf("insert %d jobs: %w", len(b.fresh), err)
	}
	var (
		fresh []*Job
		at    []int
		items []ItemError
		moved = make(map[*Job]*Job) // a fresh job whose key now names another
	)
	for n, j := range b.fresh {
		i := b.at[n]
		if j.Key != "" {
			existing, err := s.store.GetByKey(ctx, j.Topic, j.Key)
			switch {
			case err == nil:
				res := s.repeat(&b.reqs[i], existing)
				b.results[i] = res
				if res.Err != nil {
					items = append(items, ItemError{Index: i, Err: res.Err})
				}
				moved[j] = existing
				continue
			case !errors.Is(err, ErrNotFound):
				return fmt.Errorf("look up key: %w", err)
			}
		}
		j.ID = s.ids.Next() // in case the conflict was an id another process took
		fresh = append(fresh, j)
		at = append(at, i)
	}
	if items != nil {
		return &BatchError{Items: items}
	}
	// A request that repeated a key within the batch answers the job the
	// key now names.
	for i, r := range b.results {
		if existing, ok := moved[r.Job]; ok && r.Job != nil {
			b.results[i] = Result{Job: existing}
		}
	}
	if err := s.store.Insert(ctx, fresh); err != nil {
		return fmt.Errorf("insert %d jobs, after a key was taken concurrently: %w", len(fresh), err)
	}
	b.fresh, b.at = fresh, at
	return nil
}

// scheduled counts and indexes jobs just committed.
func (s *Scheduler) scheduled(ctx context.Context, fresh []*Job, now time.Time) {
	for _, j := range fresh {
		s.cfg.Observer.Scheduled(j.Topic, 1)
	}
	s.indexNew(ctx, fresh, now)
}

// repeat answers a request whose key matched existing.
func (s *Scheduler) repeat(r *Request, existing *Job) Result {
	if existing == nil || existing.Topic != r.Topic || !r.sameAs(existing) {
		return Result{Err: errKeyMismatch}
	}
	return Result{Job: existing}
}

func (s *Scheduler) insertEach(ctx context.Context, reqs []Request, results []Result, jobs []*Job, at []int) ([]*Job, error) {
	var inserted []*Job
	for n, j := range jobs {
		err := s.store.Insert(ctx, []*Job{j})
		switch {
		case err == nil:
			inserted = append(inserted, j)
			continue
		case !errors.Is(err, ErrConflict):
			return nil, fmt.Errorf("insert job: %w", err)
		case j.Key == "":
			// An id collision: another process shares our node number.
			j.ID = s.ids.Next()
			if err := s.store.Insert(ctx, []*Job{j}); err != nil {
				results[at[n]] = Result{Err: fmt.Errorf("insert job: %w", err)}
				continue
			}
			inserted = append(inserted, j)
			continue
		}
		existing, err := s.store.GetByKey(ctx, j.Topic, j.Key)
		if err != nil {
			results[at[n]] = Result{Err: fmt.Errorf("look up key: %w", err)}
			continue
		}
		results[at[n]] = s.repeat(&reqs[at[n]], existing)
	}
	return inserted, nil
}

// indexNew adds the jobs due within the horizon to Redis. Failure is
// logged and counted, not returned: the rows are committed, and the
// backstop will index them.
//
// It adds only the timers in none of their slot's sets (Restore, not
// Add): between the commit and this write, the backstop may have found a
// row missing from Redis, restored it, and a worker claimed it; adding it
// again to Store would fire it twice.
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
	_, wakes, err := s.index.Restore(ctx, timers)
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
	return Timer{ID: j.ID, Topic: j.Topic, Slots: t.Slots, Basis: j.SlotBasis(), DueAt: j.DueAt, Attempt: j.Attempts, Priority: j.Priority}
}

// topic returns the topic named name, creating it on first use unless
// NoAutoCreate (then an unknown topic is an error wrapping ErrNotFound).
func (s *Scheduler) topic(ctx context.Context, name string) (Topic, error) {
	if t, ok := s.topics.Get(name); ok {
		return t, nil
	}
	var (
		t   Topic
		err error
	)
	if s.cfg.NoAutoCreate {
		t, err = s.store.Topic(ctx, name)
	} else {
		t, err = s.store.EnsureTopic(ctx, Topic{Name: name, Slots: s.cfg.Slots, CreatedAt: s.cfg.Now()})
	}
	if err != nil {
		return Topic{}, fmt.Errorf("topic %s: %w", name, err)
	}
	s.topics.Put(t)
	if s.cfg.OnTopic != nil {
		s.cfg.OnTopic(t)
	}
	return t, nil
}

// PutTopic creates a topic or updates its defaults; see
// TopicStore.PutTopic. A zero slot count means the scheduler's default for
// a new topic and "unchanged" for an existing one. t.Paused is ignored:
// PauseTopic pauses and resumes.
func (s *Scheduler) PutTopic(ctx context.Context, t Topic) (Topic, bool, error) {
	if !ValidTopic(t.Name) {
		return Topic{}, false, invalid("topic", "must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	}
	if t.Slots != 0 && !validSlots(t.Slots) {
		return Topic{}, false, invalid("slots", "must be a power of two within 1..%d", MaxSlots)
	}
	if t.MaxAttempts < 0 || t.MaxAttempts > MaxAttemptsLimit {
		return Topic{}, false, invalid("max_attempts", "must be within 1..%d, or 0 for the default", MaxAttemptsLimit)
	}
	if err := t.Limits.Validate(); err != nil {
		return Topic{}, false, err
	}
	t.CreatedAt = s.cfg.Now()
	if t.Slots == 0 {
		if _, err := s.store.Topic(ctx, t.Name); errors.Is(err, ErrNotFound) {
			t.Slots = s.cfg.Slots
		}
	}
	got, created, err := s.store.PutTopic(ctx, t)
	if err != nil {
		return got, false, err
	}
	_, known := s.topics.Get(got.Name)
	s.topics.Put(got)
	if !known && s.cfg.OnTopic != nil {
		s.cfg.OnTopic(got)
	}
	s.mu.Lock()
	onPut := s.onPut
	s.mu.Unlock()
	for _, fn := range onPut {
		fn(got)
	}
	return got, created, nil
}

// CheckLimits reports the first rule that the limits l of a topic break
// once the worker's own settings def (its callback timeout, lease and
// retry policy) fill the fields l leaves zero, as a *FieldError named as
// the API names it. Beyond l.Validate:
//   - a lease set on the topic must outlast the callback timeout in force
//     (the topic's or the worker's) by LeaseMargin; an unset lease always
//     does (see timingOf);
//   - retry.base_ms in force must not exceed retry.max_ms in force;
//   - a burst needs a rate limit.
func CheckLimits(l, def Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if l.Burst > 0 && l.RateLimit == 0 {
		return invalid("burst", "needs a rate_limit: a topic without one has no burst")
	}
	t := InForce(l, def)
	if l.Lease > 0 {
		if err := checkLease(t.Lease, t.CallbackTimeout, "lease_ms", "callback_timeout_ms"); err != nil {
			return err
		}
	}
	if t.Retry.Max > 0 && t.Retry.Base > t.Retry.Max {
		field, other := "retry.base_ms", "retry.max_ms"
		if l.Retry.Base == 0 {
			field, other = other, field // the set one is the one to change
		}
		return invalid(field, "retry.base_ms %v must not exceed retry.max_ms %v (%s is the worker's default)", t.Retry.Base, t.Retry.Max, other)
	}
	return nil
}

// InForce returns the limits that a worker whose own settings are def
// (its callback timeout, lease and retry policy) applies to a topic with
// limits l: the callback timeout, lease and retry policy filled in as the
// worker fills them (timingOf), and weight 1 when unset. A zero burst
// stays zero: DefaultBurst is what it means.
func InForce(l, def Limits) Limits {
	t := timingOf(l, timing{timeout: def.CallbackTimeout, lease: def.Lease, retry: def.Retry})
	l.CallbackTimeout, l.Lease, l.Retry = t.timeout, t.lease, t.retry
	l.Weight = cmp.Or(l.Weight, 1)
	return l
}

// DefaultBurst is the burst in force over the cluster for a topic with
// rate limit rate that sets none: a tenth of a second's worth, at least
// 1, as the limiter applies it (limiter.configure); 0 without a rate
// limit, where there is no bucket.
func DefaultBurst(rate float64) float64 {
	if rate <= 0 {
		return 0
	}
	return max(1, rate/10)
}

// PauseTopic pauses the topic named name (paused true) or resumes it, and
// returns the stored topic, or an error wrapping ErrNotFound. A paused
// topic accepts jobs and fires none; its due jobs wait in Redis and fire
// once it is resumed. This process applies it at once; other processes
// at their catalog's next refresh.
func (s *Scheduler) PauseTopic(ctx context.Context, name string, paused bool) (Topic, error) {
	t, err := s.store.PauseTopic(ctx, name, paused)
	if err != nil {
		return Topic{}, err
	}
	s.topics.Put(t)
	s.mu.Lock()
	onPut := s.onPut
	s.mu.Unlock()
	for _, fn := range onPut {
		fn(t)
	}
	return t, nil
}

// DeleteTopic deletes the topic named name; see TopicStore.DeleteTopic
// for when it may (a *TopicInUseError says why not). This process forgets
// it at once, and a job scheduled into it afterwards finds it unknown:
// it is created anew, or refused under NoAutoCreate. Another process may
// hold it in its catalog until its next refresh.
func (s *Scheduler) DeleteTopic(ctx context.Context, name string) error {
	if err := s.store.DeleteTopic(ctx, name); err != nil {
		return err
	}
	s.topics.Delete(name)
	if s.cfg.OnTopic != nil {
		s.cfg.OnTopic(Topic{Name: name})
	}
	return nil
}

// Topic returns one topic.
func (s *Scheduler) Topic(ctx context.Context, name string) (Topic, error) {
	return s.store.Topic(ctx, name)
}

// Topics returns every topic.
func (s *Scheduler) Topics(ctx context.Context) ([]Topic, error) {
	return s.store.Topics(ctx)
}

// Get returns one job.
func (s *Scheduler) Get(ctx context.Context, id JobID) (*Job, error) {
	return s.store.Get(ctx, id)
}

// Cancel moves a pending job to cancelled and takes it out of the index.
// Once it returns without error the job's webhook is never called: the
// worker moves a row from pending to firing with a conditional update
// before it calls the webhook, and Cancel's own conditional update wins
// or loses against it. It returns an error wrapping ErrNotFound for an
// unknown job, and, with the job, ErrInFlight for one that is firing,
// ErrAlreadyFired for one that is done, and ErrConflict for the rest.
func (s *Scheduler) Cancel(ctx context.Context, id JobID) (*Job, error) {
	return s.change(ctx, id, func(now time.Time) (bool, error) {
		return s.store.Transition(ctx, id, StatusPending, StatusCancelled, now)
	}, func(j *Job) error {
		_, err := s.index.Remove(ctx, []Timer{s.timerOf(j)})
		return err
	})
}

// Reschedule moves a pending job's due time to r's FireAt or Delay; the
// old time never fires. It fails as Cancel does for a job that is not
// pending.
func (s *Scheduler) Reschedule(ctx context.Context, id JobID, fireAt time.Time, delay time.Duration) (*Job, error) {
	due, err := dueTime(fireAt, delay, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return s.change(ctx, id, func(now time.Time) (bool, error) {
		return s.store.Reschedule(ctx, id, due, now)
	}, func(j *Job) error {
		if !s.withinHorizon(j.DueAt, s.cfg.Now()) {
			_, err := s.index.Remove(ctx, []Timer{s.timerOf(j)})
			return err
		}
		wakes, err := s.index.Add(ctx, []Timer{s.timerOf(j)})
		s.wake(wakes)
		return err
	})
}

// Replay moves a dead job back to pending, due at fireAt or after delay,
// with its attempts reset.
func (s *Scheduler) Replay(ctx context.Context, id JobID, fireAt time.Time, delay time.Duration) (*Job, error) {
	due, err := dueTime(fireAt, delay, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return s.change(ctx, id, func(now time.Time) (bool, error) {
		return s.store.Replay(ctx, id, due, now)
	}, func(j *Job) error {
		t := s.timerOf(j)
		ok, wakes, err := s.index.Revive(ctx, t)
		s.wake(wakes)
		if err != nil || ok {
			return err
		}
		// Not in the Dead set (purged, or Redis lost it): index it anew.
		wakes, err = s.index.Add(ctx, []Timer{t})
		s.wake(wakes)
		return err
	})
}

// change runs a conditional row update, then the index update that goes
// with it, and returns the job as it now is.
func (s *Scheduler) change(ctx context.Context, id JobID, update func(now time.Time) (bool, error), reindex func(*Job) error) (*Job, error) {
	ok, err := update(s.cfg.Now())
	if err != nil {
		return nil, err
	}
	j, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return j, fmt.Errorf("job %d is %s: %w", id, j.Status, conflictOf(j.Status))
	}
	if _, err := s.topic(ctx, j.Topic); err != nil {
		return j, err
	}
	// The row is the truth; a stale timer is skipped by the worker and a
	// missing one restored by the backstop.
	if !s.indexUp() {
		s.indexFailed("reindex", 1, nil)
		return j, nil
	}
	if err := reindex(j); err != nil {
		s.indexFailed("reindex", 1, err)
	}
	return j, nil
}

// conflictOf is the error of a change that found a job in status s.
func conflictOf(s Status) error {
	switch s {
	case StatusFiring:
		return ErrInFlight
	case StatusDone:
		return ErrAlreadyFired
	}
	return ErrConflict
}

func dueTime(fireAt time.Time, delay time.Duration, now time.Time) (time.Time, error) {
	r := Request{Topic: "x", FireAt: fireAt, Delay: delay}
	if err := r.Validate(); err != nil {
		return time.Time{}, err
	}
	if fireAt.IsZero() {
		fireAt = now.Add(delay)
	}
	return TimeOf(CeilMillis(fireAt)), nil
}
