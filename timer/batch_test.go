package timer_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// raceStore is a task store where, just before the first Insert, another
// request commits a job with the key of one of the batch's jobs.
type raceStore struct {
	*timertest.Store
	rival *timer.Job
	raced bool
}

func (s *raceStore) Insert(ctx context.Context, jobs []*timer.Job) error {
	if !s.raced && s.rival != nil {
		s.raced = true
		if err := s.Store.Insert(ctx, []*timer.Job{s.rival}); err != nil {
			return err
		}
	}
	return s.Store.Insert(ctx, jobs)
}

var batchNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func newBatchScheduler(t *testing.T, store timer.Store, cfg timer.SchedulerConfig) (*timer.Scheduler, *timertest.Index) {
	t.Helper()
	index := timertest.NewIndex()
	cfg.Now = func() time.Time { return batchNow }
	s, err := timer.NewScheduler(store, index, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, index
}

func batchReq(topic, key string) timer.Request {
	return timer.Request{Topic: topic, Key: key, Delay: time.Minute, CallbackURL: "http://127.0.0.1:9/h", Payload: []byte(`{"a":1}`)}
}

// A batch with any refused request writes nothing, not even a topic of
// first use, and names every refused request by index.
func TestScheduleBatchAllOrNothing(t *testing.T) {
	ctx := t.Context()
	bad := func(r timer.Request, change func(*timer.Request)) timer.Request { change(&r); return r }
	for _, tt := range []struct {
		name    string
		reqs    []timer.Request
		noAuto  bool
		prior   *timer.Request // committed before the batch
		indexes []int
		field   string
		is      error
	}{
		{"bad topic", []timer.Request{batchReq("fresh", ""), bad(batchReq("fresh", ""), func(r *timer.Request) { r.Topic = "Bad!" })}, false, nil, []int{1}, "topic", timer.ErrInvalid},
		{"NUL in a key", []timer.Request{bad(batchReq("fresh", "a\x00b"), func(*timer.Request) {}), batchReq("fresh", "")}, false, nil, []int{0}, "key", timer.ErrInvalid},
		{"fire_at beyond 4199", []timer.Request{batchReq("fresh", ""), bad(batchReq("fresh", ""), func(r *timer.Request) { r.FireAt = time.Date(4199, 6, 1, 0, 0, 0, 0, time.UTC) })}, false, nil, []int{1}, "fire_at", timer.ErrInvalid},
		{"two bad", []timer.Request{bad(batchReq("fresh", ""), func(r *timer.Request) { r.MaxAttempts = 1000 }), batchReq("fresh", ""), bad(batchReq("fresh", ""), func(r *timer.Request) { r.Delay = -1 })}, false, nil, []int{0, 2}, "max_attempts", timer.ErrInvalid},
		{"unknown topic", []timer.Request{batchReq("ghost", "")}, true, nil, []int{0}, "topic", timer.ErrInvalid},
		{"key reused with other content", []timer.Request{batchReq("fresh", ""), bad(batchReq("used", "k"), func(r *timer.Request) { r.Payload = []byte(`{"a":2}`) })}, false, new(batchReq("used", "k")), []int{1}, "", timer.ErrConflict},
		{"key repeated in the batch with other content", []timer.Request{batchReq("fresh", "k"), bad(batchReq("fresh", "k"), func(r *timer.Request) { r.BizID = 7 })}, false, nil, []int{1}, "", timer.ErrConflict},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := timertest.NewStore()
			s, index := newBatchScheduler(t, store, timer.SchedulerConfig{NoAutoCreate: tt.noAuto})
			rows := 0
			if tt.prior != nil {
				if _, err := s.Schedule(ctx, *tt.prior); err != nil {
					t.Fatal(err)
				}
				rows = 1
			}
			restores := index.Calls("Restore")
			_, err := s.ScheduleBatch(ctx, tt.reqs)
			be, ok := errors.AsType[*timer.BatchError](err)
			if !ok {
				t.Fatalf("err = %v, want a *BatchError", err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.is)
			}
			var got []int
			for _, it := range be.Items {
				got = append(got, it.Index)
			}
			if !slices.Equal(got, tt.indexes) {
				t.Errorf("refused %v, want %v", got, tt.indexes)
			}
			if fe, ok := errors.AsType[*timer.FieldError](be.Items[0].Err); tt.field != "" && (!ok || fe.Field != tt.field) {
				t.Errorf("first item's error %v, want field %s", be.Items[0].Err, tt.field)
			}
			if n := store.Len(); n != rows {
				t.Errorf("%d rows, want %d", n, rows)
			}
			if n := index.Calls("Restore") - restores; n != 0 {
				t.Errorf("%d index writes", n)
			}
			if _, err := store.Topic(ctx, "fresh"); !errors.Is(err, timer.ErrNotFound) {
				t.Errorf("the topic of first use was created: %v", err)
			}
		})
	}
}

