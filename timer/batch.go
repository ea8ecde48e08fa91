// The batch path of the Scheduler: all or nothing, in one transaction,
// and the group commit of single requests.

package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

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
	// A job that joined a group sealed since plan read it is taken back:
	// the whole batch, which is all or nothing.
	sealed, err := s.sealedSince(ctx, b.fresh)
	if err != nil || sealed != nil {
		var items []ItemError
		for n, j := range b.fresh {
			if sealed[j.GroupID] {
				items = append(items, ItemError{Index: b.at[n], Err: &groupSealedError{id: j.GroupID}})
			}
		}
		if uerr := s.unwrite(ctx, b.fresh); uerr != nil {
			return nil, errors.Join(err, uerr)
		}
		if err != nil {
			return nil, err
		}
		return b.results, &BatchError{Items: items}
	}
	s.scheduled(ctx, b.fresh, now)
	return b.results, nil
}

// scheduleEach commits a group of independent Schedule calls: unlike a
// batch, a refused request fails alone, and so does one whose key was
// taken concurrently. It returns once the rows are committed, with the
// Redis write of the new jobs as the func to run next.
func (s *Scheduler) scheduleEach(ctx context.Context, reqs []Request) ([]Result, func(), error) {
	now := s.cfg.Now()
	b, err := s.plan(ctx, reqs, now)
	if err != nil {
		return nil, nil, err
	}
	if err := s.createTopics(ctx, b); err != nil {
		return nil, nil, err
	}
	fresh := b.fresh
	if err := s.store.Insert(ctx, fresh); err != nil {
		if !errors.Is(err, ErrConflict) {
			return nil, nil, fmt.Errorf("insert %d jobs: %w", len(fresh), err)
		}
		// A key was taken concurrently: insert one at a time so that only
		// the requests that collided are affected.
		if fresh, err = s.insertEach(ctx, b.reqs, b.results, fresh, b.at, now); err != nil {
			return nil, nil, err
		}
	}
	if fresh, err = s.takeBackSealed(ctx, b, fresh); err != nil {
		return nil, nil, err
	}
	return b.results, func() { s.scheduled(ctx, fresh, now) }, nil
}

// takeBackSealed takes back the jobs of fresh (committed by
// scheduleEach) that joined a group sealed since plan read it, refusing
// their requests, and returns the others. An error means the group could
// not be read: every job of fresh is taken back.
func (s *Scheduler) takeBackSealed(ctx context.Context, b *batch, fresh []*Job) ([]*Job, error) {
	sealed, err := s.sealedSince(ctx, fresh)
	if err == nil && sealed == nil {
		return fresh, nil
	}
	var keep, back []*Job
	for _, j := range fresh {
		if err != nil || sealed[j.GroupID] {
			back = append(back, j)
		} else {
			keep = append(keep, j)
		}
	}
	if uerr := s.unwrite(ctx, back); uerr != nil {
		return nil, errors.Join(err, uerr)
	}
	if err != nil {
		return nil, err
	}
	at := make(map[*Job]int, len(b.fresh))
	for n, j := range b.fresh {
		at[j] = b.at[n]
	}
	for _, j := range back {
		b.results[at[j]] = Result{Err: &groupSealedError{id: j.GroupID}}
	}
	return keep, nil
}

// batch is what plan makes of a list of requests.
type batch struct {
	reqs    []Request // copies, with the topics' defaults filled in
	now     time.Time // when the requests arrived
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
	b := &batch{reqs: slices.Clone(reqs), now: now, results: make([]Result, len(reqs))}
	type topicState struct {
		t     Topic
		known bool
	}
	topics := make(map[string]topicState)
	byKey := make(map[[2]string]*Job) // the job each key of the batch names
	creates := 0                      // topics the batch would create
	capped := make(map[string]bool)   // topics it may not create: MaxTopics
	spread := -1                      // the shard of the batch's jobs placed by neither key nor business id
	groups := make(map[string]*Group) // the groups fresh jobs join, as read (nil: unknown)
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
			if !known && !s.cfg.NoAutoCreate {
				switch err := s.roomForTopics(ctx, r.Topic, creates+1); {
				case err == nil:
					creates++
				case errors.As(err, new(*FieldError)):
					capped[r.Topic] = true
				default:
					return nil, err
				}
			}
		}
		if capped[r.Topic] {
			b.results[i].Err = topicCapError(r.Topic, s.cfg.MaxTopics)
			continue
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
				b.results[i] = s.repeat(r, j, now)
				continue
			}
			if ts.known { // a topic not stored yet has no jobs
				existing, err := s.store.GetByKey(ctx, r.Topic, r.Key)
				switch {
				case err == nil:
					byKey[k] = existing
					b.results[i] = s.repeat(r, existing, now)
					continue
				case !errors.Is(err, ErrNotFound):
					return nil, fmt.Errorf("look up key: %w", err)
				}
			}
		}
		refused, err := s.joinable(ctx, r, groups)
		if err != nil {
			return nil, err
		}
		if refused != nil {
			b.results[i].Err = refused
			continue
		}
		j := r.job(s.ids.NextIn(s.place(r, &spread)), now)
		j.setExpiry(r.expiryOf(ts.t))
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

