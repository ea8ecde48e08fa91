package timertest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// testJobVersion: a new row is at version 1, whatever the job says; each
// change of a row a client can see moves it by one, and a change refused,
// a read, or Fire of a job already firing leaves it.
func testJobVersion(t *testing.T, s timer.Store) {
	ctx := t.Context()
	j := newJob(1, "v", 0)
	j.Version = 7
	mustInsert(t, s, j, newJob(2, "v", 0))
	want := int64(1)
	step := func(what string, moves bool, change func() error) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if moves {
			want++
		}
		if got := mustGet(t, s, 1).Version; got != want {
			t.Fatalf("after %s: version %d, want %d", what, got, want)
		}
	}
	changed := func(ok bool, err error) error {
		if err == nil && !ok {
			t.Fatal("the change did not happen")
		}
		return err
	}
	step("Insert", false, func() error { return nil })
	step("reads", false, func() error {
		_, err := s.GetMany(ctx, []timer.JobID{1, 2})
		return err
	})
	step("Reschedule", true, func() error { return changed(s.Reschedule(ctx, 1, base.Add(time.Second), base)) })
	step("Reschedule to the same time", true, func() error { return changed(s.Reschedule(ctx, 1, base.Add(time.Second), base)) })
	step("Fire of a pending job", true, func() error {
		_, err := s.Fire(ctx, []timer.JobID{1}, base.Add(time.Second), base)
		return err
	})
	step("Fire of the job firing", false, func() error {
		_, err := s.Fire(ctx, []timer.JobID{1}, base.Add(time.Second), base)
		return err
	})
	step("Reschedule refused (firing)", false, func() error {
		ok, err := s.Reschedule(ctx, 1, base, base)
		if ok {
			t.Fatal("a firing job was rescheduled")
		}
		return err
	})
	step("Fail with a retry", true, func() error {
		return changed(s.Fail(ctx, 1, timer.Failure{Attempts: 1, Error: "503", Status: 503, RetryAt: base.Add(time.Minute)}, base))
	})
	step("Transition firing → pending", true, func() error {
		if _, err := s.Fire(ctx, []timer.JobID{1}, base.Add(time.Hour), base); err != nil {
			return err
		}
		want++ // that Fire moved it
		return changed(s.Transition(ctx, 1, timer.StatusFiring, timer.StatusPending, base))
	})
	step("Fail, dead", true, func() error {
		return changed(s.Fail(ctx, 1, timer.Failure{Attempts: 2, Error: "503", Status: 503, Dead: true}, base))
	})
	step("Replay", true, func() error { return changed(s.Replay(ctx, 1, base, base)) })
	step("Complete", true, func() error {
		n, err := s.Complete(ctx, []timer.Completion{{ID: 1, Attempts: 3}}, base)
		return changed(n == 1, err)
	})
	step("Complete refused (done)", false, func() error {
		_, err := s.Complete(ctx, []timer.Completion{{ID: 1, Attempts: 4}}, base)
		return err
	})
	if got := mustGet(t, s, 2).Version; got != 1 {
		t.Errorf("the job no call changed is at version %d, want 1", got)
	}
	// Cancel and purge move it too.
	if ok, err := s.Transition(ctx, 2, timer.StatusPending, timer.StatusCancelled, base); !ok || err != nil {
		t.Fatalf("cancel: %t, %v", ok, err)
	}
	if got := mustGet(t, s, 2).Version; got != 2 {
		t.Errorf("cancelled job at version %d, want 2", got)
	}
}

