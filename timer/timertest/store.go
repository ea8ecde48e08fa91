package timertest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toc-project/toc/timer"
)

// Store is an in-memory timer.Store with the semantics of taskdb.Store:
// conditional status changes, ErrConflict on a duplicate id or (topic,
// key) with nothing written, ErrInvalid on what a row cannot hold, times
// kept in whole milliseconds, LastError cut to 1,024 bytes at a UTF-8
// boundary. It is safe for concurrent use. Create it with NewStore.
type Store struct {
	// Now is the clock read where a call carries no time (a job inserted
	// with a zero CreatedAt, a topic ensured with a zero CreatedAt), as
	// taskdb.WithClock sets it. NewStore sets time.Now; change it before
	// the first call.
	Now func() time.Time

	f faults

	mu     sync.Mutex
	jobs   map[timer.JobID]*row
	keys   map[topicKey]timer.JobID
	topics map[string]timer.Topic
	// topicVersion counts the writes of topics (TopicsVersion).
	topicVersion int64
	attempts     []timer.Attempt
	schedules    map[timer.ScheduleID]*timer.Schedule
	groups       map[string]*timer.Group
	audit        []*timer.AuditEntry
}

var (
	_ timer.Store      = (*Store)(nil)
	_ timer.AttemptLog = (*Store)(nil)
	_ timer.Forecaster = (*Store)(nil)
)

// row is a job as the task store keeps it: times in Unix milliseconds.
type row struct {
	job                    timer.Job
	due, created, modified int64
}

type topicKey struct{ topic, key string }

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{
		Now:    time.Now,
		jobs:   make(map[timer.JobID]*row),
		keys:   make(map[topicKey]timer.JobID),
		topics: make(map[string]timer.Topic),
	}
}

// FailNext makes the next n calls of method (a method name of
// timer.Store, as "Insert" or "ScanPending") return err and change
// nothing.
func (s *Store) FailNext(method string, err error, n int) { s.f.FailNext(method, err, n) }

// Calls returns how many times method was called, failed calls included.
func (s *Store) Calls(method string) int { return s.f.Calls(method) }

// Len returns how many jobs the store holds, in every status.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}

// Insert implements timer.JobWriter.
func (s *Store) Insert(ctx context.Context, jobs []*timer.Job) error {
	if err := s.f.call("Insert"); err != nil {
		return err
	}
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if err := timer.CheckJob(j); err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(jobs), err)
		}
	}
	now := s.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make(map[timer.JobID]bool, len(jobs))
	keys := make(map[topicKey]bool)
	for _, j := range jobs {
		k := topicKey{j.Topic, j.Key}
		_, idTaken := s.jobs[j.ID]
		_, keyTaken := s.keys[k]
		if idTaken || ids[j.ID] || (j.Key != "" && (keyTaken || keys[k])) {
			return fmt.Errorf("insert %d jobs: job %d or key %q of topic %q exists: %w",
				len(jobs), j.ID, j.Key, j.Topic, timer.ErrConflict)
		}
		ids[j.ID] = true
		if j.Key != "" {
			keys[k] = true
		}
	}
	for _, j := range jobs {
		r := &row{job: *j, due: timer.MillisOf(j.DueAt), created: now, modified: now}
		if !j.CreatedAt.IsZero() {
			r.created, r.modified = j.CreatedAt.UnixMilli(), j.CreatedAt.UnixMilli()
		}
		if !j.UpdatedAt.IsZero() {
			r.modified = j.UpdatedAt.UnixMilli()
		}
		r.job.LastError = timer.TruncateError(j.LastError)
		r.job.Payload = bytes.Clone(j.Payload)
		r.job.Version = 1
		if !j.ExpireAt.IsZero() {
			r.job.ExpireAt = timer.TimeOf(timer.MillisOf(j.ExpireAt))
		}
		s.jobs[j.ID] = r
		if j.Key != "" {
			s.keys[topicKey{j.Topic, j.Key}] = j.ID
		}
	}
	return nil
}

// update runs fn on job id when it is in one of the statuses from, and
// reports whether it was; it moves the job's version.
func (s *Store) update(id timer.JobID, from []timer.Status, now time.Time, fn func(r *row)) bool {
	return s.updateIf(id, from, timer.AnyVersion, now, fn)
}

