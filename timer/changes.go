// The Scheduler's changes to a committed job: cancel, reschedule and
// replay, each a conditional update of the row, then of the index.

package timer

import (
	"context"
	"fmt"
	"time"
)

// Get returns one job.
func (s *Scheduler) Get(ctx context.Context, id JobID) (*Job, error) {
	return s.store.Get(ctx, id)
}

// Cancel moves a pending job to cancelled and takes it out of the index.
// Once it returns without error the job's webhook is never called: the
// worker moves a row from pending to firing with a conditional update
// before it calls the webhook, and Cancel's own conditional update wins
// or loses against it. It returns an error wrapping ErrNotFound for an
// unknown job, and, with the job, ErrInFlight for one that is firing,
// ErrAlreadyFired for one that is done, and ErrConflict for the rest.
func (s *Scheduler) Cancel(ctx context.Context, id JobID) (*Job, error) {
	return s.CancelIf(ctx, id, AnyVersion)
}

// CancelIf is Cancel on the condition that the job is at version version
// (AnyVersion: at any). A job at another version is left as it is, with
// a *VersionError, whatever its status: it changed since the caller read
// it. The condition and the change are one statement, so of two calls
// with the same version one at most succeeds.
func (s *Scheduler) CancelIf(ctx context.Context, id JobID, version int64) (*Job, error) {
	return s.change(ctx, id, version, func(now time.Time) (bool, error) {
		return s.store.TransitionIf(ctx, id, StatusPending, StatusCancelled, version, now)
	}, func(ctx context.Context, j *Job) error {
		_, err := s.index.Remove(ctx, []Timer{s.timerOf(j)})
		return err
	})
}

// Reschedule moves a pending job's due time to r's FireAt or Delay; the
// old time never fires. It fails as Cancel does for a job that is not
// pending.
func (s *Scheduler) Reschedule(ctx context.Context, id JobID, fireAt time.Time, delay time.Duration) (*Job, error) {
	return s.RescheduleIf(ctx, id, AnyVersion, fireAt, delay)
}

// RescheduleIf is Reschedule on the condition that the job is at version
// version (AnyVersion: at any), as CancelIf.
func (s *Scheduler) RescheduleIf(ctx context.Context, id JobID, version int64, fireAt time.Time, delay time.Duration) (*Job, error) {
	due, err := dueTime(fireAt, delay, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return s.change(ctx, id, version, func(now time.Time) (bool, error) {
		return s.store.RescheduleIf(ctx, id, due, version, now)
	}, func(ctx context.Context, j *Job) error {
		if !s.withinHorizon(j.DueAt, s.cfg.Now()) {
			_, err := s.index.Remove(ctx, []Timer{s.timerOf(j)})
			return err
		}
		wakes, err := s.index.Add(ctx, []Timer{s.timerOf(j)})
		s.wake(wakes)
		return err
	})
}

// Replay moves a dead job back to pending, due at fireAt or after delay,
// with its attempts reset.
func (s *Scheduler) Replay(ctx context.Context, id JobID, fireAt time.Time, delay time.Duration) (*Job, error) {
	due, err := dueTime(fireAt, delay, s.cfg.Now())
	if err != nil {
		return nil, err
	}
	return s.change(ctx, id, AnyVersion, func(now time.Time) (bool, error) {
		return s.store.Replay(ctx, id, due, now)
	}, func(ctx context.Context, j *Job) error {
		t := s.timerOf(j)
		ok, wakes, err := s.index.Revive(ctx, t)
		s.wake(wakes)
		if err != nil || ok {
			return err
		}
		// Not in the Dead set (purged, or Redis lost it): index it anew.
		wakes, err = s.index.Add(ctx, []Timer{t})
		s.wake(wakes)
		return err
	})
}

// change runs a conditional row update, then the index update that goes
// with it, and returns the job as it now is. An update made on the
// condition of version that did not happen is a *VersionError when the
// job is at another version (versions only grow, so it was at another
// when the update ran), a conflict of its status otherwise.
func (s *Scheduler) change(ctx context.Context, id JobID, version int64, update func(now time.Time) (bool, error), reindex func(context.Context, *Job) error) (*Job, error) {
	ok, err := update(s.cfg.Now())
	if err != nil {
		return nil, err
	}
	j, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		if version != AnyVersion && j.Version != version {
			return j, &VersionError{ID: id, Want: version, Have: j.Version}
		}
		return j, fmt.Errorf("job %d is %s: %w", id, j.Status, conflictOf(j.Status))
	}
	if j.Status.Ended() {
		s.ended(j.GroupID)
	}
	if _, err := s.topic(ctx, j.Topic); err != nil {
		return j, err
	}
	// The row is the truth; a stale timer is skipped by the worker and a
	// missing one restored by the backstop.
	if !s.indexUp() {
		s.indexFailed("reindex", 1, nil)
		return j, nil
	}
	ictx, cancel := context.WithTimeout(ctx, indexTimeout)
	defer cancel()
	if err := reindex(ictx, j); err != nil {
		s.indexFailed("reindex", 1, err)
	}
	return j, nil
}

// conflictOf is the error of a change that found a job in status s.
func conflictOf(s Status) error {
	switch s {
	case StatusFiring:
		return ErrInFlight
	case StatusDone:
		return ErrAlreadyFired
	}
	return ErrConflict
}

func dueTime(fireAt time.Time, delay time.Duration, now time.Time) (time.Time, error) {
	r := Request{Topic: "x", FireAt: fireAt, Delay: delay}
	if err := r.Validate(); err != nil {
		return time.Time{}, err
	}
	if fireAt.IsZero() {
		fireAt = now.Add(delay)
	}
	return TimeOf(CeilMillis(fireAt)), nil
}