// testVersionConditions: TransitionIf and RescheduleIf act only while the
// job is at the version given (any, for timer.AnyVersion), and a refused
// one changes nothing.
func testVersionConditions(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s, newJob(1, "v", 0), newJob(2, "v", 0))
	later, now := base.Add(time.Hour), base.Add(time.Minute)
	before := mustGet(t, s, 1)
	for _, stale := range []int64{2, 99} {
		if ok, err := s.RescheduleIf(ctx, 1, later, stale, now); ok || err != nil {
			t.Errorf("RescheduleIf at version %d of a job at 1 = %t, %v; want false", stale, ok, err)
		}
		if ok, err := s.TransitionIf(ctx, 1, timer.StatusPending, timer.StatusCancelled, stale, now); ok || err != nil {
			t.Errorf("TransitionIf at version %d of a job at 1 = %t, %v; want false", stale, ok, err)
		}
	}
	if d := diffJob(mustGet(t, s, 1), before); d != "" || mustGet(t, s, 1).Version != 1 {
		t.Errorf("refused changes changed the job: %s", d)
	}
	if ok, err := s.RescheduleIf(ctx, 1, later, 1, now); !ok || err != nil {
		t.Fatalf("RescheduleIf at the job's version = %t, %v", ok, err)
	}
	if got := mustGet(t, s, 1); got.Version != 2 || !got.DueAt.Equal(later) || !got.UpdatedAt.Equal(now) {
		t.Errorf("rescheduled job: version %d, due %v, updated %v", got.Version, got.DueAt, got.UpdatedAt)
	}
	if ok, err := s.TransitionIf(ctx, 1, timer.StatusPending, timer.StatusCancelled, 1, now); ok || err != nil {
		t.Errorf("TransitionIf at the version before = %t, %v; want false", ok, err)
	}
	if ok, err := s.TransitionIf(ctx, 1, timer.StatusPending, timer.StatusCancelled, 2, now); !ok || err != nil {
		t.Errorf("TransitionIf at the job's version = %t, %v", ok, err)
	}
	if got := mustGet(t, s, 1); got.Version != 3 || got.Status != timer.StatusCancelled {
		t.Errorf("cancelled job: version %d, status %s", got.Version, got.Status)
	}
	// At the right version but in another status: refused, unchanged.
	if ok, err := s.RescheduleIf(ctx, 1, base, 3, now); ok || err != nil {
		t.Errorf("RescheduleIf of a cancelled job = %t, %v; want false", ok, err)
	}
	if got := mustGet(t, s, 1); got.Version != 3 || !got.DueAt.Equal(later) {
		t.Errorf("refused reschedule: version %d, due %v", got.Version, got.DueAt)
	}
	// AnyVersion: whatever it is.
	if ok, err := s.RescheduleIf(ctx, 2, later, timer.AnyVersion, now); !ok || err != nil {
		t.Errorf("RescheduleIf at any version = %t, %v", ok, err)
	}
	if ok, err := s.TransitionIf(ctx, 2, timer.StatusPending, timer.StatusCancelled, timer.AnyVersion, now); !ok || err != nil {
		t.Errorf("TransitionIf at any version = %t, %v", ok, err)
	}
	if ok, err := s.TransitionIf(ctx, 3, timer.StatusPending, timer.StatusCancelled, 1, now); ok || err != nil {
		t.Errorf("TransitionIf of no job = %t, %v; want false", ok, err)
	}
}

// testVersionRace: of changes racing with the same version, one wins.
func testVersionRace(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s, newJob(1, "v", 0), newJob(2, "v", 0))
	const racers = 8
	for _, id := range []timer.JobID{1, 2} {
		var (
			wg  sync.WaitGroup
			won atomic.Int32
		)
		errs := make(chan error, racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				var (
					ok  bool
					err error
				)
				due := base.Add(time.Duration(i+1) * time.Minute)
				if id == 1 || i%2 == 0 {
					ok, err = s.RescheduleIf(ctx, id, due, 1, base)
				} else {
					ok, err = s.TransitionIf(ctx, id, timer.StatusPending, timer.StatusCancelled, 1, base)
				}
				if err != nil {
					errs <- err
				}
				if ok {
					won.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("job %d: %v", id, err)
		}
		if n := won.Load(); n != 1 {
			t.Errorf("job %d: %d of %d changes at version 1 happened, want 1", id, n, racers)
		}
		if got := mustGet(t, s, id).Version; got != 2 {
			t.Errorf("job %d at version %d after the race, want 2", id, got)
		}
	}
}
