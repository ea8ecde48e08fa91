package timer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

// timeoutErr is what a net/http client returns when its timeout passes.
type timeoutErr struct{}

func (timeoutErr) Error() string { return "Client.Timeout exceeded" }
func (timeoutErr) Timeout() bool { return true }

func TestSeriesBucketsAndClasses(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)} // a multiple of 60 s
	s := timer.NewSeries(10, func() time.Time { return clock.t })
	status := func(code int) error { return &timer.StatusError{Code: code, Err: fmt.Errorf("status %d", code)} }

	s.Fired("orders", 3*time.Millisecond, nil)
	s.Fired("orders", 700*time.Millisecond, status(503))
	s.Fired("orders", 0, status(404))
	s.Fired("orders", 0, fmt.Errorf("post: %w", timeoutErr{}))
	s.Fired("orders", 0, context.DeadlineExceeded)
	s.Fired("orders", 0, errors.New("connection refused"))
	s.Fired("orders", 0, &timer.NotSentError{Err: errors.New("breaker open")}) // no attempt
	s.Buried("orders")
	s.Throttled("orders")
	s.Throttled("billing")
	s.SampleInFlight(map[string]int64{"orders": 4, "billing": 1})
	s.SampleInFlight(map[string]int64{"orders": 2})
	clock.t = clock.t.Add(10 * time.Second)
	s.Fired("orders", 0, nil)

	got := s.Buckets("orders", timer.SeriesFine, clock.t.Add(-10*time.Second), clock.t.Add(10*time.Second))
	want0 := timer.SeriesBucket{Fires: 6, Failures: [4]int64{1, 1, 2, 1}, Dead: 1, Throttled: 1, InFlight: 4}
	want0.Lateness[0], want0.Lateness[2], want0.Lateness[9] = 4, 1, 1
	if len(got) != 2 || got[0] != want0 || got[1].Fires != 1 {
		t.Fatalf("fine buckets of orders:\n got %+v\nwant [%+v {Fires:1 ...}]", got, want0)
	}
	all := s.Buckets(timer.SeriesAll, timer.SeriesCoarse, clock.t, clock.t.Add(time.Minute))
	if len(all) != 1 || all[0].Fires != 7 || all[0].Throttled != 2 || all[0].InFlight != 5 {
		t.Fatalf("the minute of all topics: %+v", all)
	}
	if p99, _ := timer.LatenessQuantile(got[0].Lateness[:], .99); p99 != time.Second {
		t.Fatalf("p99 %v, want the bound of 700 ms's bucket, 1s", p99)
	}
}

// A bucket older than its ring reads as zero, and a ring's cell is reused
// by the bucket an hour (a day) later, not added to.
func TestSeriesRollover(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	clock := &fakeClock{t: t0}
	s := timer.NewSeries(10, func() time.Time { return clock.t })
	s.Fired("orders", 0, nil)
	clock.t = t0.Add(time.Hour) // the same fine cell
	s.Fired("orders", 0, nil)
	s.Fired("orders", 0, nil)

	if old := s.Buckets("orders", timer.SeriesFine, t0, t0.Add(10*time.Second)); old[0].Fires != 0 {
		t.Fatalf("a bucket an hour old reads %d fires, want 0 (not kept)", old[0].Fires)
	}
	if now := s.Buckets("orders", timer.SeriesFine, clock.t, clock.t.Add(10*time.Second)); now[0].Fires != 2 {
		t.Fatalf("the reused cell holds %d fires, want 2", now[0].Fires)
	}
	if m := s.Buckets("orders", timer.SeriesCoarse, t0, t0.Add(time.Minute)); m[0].Fires != 1 {
		t.Fatalf("the minute an hour ago holds %d fires, want 1 (kept a day)", m[0].Fires)
	}
	clock.t = t0.Add(24 * time.Hour)
	if m := s.Buckets("orders", timer.SeriesCoarse, t0, t0.Add(time.Minute)); m[0].Fires != 0 {
		t.Fatalf("the minute a day ago holds %d fires, want 0", m[0].Fires)
	}
}

// Topics past the bound share SeriesOther; SeriesAll counts them all.
func TestSeriesBound(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := timer.NewSeries(2, func() time.Time { return clock.t })
	for _, topic := range []string{"a", "b", "c", "d", "a"} {
		s.Fired(topic, 0, nil)
	}
	if got := len(s.Labels()); got != 4 { // _all, a, b, _other
		t.Fatalf("labels %v, want _all, a, b and _other", s.Labels())
	}
	read := func(label string) int64 {
		return s.Buckets(label, timer.SeriesFine, clock.t, clock.t.Add(timer.SeriesFine))[0].Fires
	}
	if read("a") != 2 || read("c") != 0 || read(timer.SeriesOther) != 2 || read(timer.SeriesAll) != 5 {
		t.Fatalf("a %d, c %d, _other %d, _all %d; want 2, 0, 2, 5", read("a"), read("c"), read(timer.SeriesOther), read(timer.SeriesAll))
	}
}

