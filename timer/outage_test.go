package timer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

var errDown = errors.New("connection refused")

// While Redis is away, a schedule does not wait for it: after one index
// write failed, the next ones are skipped for a second (the commit is the
// promise), the backstop is asked to repair, and a second later one
// request tries Redis again.
func TestSchedulerSkipsTheIndexWhileRedisIsAway(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	repairs := 0
	r.sched.OnRepair(func() { repairs++ })
	r.index.FailNext("Restore", errDown, 1)
	r.schedule(t, "orders", time.Minute, 1)
	if n := r.index.Calls("Restore"); n != 1 || repairs != 1 {
		t.Fatalf("first schedule: %d index writes, %d repairs; want 1 and 1", n, repairs)
	}
	ids := r.schedule(t, "orders", time.Minute, 5)
	if n := r.index.Calls("Restore"); n != 1 || repairs != 6 {
		t.Fatalf("while away: %d index writes, %d repairs; want still 1 write and 6 repairs", n, repairs)
	}
	for _, id := range ids {
		if r.status(t, id) != timer.StatusPending {
			t.Fatalf("job %v was not committed", id)
		}
	}
	r.clock.Advance(time.Second)
	r.schedule(t, "orders", time.Minute, 1)
	if n := r.index.Calls("Restore"); n != 2 {
		t.Fatalf("a second later: %d index writes, want the probe (2)", n)
	}
}

// When the task store is away, claimed jobs go back to Redis for a second
// instead of waiting out their leases; once it is back they fire within
// about that second.
func TestStepsTaskStoreOutage(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	ids := r.schedule(t, "orders", 0, 3)
	r.store.FailNext("Fire", errDown, 3) // every try of one load
	if claimed, fired := r.steps.Step(ctx); claimed != 3 || fired != 0 {
		t.Fatalf("store down: claimed %d fired %d; want 3 claimed, none fired", claimed, fired)
	}
	if r.steps.Held() != 0 {
		t.Fatalf("the worker still holds %d leases", r.steps.Held())
	}
	if claimed, _ := r.steps.Step(ctx); claimed != 0 {
		t.Fatalf("claimed %d again at once; want them put back for a second", claimed)
	}
	r.clock.Advance(time.Second)
	if _, fired := r.steps.Step(ctx); fired != 3 {
		t.Fatalf("a second later, the store back: fired %d, want 3", fired)
	}
	for _, id := range ids {
		if ds := r.handler.deliveries(id); len(ds) != 1 || ds[0].Attempt != 1 {
			t.Fatalf("job %v: %+v, want one first attempt (a put-back counts none)", id, ds)
		}
	}
}

// A job whose index write was skipped while Redis was away is restored by
// the backstop's repair as soon as Redis is back, and fires within a
// couple of seconds of its due time, not at the next full scan.
func TestBackstopRepairsSkippedIndexWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, index := timertest.NewStore(), timertest.NewIndex()
		var (
			mu    sync.Mutex
			fired = map[timer.JobID]time.Time{}
		)
		handler := timer.HandlerFunc(func(ctx context.Context, d timer.Delivery) error {
			mu.Lock()
			defer mu.Unlock()
			fired[d.Job.ID] = time.Now()
			return nil
		})
		eng, err := timer.New(store, index, handler, timer.Config{Backstop: timer.BackstopConfig{FullInterval: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go eng.Run(ctx)
		time.Sleep(time.Second) // the first full scan is done
		index.FailNext("Restore", errDown, 1)
		res, err := eng.Schedule(t.Context(), timer.Request{Topic: "orders", Delay: 500 * time.Millisecond, CallbackURL: "http://localhost/h"})
		if err != nil {
			t.Fatal(err)
		}
		due := res.Job.DueAt
		time.Sleep(5 * time.Second)
		synctest.Wait()
		mu.Lock()
		at, ok := fired[res.Job.ID]
		mu.Unlock()
		if !ok {
			t.Fatal("the job whose index write failed never fired")
		}
		if late := at.Sub(due); late < 0 || late > 2*time.Second {
			t.Fatalf("fired %v after its due time, want within 2 s (the repair)", late)
		}
		cancel()
	})
}

// hangingIndex is a Redis that went away behind a client that retries:
// every write waits until its context is done.
type hangingIndex struct{ *timertest.Index }

func (hangingIndex) hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (h hangingIndex) Add(ctx context.Context, _ []timer.Timer) ([]timer.Wake, error) {
	return nil, h.hang(ctx)
}

func (h hangingIndex) Restore(ctx context.Context, _ []timer.Timer) (int, []timer.Wake, error) {
	return 0, nil, h.hang(ctx)
}

func (h hangingIndex) Remove(ctx context.Context, _ []timer.Timer) (int, error) {
	return 0, h.hang(ctx)
}

// Issue 34, item 5: a schedule, and a cancel, wait at most 50 ms for a
// Redis that went away (a refused connection is retried with backoff by
// the client: 250 ms to a second of it), then answer from the commit and
// ask the backstop to repair.
func TestSchedulerGivesAGoneRedis50ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := timertest.NewStore()
		sched, err := timer.NewScheduler(store, hangingIndex{timertest.NewIndex()}, timer.SchedulerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		repairs := 0
		sched.OnRepair(func() { repairs++ })
		ctx := t.Context()
		start := time.Now()
		res, err := sched.Schedule(ctx, timer.Request{Topic: "orders", Delay: time.Minute, CallbackURL: "http://localhost/hook"})
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 50*time.Millisecond {
			t.Errorf("a schedule waited %v for the gone Redis, want 50 ms at most", took)
		}
		time.Sleep(time.Second) // past the skip after a failure: the cancel tries Redis
		start = time.Now()
		if _, err := sched.Cancel(ctx, res.Job.ID); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 50*time.Millisecond {
			t.Errorf("a cancel waited %v for the gone Redis, want 50 ms at most", took)
		}
		if repairs != 2 {
			t.Errorf("%d repairs asked, want 2", repairs)
		}
		j, err := store.Get(ctx, res.Job.ID)
		if err != nil || j.Status != timer.StatusCancelled {
			t.Errorf("the job after its cancel: %v, %v", j, err)
		}
	})
}
