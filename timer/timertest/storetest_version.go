package timertest

import (
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// testTopicsVersion: a store with a topic version moves it at every write
// of a topic, and not at a read or at a write that changes nothing
// stored (EnsureTopic of an existing topic).
func testTopicsVersion(t *testing.T, s timer.Store) {
	vs, ok := s.(timer.TopicVersioner)
	if !ok {
		t.Skip("the store keeps no topic version")
	}
	ctx := t.Context()
	last, err := vs.TopicsVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, moves bool, write func() error) {
		t.Helper()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		v, err := vs.TopicsVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if moved := v != last; moved != moves {
			t.Errorf("%s: version %d → %d, want moved %v", what, last, v, moves)
		}
		last = v
	}
	step("EnsureTopic of a new topic", true, func() error {
		_, err := s.EnsureTopic(ctx, timer.Topic{Name: "v", Slots: 4})
		return err
	})
	// A second EnsureTopic in the same millisecond may move it (taskdb
	// cannot tell it from the one that created the topic); a later one
	// must not.
	step("EnsureTopic of it again", false, func() error {
		_, err := s.EnsureTopic(ctx, timer.Topic{Name: "v", Slots: 4, CreatedAt: time.Now().Add(time.Hour)})
		return err
	})
	step("EnsureTopics of new topics", true, func() error {
		_, err := s.EnsureTopics(ctx, []timer.Topic{{Name: "v"}, {Name: "v2"}, {Name: "v3"}})
		return err
	})
	step("EnsureTopics of them again", false, func() error {
		_, err := s.EnsureTopics(ctx, []timer.Topic{{Name: "v2", CreatedAt: time.Now().Add(time.Hour)}, {Name: "v3", CreatedAt: time.Now().Add(time.Hour)}})
		return err
	})
	step("reads", false, func() error {
		if _, err := s.Topic(ctx, "v"); err != nil {
			return err
		}
		_, err := s.Topics(ctx)
		return err
	})
	step("PutTopic of new limits", true, func() error {
		_, _, err := s.PutTopic(ctx, timer.Topic{Name: "v", MaxAttempts: 4, Limits: timer.Limits{RateLimit: 5}})
		return err
	})
	step("PutTopic of a new topic", true, func() error {
		_, _, err := s.PutTopic(ctx, timer.Topic{Name: "w"})
		return err
	})
	step("PauseTopic", true, func() error {
		_, err := s.PauseTopic(ctx, "v", true)
		return err
	})
	step("DeleteTopic", true, func() error { return s.DeleteTopic(ctx, "w") })
}
