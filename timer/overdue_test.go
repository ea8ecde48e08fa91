package timer_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// expiredTopics counts the Expired events of each topic.
type expiredTopics struct {
	timer.NopObserver
	frozen atomic.Int64
}

func (e *expiredTopics) Expired(topic string) {
	if topic == "frozen" {
		e.frozen.Add(1)
	}
}

// A job with a deadline in a paused topic ends expired once its deadline
// passes, while the topic is still paused (the backstop's pass ends it;
// no worker claims it), counted, out of Redis, and its group (of it
// alone) completes; resumed, the topic fires its other jobs and never
// this one. MariaDB and redis-server.
func TestEnginePausedTopicJobExpires(t *testing.T) {
	s := newStack(t, sharedRedis)
	rec := newRecorder()
	obs := &expiredTopics{}
	// The group sweep waits an hour: the group completes because the
	// backstop tells the group completer.
	e, _ := s.start(t, rec, timer.Config{Observer: obs, Backstop: timer.BackstopConfig{Interval: 100 * time.Millisecond},
		Groups: timer.GroupCompleterConfig{Sweep: time.Hour}})
	ctx := t.Context()
	if _, _, err := e.PutTopic(ctx, timer.Topic{Name: "frozen", Slots: timer.DefaultSlots}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PauseTopic(ctx, "frozen", true); err != nil {
		t.Fatal(err)
	}
	_, res, err := e.ScheduleGroup(ctx, timer.Group{ID: "g-frozen"}, true,
		[]timer.Request{{Topic: "frozen", FireAt: time.Now(), Expiry: timer.ExpireAfter(200 * time.Millisecond)}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("ScheduleGroup = %+v, %v", res, err)
	}
	late := res[0].Job.ID
	waiting := schedule(t, e, []timer.Request{{Topic: "frozen", FireAt: time.Now()}})[0] // no deadline: waits for the resume
	if _, stored, _, _ := s.leaseCounts(t, "frozen"); stored != 2 {
		t.Fatalf("Redis holds %d timers of the paused topic, want 2", stored)
	}

	var j *timer.Job
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if j, err = s.store.Get(ctx, late); err != nil {
			t.Fatal(err)
		}
		if j.Status != timer.StatusPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the paused topic's job is still %s 10 s after its deadline %v", j.Status, j.ExpireAt)
		}
	}
	if j.Status != timer.StatusExpired || j.Attempts != 0 || !strings.Contains(j.LastError, "deadline passed (no attempt could start by it)") {
		t.Fatalf("job past its deadline: %s, %d attempts, %q; want expired, 0 attempts, the reason", j.Status, j.Attempts, j.LastError)
	}
	if topic, err := e.Topic(ctx, "frozen"); err != nil || !topic.Paused {
		t.Fatalf("topic: %+v, %v; want it still paused", topic, err)
	}
	// The backstop counts the job and takes its timer out of Redis once
	// its row is expired, a moment after the row shows it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := obs.frozen.Load()
		_, stored, _, _ := s.leaseCounts(t, "frozen")
		if n == 1 && stored == 1 {
			break
		}
		if n > 1 || time.Now().After(deadline) {
			t.Fatalf("Expired counted %d times, want 1; Redis holds %d timers of the paused topic, want 1: the expired job's is removed", n, stored)
		}
	}
	if w, err := s.store.Get(ctx, waiting); err != nil || w.Status != timer.StatusPending {
		t.Fatalf("the job without a deadline: %v, %v; want pending", w, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g, err := e.Group(ctx, "g-frozen")
		if err != nil {
			t.Fatal(err)
		}
		if !g.CompletedAt.IsZero() {
			if g.Counts[timer.StatusExpired] != 1 {
				t.Errorf("group completed with counts %v, want 1 expired", g.Counts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group of the expired job is not complete: %+v", g.Group)
		}
	}

	if _, err := e.PauseTopic(ctx, "frozen", false); err != nil {
		t.Fatal(err)
	}
	rec.expect([]timer.JobID{waiting})
	rec.wait(t, 10*time.Second)
	if ds := rec.deliveries(late); len(ds) != 0 {
		t.Errorf("the expired job fired %d times after the resume", len(ds))
	}
	if j, err := s.store.Get(ctx, late); err != nil || j.Status != timer.StatusExpired {
		t.Errorf("after the resume: %v, %v; want expired", j, err)
	}
}
