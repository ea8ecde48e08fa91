// Topics live in shard 0; the ops a service needs of its store (ping,
// migrate, node numbers) go to every shard or to shard 0.

package shard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/timer"
)

// EnsureTopic implements timer.TopicStore, in shard 0.
func (s *Store) EnsureTopic(ctx context.Context, t timer.Topic) (timer.Topic, error) {
	return s.shards[0].EnsureTopic(ctx, t)
}

// EnsureTopics implements timer.TopicStore, in shard 0.
func (s *Store) EnsureTopics(ctx context.Context, ts []timer.Topic) ([]timer.Topic, error) {
	return s.shards[0].EnsureTopics(ctx, ts)
}

// PutTopic implements timer.TopicStore, in shard 0.
func (s *Store) PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error) {
	return s.shards[0].PutTopic(ctx, t)
}

// Topic implements timer.TopicStore, from shard 0.
func (s *Store) Topic(ctx context.Context, name string) (timer.Topic, error) {
	return s.shards[0].Topic(ctx, name)
}

// Topics implements timer.TopicStore, from shard 0.
func (s *Store) Topics(ctx context.Context) ([]timer.Topic, error) {
	return s.shards[0].Topics(ctx)
}

// TopicsVersion implements timer.TopicVersioner, from shard 0.
func (s *Store) TopicsVersion(ctx context.Context) (int64, error) {
	return s.shards[0].TopicsVersion(ctx)
}

// PauseTopic implements timer.TopicStore, in shard 0.
func (s *Store) PauseTopic(ctx context.Context, name string, paused bool) (timer.Topic, error) {
	return s.shards[0].PauseTopic(ctx, name, paused)
}

// DeleteTopic implements timer.TopicStore: refused while any shard holds
// jobs of the topic; shard 0, which holds the topic's row, checks its own
// jobs and deletes in one transaction.
func (s *Store) DeleteTopic(ctx context.Context, name string) error {
	if _, err := s.shards[0].Topic(ctx, name); err != nil {
		return err
	}
	counts := make([]map[timer.Status]int64, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		counts[i], err = s.shards[i].HoldingJobs(ctx, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete topic %q: %w", name, err)
	}
	held := make(map[timer.Status]int64)
	for _, c := range counts[1:] {
		for st, n := range c {
			held[st] += n
		}
	}
	if len(held) > 0 {
		for st, n := range counts[0] {
			held[st] += n
		}
		return &timer.TopicInUseError{Topic: name, Jobs: held}
	}
	return s.shards[0].DeleteTopic(ctx, name)
}

// ClockNow reads shard 0's clock: the reference time of every member
// (timer.Clock), one clock however many shards there are.
func (s *Store) ClockNow(ctx context.Context) (time.Time, error) {
	return s.shards[0].ClockNow(ctx)
}

// Ping checks every shard; the error names each that did not answer, and
// where it is. When some shards answer, it wraps ErrSomeDown.
func (s *Store) Ping(ctx context.Context) error {
	var down atomic.Int64
	err := s.all(func(i int) error {
		if err := s.shards[i].Ping(ctx); err != nil {
			down.Add(1)
			if i < len(s.names) {
				return fmt.Errorf("%s: %w", s.names[i], err)
			}
			return err
		}
		return nil
	})
	if err != nil && int(down.Load()) < len(s.shards) {
		return fmt.Errorf("%w: %w", ErrSomeDown, err)
	}
	return err
}

// ErrSomeDown: some shards of the store answer, and others do not. The
// jobs of the ones that answer are scheduled and fired as usual.
var ErrSomeDown = errors.New("some task store shards are down")

// Migrate applies the schema migrations to every shard.
func (s *Store) Migrate(ctx context.Context) error {
	return s.all(func(i int) error { return s.shards[i].Migrate(ctx) })
}

// MigrateContract applies the schema migrations to every shard, the
// contract ones too (taskdb.Store.MigrateContract).
func (s *Store) MigrateContract(ctx context.Context) error {
	return s.all(func(i int) error { return s.shards[i].MigrateContract(ctx) })
}

// CheckSchema checks that no shard holds a migration this build does not
// know (taskdb.Store.CheckSchema); the error names the shard.
func (s *Store) CheckSchema(ctx context.Context) error {
	return s.all(func(i int) error {
		if err := s.shards[i].CheckSchema(ctx); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
		return nil
	})
}

// Pending reads each shard's pending migrations (taskdb.Store.Pending):
// the first shard that lacks some, with them, and whether every shard is
// a new database.
func (s *Store) Pending(ctx context.Context) (shard int, pending []int, fresh bool, err error) {
	each := make([][]int, len(s.shards))
	empty := make([]bool, len(s.shards))
	err = s.all(func(i int) (err error) {
		each[i], empty[i], err = s.shards[i].Pending(ctx)
		return err
	})
	if err != nil {
		return 0, nil, false, err
	}
	for i, p := range each {
		if len(p) > 0 {
			return i, p, !slices.Contains(empty, false), nil
		}
	}
	return 0, nil, false, nil
}

// Close closes every shard.
func (s *Store) Close() error {
	return s.all(func(i int) error { return s.shards[i].Close() })
}

// LiveNodes reads shard 0's live node leases (taskdb.Store.LiveNodes).
func (s *Store) LiveNodes(ctx context.Context) (map[int]string, error) {
	return s.shards[0].LiveNodes(ctx)
}

// LeaseNode implements timer.NodeLeaser in shard 0: one process makes
// ids for every shard with one node number.
func (s *Store) LeaseNode(ctx context.Context, want int, holder string, ttl time.Duration) (int, error) {
	return s.shards[0].LeaseNode(ctx, want, holder, ttl)
}

// RenewNode implements timer.NodeLeaser in shard 0.
func (s *Store) RenewNode(ctx context.Context, node int, holder string, ttl time.Duration) error {
	return s.shards[0].RenewNode(ctx, node, holder, ttl)
}

// ReleaseNode implements timer.NodeLeaser in shard 0.
func (s *Store) ReleaseNode(ctx context.Context, node int, holder string) error {
	return s.shards[0].ReleaseNode(ctx, node, holder)
}
