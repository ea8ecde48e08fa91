package timer_test

import (
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// A member whose catalog still holds a topic that another member has
// just deleted schedules into it: the job names a topic that is gone, and
// no other member's worker claims it (here b stops; in a cluster another
// member owns the slot). The deleting member's backstop creates the topic
// again and the job fires on time.
func TestJobOfADeletedTopicFires(t *testing.T) {
	s, log, _, b, stopB := deletedUnderB(t)
	if _, ok := b.Catalog.Get("gone"); !ok {
		t.Fatal("b forgot the topic at once; the test needs its catalog a refresh behind")
	}
	due := time.Now().Add(5 * time.Second).Truncate(time.Millisecond)
	ids := schedule(t, b, dueAll("gone", 3, due, timer.PriorityNormal))
	if _, err := s.store.Topic(t.Context(), "gone"); err == nil {
		t.Fatal("b's schedule created the topic again; the test needs it to schedule into the deleted one")
	}
	stopB()
	log.waitFired(t, "gone", 1+len(ids), 20*time.Second)
	for _, f := range log.of("gone")[1:] {
		if f.at.Before(due) {
			t.Errorf("job %v fired %v early", f.id, due.Sub(f.at))
		}
	}
	if _, err := s.store.Topic(t.Context(), "gone"); err != nil {
		t.Errorf("topic after the backstop adopted its jobs: %v", err)
	}
}

// The same job when no member heard of it: the member that scheduled it
// stops, and the one that deleted the topic restarts, so no wake-up
// reaches a worker. The restarted member's first full scan gives the job
// its topic back, and it fires.
func TestJobOfADeletedTopicFiresAfterARestart(t *testing.T) {
	s, log, stopA, b, stopB := deletedUnderB(t)
	stopA()
	due := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	ids := schedule(t, b, dueAll("gone", 3, due, timer.PriorityNormal))
	stopB()
	if _, err := s.store.Topic(t.Context(), "gone"); err == nil {
		t.Fatal("b's schedule created the topic again; the test needs it to schedule into the deleted one")
	}
	s.start(t, log, timer.Config{})
	log.waitFired(t, "gone", 1+len(ids), 20*time.Second)
	for _, f := range log.of("gone")[1:] {
		if f.at.Before(due) {
			t.Errorf("job %v fired %v early", f.id, due.Sub(f.at))
		}
	}
}

// deletedUnderB starts members a and b, lets b learn of topic "gone" by
// scheduling into it, and has a delete it: b's catalog still holds it.
func deletedUnderB(t *testing.T) (s *stack, log *fireLog, stopA func(), b *timer.Engine, stopB func()) {
	t.Helper()
	s = newStack(t, sharedRedis)
	log = newFireLog()
	a, stopA := s.start(t, log, timer.Config{})
	b, stopB = s.start(t, log, timer.Config{})
	putTopic(t, a, timer.Topic{Name: "gone"})
	first := schedule(t, b, dueAll("gone", 1, time.Now(), timer.PriorityNormal))
	log.waitFired(t, "gone", 1, 10*time.Second)
	waitStatus(t, s.store, first, timer.StatusDone) // called, and its end recorded: the topic has no live job
	if err := a.DeleteTopic(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	return s, log, stopA, b, stopB
}
