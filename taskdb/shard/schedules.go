package shard

import (
	"context"
	"time"

	"github.com/toc-project/toc/timer"
)

// Schedules live in shard 0, as the topic catalogue does: there are few
// of them, each read by every member's materializer each pass, and the
// compare-and-set of a cursor needs the row in one place. The jobs they
// make are placed like any other, by their idempotency keys.

var _ timer.ScheduleStore = (*Store)(nil)

// CreateSchedule implements timer.ScheduleWriter in shard 0.
func (s *Store) CreateSchedule(ctx context.Context, sc *timer.Schedule) error {
	return s.shards[0].CreateSchedule(ctx, sc)
}

// GetSchedule implements timer.ScheduleReader in shard 0.
func (s *Store) GetSchedule(ctx context.Context, id timer.ScheduleID) (*timer.Schedule, error) {
	return s.shards[0].GetSchedule(ctx, id)
}

// ListSchedules implements timer.ScheduleReader in shard 0.
func (s *Store) ListSchedules(ctx context.Context, after timer.ScheduleID, limit int) ([]*timer.Schedule, error) {
	return s.shards[0].ListSchedules(ctx, after, limit)
}

// DueSchedules implements timer.ScheduleReader in shard 0.
func (s *Store) DueSchedules(ctx context.Context, until time.Time, limit int) ([]*timer.Schedule, error) {
	return s.shards[0].DueSchedules(ctx, until, limit)
}

// AdvanceSchedule implements timer.ScheduleWriter in shard 0.
func (s *Store) AdvanceSchedule(ctx context.Context, id timer.ScheduleID, from, to, now time.Time) (bool, error) {
	return s.shards[0].AdvanceSchedule(ctx, id, from, to, now)
}

// SkipOccurrences implements timer.ScheduleWriter in shard 0.
func (s *Store) SkipOccurrences(ctx context.Context, id timer.ScheduleID, from, to time.Time, n int64, reason string, now time.Time) (bool, error) {
	return s.shards[0].SkipOccurrences(ctx, id, from, to, n, reason, now)
}

// PauseSchedule implements timer.ScheduleWriter in shard 0.
func (s *Store) PauseSchedule(ctx context.Context, id timer.ScheduleID, paused bool, next, now time.Time) (*timer.Schedule, error) {
	return s.shards[0].PauseSchedule(ctx, id, paused, next, now)
}

// DeleteSchedule implements timer.ScheduleWriter in shard 0.
func (s *Store) DeleteSchedule(ctx context.Context, id timer.ScheduleID) error {
	return s.shards[0].DeleteSchedule(ctx, id)
}
