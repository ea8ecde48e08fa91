package shard

import (
	"context"
	"slices"
	"time"

	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// Groups live in shard 0, as topics and schedules do: the seal and the
// completion are conditional updates of one row, which needs it in one
// place. Their members are placed like any other job (by key, business
// id or in turn), so a group's members may be in every shard: GroupLive
// and GroupCounts read them all.

var (
	_ timer.GroupStore = (*Store)(nil)
	_ timer.Unwriter   = (*Store)(nil)
)

// CreateGroup implements timer.GroupStore in shard 0.
func (s *Store) CreateGroup(ctx context.Context, g *timer.Group) error {
	return s.shards[0].CreateGroup(ctx, g)
}

// GetGroup implements timer.GroupStore in shard 0.
func (s *Store) GetGroup(ctx context.Context, id string) (*timer.Group, error) {
	return s.shards[0].GetGroup(ctx, id)
}

// SealGroup implements timer.GroupStore in shard 0.
func (s *Store) SealGroup(ctx context.Context, id string, now time.Time) (*timer.Group, error) {
	return s.shards[0].SealGroup(ctx, id, now)
}

// CompleteGroup implements timer.GroupStore in shard 0.
func (s *Store) CompleteGroup(ctx context.Context, id string, counts map[timer.Status]int64, now time.Time) (bool, error) {
	return s.shards[0].CompleteGroup(ctx, id, counts, now)
}

// SetGroupJob implements timer.GroupStore in shard 0.
func (s *Store) SetGroupJob(ctx context.Context, id string, job timer.JobID) error {
	return s.shards[0].SetGroupJob(ctx, id, job)
}

// UnfinishedGroups implements timer.GroupStore in shard 0.
func (s *Store) UnfinishedGroups(ctx context.Context, after string, limit int) ([]*timer.Group, error) {
	return s.shards[0].UnfinishedGroups(ctx, after, limit)
}

// GroupLive implements timer.GroupStore over every shard: true when any
// shard holds a live member. A shard that does not answer is an error,
// never a "no": a completion must not be declared without it.
func (s *Store) GroupLive(ctx context.Context, id string) (bool, error) {
	live := make([]bool, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		live[i], err = s.shards[i].GroupLive(ctx, id)
		return err
	})
	if err != nil {
		return false, err
	}
	return slices.Contains(live, true), nil
}

// GroupCounts implements timer.GroupStore, summed over every shard.
func (s *Store) GroupCounts(ctx context.Context, id string) (map[timer.Status]int64, error) {
	return s.sumCounts(func(sh *taskdb.Store) (map[timer.Status]int64, error) { return sh.GroupCounts(ctx, id) })
}

// Unwrite implements timer.Unwriter, each id in its shard.
func (s *Store) Unwrite(ctx context.Context, ids []timer.JobID) (int, error) {
	byShard, err := group(s, ids, func(id timer.JobID) timer.JobID { return id })
	if err != nil {
		return 0, err
	}
	ns := make([]int, len(s.shards))
	var total int
	err = each(byShard, func(i int, ids []timer.JobID) error {
		n, err := s.shards[i].Unwrite(ctx, ids)
		ns[i] = n
		return err
	})
	for _, n := range ns {
		total += n
	}
	return total, err
}