// place returns the shard of r's new job: the one Schedule chose, or by
// its concurrency key, idempotency key or business id, or else *spread, which the first such job of a
// batch picks, so that a batch of jobs with neither goes to one shard
// (one transaction) and batches take turns.
func (s *Scheduler) place(r *Request, spread *int) int {
	if r.shard > 0 {
		return r.shard - 1
	}
	if r.ConcurrencyKey != "" {
		return PlaceConcurrent(r.Topic, r.ConcurrencyKey, s.shards)
	}
	if sh := PlaceShard(r.Topic, r.Key, r.BizID, s.shards); sh >= 0 {
		return sh
	}
	if *spread < 0 {
		*spread = s.spread.pick(s.shards)
	}
	return *spread
}

// DestinationOf returns where the jobs of topic go: its Destination as
// the catalog knows it (read from the store the first time), the zero
// one, a webhook, for a topic not created yet.
func (s *Scheduler) DestinationOf(ctx context.Context, topic string) (Destination, error) {
	t, _, err := s.findTopic(ctx, topic)
	return t.Destination, err
}

// findTopic returns the topic named name and whether it is stored,
// without creating it.
func (s *Scheduler) findTopic(ctx context.Context, name string) (Topic, bool, error) {
	if t, ok := s.topics.Get(name); ok {
		return t, true, nil
	}
	t, err := s.store.Topic(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return Topic{}, false, nil
	}
	if err != nil {
		return Topic{}, false, fmt.Errorf("topic %s: %w", name, err)
	}
	s.known(t) // known to the catalog from now on
	return t, true, nil
}

// createTopics creates the topics of b's fresh jobs that are not stored
// yet, and gives their jobs the topic's default attempts and deadline (a topic may
// have been created with other defaults since plan looked).
func (s *Scheduler) createTopics(ctx context.Context, b *batch) error {
	if len(b.unknown) == 0 {
		return nil
	}
	created, err := s.ensureTopics(ctx, slices.Sorted(maps.Keys(b.unknown)))
	if err != nil {
		return err
	}
	for n, j := range b.fresh {
		t, ok := created[j.Topic]
		if ok && reqOf(b, n).MaxAttempts == 0 {
			j.MaxAttempts = cmp.Or(t.MaxAttempts, DefaultMaxAttempts)
		}
		if r := reqOf(b, n); ok && !r.Expiry.Set && !r.NoExpiry {
			j.setExpiry(t.Expiry)
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
				res := s.repeat(&b.reqs[i], existing, b.now)
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
		j.ID = s.ids.NextIn(j.ID.Shard()) // in case the conflict was an id another process took
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

// repeat answers a request, arrived at now, whose key matched existing.
func (s *Scheduler) repeat(r *Request, existing *Job, now time.Time) Result {
	if existing == nil || existing.Topic != r.Topic || !r.sameAs(existing, now) {
		return Result{Err: errKeyMismatch}
	}
	return Result{Job: existing}
}

func (s *Scheduler) insertEach(ctx context.Context, reqs []Request, results []Result, jobs []*Job, at []int, now time.Time) ([]*Job, error) {
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
			j.ID = s.ids.NextIn(j.ID.Shard())
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
		results[at[n]] = s.repeat(&reqs[at[n]], existing, now)
	}
	return inserted, nil
}
