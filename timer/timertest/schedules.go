package timertest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.ScheduleStore = (*Store)(nil)

// stored returns sc as a row keeps it: times in whole milliseconds, a
// copy of the payload.
func stored(sc timer.Schedule) *timer.Schedule {
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return timer.TimeOf(t.UnixMilli())
	}
	sc.StartAt, sc.EndAt, sc.Next = ms(sc.StartAt), ms(sc.EndAt), ms(sc.Next)
	sc.LastSkippedAt = ms(sc.LastSkippedAt)
	sc.CreatedAt, sc.UpdatedAt = ms(sc.CreatedAt), ms(sc.UpdatedAt)
	sc.Every = sc.Every.Truncate(time.Millisecond)
	sc.Job.Payload = bytes.Clone(sc.Job.Payload)
	return &sc
}

// CreateSchedule implements timer.ScheduleWriter.
func (s *Store) CreateSchedule(ctx context.Context, sc *timer.Schedule) error {
	if err := s.f.call("CreateSchedule"); err != nil {
		return err
	}
	if err := timer.CheckSchedule(sc); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.schedules == nil {
		s.schedules = make(map[timer.ScheduleID]*timer.Schedule)
	}
	if _, ok := s.schedules[sc.ID]; ok {
		return fmt.Errorf("schedule %s: %w", sc.ID, timer.ErrConflict)
	}
	s.schedules[sc.ID] = stored(*sc)
	return nil
}

// GetSchedule implements timer.ScheduleReader.
func (s *Store) GetSchedule(ctx context.Context, id timer.ScheduleID) (*timer.Schedule, error) {
	if err := s.f.call("GetSchedule"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[id]
	if !ok {
		return nil, fmt.Errorf("schedule %s: %w", id, timer.ErrNotFound)
	}
	return stored(*sc), nil
}

// ListSchedules implements timer.ScheduleReader.
func (s *Store) ListSchedules(ctx context.Context, after timer.ScheduleID, limit int) ([]*timer.Schedule, error) {
	if err := s.f.call("ListSchedules"); err != nil {
		return nil, err
	}
	return s.schedulesWhere(func(a, b *timer.Schedule) int { return cmpID(a.ID, b.ID) }, limit,
		func(sc *timer.Schedule) bool { return sc.ID > after }), nil
}

// DueSchedules implements timer.ScheduleReader.
func (s *Store) DueSchedules(ctx context.Context, until time.Time, limit int) ([]*timer.Schedule, error) {
	if err := s.f.call("DueSchedules"); err != nil {
		return nil, err
	}
	u := until.UnixMilli()
	return s.schedulesWhere(func(a, b *timer.Schedule) int {
		if c := a.Next.Compare(b.Next); c != 0 {
			return c
		}
		return cmpID(a.ID, b.ID)
	}, limit, func(sc *timer.Schedule) bool {
		return !sc.Paused && !sc.Next.IsZero() && sc.Next.UnixMilli() <= u
	}), nil
}

func cmpID(a, b timer.ScheduleID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *Store) schedulesWhere(order func(a, b *timer.Schedule) int, limit int, keep func(*timer.Schedule) bool) []*timer.Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*timer.Schedule
	for _, sc := range s.schedules {
		if keep(sc) {
			out = append(out, stored(*sc))
		}
	}
	slices.SortFunc(out, order)
	if len(out) > limit {
		out = out[:max(limit, 0)]
	}
	return out
}

// AdvanceSchedule implements timer.ScheduleWriter.
func (s *Store) AdvanceSchedule(ctx context.Context, id timer.ScheduleID, from, to, now time.Time) (bool, error) {
	if err := s.f.call("AdvanceSchedule"); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[id]
	if !ok || millisOrZero(sc.Next) != millisOrZero(from) {
		return false, nil
	}
	sc.Next = stored(timer.Schedule{Next: to}).Next
	sc.UpdatedAt = timer.TimeOf(now.UnixMilli())
	return true, nil
}

// SkipOccurrences implements timer.ScheduleWriter.
func (s *Store) SkipOccurrences(ctx context.Context, id timer.ScheduleID, from, to time.Time, n int64, reason string, now time.Time) (bool, error) {
	if err := s.f.call("SkipOccurrences"); err != nil {
		return false, err
	}
	if n < 1 || len(reason) > timer.MaxSkipReasonBytes {
		return false, fmt.Errorf("skip occurrences of schedule %s: %w", id, timer.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[id]
	if !ok || millisOrZero(sc.Next) != millisOrZero(from) {
		return false, nil
	}
	sc.Next = stored(timer.Schedule{Next: to}).Next
	sc.Skipped += n
	sc.LastSkippedAt, sc.LastSkipReason = timer.TimeOf(now.UnixMilli()), reason
	sc.UpdatedAt = timer.TimeOf(now.UnixMilli())
	return true, nil
}

func millisOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// PauseSchedule implements timer.ScheduleWriter.
func (s *Store) PauseSchedule(ctx context.Context, id timer.ScheduleID, paused bool, next, now time.Time) (*timer.Schedule, error) {
	if err := s.f.call("PauseSchedule"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schedules[id]
	if !ok {
		return nil, fmt.Errorf("schedule %s: %w", id, timer.ErrNotFound)
	}
	if sc.Paused != paused {
		if !paused {
			sc.Next = stored(timer.Schedule{Next: next}).Next
		}
		sc.Paused = paused
		sc.UpdatedAt = timer.TimeOf(now.UnixMilli())
	}
	return stored(*sc), nil
}

// DeleteSchedule implements timer.ScheduleWriter.
func (s *Store) DeleteSchedule(ctx context.Context, id timer.ScheduleID) error {
	if err := s.f.call("DeleteSchedule"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.schedules[id]; !ok {
		return fmt.Errorf("schedule %s: %w", id, timer.ErrNotFound)
	}
	delete(s.schedules, id)
	return nil
}
