package timer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// recordingStore notes the order in which the backstop's scan reads
// jobs, which is the order it hands them to be restored.
type recordingStore struct {
	*timertest.Store
	mu    sync.Mutex
	order []timer.JobID
}

func (r *recordingStore) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	timers, err := r.Store.ScanPending(ctx, q)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range timers {
		r.order = append(r.order, t.ID)
	}
	return timers, err
}

// read returns the jobs read since the last call, in order.
func (r *recordingStore) read() []timer.JobID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.order
	r.order = nil
	return out
}

// The backstop scans topic by topic, so a full scan (after Redis lost
// its data) first restores the jobs due within 30 s, every topic's: a
// job due in a second in the last topic does not wait behind the first
// topic's hour of jobs. An incremental scan then reads only what entered
// the horizon.
func TestBackstopFullScanRestoresSoonFirst(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	store := &recordingStore{Store: timertest.NewStore()}
	for _, name := range []string{"a", "z"} {
		if _, err := store.EnsureTopic(ctx, timer.Topic{Name: name, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	var jobs []*timer.Job
	add := func(id timer.JobID, topic string, due time.Duration) {
		jobs = append(jobs, &timer.Job{ID: id, Topic: topic, Status: timer.StatusPending, DueAt: now.Add(due), MaxAttempts: 3, CallbackURL: "x"})
	}
	for i := range 6 {
		add(timer.JobID(10+i), "a", 10*time.Minute+time.Duration(i)*time.Second)
	}
	add(20, "z", time.Second)
	add(21, "a", 2*time.Second)
	if err := store.Insert(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	clock := now
	bs := timer.NewBackstop(store, timertest.NewIndex(), nil, timer.BackstopConfig{Page: 2, Now: func() time.Time { return clock }})
	if n, err := bs.RunOnce(ctx, true); err != nil || n != len(jobs) {
		t.Fatalf("full RunOnce = %d, %v; want %d", n, err, len(jobs))
	}
	if order := store.read(); len(order) != len(jobs) || order[0] != 21 || order[1] != 20 {
		t.Errorf("read in the order %v; want jobs 21 (a, in 2 s) and 20 (z, in 1 s) first, then the rest", order)
	}
	// An incremental scan an hour later reads only the due times that
	// entered the horizon: the job scheduled beyond it.
	add(30, "a", 90*time.Minute)
	if err := store.Insert(ctx, jobs[len(jobs)-1:]); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(time.Hour)
	if n, err := bs.RunOnce(ctx, false); err != nil || n != 1 {
		t.Fatalf("incremental RunOnce = %d, %v; want 1", n, err)
	}
	if order := store.read(); len(order) != 1 || order[0] != 30 {
		t.Errorf("the incremental scan read %v; want job 30 alone", order)
	}
}
