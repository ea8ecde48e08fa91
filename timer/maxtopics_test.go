package timer_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// capRefused fails t unless err is a *FieldError on "topic".
func capRefused(t *testing.T, what string, err error) {
	t.Helper()
	fe, ok := errors.AsType[*timer.FieldError](err)
	if !ok || fe.Field != "topic" {
		t.Errorf("%s: err = %v, want a *FieldError on topic", what, err)
	}
}

// MaxTopics bounds the topics that jobs create on first use and that
// PutTopic creates; topics that exist stay usable, and a deleted one
// makes room again.
func TestMaxTopics(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{MaxTopics: 3})

	for _, topic := range []string{"a", "b"} {
		if _, err := s.Schedule(ctx, batchReq(topic, "")); err != nil {
			t.Fatalf("schedule into new topic %s: %v", topic, err)
		}
	}
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "c"}); err != nil {
		t.Fatalf("put the third topic: %v", err)
	}
	_, err := s.Schedule(ctx, batchReq("d", ""))
	capRefused(t, "schedule into a fourth topic", err)
	_, _, err = s.PutTopic(ctx, timer.Topic{Name: "d"})
	capRefused(t, "put a fourth topic", err)
	if _, err := s.Schedule(ctx, batchReq("a", "")); err != nil {
		t.Errorf("schedule into an existing topic at the cap: %v", err)
	}
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "c", MaxAttempts: 3}); err != nil {
		t.Errorf("update an existing topic at the cap: %v", err)
	}
	if topics, _ := store.Topics(ctx); len(topics) != 3 {
		t.Fatalf("%d topics stored, want 3", len(topics))
	}

	if err := s.DeleteTopic(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Schedule(ctx, batchReq("d", "")); err != nil {
		t.Errorf("schedule into a new topic after a delete: %v", err)
	}
}

// A batch that would create more topics than there is room for is
// refused whole: every request of a topic past the cap is named, and
// nothing is written, not even the topics that would have fit.
func TestMaxTopicsBatch(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{MaxTopics: 3})
	if _, err := s.Schedule(ctx, batchReq("a", "")); err != nil {
		t.Fatal(err)
	}
	var reqs []timer.Request
	for i := range 8 {
		reqs = append(reqs, batchReq(fmt.Sprintf("t%d", i%4), "")) // t0..t3, twice each
	}
	reqs = append(reqs, batchReq("a", ""))
	_, err := s.ScheduleBatch(ctx, reqs)
	be, ok := errors.AsType[*timer.BatchError](err)
	if !ok {
		t.Fatalf("err = %v, want a *BatchError", err)
	}
	var refused []int
	for _, it := range be.Items {
		capRefused(t, fmt.Sprintf("item %d", it.Index), it.Err)
		refused = append(refused, it.Index)
	}
	// Room for two more: t0 and t1 fit, t2 and t3 (items 2, 3, 6, 7) do not.
	if want := []int{2, 3, 6, 7}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
	if topics, _ := store.Topics(ctx); len(topics) != 1 || store.Len() != 1 {
		t.Errorf("%d topics and %d jobs stored, want 1 and 1", len(topics), store.Len())
	}

	// Within the room, the batch commits.
	if _, err := s.ScheduleBatch(ctx, reqs[:2]); err != nil {
		t.Fatalf("a batch creating two topics with room for two: %v", err)
	}
	if topics, _ := store.Topics(ctx); len(topics) != 3 {
		t.Errorf("%d topics stored, want 3", len(topics))
	}
}

// Another process's topic, unknown to this scheduler's catalog, is
// usable at the cap: it exists, so nothing is created.
func TestMaxTopicsOtherProcess(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{MaxTopics: 2})
	if _, err := s.Schedule(ctx, batchReq("a", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.EnsureTopic(ctx, timer.Topic{Name: "elsewhere", Slots: 16}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScheduleBatch(ctx, []timer.Request{batchReq("elsewhere", "")}); err != nil {
		t.Errorf("batch into another process's topic at the cap: %v", err)
	}
	_, err := s.Schedule(ctx, batchReq("b", ""))
	capRefused(t, "schedule into a third topic", err)
}

// A batch that brings many new topics creates them in one call of the
// store, within the cap, and every topic is known to the scheduler
// afterwards.
func TestBatchCreatesTopicsInOneCall(t *testing.T) {
	ctx := t.Context()
	for _, max := range []int{0, 300} {
		store := timertest.NewStore()
		s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{MaxTopics: max})
		var reqs []timer.Request
		for i := range 500 {
			reqs = append(reqs, batchReq(fmt.Sprintf("t%d", i%250), ""))
		}
		if _, err := s.ScheduleBatch(ctx, reqs); err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		if n := store.Calls("EnsureTopics"); n != 1 {
			t.Errorf("max %d: EnsureTopics called %d times, want 1", max, n)
		}
		if n := store.Calls("EnsureTopic"); n != 0 {
			t.Errorf("max %d: EnsureTopic called %d times, want 0", max, n)
		}
		if topics, _ := store.Topics(ctx); len(topics) != 250 {
			t.Errorf("max %d: %d topics stored, want 250", max, len(topics))
		}
		// A second batch over the same topics creates none.
		if _, err := s.ScheduleBatch(ctx, reqs[:10]); err != nil {
			t.Fatal(err)
		}
		if n := store.Calls("EnsureTopics"); n != 1 {
			t.Errorf("max %d: EnsureTopics called %d times after a batch of known topics, want 1", max, n)
		}
	}
}
