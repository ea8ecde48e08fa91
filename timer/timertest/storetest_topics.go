// The task store contract, continued: pausing and deleting topics.

package timertest

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/toc-project/toc/timer"
)

func testPauseTopic(t *testing.T, s timer.Store) {
	ctx := t.Context()
	if _, err := s.PauseTopic(ctx, "nope", true); !errors.Is(err, timer.ErrNotFound) {
		t.Fatalf("PauseTopic(unknown) = %v, want ErrNotFound", err)
	}
	got, err := s.EnsureTopic(ctx, timer.Topic{Name: "p", Slots: 8})
	if err != nil || got.Paused {
		t.Fatalf("EnsureTopic = %+v, %v; want a topic not paused", got, err)
	}
	if got, err = s.PauseTopic(ctx, "p", true); err != nil || !got.Paused || got.Slots != 8 {
		t.Fatalf("PauseTopic(true) = %+v, %v", got, err)
	}
	if got, err := s.Topic(ctx, "p"); err != nil || !got.Paused {
		t.Fatalf("Topic after pause = %+v, %v", got, err)
	}
	if all, err := s.Topics(ctx); err != nil || len(all) != 1 || !all[0].Paused {
		t.Fatalf("Topics after pause = %+v, %v", all, err)
	}
	// PutTopic and EnsureTopic change the settings, never the pause.
	limits := timer.Limits{RateLimit: 5, Weight: 2}
	if got, _, err := s.PutTopic(ctx, timer.Topic{Name: "p", MaxAttempts: 3, Limits: limits}); err != nil || !got.Paused || got.Limits != limits {
		t.Fatalf("PutTopic of a paused topic = %+v, %v; want it still paused", got, err)
	}
	if got, err := s.EnsureTopic(ctx, timer.Topic{Name: "p"}); err != nil || !got.Paused {
		t.Fatalf("EnsureTopic of a paused topic = %+v, %v", got, err)
	}
	// Pausing changes nothing else.
	if got, err = s.PauseTopic(ctx, "p", false); err != nil || got.Paused || got.Limits != limits || got.MaxAttempts != 3 {
		t.Fatalf("PauseTopic(false) = %+v, %v", got, err)
	}
	if got, err := s.Topic(ctx, "p"); err != nil || got.Paused {
		t.Fatalf("Topic after resume = %+v, %v", got, err)
	}
	if got, _, err := s.PutTopic(ctx, timer.Topic{Name: "fresh"}); err != nil || got.Paused {
		t.Fatalf("PutTopic(new) = %+v, %v; want it not paused", got, err)
	}
	// A destination is kept as put, a webhook's as the zero one; a pause
	// leaves it.
	bus := timer.Destination{Way: timer.WayAMQP, Broker: "b", Exchange: "x", RoutingKey: "{topic}.{job_id}", Transient: true}
	if got, _, err := s.PutTopic(ctx, timer.Topic{Name: "bus", Destination: bus}); err != nil || got.Destination != bus {
		t.Fatalf("PutTopic(amqp) = %+v, %v; want destination %+v", got.Destination, err, bus)
	}
	if got, err := s.PauseTopic(ctx, "bus", true); err != nil || got.Destination != bus {
		t.Fatalf("PauseTopic of an amqp topic = %+v, %v", got.Destination, err)
	}
	if got, _, err := s.PutTopic(ctx, timer.Topic{Name: "bus", Destination: timer.Destination{Way: timer.WayWebhook}}); err != nil || got.Destination != (timer.Destination{}) {
		t.Fatalf("PutTopic back to webhook = %+v, %v; want the zero destination", got.Destination, err)
	}
}

