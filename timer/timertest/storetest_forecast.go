package timertest

import (
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// Forecaster is a store that forecasts: a timer.Store and a
// timer.Forecaster.
type Forecaster interface {
	timer.Store
	timer.Forecaster
}

// TestForecaster runs the forecast's contract against the stores open
// returns: each a fresh, empty store. The jobs are spread over shards 0
// and 1, so that a store over two shards sums them.
func TestForecaster(t *testing.T, open func(t *testing.T) Forecaster) {
	ctx := t.Context()
	s := open(t)
	ids := timer.NewIDGen(1, func() time.Time { return base })
	at := func(sec float64) time.Time { return base.Add(time.Duration(sec * float64(time.Second))) }
	var all []*timer.Job
	add := func(topic string, sec float64, n int) []*timer.Job {
		var added []*timer.Job
		for range n {
			j := newJob(ids.NextIn(len(all)%2), topic, 0)
			j.DueAt = at(sec)
			added = append(added, j)
			all = append(all, j)
		}
		return added
	}
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "t", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	// Buckets of 10 s from base: 5 at 0 s (the first instant counts), a
	// spike of 7 at 20 s, 1 at 29.999 s, 2 at 45 s, 1 at 59.999 s (the
	// last instant before to), and outside: 1 at -0.001 s, 1 at 60 s.
	add("t", 0, 5)
	add("t", 20, 7)
	add("t", 29.999, 1)
	add("t", 45, 2)
	add("t", 59.999, 1)
	add("t", -0.001, 1)
	add("t", 60, 1)
	add("other", 20, 3)
	done := add("t", 20, 1)
	cancelled := add("t", 20, 1)
	dead := add("t", 40, 1)
	retried := add("t", 0, 1)  // fails, retries at 35 s: counts there
	firing := add("t", 0, 1)   // an attempt under way: still counts
	stopped := add("t", 50, 1) // fails for good: dead
	mustInsert(t, s, all...)
	if ok, err := s.Transition(ctx, done[0].ID, timer.StatusPending, timer.StatusDone, base); !ok || err != nil {
		t.Fatalf("Transition to done = %t, %v", ok, err)
	}
	if ok, err := s.Transition(ctx, cancelled[0].ID, timer.StatusPending, timer.StatusCancelled, base); !ok || err != nil {
		t.Fatalf("Transition to cancelled = %t, %v", ok, err)
	}
	if ok, err := s.Transition(ctx, dead[0].ID, timer.StatusPending, timer.StatusDead, base); !ok || err != nil {
		t.Fatalf("Transition to dead = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{retried[0].ID, firing[0].ID}, base, base); n != 2 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	if ok, err := s.Fail(ctx, retried[0].ID, timer.Failure{Attempts: 1, Error: "503", Status: 503, RetryAt: at(35)}, base); !ok || err != nil {
		t.Fatalf("Fail with a retry = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{stopped[0].ID}, at(50), base); n != 1 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	if ok, err := s.Fail(ctx, stopped[0].ID, timer.Failure{Attempts: 1, Error: "410", Status: 410, Dead: true}, base); !ok || err != nil {
		t.Fatalf("Fail for good = %t, %v", ok, err)
	}

	q := timer.ForecastQuery{Topic: "t", From: base, To: at(60), Step: 10 * time.Second}
	check := func(name string, q timer.ForecastQuery, limit int64, want []int64, wantTo time.Time) {
		t.Helper()
		got, err := s.Forecast(ctx, q, limit)
		if err != nil {
			t.Fatalf("%s: Forecast: %v", name, err)
		}
		if !slices.Equal(got.Counts, want) || !got.CountedTo.Equal(wantTo) {
			t.Errorf("%s: Forecast = %v counted to %v, want %v counted to %v", name, got.Counts, got.CountedTo, want, wantTo)
		}
	}
	check("whole", q, 0, []int64{6, 0, 8, 1, 2, 1}, time.Time{})
	check("under the limit", q, 18, []int64{6, 0, 8, 1, 2, 1}, time.Time{})
	// The last bucket ends at to: 55 s..60 s, in buckets of 11 s.
	check("short last bucket", timer.ForecastQuery{Topic: "t", From: base, To: at(60), Step: 11 * time.Second},
		0, []int64{6, 7, 1, 1, 2, 1}, time.Time{})
	check("other topic", timer.ForecastQuery{Topic: "other", From: base, To: at(60), Step: 10 * time.Second},
		0, []int64{0, 0, 3, 0, 0, 0}, time.Time{})
	check("unknown topic", timer.ForecastQuery{Topic: "nobody", From: base, To: at(60), Step: 10 * time.Second},
		0, []int64{0, 0, 0, 0, 0, 0}, time.Time{})
	// The limit stops the walk (within the spike at 20 s on one store; at
	// the 9th job of a shard on two): whatever is before CountedTo is
	// whole, nothing is more than there is.
	got, err := s.Forecast(ctx, q, 8)
	if err != nil {
		t.Fatalf("Forecast with a limit: %v", err)
	}
	if got.CountedTo.Before(base) || !got.CountedTo.Before(at(60)) {
		t.Fatalf("Forecast with limit 8 counted to %v, want a time in the window", got.CountedTo)
	}
	whole := []int64{6, 0, 8, 1, 2, 1}
	for i, n := range got.Counts {
		if end := q.Start(i + 1); !end.After(got.CountedTo) && n != whole[i] {
			t.Errorf("Forecast with a limit: bucket %d = %d before CountedTo %v, want %d", i, n, got.CountedTo, whole[i])
		}
		if n > whole[i] {
			t.Errorf("Forecast with a limit: bucket %d = %d, more than %d", i, n, whole[i])
		}
	}
}
