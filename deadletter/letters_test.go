package deadletter

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

var t0 = time.UnixMilli(1_800_000_000_000)

// deadStore returns a fake task store with 12 dead jobs of topic "d" (job
// i died at t0+i s, its error naming i) and one pending job, 99.
func deadStore(t *testing.T) *timertest.Store {
	t.Helper()
	ctx := t.Context()
	s := timertest.NewStore()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "d", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	var jobs []*timer.Job
	for id := timer.JobID(1); id <= 12; id++ {
		jobs = append(jobs, &timer.Job{ID: id, Topic: "d", BizID: uint64(id % 3), DueAt: t0, MaxAttempts: 3, CallbackURL: "http://localhost/h"})
	}
	jobs = append(jobs, &timer.Job{ID: 99, Topic: "d", DueAt: t0, MaxAttempts: 3, CallbackURL: "http://localhost/h"})
	if err := s.Insert(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	for id := timer.JobID(1); id <= 12; id++ {
		f := timer.Failure{Attempts: 3, Error: fmt.Sprintf("POST: 50%d", id%2), Status: 500 + int(id%2), Dead: true}
		if ok, err := s.Fail(ctx, id, f, t0.Add(time.Duration(id)*time.Second)); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	return s
}

// The dead letters are the task store's dead rows: listed in order of
// death, page by page, filtered; a purge ends the row as purged and
// clears the job from Redis's Dead set.
func TestLetters(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		store := deadStore(t)
		l := NewLetters(newBox(t, b), store)

		var got []timer.JobID
		for after := ""; ; {
			page, next, err := l.ListDead(ctx, timer.DeadQuery{Topic: "d", Limit: 5}, after)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page {
				got = append(got, j.ID)
			}
			if next == "" {
				break
			}
			after = next
		}
		if want := []timer.JobID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v", got, want)
		}
		odd, _, err := l.ListDead(ctx, timer.DeadQuery{Topic: "d", ErrorContains: "501", From: t0.Add(3 * time.Second), To: t0.Add(8 * time.Second), Limit: 100}, "")
		if err != nil {
			t.Fatal(err)
		}
		if ids := idsOf(odd); !slices.Equal(ids, []timer.JobID{3, 5, 7}) {
			t.Errorf("filtered %v, want [3 5 7]", ids)
		}

		// Many topics: their dead letters in one order of death, paged;
		// job 20 of topic e died between 6 and 7. A topic that does not
		// exist has none; no topics, none.
		if _, err := store.EnsureTopic(ctx, timer.Topic{Name: "e", Slots: 8}); err != nil {
			t.Fatal(err)
		}
		if err := store.Insert(ctx, []*timer.Job{{ID: 20, Topic: "e", DueAt: t0, MaxAttempts: 1, CallbackURL: "http://localhost/h"}}); err != nil {
			t.Fatal(err)
		}
		if ok, err := store.Fail(ctx, 20, timer.Failure{Attempts: 1, Error: "POST: 404", Status: 404, Dead: true}, t0.Add(6500*time.Millisecond)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		got = nil
		for after := ""; ; {
			page, next, err := l.ListDead(ctx, timer.DeadQuery{Topics: []string{"e", "nope", "d"}, Limit: 4}, after)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, idsOf(page)...)
			if next == "" {
				break
			}
			after = next
		}
		if want := []timer.JobID{1, 2, 3, 4, 5, 6, 20, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
			t.Errorf("listed of topics e, nope and d %v, want %v", got, want)
		}
		if page, next, err := l.ListDead(ctx, timer.DeadQuery{Limit: 10}, ""); err != nil || page == nil || len(page) != 0 || next != "" {
			t.Errorf("of no topics: %v, %q, %v; want an empty page", idsOf(page), next, err)
		}

		if _, _, err := l.ListDead(ctx, timer.DeadQuery{Topic: "nope", Limit: 10}, ""); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("unknown topic: %v", err)
		}
		for field, call := range map[string]func() error{
			"topic":  func() error { return second3(l.ListDead(ctx, timer.DeadQuery{Topic: "Not a topic", Limit: 10}, "")) },
			"cursor": func() error { return second3(l.ListDead(ctx, timer.DeadQuery{Topic: "d", Limit: 10}, "garbage")) },
			"limit":  func() error { return second3(l.ListDead(ctx, timer.DeadQuery{Topic: "d"}, "")) },
		} {
			var fe *timer.FieldError
			if err := call(); !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, timer.ErrInvalid) {
				t.Errorf("bad %s: %v, want a FieldError naming it", field, err)
			}
		}

		j3, _ := store.Get(ctx, 3)
		slot := slots.JobSlot("d", j3.SlotBasis(), 8)
		bury(t, b, slot, 3, timer.PriorityNormal)
		if err := l.PurgeDead(ctx, 3); err != nil {
			t.Errorf("PurgeDead(3) = %v", err)
		}
		if j, _ := store.Get(ctx, 3); j.Status != timer.StatusPurged {
			t.Errorf("purged job is %s, want purged", j.Status)
		}
		if n := b.Client.ZCard(ctx, slots.Keys(b.Prefix, "d", slot.Index).Dead).Val(); n != 0 {
			t.Errorf("the purged job is still in its Dead set (%d members)", n)
		}
		if err := l.PurgeDead(ctx, 3); !errors.Is(err, timer.ErrConflict) {
			t.Errorf("second PurgeDead(3) = %v, want ErrConflict (it is purged)", err)
		}
		if err := l.PurgeDead(ctx, 99); !errors.Is(err, timer.ErrConflict) {
			t.Errorf("PurgeDead(pending) = %v, want ErrConflict", err)
		}
		if err := l.PurgeDead(ctx, 12345); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("PurgeDead(unknown) = %v, want ErrNotFound", err)
		}
		after, _, err := l.ListDead(ctx, timer.DeadQuery{Topic: "d", Limit: 100}, "")
		if err != nil || slices.Contains(idsOf(after), 3) || len(after) != 11 {
			t.Errorf("after the purge listed %v, %v; want 11 without 3", idsOf(after), err)
		}
	})
}

func idsOf(jobs []*timer.Job) []timer.JobID {
	out := make([]timer.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func second3[A, B any](_ A, _ B, err error) error { return err }
