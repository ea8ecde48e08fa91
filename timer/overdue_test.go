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
// no worker claims it), counted and out of Redis; resumed, the topic
// fires its other jobs and never this one. MariaDB and redis-server.
func TestEnginePausedTopicJobExpires(t *testing.T) {
	s := newStack(t, sharedRedis)
	rec := newRecorder()
	obs := &expiredTopics{}
	e, _ := s.start(t, rec, timer.Config{Observer: obs, Backstop: timer.BackstopConfig{Interval: 100 * time.Millisecond}})
	ctx := t.Context()
	if _, _, err := e.PutTopic(ctx, timer.Topic{Name: "frozen", Slots: timer.DefaultSlots}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PauseTopic(ctx, "frozen", true); err != nil {
		t.Fatal(err)
	}
	ids := schedule(t, e, []timer.Request{
		{Topic: "frozen", FireAt: time.Now(), Expiry: timer.ExpireAfter(200 * time.Millisecond)},
		{Topic: "frozen", FireAt: time.Now()}, // no deadline: waits for the resume
	})
	late, waiting := ids[0], ids[1]
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
	if n := obs.frozen.Load(); n != 1 {
		t.Errorf("Expired counted %d times, want 1", n)
	}
	if _, stored, _, _ := s.leaseCounts(t, "frozen"); stored != 1 {
		t.Errorf("Redis holds %d timers of the paused topic, want 1: the expired job's is removed", stored)
	}
	if w, err := s.store.Get(ctx, waiting); err != nil || w.Status != timer.StatusPending {
		t.Fatalf("the job without a deadline: %v, %v; want pending", w, err)
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
