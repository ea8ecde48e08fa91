package timer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// A failed then successful delivery leaves two attempts in the history,
// each with its start, duration, status, error and excerpt; a delivery
// not sent leaves none.
func TestStepsRecordAttempts(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Retry: timer.RetryPolicy{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	ctx := t.Context()
	calls := 0
	r.handler.fail = func(d timer.Delivery) error {
		calls++
		if d.Response == nil {
			t.Fatal("the worker set no Response though the store keeps attempts")
		}
		switch calls {
		case 1:
			return &timer.NotSentError{Until: d.At, Err: errors.New("breaker open")}
		case 2:
			r.clock.Advance(3 * time.Millisecond) // the call takes 3 ms
			d.Response.StatusCode, d.Response.Excerpt = 500, []byte("database down")
			return &timer.StatusError{Code: 500, Err: errors.New("POST /hook: 500")}
		}
		d.Response.StatusCode, d.Response.Excerpt = 200, []byte(`{"ok":true}`)
		return nil
	}
	id := r.schedule(t, "orders", 0, 1)[0]
	start := r.clock.Now().Add(10 * time.Millisecond) // after the step not sent
	for range 3 {
		r.steps.Step(ctx)
		r.clock.Advance(10 * time.Millisecond)
	}
	if st := r.status(t, id); st != timer.StatusDone {
		t.Fatalf("status %v, want done", st)
	}
	got, err := r.store.ListAttempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []timer.Attempt{
		{Job: id, Attempt: 1, StartedAt: start, Duration: 3 * time.Millisecond, StatusCode: 500, Error: "POST /hook: 500", Excerpt: []byte("database down")},
		{Job: id, Attempt: 2, StartedAt: start.Add(13 * time.Millisecond), StatusCode: 200, Excerpt: []byte(`{"ok":true}`)},
	}
	if !timertest.EqualAttempts(got, want) {
		t.Errorf("attempts recorded:\n%+v\nwant\n%+v", got, want)
	}
}

// Pruning deletes the attempts older than the retention.
func TestStepsPruneAttempts(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{AttemptRetention: time.Hour})
	ctx := t.Context()
	id := r.schedule(t, "orders", 0, 1)[0]
	r.steps.Step(ctx)
	if got, _ := r.store.ListAttempts(ctx, id); len(got) != 1 {
		t.Fatalf("%d attempts recorded, want 1", len(got))
	}
	if n, err := r.steps.PruneAttempts(ctx); err != nil || n != 0 {
		t.Fatalf("prune within the retention = %d, %v; want 0", n, err)
	}
	r.clock.Advance(time.Hour + time.Millisecond)
	if n, err := r.steps.PruneAttempts(ctx); err != nil || n != 1 {
		t.Fatalf("prune past the retention = %d, %v; want 1", n, err)
	}
}

// A success is recorded with its done mark; when the mark fails, the
// attempt was made all the same and the history keeps it, and the job,
// still pending, fires again.
func TestStepsRecordSuccessWhoseDoneMarkFailed(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	id := r.schedule(t, "orders", 0, 1)[0]
	r.store.FailNext("Complete", errors.New("database down"), 1)
	r.steps.Step(ctx)
	if st := r.status(t, id); st == timer.StatusDone {
		t.Fatalf("status %v after a failed done mark", st)
	}
	got, err := r.store.ListAttempts(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Attempt != 1 || got[0].Error != "" {
		t.Fatalf("attempts recorded: %+v; want the first, a success", got)
	}
	// And one whose mark holds is recorded by it, once.
	other := r.schedule(t, "orders", 0, 1)[0]
	r.steps.Step(ctx)
	if st := r.status(t, other); st != timer.StatusDone {
		t.Fatalf("status %v, want done", st)
	}
	if got, err := r.store.ListAttempts(ctx, other); err != nil || len(got) != 1 || got[0].Attempt != 1 {
		t.Errorf("attempts of a job done at once: %+v, %v; want one", got, err)
	}
}
