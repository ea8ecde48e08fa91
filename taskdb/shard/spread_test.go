package shard

import (
	"context"
	"sync"
	"time"

	"github.com/toc-project/toc/timer"
)

// spread adapts a two-shard Store to the ids of timertest's suite, which
// are small numbers and so all of shard 0: id n of the suite is stored as
// an id of the sharded layout in shard n%2, in the same order, so that
// every test of the suite runs across both databases.
//
// A keyed job goes where its key says (its concurrency key first), as the
// scheduler places it, and the adapter remembers its shard.
type spread struct {
	*Store
	keyed *sync.Map // suite id -> shard, of keyed jobs
}

var _ timer.Store = spread{}

const shardedBit = 1 << 62

func (s spread) enc(id timer.JobID) timer.JobID {
	if !id.Valid() || id >= 1<<48 {
		return id // out of the suite's range: as it is (an invalid id stays invalid)
	}
	shard := timer.JobID(id % 2)
	if k, ok := s.keyed.Load(id); ok {
		shard = timer.JobID(k.(int))
	}
	return shardedBit | id<<12 | shard<<8
}

func dec(id timer.JobID) timer.JobID {
	if id&shardedBit == 0 {
		return id
	}
	return (id &^ shardedBit) >> 12
}

func (s spread) encIDs(ids []timer.JobID) []timer.JobID {
	out := make([]timer.JobID, len(ids))
	for i, id := range ids {
		out[i] = s.enc(id)
	}
	return out
}

func decJob(j *timer.Job) *timer.Job {
	if j != nil {
		j.ID = dec(j.ID)
	}
	return j
}

func decJobs(js []*timer.Job) []*timer.Job {
	for _, j := range js {
		decJob(j)
	}
	return js
}

func (s spread) encCursor(c timer.Cursor) timer.Cursor {
	if c.ID != 0 {
		c.ID = s.enc(c.ID)
	}
	return c
}

func (s spread) Insert(ctx context.Context, jobs []*timer.Job) error {
	cp := make([]*timer.Job, len(jobs))
	for i, j := range jobs {
		if j == nil {
			continue
		}
		c := *j
		switch {
		case c.ConcurrencyKey != "" && c.ID.Valid():
			s.keyed.LoadOrStore(c.ID, timer.PlaceConcurrent(c.Topic, c.ConcurrencyKey, s.Shards()))
		case c.Key != "" && c.ID.Valid():
			s.keyed.LoadOrStore(c.ID, timer.PlaceShard(c.Topic, c.Key, 0, s.Shards()))
		}
		c.ID = s.enc(c.ID)
		cp[i] = &c
	}
	return s.Store.Insert(ctx, cp)
}

func (s spread) Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error) {
	return s.Store.Transition(ctx, s.enc(id), from, to, now)
}

func (s spread) TransitionIf(ctx context.Context, id timer.JobID, from, to timer.Status, version int64, now time.Time) (bool, error) {
	return s.Store.TransitionIf(ctx, s.enc(id), from, to, version, now)
}

func (s spread) Fire(ctx context.Context, ids []timer.JobID, until, now time.Time) (int, error) {
	return s.Store.Fire(ctx, s.encIDs(ids), until, now)
}

func (s spread) Complete(ctx context.Context, done []timer.Completion, now time.Time) (int, error) {
	cp := make([]timer.Completion, len(done))
	for i, c := range done {
		cp[i] = timer.Completion{ID: s.enc(c.ID), Attempts: c.Attempts, Status: c.Status}
	}
	return s.Store.Complete(ctx, cp, now)
}

func (s spread) Fail(ctx context.Context, id timer.JobID, f timer.Failure, now time.Time) (bool, error) {
	return s.Store.Fail(ctx, s.enc(id), f, now)
}

func (s spread) Expire(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	return s.Store.Expire(ctx, s.enc(id), reason, now)
}

func (s spread) Reschedule(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	return s.Store.Reschedule(ctx, s.enc(id), dueAt, now)
}

func (s spread) RescheduleIf(ctx context.Context, id timer.JobID, dueAt time.Time, version int64, now time.Time) (bool, error) {
	return s.Store.RescheduleIf(ctx, s.enc(id), dueAt, version, now)
}

func (s spread) Replay(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	return s.Store.Replay(ctx, s.enc(id), dueAt, now)
}

func (s spread) Get(ctx context.Context, id timer.JobID) (*timer.Job, error) {
	j, err := s.Store.Get(ctx, s.enc(id))
	return decJob(j), err
}

func (s spread) GetMany(ctx context.Context, ids []timer.JobID) ([]*timer.Job, error) {
	js, err := s.Store.GetMany(ctx, s.encIDs(ids))
	return decJobs(js), err
}

func (s spread) GetByKey(ctx context.Context, topic, key string) (*timer.Job, error) {
	j, err := s.Store.GetByKey(ctx, topic, key)
	return decJob(j), err
}

func (s spread) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	if q.After.ID != 0 {
		q.After.ID = s.enc(q.After.ID)
	}
	ts, err := s.Store.ScanPending(ctx, q)
	for i := range ts {
		ts[i].ID = dec(ts[i].ID)
		if ts[i].Basis&shardedBit != 0 {
			ts[i].Basis = uint64(dec(timer.JobID(ts[i].Basis)))
		}
	}
	return ts, err
}

func (s spread) ListDead(ctx context.Context, q timer.DeadQuery) ([]*timer.Job, error) {
	q.After = s.encCursor(q.After)
	js, err := s.Store.ListDead(ctx, q)
	return decJobs(js), err
}

func (s spread) ListJobs(ctx context.Context, q timer.JobQuery) ([]*timer.Job, error) {
	q.After = s.encCursor(q.After)
	js, err := s.Store.ListJobs(ctx, q)
	return decJobs(js), err
}