// updateIf is update on the condition that the job is also at version
// (timer.AnyVersion: at any).
func (s *Store) updateIf(id timer.JobID, from []timer.Status, version int64, now time.Time, fn func(r *row)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok || !slices.Contains(from, r.job.Status) || (version != timer.AnyVersion && r.job.Version != version) {
		return false
	}
	fn(r)
	r.modified = now.UnixMilli()
	r.job.Version++
	return true
}

// Transition implements timer.JobWriter.
func (s *Store) Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error) {
	if err := s.f.call("Transition"); err != nil {
		return false, err
	}
	return s.transition(id, from, to, timer.AnyVersion, now)
}

// TransitionIf implements timer.JobWriter.
func (s *Store) TransitionIf(ctx context.Context, id timer.JobID, from, to timer.Status, version int64, now time.Time) (bool, error) {
	if err := s.f.call("TransitionIf"); err != nil {
		return false, err
	}
	return s.transition(id, from, to, version, now)
}

func (s *Store) transition(id timer.JobID, from, to timer.Status, version int64, now time.Time) (bool, error) {
	if !from.Known() || !to.Known() {
		return false, fmt.Errorf("move job %d from %s to %s: %w", id, from, to, timer.ErrInvalid)
	}
	return s.updateIf(id, []timer.Status{from}, version, now, func(r *row) { r.job.Status = to }), nil
}

// unfinished are the statuses Fire, Complete and Fail act on.
var unfinished = []timer.Status{timer.StatusPending, timer.StatusFiring}

// Fire implements timer.JobWriter.
func (s *Store) Fire(ctx context.Context, ids []timer.JobID, until, now time.Time) (int, error) {
	if err := s.f.call("Fire"); err != nil {
		return 0, err
	}
	untilMs := timer.MillisOf(until)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		if r, ok := s.jobs[id]; ok && slices.Contains(unfinished, r.job.Status) && r.due <= untilMs && !r.job.Expired(now) {
			if r.job.Status == timer.StatusPending && s.keyHeld(r) {
				continue // busy: another job holds its concurrency key
			}
			if r.job.Status == timer.StatusPending {
				r.job.Version++ // a firing job stays as it was
			}
			r.job.Status = timer.StatusFiring // taskdb leaves gmt_modified
			n++
		}
	}
	return n, nil
}

// keyHeld reports whether a job other than r's holds r's concurrency
// key (timer.HoldsKey), as taskdb's unique index of holders would refuse
// r's move to firing. A scan of every row: the fake is small.
func (s *Store) keyHeld(r *row) bool {
	if r.job.ConcurrencyKey == "" {
		return false
	}
	for _, o := range s.jobs {
		if o != r && o.job.Topic == r.job.Topic && o.job.ConcurrencyKey == r.job.ConcurrencyKey && timer.HoldsKey(&o.job) {
			return true
		}
	}
	return false
}

// Complete implements timer.JobWriter. Of an id given twice, the first
// completion counts, as in taskdb's CASE.
func (s *Store) Complete(ctx context.Context, done []timer.Completion, now time.Time) (int, error) {
	if err := s.f.call("Complete"); err != nil {
		return 0, err
	}
	for _, c := range done {
		if c.Attempts < 0 || c.Attempts > math.MaxInt32 {
			return 0, fmt.Errorf("complete job %d: attempts %d: %w", c.ID, c.Attempts, timer.ErrInvalid)
		}
		if c.Status < 0 || c.Status > 999 {
			return 0, fmt.Errorf("complete job %d: status %d: %w", c.ID, c.Status, timer.ErrInvalid)
		}
	}
	n := 0
	var attempts []timer.Attempt
	for _, c := range done {
		if s.update(c.ID, unfinished, now, func(r *row) {
			r.job.Status, r.job.Attempts, r.job.LastStatus = timer.StatusDone, c.Attempts, c.Status
		}) {
			n++
			if c.Attempt != nil {
				attempts = append(attempts, *c.Attempt)
			}
		}
	}
	s.keepAttempts(attempts)
	return n, nil
}

