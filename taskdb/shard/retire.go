package shard

import (
	"context"
	"time"

	"github.com/toc-project/toc/timer"
)

// Retention: each shard's ended jobs are retired on their own
// (RetireShard), by the member that owns the shard; groups and the audit
// log live in shard 0, but a group's members may be in any shard, so
// GroupsWithMembers asks them all.

var (
	_ timer.RetireSharded = (*Store)(nil)
	_ timer.GroupRetirer  = (*Store)(nil)
	_ timer.AuditPruner   = (*Store)(nil)
)

// RetireShard implements timer.RetireSharded.
func (s *Store) RetireShard(i int) timer.RetireStore { return s.shards[i] }

// FinishedGroups implements timer.GroupRetirer in shard 0.
func (s *Store) FinishedGroups(ctx context.Context, before, afterAt time.Time, after string, limit int) ([]timer.FinishedGroup, error) {
	return s.shards[0].FinishedGroups(ctx, before, afterAt, after, limit)
}

// GroupsWithMembers implements timer.GroupRetirer over every shard.
func (s *Store) GroupsWithMembers(ctx context.Context, ids []string) (map[string]bool, error) {
	held := make([]map[string]bool, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		held[i], err = s.shards[i].GroupsWithMembers(ctx, ids)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool)
	for _, m := range held {
		for id := range m {
			out[id] = true
		}
	}
	return out, nil
}

// DeleteGroups implements timer.GroupRetirer in shard 0; the caller asked
// GroupsWithMembers first, and shard 0 checks its own members again.
func (s *Store) DeleteGroups(ctx context.Context, ids []string, before time.Time) (int, error) {
	return s.shards[0].DeleteGroups(ctx, ids, before)
}

// PruneAudit implements timer.AuditPruner in shard 0.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.shards[0].PruneAudit(ctx, before, limit)
}

// CountEnded counts topic's jobs that ended in st before before over
// every shard, as timer.RetireStore's CountEnded does in one.
func (s *Store) CountEnded(ctx context.Context, topic string, st timer.Status, before time.Time, limit int64) (int64, bool, error) {
	ns := make([]int64, len(s.shards))
	exacts := make([]bool, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		ns[i], exacts[i], err = s.shards[i].CountEnded(ctx, topic, st, before, limit)
		return err
	})
	var n int64
	exact := true
	for i := range ns {
		n += ns[i]
		exact = exact && exacts[i]
	}
	return n, exact, err
}

// OldestEnded returns when the oldest of topic's jobs that ended in st
// ended, over every shard; the zero time when none holds one.
func (s *Store) OldestEnded(ctx context.Context, topic string, st timer.Status) (time.Time, error) {
	ts := make([]time.Time, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		ts[i], err = s.shards[i].OldestEnded(ctx, topic, st)
		return err
	})
	var oldest time.Time
	for _, t := range ts {
		if !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
			oldest = t
		}
	}
	return oldest, err
}