func testDeleteTopic(t *testing.T, s timer.Store) {
	ctx := t.Context()
	if err := s.DeleteTopic(ctx, "nope"); !errors.Is(err, timer.ErrNotFound) {
		t.Fatalf("DeleteTopic(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "d", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	// Jobs of another topic do not hold it.
	mustInsert(t, s, newJob(100, "other", 0))
	// A pending job, a firing one (its webhook is being called) and a dead
	// one hold it; a done one does not.
	mustInsert(t, s, newJob(1, "d", 0), newJob(2, "d", 0), newJob(3, "d", 0), newJob(4, "d", 0))
	if n, err := s.Fire(ctx, []timer.JobID{2}, base, base); n != 1 || err != nil {
		t.Fatalf("Fire(2) = %d, %v", n, err)
	}
	if ok, err := s.Fail(ctx, 3, timer.Failure{Attempts: 1, Error: "boom", Dead: true}, base); !ok || err != nil {
		t.Fatalf("Fail(3, dead) = %t, %v", ok, err)
	}
	if n, err := s.Complete(ctx, []timer.Completion{{ID: 4, Attempts: 1}}, base); n != 1 || err != nil {
		t.Fatalf("Complete(4) = %d, %v", n, err)
	}
	err := s.DeleteTopic(ctx, "d")
	inUse, ok := errors.AsType[*timer.TopicInUseError](err)
	if !ok || !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("DeleteTopic with jobs = %v, want a TopicInUseError wrapping ErrConflict", err)
	}
	if want := map[timer.Status]int64{timer.StatusPending: 1, timer.StatusFiring: 1, timer.StatusDead: 1}; !maps.Equal(inUse.Jobs, want) {
		t.Errorf("in use by %v, want %v", inUse.Jobs, want)
	}
	if msg := err.Error(); !strings.Contains(msg, "1 pending, 1 firing, 1 dead") {
		t.Errorf("message %q does not count the jobs", msg)
	}
	if _, err := s.Topic(ctx, "d"); err != nil {
		t.Fatalf("a refused delete removed the topic: %v", err)
	}
	// Done, cancelled and purged jobs do not hold it; their rows stay.
	if ok, err := s.Transition(ctx, 1, timer.StatusPending, timer.StatusCancelled, base); !ok || err != nil {
		t.Fatalf("cancel 1 = %t, %v", ok, err)
	}
	if n, err := s.Complete(ctx, []timer.Completion{{ID: 2, Attempts: 1}}, base); n != 1 || err != nil {
		t.Fatalf("Complete(2) = %d, %v", n, err)
	}
	err = s.DeleteTopic(ctx, "d")
	if inUse, ok := errors.AsType[*timer.TopicInUseError](err); !ok || inUse.Jobs[timer.StatusDead] != 1 || len(inUse.Jobs) != 1 {
		t.Fatalf("DeleteTopic with a dead job = %v, want 1 dead", err)
	}
	if ok, err := s.Transition(ctx, 3, timer.StatusDead, timer.StatusPurged, base); !ok || err != nil {
		t.Fatalf("purge 3 = %t, %v", ok, err)
	}
	if err := s.DeleteTopic(ctx, "d"); err != nil {
		t.Fatalf("DeleteTopic of a finished topic: %v", err)
	}
	if _, err := s.Topic(ctx, "d"); !errors.Is(err, timer.ErrNotFound) {
		t.Fatalf("Topic after delete = %v, want ErrNotFound", err)
	}
	if all, err := s.Topics(ctx); err != nil || len(all) != 1 || all[0].Name != "other" {
		t.Fatalf("Topics after delete = %+v, %v", all, err)
	}
	if j := mustGet(t, s, 2); j.Status != timer.StatusDone || j.Topic != "d" {
		t.Errorf("a finished job's row after its topic was deleted: %+v", j)
	}
	if err := s.DeleteTopic(ctx, "d"); !errors.Is(err, timer.ErrNotFound) {
		t.Fatalf("DeleteTopic twice = %v, want ErrNotFound", err)
	}
	// The name is free again, with new settings.
	if got, err := s.EnsureTopic(ctx, timer.Topic{Name: "d", Slots: 64}); err != nil || got.Slots != 64 || got.Paused {
		t.Fatalf("EnsureTopic after delete = %+v, %v", got, err)
	}
}

// testDeleteTopicRace deletes a topic while jobs are inserted into it.
// Every job whose insert returned before the delete began must have held
// it: the delete either fails naming pending jobs, or none was committed.
func testDeleteTopicRace(t *testing.T, s timer.Store) {
	ctx := t.Context()
	for round := range 20 {
		if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "r", Slots: 1}); err != nil {
			t.Fatal(err)
		}
		id := timer.JobID(1000 + round)
		var (
			wg        sync.WaitGroup
			insertErr error
		)
		wg.Go(func() { insertErr = s.Insert(ctx, []*timer.Job{newJob(id, "r", 0)}) })
		delErr := s.DeleteTopic(ctx, "r")
		wg.Wait()
		if insertErr != nil {
			t.Fatalf("round %d: insert: %v", round, insertErr)
		}
		if delErr != nil && !errors.Is(delErr, timer.ErrConflict) {
			t.Fatalf("round %d: delete: %v", round, delErr)
		}
		// Now the job is committed: the topic, if it is still there, must
		// refuse to go.
		if _, err := s.Topic(ctx, "r"); err == nil {
			if err := s.DeleteTopic(ctx, "r"); !errors.Is(err, timer.ErrConflict) {
				t.Fatalf("round %d: delete after the insert returned = %v, want ErrConflict", round, err)
			}
		}
		if ok, err := s.Transition(ctx, id, timer.StatusPending, timer.StatusCancelled, base); !ok || err != nil {
			t.Fatalf("round %d: cancel = %t, %v", round, ok, err)
		}
	}
}