// Fail implements timer.JobWriter.
func (s *Store) Fail(ctx context.Context, id timer.JobID, f timer.Failure, now time.Time) (bool, error) {
	if err := s.f.call("Fail"); err != nil {
		return false, err
	}
	if f.Attempts < 0 || f.Attempts > math.MaxInt32 {
		return false, fmt.Errorf("fail job %d: attempts %d: %w", id, f.Attempts, timer.ErrInvalid)
	}
	if f.Status < 0 || f.Status > 999 {
		return false, fmt.Errorf("fail job %d: status %d: %w", id, f.Status, timer.ErrInvalid)
	}
	return s.update(id, unfinished, now, func(r *row) {
		r.job.Status = timer.StatusPending
		switch {
		case f.Dead:
			r.job.Status = timer.StatusDead
		case f.Expired:
			r.job.Status = timer.StatusExpired
		case f.Stopped:
			r.job.Status = timer.StatusCancelled
		}
		r.job.Attempts, r.job.LastError, r.job.LastStatus = f.Attempts, timer.TruncateError(f.Error), f.Status
		if !f.Dead && !f.Expired && !f.Stopped && !f.RetryAt.IsZero() {
			r.due = timer.CeilMillis(f.RetryAt)
		}
	}), nil
}

// Reschedule implements timer.JobWriter.
func (s *Store) Reschedule(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	if err := s.f.call("Reschedule"); err != nil {
		return false, err
	}
	return s.update(id, []timer.Status{timer.StatusPending}, now, func(r *row) { r.reschedule(dueAt) }), nil
}

// reschedule sets r's due time, and moves its deadline with it.
func (r *row) reschedule(dueAt time.Time) {
	r.due = timer.MillisOf(dueAt)
	if r.job.Expiry.Set {
		r.job.ExpireAt = timer.TimeOf(r.due + r.job.Window.Milliseconds() + r.job.Expiry.After.Milliseconds())
	}
}

// Expire implements timer.JobWriter.
func (s *Store) Expire(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	if err := s.f.call("Expire"); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok || !slices.Contains(unfinished, r.job.Status) || !r.job.Expired(now) {
		return false, nil
	}
	r.job.Status, r.job.LastError = timer.StatusExpired, timer.TruncateError(reason)
	r.modified = now.UnixMilli()
	r.job.Version++
	return true, nil
}

// RescheduleIf implements timer.JobWriter.
func (s *Store) RescheduleIf(ctx context.Context, id timer.JobID, dueAt time.Time, version int64, now time.Time) (bool, error) {
	if err := s.f.call("RescheduleIf"); err != nil {
		return false, err
	}
	return s.updateIf(id, []timer.Status{timer.StatusPending}, version, now, func(r *row) { r.reschedule(dueAt) }), nil
}

// Replay implements timer.JobWriter.
func (s *Store) Replay(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	if err := s.f.call("Replay"); err != nil {
		return false, err
	}
	return s.update(id, []timer.Status{timer.StatusDead}, now, func(r *row) {
		r.job.Status, r.due, r.job.Attempts, r.job.LastError = timer.StatusPending, timer.MillisOf(dueAt), 0, ""
	}), nil
}

// jobOf returns a copy of r as the real store reads it back.
func jobOf(r *row) *timer.Job {
	j := r.job
	j.DueAt, j.CreatedAt, j.UpdatedAt = timer.TimeOf(r.due), timer.TimeOf(r.created), timer.TimeOf(r.modified)
	j.Payload = bytes.Clone(r.job.Payload) // nil stays nil, empty stays empty
	return &j
}

