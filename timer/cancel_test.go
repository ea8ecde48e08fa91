package timer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// The cancel contract under a race: hundreds of jobs cancelled from 30 ms
// before they are claimed to 60 ms after their due time, with a receiver that takes 50 ms
// a call. A cancel that answers "cancelled" means the webhook is never
// called: not before the answer, not after it. The others answer
// in_flight or already_fired, and those jobs are called.
func TestCancelIsDefinite(t *testing.T) {
	s := newStack(t, sharedRedis)
	var (
		mu     sync.Mutex
		called = map[timer.JobID][]time.Time{}
	)
	handler := timer.HandlerFunc(func(ctx context.Context, d timer.Delivery) error {
		mu.Lock()
		called[d.Job.ID] = append(called[d.Job.ID], time.Now())
		mu.Unlock()
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})
	e, _ := s.start(t, handler, timer.Config{})

	const n = 300
	start := time.Now().Add(time.Second)
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "race", FireAt: start.Add(time.Duration(i) * 5 * time.Millisecond), CallbackURL: "http://localhost/hook"}
	}
	ids := schedule(t, e, reqs)

	type answer struct {
		err error
		at  time.Time
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		// From 30 ms before the claim (two look-aheads early) to 60 ms after the due time.
		early := 2*timer.DefaultClaimAhead + 30*time.Millisecond
		offset := -early + time.Duration(i)*(early+60*time.Millisecond)/n
		at := reqs[i].FireAt.Add(offset)
		wg.Go(func() {
			time.Sleep(time.Until(at))
			_, err := e.Cancel(context.WithoutCancel(t.Context()), id)
			answers[i] = answer{err: err, at: time.Now()}
		})
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // let any straggling call show itself

	mu.Lock()
	defer mu.Unlock()
	var cancelled, inFlight, fired int
	for i, id := range ids {
		a, calls := answers[i], called[id]
		switch {
		case a.err == nil:
			cancelled++
			if len(calls) > 0 {
				t.Errorf("job %v: cancel answered cancelled at %v, yet its webhook was called at %v", id, a.at.Format("15:04:05.000"), calls[0].Format("15:04:05.000"))
			}
			if j, err := e.Get(t.Context(), id); err != nil || j.Status != timer.StatusCancelled {
				t.Errorf("job %v answered cancelled is %v (%v)", id, j.Status, err)
			}
		case errors.Is(a.err, timer.ErrInFlight):
			inFlight++
		case errors.Is(a.err, timer.ErrAlreadyFired):
			fired++
			if len(calls) == 0 {
				t.Errorf("job %v: cancel answered already_fired, but its webhook was never called", id)
			}
		default:
			t.Errorf("job %v: cancel answered %v", id, a.err)
		}
	}
	t.Logf("%d cancelled, %d in flight, %d already fired", cancelled, inFlight, fired)
	if cancelled == 0 || inFlight+fired == 0 {
		t.Fatalf("the race was not exercised: %d cancelled, %d in flight, %d fired", cancelled, inFlight, fired)
	}
}
