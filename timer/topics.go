// The Scheduler's topics: looking them up (creating on first use),
// putting, patching, pausing and deleting them, and the rules their limits
// follow.

package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

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
		t, err = s.ensureTopic(ctx, Topic{Name: name, Slots: s.cfg.Slots, CreatedAt: s.cfg.Now()})
	}
	if err != nil {
		return Topic{}, fmt.Errorf("topic %s: %w", name, err)
	}
	s.known(t)
	return t, nil
}

// known puts t, read from or written to the store, in the catalog and
// tells OnTopic.
func (s *Scheduler) known(t Topic) {
	s.topics.Put(t)
	if s.cfg.OnTopic != nil {
		s.cfg.OnTopic(t)
	}
}

// ensureTopic creates t unless it exists (TopicStore.EnsureTopic), within
// MaxTopics.
func (s *Scheduler) ensureTopic(ctx context.Context, t Topic) (Topic, error) {
	if s.cfg.MaxTopics == 0 {
		return s.store.EnsureTopic(ctx, t)
	}
	s.creating.Lock()
	defer s.creating.Unlock()
	if err := s.roomForTopics(ctx, t.Name, 1); err != nil {
		return Topic{}, err
	}
	return s.store.EnsureTopic(ctx, t)
}

// ensureTopics returns the topics named names, creating those the store
// does not hold in one call of the store (TopicStore.EnsureTopics), within
// MaxTopics, and makes them known as topic does: a batch that brings
// thousands of new topics costs the task store one transaction, not
// thousands.
func (s *Scheduler) ensureTopics(ctx context.Context, names []string) (map[string]Topic, error) {
	got := make(map[string]Topic, len(names))
	var missing []Topic
	now := s.cfg.Now()
	for _, name := range names {
		if t, ok := s.topics.Get(name); ok {
			got[name] = t
			continue
		}
		missing = append(missing, Topic{Name: name, Slots: s.cfg.Slots, CreatedAt: now})
	}
	if len(missing) == 0 {
		return got, nil
	}
	if s.cfg.MaxTopics > 0 {
		s.creating.Lock()
		defer s.creating.Unlock()
		if err := s.roomForAll(ctx, missing); err != nil {
			return nil, err
		}
	}
	stored, err := s.store.EnsureTopics(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("create %d topics: %w", len(missing), err)
	}
	for _, t := range stored {
		s.known(t)
		got[t.Name] = t
	}
	return got, nil
}

// roomForAll is roomForTopics for creating every topic of ts: each needs
// room beside the catalog's topics and those of ts before it that the
// store does not hold either.
func (s *Scheduler) roomForAll(ctx context.Context, ts []Topic) error {
	if !s.topics.Loaded() {
		if err := s.topics.Refresh(ctx); err != nil {
			return err
		}
	}
	if s.topics.Len()+len(ts) <= s.cfg.MaxTopics {
		return nil
	}
	creates := 0
	for _, t := range ts {
		known := s.topics.Len()
		if err := s.roomForTopics(ctx, t.Name, creates+1); err != nil {
			return err
		}
		if s.topics.Len() == known { // not found in the store: it is a create
			creates++
		}
	}
	return nil
}

// roomForTopics returns a *FieldError on "topic" when n topics more than
// the catalog holds would pass MaxTopics, unless the catalog knows the
// topic named name already (creating it again creates nothing) or the
// store has it (created by another process since the catalog's refresh).
func (s *Scheduler) roomForTopics(ctx context.Context, name string, n int) error {
	if s.cfg.MaxTopics == 0 {
		return nil
	}
	if _, ok := s.topics.Get(name); ok {
		return nil
	}
	if !s.topics.Loaded() {
		if err := s.topics.Refresh(ctx); err != nil {
			return err
		}
	}
	if s.topics.Len()+n <= s.cfg.MaxTopics {
		return nil
	}
	if t, err := s.store.Topic(ctx, name); err == nil {
		s.topics.Put(t)
		return nil
	}
	return topicCapError(name, s.cfg.MaxTopics)
}

// topicCapError is the answer to creating a topic past MaxTopics.
func topicCapError(name string, max int) error {
	return invalid("topic", "cannot create topic %s: toc holds its cap of %d topics (--max-topics); delete unused topics or raise the cap", name, max)
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
	if err := t.Expiry.Check("expire_after_ms"); err != nil {
		return Topic{}, false, err
	}
	t.CreatedAt = s.cfg.Now()
	_, err := s.store.Topic(ctx, t.Name)
	isNew := errors.Is(err, ErrNotFound)
	if err != nil && !isNew {
		return Topic{}, false, err
	}
	if isNew {
		t.Slots = cmp.Or(t.Slots, s.cfg.Slots)
	}
	if isNew && s.cfg.MaxTopics > 0 {
		s.creating.Lock()
		defer s.creating.Unlock()
		if err := s.roomForTopics(ctx, t.Name, 1); err != nil {
			return Topic{}, false, err
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
//
// A member whose catalog still holds the topic schedules into it until
// its next refresh, and an insert that waited for the delete's locks
// commits after it: such a job names a topic that is gone, and no worker
// claims it. The backstop gives it its topic back (AdoptTopics); the
// delete asks for a full scan once every catalog has seen it, rather than
// leaving the job until the next one.
func (s *Scheduler) DeleteTopic(ctx context.Context, name string) error {
	if err := s.store.DeleteTopic(ctx, name); err != nil {
		return err
	}
	s.topics.Delete(name)
	if s.cfg.OnTopic != nil {
		s.cfg.OnTopic(Topic{Name: name})
	}
	time.AfterFunc(s.topics.refresh+time.Second, s.askRepair)
	return nil
}

// AdoptTopics creates anew, with the defaults, the topics named names
// that pending jobs still name after the topic was deleted (see
// DeleteTopic), and makes them known, so that those jobs fire. Neither
// MaxTopics nor NoAutoCreate refuses them: the jobs were acknowledged.
func (s *Scheduler) AdoptTopics(ctx context.Context, names []string) (map[string]Topic, error) {
	now := s.cfg.Now()
	ts := make([]Topic, len(names))
	for i, name := range names {
		ts[i] = Topic{Name: name, Slots: s.cfg.Slots, CreatedAt: now}
	}
	stored, err := s.store.EnsureTopics(ctx, ts)
	if err != nil {
		return nil, fmt.Errorf("adopt %d topics: %w", len(names), err)
	}
	got := make(map[string]Topic, len(stored))
	for _, t := range stored {
		s.known(t)
		got[t.Name] = t
	}
	return got, nil
}

// Topic returns one topic.
func (s *Scheduler) Topic(ctx context.Context, name string) (Topic, error) {
	return s.store.Topic(ctx, name)
}

// Topics returns every topic.
func (s *Scheduler) Topics(ctx context.Context) ([]Topic, error) {
	return s.store.Topics(ctx)
}

// TopicNames returns the names of the topics for which match is true,
// in no order: from the catalog once it has read the whole list (an
// Engine's, which another process's change reaches within a refresh),
// else from the store. It is for checks that count a share of the
// topics often and can take the catalog's lag, as a token's max_topics
// does every few seconds: with 100,000 topics, each read of the store
// is a table of them.
func (s *Scheduler) TopicNames(ctx context.Context, match func(name string) bool) ([]string, error) {
	if s.topics != nil && s.topics.Loaded() {
		return s.topics.Names(match), nil
	}
	all, err := s.store.Topics(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if match(t.Name) {
			names = append(names, t.Name)
		}
	}
	return names, nil
}