// Get implements timer.JobReader.
func (s *Store) Get(ctx context.Context, id timer.JobID) (*timer.Job, error) {
	if err := s.f.call("Get"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.jobs[id]
	if !ok {
		return nil, fmt.Errorf("get job %d: %w", id, timer.ErrNotFound)
	}
	return jobOf(r), nil
}

// GetMany implements timer.JobReader. It returns the jobs in the order of
// ids, each once.
func (s *Store) GetMany(ctx context.Context, ids []timer.JobID) ([]*timer.Job, error) {
	if err := s.f.call("GetMany"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := make([]*timer.Job, 0, len(ids))
	seen := make(map[timer.JobID]bool, len(ids))
	for _, id := range ids {
		if r, ok := s.jobs[id]; ok && !seen[id] {
			seen[id] = true
			jobs = append(jobs, jobOf(r))
		}
	}
	return jobs, nil
}

// GetByKey implements timer.JobReader.
func (s *Store) GetByKey(ctx context.Context, topic, key string) (*timer.Job, error) {
	if err := s.f.call("GetByKey"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.keys[topicKey{topic, key}]
	if key == "" || !ok {
		return nil, fmt.Errorf("get job of topic %q by key %q: %w", topic, key, timer.ErrNotFound)
	}
	return jobOf(s.jobs[id]), nil
}

// ListJobs implements timer.JobLister. It looks at every job on each
// call: fine for tests, not for millions of jobs.
func (s *Store) ListJobs(ctx context.Context, q timer.JobQuery) ([]*timer.Job, error) {
	if err := s.f.call("ListJobs"); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	s.mu.Lock()
	var out []*timer.Job
	for _, r := range s.jobs {
		if j := jobOf(r); q.Matches(j) && q.After.Precedes(j) {
			out = append(out, j)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *timer.Job) int { return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID)) })
	return out[:min(len(out), q.Limit)], nil
}

// ScanPending implements timer.Scanner. It sorts the pending jobs on each
// call: fine for tests, not for millions of jobs.
func (s *Store) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	if err := s.f.call("ScanPending"); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		return nil, fmt.Errorf("scan pending jobs: limit %d: %w", limit, timer.ErrInvalid)
	}
	sinceMs := int64(math.MinInt64)
	if !q.Since.IsZero() {
		sinceMs = timer.MillisOf(q.Since)
	}
	beforeMs := timer.MillisOf(q.Before)
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []*row
	for _, r := range s.jobs {
		if (r.job.Status == timer.StatusPending || r.job.Status == timer.StatusFiring) && r.due >= sinceMs && r.due < beforeMs &&
			q.After.After(r.job.Topic, r.due, r.job.ID) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b *row) int {
		return cmp.Or(cmp.Compare(a.job.Topic, b.job.Topic), cmp.Compare(a.due, b.due), cmp.Compare(a.job.ID, b.job.ID))
	})
	timers := make([]timer.Timer, 0, min(limit, len(rows)))
	for _, r := range rows[:min(limit, len(rows))] {
		var window time.Duration
		if r.job.Attempts == 0 { // a job's window holds for its first attempt
			window = r.job.Window
		}
		timers = append(timers, timer.Timer{
			ID:       r.job.ID,
			Topic:    r.job.Topic,
			Slots:    s.topics[r.job.Topic].Slots, // 0 for a topic without a row
			Basis:    r.job.SlotBasis(),
			DueAt:    timer.TimeOf(r.due),
			Attempt:  r.job.Attempts,
			Priority: r.job.Priority,
			Window:   window,
		})
	}
	return timers, nil
}

// ListDead implements timer.DeadReader. Like taskdb's LIKE, the error
// filter ignores ASCII case.
func (s *Store) ListDead(ctx context.Context, q timer.DeadQuery) ([]*timer.Job, error) {
	if err := s.f.call("ListDead"); err != nil {
		return nil, err
	}
	from, to, afterMs, err := q.Millis()
	if err != nil {
		return nil, err
	}
	needle := strings.ToLower(q.ErrorContains)
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []*row
	for _, r := range s.jobs {
		if (r.job.Topic == q.Topic || q.Topic == "" && slices.Contains(q.Topics, r.job.Topic)) && r.job.Status == timer.StatusDead && r.modified >= from && r.modified < to &&
			(r.modified > afterMs || (r.modified == afterMs && r.job.ID > q.After.ID)) &&
			strings.Contains(strings.ToLower(r.job.LastError), needle) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b *row) int {
		return cmp.Or(cmp.Compare(a.modified, b.modified), cmp.Compare(a.job.ID, b.job.ID))
	})
	jobs := make([]*timer.Job, 0, min(q.Limit, len(rows)))
	for _, r := range rows[:min(q.Limit, len(rows))] {
		jobs = append(jobs, jobOf(r))
	}
	return jobs, nil
}