// A batch that passes commits every job, and a key already used for the
// same content, before or within the batch, answers the existing job.
func TestScheduleBatchCommitsAll(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	prior, err := s.Schedule(ctx, batchReq("t", "old"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ScheduleBatch(ctx, []timer.Request{batchReq("t", ""), batchReq("t", "old"), batchReq("t", "new"), batchReq("t", "new")})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Created || res[1].Created || res[1].Job.ID != prior.Job.ID || !res[2].Created || res[3].Created || res[3].Job.ID != res[2].Job.ID {
		t.Errorf("results %+v", res)
	}
	if n := store.Len(); n != 3 {
		t.Errorf("%d rows, want 3", n)
	}
}

// A key taken by a concurrent request while the batch commits: the same
// content answers that job and the rest commits; other content fails the
// whole batch, naming the item, and nothing of the batch is written.
func TestScheduleBatchKeyTakenConcurrently(t *testing.T) {
	ctx := t.Context()
	rival := func(payload string) *timer.Job {
		return &timer.Job{ID: 42, Topic: "t", Key: "k", Status: timer.StatusPending, DueAt: batchNow.Add(time.Minute),
			MaxAttempts: timer.DefaultMaxAttempts, CallbackURL: "http://127.0.0.1:9/h", Payload: []byte(payload), CreatedAt: batchNow, UpdatedAt: batchNow}
	}
	reqs := []timer.Request{batchReq("t", ""), batchReq("t", "k"), batchReq("t", "k2")}

	same := &raceStore{Store: timertest.NewStore(), rival: rival(`{"a":1}`)}
	s, _ := newBatchScheduler(t, same, timer.SchedulerConfig{})
	res, err := s.ScheduleBatch(ctx, reqs)
	if err != nil {
		t.Fatalf("same content: %v", err)
	}
	if res[1].Created || res[1].Job.ID != 42 || !res[0].Created || !res[2].Created {
		t.Errorf("same content: %+v", res)
	}
	if n := same.Len(); n != 3 {
		t.Errorf("same content: %d rows, want 3", n)
	}

	other := &raceStore{Store: timertest.NewStore(), rival: rival(`{"a":2}`)}
	s, index := newBatchScheduler(t, other, timer.SchedulerConfig{})
	_, err = s.ScheduleBatch(ctx, reqs)
	be, ok := errors.AsType[*timer.BatchError](err)
	if !ok || len(be.Items) != 1 || be.Items[0].Index != 1 || !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("other content: %v, want a BatchError naming item 1", err)
	}
	if n := other.Len(); n != 1 {
		t.Errorf("other content: %d rows, want only the rival's", n)
	}
	if n := index.Calls("Restore"); n != 0 {
		t.Errorf("other content: %d index writes", n)
	}
}

// Single schedules committed together keep their own outcomes: one
// refused request does not fail the others of its group.
func TestScheduleGroupKeepsPerRequestOutcomes(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	if _, err := s.Schedule(ctx, batchReq("t", "k")); err != nil {
		t.Fatal(err)
	}
	r := batchReq("t", "k")
	r.BizID = 9
	if _, err := s.Schedule(ctx, r); !timer.IsKeyMismatch(err) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := s.Schedule(ctx, batchReq("t", "")); err != nil {
		t.Fatal(err)
	}
	if n := store.Len(); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestRequestDueBounds(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		want bool
	}{
		{time.Time{}.Add(time.Nanosecond), false},
		{time.Unix(0, 0), false},
		{time.UnixMilli(1), true},
		{time.UnixMilli(timer.MaxDueMillis), true},
		{time.UnixMilli(timer.MaxDueMillis + 1), false},
		{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		if got := timer.ValidDue(tt.at); got != tt.want {
			t.Errorf("ValidDue(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
	for _, key := range []string{"a\x00", "\x1f", "x\x7f", "\xff"} {
		r := batchReq("t", key)
		if fe, ok := errors.AsType[*timer.FieldError](r.Validate()); !ok || fe.Field != "key" {
			t.Errorf("key %q: %v", key, r.Validate())
		}
	}
}
