package timer

import (
	"context"
	"fmt"
	"time"
)

// DefaultUpcoming is how many next occurrences a schedule shows.
const DefaultUpcoming = 5

// Schedules creates, reads, pauses, resumes and deletes schedules: what
// the API does with them. The Materializer makes their jobs.
type Schedules struct {
	store ScheduleStore
	ids   *IDGen
	parse CronParser
	now   func() time.Time
	// changed hears of each schedule created or resumed
	// (Materializer.Wake), nil for none.
	changed func()
}

// NewSchedules returns the schedules of store, numbering new ones as node
// (see IDGen), reading cron expressions with parse. changed, when set,
// hears of each schedule created or resumed.
func NewSchedules(store ScheduleStore, node int, parse CronParser, now func() time.Time, changed func()) *Schedules {
	if now == nil {
		now = time.Now
	}
	return &Schedules{store: store, ids: NewIDGen(node, now), parse: parse, now: now, changed: changed}
}

// ScheduleView is a schedule and its next occurrences.
type ScheduleView struct {
	*Schedule
	// NextFireTimes are the next DefaultUpcoming occurrences not yet made
	// into jobs; none for a finished schedule and none for a paused one,
	// which makes no jobs until it is resumed (see Resume for the times it
	// then has).
	NextFireTimes []time.Time
}

func (s *Schedules) view(sc *Schedule) (ScheduleView, error) {
	r, err := sc.Recurrence(s.parse)
	if err != nil {
		return ScheduleView{}, fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	if sc.Paused {
		return ScheduleView{Schedule: sc, NextFireTimes: []time.Time{}}, nil
	}
	return ScheduleView{Schedule: sc, NextFireTimes: Upcoming(r, sc.Next, DefaultUpcoming)}, nil
}

// Create checks and stores a new schedule, made of sc's job, rule,
// bounds, catch-up policy and owner; its cursor is its first occurrence
// from now.
func (s *Schedules) Create(ctx context.Context, sc Schedule) (ScheduleView, error) {
	now := TimeOf(s.now().UnixMilli())
	// The creation time, as stored, anchors every_ms without start_at.
	sc.CreatedAt, sc.UpdatedAt = now, now
	sc.Paused = false
	sc.Skipped, sc.LastSkippedAt, sc.LastSkipReason = 0, time.Time{}, ""
	r, err := sc.Validate(s.parse, now)
	if err != nil {
		return ScheduleView{}, err
	}
	sc.ID = ScheduleID(s.ids.Next())
	sc.Next = first(r, sc.StartAt, now)
	if err := s.store.CreateSchedule(ctx, &sc); err != nil {
		return ScheduleView{}, fmt.Errorf("create schedule: %w", err)
	}
	if s.changed != nil {
		s.changed()
	}
	return s.view(&sc)
}

// Get returns one schedule, or an error wrapping ErrNotFound.
func (s *Schedules) Get(ctx context.Context, id ScheduleID) (ScheduleView, error) {
	sc, err := s.store.GetSchedule(ctx, id)
	if err != nil {
		return ScheduleView{}, err
	}
	return s.view(sc)
}

// List returns up to limit schedules with an id above after, by id.
func (s *Schedules) List(ctx context.Context, after ScheduleID, limit int) ([]ScheduleView, error) {
	scs, err := s.store.ListSchedules(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	views := make([]ScheduleView, len(scs))
	for i, sc := range scs {
		if views[i], err = s.view(sc); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// Pause stops schedule id making jobs. Jobs already made (at most the
// materializer's lookahead ahead) still fire.
func (s *Schedules) Pause(ctx context.Context, id ScheduleID) (ScheduleView, error) {
	sc, err := s.store.PauseSchedule(ctx, id, true, time.Time{}, s.now())
	if err != nil {
		return ScheduleView{}, err
	}
	return s.view(sc)
}

// Resume starts a paused schedule again from its first occurrence after
// now: those that fell in the pause are dropped, whatever its catch-up
// policy.
func (s *Schedules) Resume(ctx context.Context, id ScheduleID) (ScheduleView, error) {
	sc, err := s.store.GetSchedule(ctx, id)
	if err != nil {
		return ScheduleView{}, err
	}
	r, err := sc.Recurrence(s.parse)
	if err != nil {
		return ScheduleView{}, fmt.Errorf("schedule %s: %w", sc.ID, err)
	}
	now := s.now()
	if sc, err = s.store.PauseSchedule(ctx, id, false, first(r, sc.StartAt, now), now); err != nil {
		return ScheduleView{}, err
	}
	if s.changed != nil {
		s.changed()
	}
	return s.view(sc)
}

// Delete removes schedule id; the jobs it made stay.
func (s *Schedules) Delete(ctx context.Context, id ScheduleID) error {
	return s.store.DeleteSchedule(ctx, id)
}