// EnsureTopic implements timer.TopicStore. Like taskdb, it stores the
// name, slot count, max attempts and creation time of a new topic, not
// its limits (PutTopic sets those).
func (s *Store) EnsureTopic(ctx context.Context, t timer.Topic) (timer.Topic, error) {
	if err := s.f.call("EnsureTopic"); err != nil {
		return timer.Topic{}, err
	}
	return s.ensureTopic(t)
}

// EnsureTopics implements timer.TopicStore: all of ts are checked before
// any is stored.
func (s *Store) EnsureTopics(ctx context.Context, ts []timer.Topic) ([]timer.Topic, error) {
	if err := s.f.call("EnsureTopics"); err != nil {
		return nil, err
	}
	for _, t := range ts {
		t.Slots = cmp.Or(t.Slots, timer.DefaultSlots)
		if err := timer.CheckTopic("ensure topic", t); err != nil {
			return nil, err
		}
	}
	out := make([]timer.Topic, len(ts))
	for i, t := range ts {
		got, err := s.ensureTopic(t)
		if err != nil {
			return nil, err
		}
		out[i] = got
	}
	return out, nil
}

func (s *Store) ensureTopic(t timer.Topic) (timer.Topic, error) {
	t.Slots = cmp.Or(t.Slots, timer.DefaultSlots)
	if err := timer.CheckTopic("ensure topic", t); err != nil {
		return timer.Topic{}, err
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = s.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got, ok := s.topics[t.Name]; ok {
		return got, nil
	}
	stored := timer.Topic{Name: t.Name, Slots: t.Slots, MaxAttempts: t.MaxAttempts, CreatedAt: timer.TimeOf(created.UnixMilli())}
	s.topics[t.Name] = stored
	s.topicVersion++
	return stored, nil
}

// PutTopic implements timer.TopicStore. The durations of the limits are
// kept in whole milliseconds, as taskdb's columns hold them; Paused stays
// as it is.
func (s *Store) PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error) {
	if err := s.f.call("PutTopic"); err != nil {
		return timer.Topic{}, false, err
	}
	if t.MaxAttempts < 0 || t.MaxAttempts > timer.MaxAttemptsLimit {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: max attempts %d: %w", t.Name, t.MaxAttempts, timer.ErrInvalid)
	}
	if err := t.Limits.Validate(); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	if err := t.Expiry.Check("expire_after_ms"); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	s.mu.Lock()
	existing, ok := s.topics[t.Name]
	s.mu.Unlock()
	created := !ok
	if created {
		var err error
		if existing, err = s.ensureTopic(t); err != nil {
			return timer.Topic{}, false, err
		}
	}
	if t.Slots != 0 && t.Slots != existing.Slots {
		return existing, false, fmt.Errorf("topic %q has %d slots, fixed at its creation: %w", t.Name, existing.Slots, timer.ErrConflict)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored := s.topics[t.Name]
	stored.MaxAttempts, stored.Limits, stored.Expiry = t.MaxAttempts, millisLimits(t.Limits), t.Expiry
	stored.Destination = t.Destination.Stored()
	s.topics[t.Name] = stored
	s.topicVersion++
	return stored, created, nil
}

// millisLimits truncates the durations of l to milliseconds.
func millisLimits(l timer.Limits) timer.Limits {
	ms := func(d time.Duration) time.Duration { return d.Truncate(time.Millisecond) }
	l.Retry.Base, l.Retry.Max = ms(l.Retry.Base), ms(l.Retry.Max)
	l.Lease, l.CallbackTimeout, l.LatenessSLO = ms(l.Lease), ms(l.CallbackTimeout), ms(l.LatenessSLO)
	return l
}

// PauseTopic implements timer.TopicStore.
func (s *Store) PauseTopic(ctx context.Context, name string, paused bool) (timer.Topic, error) {
	if err := s.f.call("PauseTopic"); err != nil {
		return timer.Topic{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return timer.Topic{}, fmt.Errorf("pause topic %q: %w", name, timer.ErrNotFound)
	}
	t.Paused = paused
	s.topics[name] = t
	s.topicVersion++
	return t, nil
}

// DeleteTopic implements timer.TopicStore: the check and the delete hold
// the store's lock, so no Insert comes between them.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if err := s.f.call("DeleteTopic"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.topics[name]; !ok {
		return fmt.Errorf("delete topic %q: %w", name, timer.ErrNotFound)
	}
	inUse := &timer.TopicInUseError{Topic: name, Jobs: map[timer.Status]int64{}}
	for _, r := range s.jobs {
		if r.job.Topic == name && timer.HoldsTopic(r.job.Status) {
			inUse.Jobs[r.job.Status]++
		}
	}
	if len(inUse.Jobs) > 0 {
		return fmt.Errorf("delete topic %q: %w", name, inUse)
	}
	delete(s.topics, name)
	s.topicVersion++
	return nil
}

