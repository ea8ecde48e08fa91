package timer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// CancelIf and RescheduleIf change a job only at the version given: at
// another, a *VersionError naming both and the job unchanged, checked
// before its status; AnyVersion matches every version.
func TestVersionedChanges(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	res, err := s.Schedule(ctx, batchReq("t", ""))
	if err != nil || res.Job.Version != 1 {
		t.Fatalf("Schedule: %+v, %v; want version 1", res.Job, err)
	}
	id := res.Job.ID
	j, err := s.RescheduleIf(ctx, id, 1, time.Time{}, time.Hour)
	if err != nil || j.Version != 2 || !j.DueAt.Equal(batchNow.Add(time.Hour)) {
		t.Fatalf("RescheduleIf at version 1: %+v, %v", j, err)
	}
	stale := func(what string, j *timer.Job, err error, want int64) {
		t.Helper()
		ve, ok := errors.AsType[*timer.VersionError](err)
		if !errors.Is(err, timer.ErrVersionMismatch) || errors.Is(err, timer.ErrConflict) || !ok || ve.ID != id || ve.Want != want || ve.Have != j.Version {
			t.Fatalf("%s: %v (%#v); want a *VersionError of version %d", what, err, ve, want)
		}
	}
	j, err = s.RescheduleIf(ctx, id, 1, time.Time{}, time.Minute)
	stale("RescheduleIf at version 1", j, err, 1)
	j, err = s.CancelIf(ctx, id, 3)
	stale("CancelIf at version 3", j, err, 3)
	if got, _ := s.Get(ctx, id); got.Version != 2 || got.Status != timer.StatusPending || !got.DueAt.Equal(batchNow.Add(time.Hour)) {
		t.Fatalf("after refused changes: %+v", got)
	}
	if j, err = s.CancelIf(ctx, id, 2); err != nil || j.Status != timer.StatusCancelled || j.Version != 3 {
		t.Fatalf("CancelIf at version 2: %+v, %v", j, err)
	}
	j, err = s.CancelIf(ctx, id, 2)
	stale("CancelIf of the cancelled job at its version before", j, err, 2)
	if _, err = s.CancelIf(ctx, id, 3); !errors.Is(err, timer.ErrConflict) || errors.Is(err, timer.ErrVersionMismatch) {
		t.Errorf("CancelIf of the cancelled job at its version: %v; want ErrConflict", err)
	}
	if _, err = s.RescheduleIf(ctx, id, timer.AnyVersion, time.Time{}, time.Minute); !errors.Is(err, timer.ErrConflict) {
		t.Errorf("RescheduleIf at any version of the cancelled job: %v; want ErrConflict", err)
	}
	if _, err = s.CancelIf(ctx, 12345, 1); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("CancelIf of no job: %v; want ErrNotFound", err)
	}
}
