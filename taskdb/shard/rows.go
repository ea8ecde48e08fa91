// The rest of timer.Store over shards: one job's changes go to its shard;
// changes of many are split by shard; reads of many merge in order.

package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// Transition implements timer.JobWriter.
func (s *Store) Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil // no such row: it was in no status
	}
	return st.Transition(ctx, id, from, to, now)
}

// TransitionIf implements timer.JobWriter.
func (s *Store) TransitionIf(ctx context.Context, id timer.JobID, from, to timer.Status, version int64, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.TransitionIf(ctx, id, from, to, version, now)
}

// Fire implements timer.JobWriter.
func (s *Store) Fire(ctx context.Context, ids []timer.JobID, until, now time.Time) (int, error) {
	var n atomic.Int64
	err := s.eachID(ids, func(i int, ids []timer.JobID) error {
		k, err := s.shards[i].Fire(ctx, ids, until, now)
		n.Add(int64(k))
		return err
	})
	return int(n.Load()), err
}

// FireNew implements timer.NewFirer: each shard's FireNew of its ids.
func (s *Store) FireNew(ctx context.Context, ids []timer.JobID, until, now time.Time) (fired []*timer.Job, rest []timer.JobID, err error) {
	var mu sync.Mutex
	err = s.eachID(ids, func(i int, ids []timer.JobID) error {
		f, r, err := s.shards[i].FireNew(ctx, ids, until, now)
		mu.Lock()
		fired, rest = append(fired, f...), append(rest, r...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return fired, rest, nil
}

// Complete implements timer.JobWriter.
func (s *Store) Complete(ctx context.Context, done []timer.Completion, now time.Time) (int, error) {
	byShard, err := group(s, done, func(c timer.Completion) timer.JobID { return c.ID })
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	err = each(byShard, func(i int, done []timer.Completion) error {
		k, err := s.shards[i].Complete(ctx, done, now)
		n.Add(int64(k))
		return err
	})
	return int(n.Load()), err
}

// Fail implements timer.JobWriter.
func (s *Store) Fail(ctx context.Context, id timer.JobID, f timer.Failure, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.Fail(ctx, id, f, now)
}

// Expire implements timer.JobWriter.
func (s *Store) Expire(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.Expire(ctx, id, reason, now)
}

// Reschedule implements timer.JobWriter.
func (s *Store) Reschedule(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.Reschedule(ctx, id, dueAt, now)
}

// RescheduleIf implements timer.JobWriter.
func (s *Store) RescheduleIf(ctx context.Context, id timer.JobID, dueAt time.Time, version int64, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.RescheduleIf(ctx, id, dueAt, version, now)
}

// Replay implements timer.JobWriter.
func (s *Store) Replay(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.Replay(ctx, id, dueAt, now)
}

// Get implements timer.JobReader.
func (s *Store) Get(ctx context.Context, id timer.JobID) (*timer.Job, error) {
	st, err := s.of(id)
	if err != nil {
		return nil, err
	}
	return st.Get(ctx, id)
}

// GetMany implements timer.JobReader, with one query per shard.
func (s *Store) GetMany(ctx context.Context, ids []timer.JobID) ([]*timer.Job, error) {
	var (
		mu  sync.Mutex
		out []*timer.Job
	)
	err := s.eachID(ids, func(i int, ids []timer.JobID) error {
		jobs, err := s.shards[i].GetMany(ctx, ids)
		mu.Lock()
		out = append(out, jobs...)
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachID runs fn on the ids of each shard at once. An id of a shard this
// store does not have is an error wrapping ErrUnknownShard, before fn
// runs: it was made by a process that knows more shards (one was added
// while this one ran), so its row exists and must not be taken for gone.
func (s *Store) eachID(ids []timer.JobID, fn func(i int, ids []timer.JobID) error) error {
	byShard, err := group(s, ids, func(id timer.JobID) timer.JobID { return id })
	if err != nil {
		return err
	}
	return each(byShard, fn)
}

// GetByKey implements timer.JobReader: it looks in each shard the key
// was placed in, under this map and the earlier ones, then in the other
// shards: a job with a concurrency key was placed by that key
// (timer.PlaceConcurrent), not by its idempotency key.
func (s *Store) GetByKey(ctx context.Context, topic, key string) (*timer.Job, error) {
	var last error
	placed := s.KeyShards(topic, key)
	for _, i := range placed {
		j, err := s.shards[i].GetByKey(ctx, topic, key)
		if err == nil || !errors.Is(err, timer.ErrNotFound) {
			return j, err
		}
		last = err
	}
	for i := range s.shards {
		if slices.Contains(placed, i) {
			continue
		}
		j, err := s.shards[i].GetByKey(ctx, topic, key)
		if err == nil || !errors.Is(err, timer.ErrNotFound) {
			return j, err
		}
		last = err
	}
	return nil, last
}

// ScanPending implements timer.Scanner over every shard, merged in
// (topic, due time, id) order: the cursor is a position in that order,
// which is the same in every shard since ids are unique across them.
func (s *Store) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	pages := make([][]timer.Timer, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		pages[i], err = s.Scanner(i).ScanPending(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return merge(pages, q.Limit, timer.CompareScan), nil
}

var _ timer.OverdueScanner = (*Store)(nil)

// ScanOverdue implements timer.OverdueScanner over every shard, merged in
// (deadline, id) order.
func (s *Store) ScanOverdue(ctx context.Context, now time.Time, limit int) ([]timer.Overdue, error) {
	pages := make([][]timer.Overdue, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		pages[i], err = s.Scanner(i).(timer.OverdueScanner).ScanOverdue(ctx, now, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return merge(pages, limit, func(a, b timer.Overdue) int {
		return cmp.Or(a.Job.ExpireAt.Compare(b.Job.ExpireAt), cmp.Compare(a.Job.ID, b.Job.ID))
	}), nil
}

// ExpireWaiting implements timer.OverdueScanner.
func (s *Store) ExpireWaiting(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	st, err := s.of(id)
	if err != nil {
		return false, nil
	}
	return st.ExpireWaiting(ctx, id, reason, now)
}

// ListDead implements timer.DeadReader over every shard, merged in (time
// of death, id) order, the order of q.After.
func (s *Store) ListDead(ctx context.Context, q timer.DeadQuery) ([]*timer.Job, error) {
	pages := make([][]*timer.Job, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		pages[i], err = s.shards[i].ListDead(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return merge(pages, q.Limit, func(a, b *timer.Job) int {
		return cmp.Or(cmp.Compare(a.UpdatedAt.UnixMilli(), b.UpdatedAt.UnixMilli()), cmp.Compare(a.ID, b.ID))
	}), nil
}

// ListJobs implements timer.JobLister over every shard (a key's job is
// in its key's shards, see KeyShards, unless a concurrency key placed it;
// a business id's jobs are in one shard, unless a key or an earlier map
// placed some elsewhere), merged in (due time, id) order, the cursor's.
func (s *Store) ListJobs(ctx context.Context, q timer.JobQuery) ([]*timer.Job, error) {
	shards := make(map[int][]struct{})
	for i := range s.shards {
		shards[i] = nil
	}
	pages := make([][]*timer.Job, len(s.shards))
	err := each(shards, func(i int, _ []struct{}) error {
		var err error
		pages[i], err = s.shards[i].ListJobs(ctx, q)
		return err
	})
	if err != nil {
		return nil, err
	}
	return merge(pages, q.Limit, func(a, b *timer.Job) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
	}), nil
}

// CountByStatus counts topic's jobs by status over every shard.
func (s *Store) CountByStatus(ctx context.Context, topic string) (map[timer.Status]int64, error) {
	return s.sumCounts(func(sh *taskdb.Store) (map[timer.Status]int64, error) { return sh.CountByStatus(ctx, topic) })
}

// sumCounts adds up the counts by status that count reads of each shard,
// the shards read at once.
func (s *Store) sumCounts(count func(*taskdb.Store) (map[timer.Status]int64, error)) (map[timer.Status]int64, error) {
	counts := make([]map[timer.Status]int64, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		counts[i], err = count(s.shards[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[timer.Status]int64)
	for _, c := range counts {
		for st, n := range c {
			out[st] += n
		}
	}
	return out, nil
}

// CountJobs counts topic's jobs of status over every shard, each as
// taskdb.Store.CountJobs does: exact is false when some shard estimated.
func (s *Store) CountJobs(ctx context.Context, topic string, status timer.Status, limit int64) (int64, bool, error) {
	ns := make([]int64, len(s.shards))
	exacts := make([]bool, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		ns[i], exacts[i], err = s.shards[i].CountJobs(ctx, topic, status, limit)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	var n int64
	for _, v := range ns {
		n += v
	}
	return n, !slices.Contains(exacts, false), nil
}

// all runs fn for every shard at once and joins their errors.
func (s *Store) all(fn func(i int) error) error {
	m := make(map[int][]struct{}, len(s.shards))
	for i := range s.shards {
		m[i] = nil
	}
	return each(m, func(i int, _ []struct{}) error { return fn(i) })
}

// merge returns the first limit items of sorted pages in cmp order.
func merge[T any](pages [][]T, limit int, cmp func(a, b T) int) []T {
	if len(pages) == 1 {
		return pages[0]
	}
	var out []T
	next := make([]int, len(pages))
	for len(out) < limit {
		best := -1
		for i, p := range pages {
			if next[i] < len(p) && (best < 0 || cmp(p[next[i]], pages[best][next[best]]) < 0) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, pages[best][next[best]])
		next[best]++
	}
	return out
}

// Scanner implements timer.Sharded: shard i's pending jobs, with the slot
// counts of their topics read from shard 0, where the topics are.
func (s *Store) Scanner(i int) timer.Scanner {
	if i == 0 {
		return s.shards[0]
	}
	return scanner{s: s, i: i}
}

type scanner struct {
	s *Store
	i int
}

func (sc scanner) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	timers, err := sc.s.shards[sc.i].ScanPending(ctx, q)
	if err != nil {
		return nil, err
	}
	slots := make(map[string]int)
	for n := range timers {
		t := &timers[n]
		k, ok := slots[t.Topic]
		if !ok {
			topic, err := sc.s.shards[0].Topic(ctx, t.Topic)
			switch {
			case errors.Is(err, timer.ErrNotFound): // Slots 0: the backstop leaves it alone
			case err != nil:
				return nil, fmt.Errorf("topic %s from shard 0: %w", t.Topic, err)
			}
			k = topic.Slots
			slots[t.Topic] = k
		}
		t.Slots = k
	}
	return timers, nil
}

var _ timer.OverdueScanner = scanner{}

// ScanOverdue implements timer.OverdueScanner over one shard, with the
// slot counts of the topics read from shard 0, where the topics are.
func (sc scanner) ScanOverdue(ctx context.Context, now time.Time, limit int) ([]timer.Overdue, error) {
	overdue, err := sc.s.shards[sc.i].ScanOverdue(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	slots := make(map[string]int)
	for n := range overdue {
		o := &overdue[n]
		k, ok := slots[o.Job.Topic]
		if !ok {
			topic, err := sc.s.shards[0].Topic(ctx, o.Job.Topic)
			switch {
			case errors.Is(err, timer.ErrNotFound): // Slots 0: its timer is left alone
			case err != nil:
				return nil, fmt.Errorf("topic %s from shard 0: %w", o.Job.Topic, err)
			}
			k = topic.Slots
			slots[o.Job.Topic] = k
		}
		o.Slots = k
	}
	return overdue, nil
}

// ExpireWaiting implements timer.OverdueScanner over one shard.
func (sc scanner) ExpireWaiting(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	return sc.s.shards[sc.i].ExpireWaiting(ctx, id, reason, now)
}