// Recording allocates nothing once a topic's series exists.
func TestSeriesRecordAllocs(t *testing.T) {
	s := timer.NewSeries(10, nil)
	err := &timer.StatusError{Code: 500, Err: errors.New("500")}
	s.Fired("orders", 0, err)
	if n := testing.AllocsPerRun(1000, func() {
		s.Fired("orders", time.Millisecond, nil)
		s.Fired("orders", time.Millisecond, err)
		s.Throttled("orders")
		s.Buried("orders")
	}); n != 0 {
		t.Fatalf("%v allocations per event", n)
	}
}

// Members' buckets add up; a wider step sums the counts and keeps the
// largest in-flight sample.
func TestSeriesMergeAndFold(t *testing.T) {
	a := timer.SeriesBucket{Fires: 3, Failures: [4]int64{1}, InFlight: 2}
	a.Lateness[1] = 3
	b := timer.SeriesBucket{Fires: 1, Dead: 1, InFlight: 5}
	b.Lateness[4] = 1
	sum := a
	sum.Add(b)
	if sum.Fires != 4 || sum.InFlight != 7 || sum.Lateness[1] != 3 || sum.Lateness[4] != 1 || sum.Dead != 1 {
		t.Fatalf("members' sum %+v", sum)
	}
	q := timer.SeriesQuery{From: time.Unix(1_800_000_000, 0), To: time.Unix(1_800_000_060, 0), Step: 30 * time.Second}
	folded := timer.FoldSeries(q, timer.SeriesFine, []timer.SeriesBucket{a, b, {}, b, {}, {}})
	if len(folded) != 2 || folded[0].Fires != 4 || folded[0].InFlight != 5 || folded[1].Fires != 1 {
		t.Fatalf("folded by 30 s: %+v", folded)
	}
}

func TestSeriesQueryCheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	for _, tc := range []struct {
		name       string
		from, to   time.Duration // before now
		step       time.Duration
		field      string
		resolution time.Duration
	}{
		{"last hour by 10 s", time.Hour, 0, 10 * time.Second, "", timer.SeriesFine},
		{"last day by the minute", 24 * time.Hour, 0, time.Minute, "", timer.SeriesCoarse},
		{"last day by 4 min", 24 * time.Hour, 0, 4 * time.Minute, "", timer.SeriesCoarse},
		{"older than a day", 25 * time.Hour, 0, time.Hour, "from", 0},
		{"empty range", time.Hour, time.Hour, time.Minute, "to", 0},
		{"far future", 0, -2 * time.Hour, time.Minute, "to", 0},
		{"step not 10 s", time.Hour, 0, 15 * time.Second, "step", 0},
		{"10 s beyond the hour", 2 * time.Hour, 0, 10 * time.Second, "step", 0},
		{"too many buckets", 24 * time.Hour, 0, 10 * time.Second, "step", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := timer.SeriesQuery{Label: "orders", From: now.Add(-tc.from), To: now.Add(-tc.to), Step: tc.step}
			q.Align()
			err := q.Check(now)
			var fe *timer.FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("Check: %v, want a field error naming %s", err, tc.field)
			case tc.field == "" && q.Resolution(now) != tc.resolution:
				t.Fatalf("resolution %v, want %v", q.Resolution(now), tc.resolution)
			}
		})
	}
	if d := timer.DefaultSeriesStep(now.Add(-time.Hour), now, now); d != timer.SeriesFine {
		t.Fatalf("default step of the last hour %v", d)
	}
	if d := timer.DefaultSeriesStep(now.Add(-24*time.Hour), now, now); d != 4*time.Minute {
		t.Fatalf("default step of the last day %v", d)
	}
	q := timer.SeriesQuery{From: now.Add(-25 * time.Second), To: now.Add(5 * time.Second), Step: 10 * time.Second}
	q.Align()
	if !q.From.Equal(now.Add(-30*time.Second)) || !q.To.Equal(now.Add(10*time.Second)) || q.Buckets() != 4 {
		t.Fatalf("aligned %v..%v (%d buckets)", q.From, q.To, q.Buckets())
	}
}

// Concurrent events, samples and reads lose no count (run with -race).
func TestSeriesConcurrent(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	s := timer.NewSeries(3, func() time.Time { return clock.t })
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			topic := fmt.Sprintf("t%d", w)
			for range each {
				s.Fired(topic, time.Millisecond, nil)
				s.SampleInFlight(map[string]int64{topic: 1})
				s.Buckets(timer.SeriesAll, timer.SeriesFine, clock.t, clock.t.Add(timer.SeriesFine))
			}
		})
	}
	wg.Wait()
	if got := s.Buckets(timer.SeriesAll, timer.SeriesCoarse, clock.t, clock.t.Add(time.Minute))[0].Fires; got != workers*each {
		t.Fatalf("%d fires counted, want %d", got, workers*each)
	}
	var topics int64
	for _, label := range s.Labels()[1:] {
		topics += s.Buckets(label, timer.SeriesFine, clock.t, clock.t.Add(timer.SeriesFine))[0].Fires
	}
	if topics != workers*each || len(s.Labels()) != 5 { // _all, 3 topics, _other
		t.Fatalf("the topics' series hold %d fires in %v", topics, s.Labels())
	}
}
