package timer_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// clockScheduler returns a scheduler of store whose clock reads the
// returned time, which the test moves.
func clockScheduler(t *testing.T, store timer.Store) (*timer.Scheduler, func(d time.Duration)) {
	t.Helper()
	var at atomic.Int64
	at.Store(batchNow.UnixNano())
	s, err := timer.NewScheduler(store, timertest.NewIndex(), timer.SchedulerConfig{Now: func() time.Time { return time.Unix(0, at.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	return s, func(d time.Duration) { at.Store(batchNow.Add(d).UnixNano()) }
}

// A repeated key is the same request only when it asks for the same due
// time: a fire_at to the millisecond, a delay within the time since the
// first request plus timer.DueSlack. Another due time is other content,
// a key mismatch (409), never the first job answered as if it were this
// one.
func TestRepeatedKeyComparesDueTime(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, at := clockScheduler(t, store)
	req := func(delay time.Duration) timer.Request {
		r := batchReq("orders", "k")
		r.Delay = delay
		return r
	}
	first, err := s.Schedule(ctx, req(10*time.Minute))
	if err != nil || !first.Created {
		t.Fatalf("first = %+v, %v", first, err)
	}
	due := first.Job.DueAt
	fireAt := func(t time.Time) timer.Request {
		r := batchReq("orders", "k")
		r.Delay, r.FireAt = 0, t
		return r
	}
	for _, tc := range []struct {
		name  string
		since time.Duration // after the first request
		req   timer.Request
		same  bool
	}{
		{"the same delay at once", 0, req(10 * time.Minute), true},
		{"the same delay 5 s later", 5 * time.Second, req(10 * time.Minute), true},
		{"the same delay an hour later", time.Hour, req(10 * time.Minute), true},
		{"a delay of 2.8 h", 0, req(2*time.Hour + 48*time.Minute), false},
		{"a delay of 2.8 h, an hour later", time.Hour, req(2*time.Hour + 48*time.Minute), false},
		{"a delay 1 s longer", 0, req(10*time.Minute + time.Second), true},
		{"a delay 1,001 ms longer", 0, req(10*time.Minute + 1001*time.Millisecond), false},
		{"a delay 1,001 ms shorter", 0, req(10*time.Minute - 1001*time.Millisecond), false},
		{"a delay 1 s longer, 2 s later: 3 s past the job's due time", 2 * time.Second, req(10*time.Minute + time.Second), true},
		{"a delay 2 s longer, 2 s later: 4 s past the job's due time", 2 * time.Second, req(10*time.Minute + 2*time.Second), false},
		{"a delay 30 s shorter, 30 s later: the same due time", 30 * time.Second, req(10*time.Minute - 30*time.Second), true},
		{"no delay", 0, req(0), false},
		{"fire_at the job's due time", time.Minute, fireAt(due), true},
		{"fire_at a millisecond later", 0, fireAt(due.Add(time.Millisecond)), false},
		{"fire_at a millisecond earlier", 0, fireAt(due.Add(-time.Millisecond)), false},
	} {
		at(tc.since)
		res, err := s.Schedule(ctx, tc.req)
		switch {
		case tc.same && (err != nil || res.Created || res.Job.ID != first.Job.ID):
			t.Errorf("%s: %+v, %v; want the first job", tc.name, res, err)
		case !tc.same && !timer.IsKeyMismatch(err):
			t.Errorf("%s: %+v, %v; want a key mismatch", tc.name, res, err)
		case !tc.same && !errors.Is(err, timer.ErrConflict):
			t.Errorf("%s: %v does not wrap ErrConflict", tc.name, err)
		}
	}
	if n := store.Len(); n != 1 {
		t.Errorf("%d rows, want the first job only", n)
	}

	// A batch: against a stored job, and within itself.
	at(0)
	_, err = s.ScheduleBatch(ctx, []timer.Request{batchReq("orders", "other"), req(2*time.Hour + 48*time.Minute)})
	if be, ok := errors.AsType[*timer.BatchError](err); !ok || len(be.Items) != 1 || be.Items[0].Index != 1 || !timer.IsKeyMismatch(be.Items[0].Err) {
		t.Errorf("a batch repeating the key with another delay = %v; want item 1 a key mismatch", err)
	}
	twice := []timer.Request{batchReq("orders", "fresh"), batchReq("orders", "fresh")}
	twice[1].Delay = time.Hour
	_, err = s.ScheduleBatch(ctx, twice)
	if be, ok := errors.AsType[*timer.BatchError](err); !ok || len(be.Items) != 1 || be.Items[0].Index != 1 || !timer.IsKeyMismatch(be.Items[0].Err) {
		t.Errorf("a batch giving a key twice with two delays = %v; want item 1 a key mismatch", err)
	}
	if n := store.Len(); n != 1 {
		t.Errorf("%d rows after the refused batches, want 1", n)
	}
}

// Once its due time has moved (a reschedule, or a retry after a failed
// attempt), a job's due time says nothing of the delay its request gave:
// a retry of that request still answers the job. A group's completion
// job, scheduled again by a sweep after its first attempt failed, is one
// of these.
func TestRepeatedKeyAfterTheDueTimeMoved(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, at := clockScheduler(t, store)
	r := batchReq("orders", "moved")
	r.Delay = 10 * time.Minute
	first, err := s.Schedule(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reschedule(ctx, first.Job.ID, time.Time{}, 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	at(2 * time.Second)
	if res, err := s.Schedule(ctx, r); err != nil || res.Job.ID != first.Job.ID {
		t.Errorf("the request again after a reschedule = %+v, %v; want its job", res, err)
	}

	gr := &timer.Group{ID: "g", OnComplete: &timer.GroupCallback{Topic: "groups", CallbackURL: "http://127.0.0.1:9/done"},
		CreatedAt: batchNow, CompletedAt: batchNow, Counts: map[timer.Status]int64{timer.StatusDone: 1}}
	at(0)
	done, err := s.Schedule(ctx, timer.CompletionRequest(gr))
	if err != nil {
		t.Fatal(err)
	}
	at(time.Second)
	if n, err := store.Fire(ctx, []timer.JobID{done.Job.ID}, batchNow.Add(time.Minute), batchNow.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	if _, err := store.Fail(ctx, done.Job.ID, timer.Failure{Attempts: 1, Error: "HTTP 500", Status: 500, RetryAt: batchNow.Add(time.Hour)}, batchNow.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	at(10 * time.Second)
	if res, err := s.Schedule(ctx, timer.CompletionRequest(gr)); err != nil || res.Job.ID != done.Job.ID {
		t.Errorf("the completion again after a retry = %+v, %v; want its job", res, err)
	}
}