// TopicsVersion implements timer.TopicVersioner.
func (s *Store) TopicsVersion(ctx context.Context) (int64, error) {
	if err := s.f.call("TopicsVersion"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topicVersion, nil
}

// Topic implements timer.TopicStore.
func (s *Store) Topic(ctx context.Context, name string) (timer.Topic, error) {
	if err := s.f.call("Topic"); err != nil {
		return timer.Topic{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return timer.Topic{}, fmt.Errorf("get topic %q: %w", name, timer.ErrNotFound)
	}
	return t, nil
}

// Topics implements timer.TopicStore: every topic, ordered by name
// bytewise.
func (s *Store) Topics(ctx context.Context) ([]timer.Topic, error) {
	if err := s.f.call("Topics"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	topics := make([]timer.Topic, 0, len(s.topics))
	for _, t := range s.topics {
		topics = append(topics, t)
	}
	slices.SortFunc(topics, func(a, b timer.Topic) int { return strings.Compare(a.Name, b.Name) })
	return topics, nil
}

// RecordAttempts implements timer.AttemptLog.
func (s *Store) RecordAttempts(ctx context.Context, attempts []timer.Attempt) error {
	if err := s.f.call("RecordAttempts"); err != nil {
		return err
	}
	s.keepAttempts(attempts)
	return nil
}

// keepAttempts adds attempts to the history, but those it holds already.
func (s *Store) keepAttempts(attempts []timer.Attempt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range attempts {
		a = a.Stored()
		a.Excerpt = bytes.Clone(a.Excerpt)
		if !slices.ContainsFunc(s.attempts, func(b timer.Attempt) bool {
			return b.Job == a.Job && b.Attempt == a.Attempt && b.StartedAt.Equal(a.StartedAt)
		}) {
			s.attempts = append(s.attempts, a)
		}
	}
}

// ListAttempts implements timer.AttemptLog.
func (s *Store) ListAttempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error) {
	if err := s.f.call("ListAttempts"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []timer.Attempt{}
	for _, a := range s.attempts {
		if a.Job == id {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b timer.Attempt) int {
		return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), a.StartedAt.Compare(b.StartedAt))
	})
	return out, nil
}

// PruneAttempts implements timer.AttemptLog.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := s.f.call("PruneAttempts"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	s.attempts = slices.DeleteFunc(s.attempts, func(a timer.Attempt) bool {
		if n < limit && a.StartedAt.Before(before) {
			n++
			return true
		}
		return false
	})
	return n, nil
}

// Forecast implements timer.Forecaster as taskdb does: pending and firing
// jobs by due time, the limit first ones. It looks at every job on each
// call: fine for tests, not for millions of jobs.
func (s *Store) Forecast(ctx context.Context, q timer.ForecastQuery, limit int64) (timer.Forecast, error) {
	if err := s.f.call("Forecast"); err != nil {
		return timer.Forecast{}, err
	}
	s.mu.Lock()
	var dues []int64
	for _, r := range s.jobs {
		if _, ok := q.Bucket(r.due); ok && r.job.Topic == q.Topic && slices.Contains(unfinished, r.job.Status) {
			dues = append(dues, r.due)
		}
	}
	s.mu.Unlock()
	slices.Sort(dues)
	f := timer.Forecast{Counts: make([]int64, q.Buckets())}
	if limit > 0 && int64(len(dues)) > limit {
		dues = dues[:limit+1]
		f.CountedTo = timer.TimeOf(dues[limit])
	}
	for _, due := range dues {
		b, _ := q.Bucket(due)
		f.Counts[b]++
	}
	return f, nil
}
