package timer_test

import (
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// windowed returns n requests of topic due at at with window w.
func windowed(topic string, n int, at time.Time, w time.Duration) []timer.Request {
	reqs := dueAll(topic, n, at, timer.PriorityNormal)
	for i := range reqs {
		reqs[i].Window = w
	}
	return reqs
}

// A spike of jobs due at one instant, more than the topic's rate limit
// fires at once but fewer than it fires over their window, all fires
// inside the window and none before its due time (real MariaDB and
// Redis).
func TestWindowSpikeStaysInside(t *testing.T) {
	const (
		jobs   = 3000
		window = 5 * time.Second
	)
	s := newStack(t, sharedRedis)
	log := newFireLog()
	e, _ := s.start(t, log, timer.Config{})
	putTopic(t, e, timer.Topic{Name: "spike", Limits: timer.Limits{RateLimit: 1000}})
	at := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	schedule(t, e, windowed("spike", jobs, at, window))
	log.waitFired(t, "spike", jobs, 2*time.Minute)

	fs := log.of("spike")
	early, outside, seen := 0, 0, map[timer.JobID]bool{}
	var last time.Duration
	for _, f := range fs {
		d := f.at.Sub(at)
		if d < 0 {
			early++
		}
		if d > window {
			outside++
		}
		last = max(last, d)
		seen[f.id] = true
	}
	t.Logf("%d fired, %d distinct, the last %v after the due time (window %v)", len(fs), len(seen), last, window)
	if early != 0 || outside != 0 || len(seen) != jobs || len(fs) != jobs {
		t.Errorf("%d early, %d outside the window, %d distinct of %d fires; want 0, 0, %d of %d", early, outside, len(seen), len(fs), jobs, jobs)
	}
}

// Under a rate limit, jobs with a tight window go before a backlog of
// jobs with a wide one that came due earlier: taken by the ends of their
// windows, not by due time.
func TestWindowTightBeforeWide(t *testing.T) {
	s := newStack(t, sharedRedis)
	log := newFireLog()
	e, _ := s.start(t, log, timer.Config{})
	putTopic(t, e, timer.Topic{Name: "mixed", Limits: timer.Limits{RateLimit: 1000}})
	at := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	wide := schedule(t, e, windowed("mixed", 3000, at, time.Minute))
	tight := schedule(t, e, windowed("mixed", 100, at.Add(500*time.Millisecond), 0))
	log.waitFired(t, "mixed", 3100, 2*time.Minute)

	isTight := map[timer.JobID]bool{}
	for _, id := range tight {
		isTight[id] = true
	}
	fs := log.of("mixed")
	slices.SortFunc(fs, func(a, b fired) int { return a.at.Compare(b.at) })
	lastTight := -1
	for i, f := range fs {
		if f.at.Before(f.due) {
			t.Errorf("job %d fired %v before its due time", f.id, f.due.Sub(f.at))
		}
		if isTight[f.id] {
			lastTight = i
		}
	}
	wideAfter := len(fs) - 1 - lastTight
	t.Logf("after the last tight job, %d of %d wide jobs fired", wideAfter, len(wide))
	// In due-time order every tight job would wait for the wide backlog
	// (3 s at 1,000/s) and come last; by window end they go within a
	// claim or two of each slot after they come due, half a second in.
	if wideAfter < len(wide)/2 {
		t.Errorf("%d wide jobs fired after the last tight one, want most of the %d, which came due earlier but end later", wideAfter, len(wide))
	}
}

// Without pressure a job with a window fires at its due time, not later
// in its window.
func TestWindowNoPressureFiresAtDue(t *testing.T) {
	const window = 10 * time.Second
	s := newStack(t, sharedRedis)
	log := newFireLog()
	e, _ := s.start(t, log, timer.Config{})
	at := time.Now().Add(time.Second).Truncate(time.Millisecond)
	schedule(t, e, windowed("calm", 50, at, window))
	log.waitFired(t, "calm", 50, time.Minute)
	for _, f := range log.of("calm") {
		if d := f.at.Sub(f.due); d < 0 || d > window/2 {
			t.Errorf("job %d fired %v after its due time, want at it (within %v, never before)", f.id, d, window/2)
		}
	}
}
