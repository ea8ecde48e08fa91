package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// fakeJobs is a task store of a few rows.
type fakeJobs struct {
	topics map[string]timer.Topic
	rows   map[timer.JobID]*timer.Job
}

func (f *fakeJobs) Topic(_ context.Context, name string) (timer.Topic, error) {
	t, ok := f.topics[name]
	if !ok {
		return timer.Topic{}, fmt.Errorf("topic %s: %w", name, timer.ErrNotFound)
	}
	return t, nil
}

func (f *fakeJobs) Get(_ context.Context, id timer.JobID) (*timer.Job, error) {
	j, ok := f.rows[id]
	if !ok {
		return nil, fmt.Errorf("job %d: %w", id, timer.ErrNotFound)
	}
	return j, nil
}

func (f *fakeJobs) GetMany(_ context.Context, ids []timer.JobID) ([]*timer.Job, error) {
	var out []*timer.Job
	for _, id := range slices.Backward(ids) { // any order
		if j, ok := f.rows[id]; ok {
			out = append(out, j)
		}
	}
	return out, nil
}

func TestLetters(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		jobs := &fakeJobs{topics: map[string]timer.Topic{"d": {Name: "d", Slots: 8}}, rows: map[timer.JobID]*timer.Job{}}
		var es []Entry
		for id := timer.JobID(1); id <= 12; id++ {
			j := &timer.Job{ID: id, Topic: "d", Status: timer.StatusDead, BizID: uint64(id % 3)}
			if id != 5 { // 5's row is gone
				jobs.rows[id] = j
			}
			es = append(es, Entry{ID: id, Slot: slots.Of(j.SlotBasis(), 8), DiedAt: timer.TimeOf(t0 + int64(id)), Attempts: 3})
		}
		jobs.rows[99] = &timer.Job{ID: 99, Topic: "d", Status: timer.StatusPending}
		bury(t, b, "d", es...)
		sortEntries(es)
		l := NewLetters(newBox(t, b), jobs)

		var got []timer.JobID
		for after := ""; ; {
			page, next, err := l.ListDead(ctx, "d", after, 4)
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
		var want []timer.JobID
		for _, e := range es {
			if e.ID != 5 {
				want = append(want, e.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v", got, want)
		}

		if _, _, err := l.ListDead(ctx, "nope", "", 10); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("unknown topic: %v", err)
		}
		for field, call := range map[string]func() error{
			"topic": func() error { return second3(l.ListDead(ctx, "", "", 10)) },
			"after": func() error { return second3(l.ListDead(ctx, "d", "garbage", 10)) },
			"limit": func() error { return second3(l.ListDead(ctx, "d", "", 0)) },
		} {
			var fe *timer.FieldError
			if err := call(); !errors.As(err, &fe) || fe.Field != field || !errors.Is(err, timer.ErrInvalid) {
				t.Errorf("bad %s: %v, want a FieldError naming it", field, err)
			}
		}

		if err := l.PurgeDead(ctx, 3); err != nil {
			t.Errorf("PurgeDead(3) = %v", err)
		}
		if err := l.PurgeDead(ctx, 3); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("second PurgeDead(3) = %v, want ErrNotFound", err)
		}
		if err := l.PurgeDead(ctx, 99); !errors.Is(err, timer.ErrConflict) {
			t.Errorf("PurgeDead(pending) = %v, want ErrConflict", err)
		}
		if err := l.PurgeDead(ctx, 12345); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("PurgeDead(unknown) = %v, want ErrNotFound", err)
		}
		if n, err := newBox(t, b).Count(ctx, "d", 8); err != nil || n != 11 {
			t.Errorf("Count after purge = %d, %v; want 11", n, err)
		}
	})
}
