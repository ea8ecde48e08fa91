package timertest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// listIDs returns the ids of every page of q, paging by cursor.
func listIDs(t *testing.T, s timer.Store, q timer.JobQuery) []timer.JobID {
	t.Helper()
	var out []timer.JobID
	for {
		page, err := s.ListJobs(t.Context(), q)
		if err != nil {
			t.Fatalf("ListJobs(%+v): %v", q, err)
		}
		for _, j := range page {
			out = append(out, j.ID)
		}
		if len(page) < q.Limit {
			return out
		}
		q.After = timer.CursorOf(page[len(page)-1])
	}
}

// testListJobs: each filter alone and together, in (due time, id) order,
// paged by cursor with pages that end inside a run of equal due times.
func testListJobs(t *testing.T, s timer.Store) {
	ctx := t.Context()
	var all []*timer.Job
	add := func(id timer.JobID, topic string, dueMs int64, biz uint64, key string, st timer.Status) {
		j := newJob(id, topic, dueMs)
		j.BizID, j.Key = biz, key
		all = append(all, j)
		mustInsert(t, s, j)
		switch st {
		case timer.StatusCancelled:
			if ok, err := s.Transition(ctx, id, timer.StatusPending, timer.StatusCancelled, base); err != nil || !ok {
				t.Fatalf("cancel %d: %v %v", id, ok, err)
			}
		case timer.StatusFiring:
			if n, err := s.Fire(ctx, []timer.JobID{id}, base.Add(time.Hour), base); err != nil || n != 1 {
				t.Fatalf("fire %d: %v %v", id, n, err)
			}
		case timer.StatusDead:
			if ok, err := s.Fail(ctx, id, timer.Failure{Attempts: 1, Dead: true, Error: "x"}, base); err != nil || !ok {
				t.Fatalf("bury %d: %v %v", id, ok, err)
			}
		}
	}
	// Topic a: ids 1..30, due in threes at the same ms, business ids
	// 1..3, every fifth cancelled, every seventh firing, id 29 dead; two
	// keyed. Topic b: the same business ids, to be left out.
	for i := timer.JobID(1); i <= 30; i++ {
		st := timer.StatusPending
		switch {
		case i == 29:
			st = timer.StatusDead
		case i%5 == 0:
			st = timer.StatusCancelled
		case i%7 == 0:
			st = timer.StatusFiring
		}
		key := ""
		if i == 4 || i == 8 {
			key = "k" + i.String()
		}
		add(i, "a", int64((i-1)/3)*10, uint64(i%3+1), key, st)
	}
	for i := timer.JobID(100); i < 110; i++ {
		add(i, "b", int64(i), uint64(i%3+1), "", timer.StatusPending)
	}
	// Business ids with the high bit set (SQLite keeps them as int64).
	const high = 1<<64 - 1
	add(31, "a", 5, high, "", timer.StatusPending)
	add(32, "a", 6, high-1, "", timer.StatusPending)
	want := func(q timer.JobQuery) []timer.JobID {
		var out []*timer.Job
		for _, j := range all {
			if got := mustGet(t, s, j.ID); q.Matches(got) {
				out = append(out, got)
			}
		}
		slices.SortFunc(out, func(x, y *timer.Job) int {
			if c := x.DueAt.Compare(y.DueAt); c != 0 {
				return c
			}
			return int(x.ID) - int(y.ID)
		})
		ids := make([]timer.JobID, len(out))
		for i, j := range out {
			ids[i] = j.ID
		}
		return ids
	}
	queries := map[string]timer.JobQuery{
		"topic":            {Topic: "a"},
		"pending":          {Topic: "a", Statuses: []timer.Status{timer.StatusPending}},
		"firing":           {Topic: "a", Statuses: []timer.Status{timer.StatusFiring}},
		"pending+firing":   {Topic: "a", Statuses: []timer.Status{timer.StatusPending, timer.StatusFiring}},
		"cancelled+dead":   {Topic: "a", Statuses: []timer.Status{timer.StatusCancelled, timer.StatusDead}},
		"biz":              {Topic: "a", BizID: 2},
		"biz pending":      {Topic: "a", BizID: 2, Statuses: []timer.Status{timer.StatusPending}},
		"key":              {Topic: "a", Key: "k8"},
		"key other biz":    {Topic: "a", Key: "k8", BizID: 1},
		"time":             {Topic: "a", FireAfter: base.Add(20 * time.Millisecond), FireBefore: base.Add(60 * time.Millisecond)},
		"biz time":         {Topic: "a", BizID: 3, FireAfter: base.Add(30 * time.Millisecond)},
		"pending time":     {Topic: "a", Statuses: []timer.Status{timer.StatusPending}, FireBefore: base.Add(40 * time.Millisecond)},
		"no such topic":    {Topic: "c"},
		"no such business": {Topic: "a", BizID: 99},
		"biz past 2^63":    {Topic: "a", BizID: high},
	}
	for name, q := range queries {
		for _, limit := range []int{1, 4, 1000} {
			q.Limit = limit
			if got, w := listIDs(t, s, q), want(q); !slices.Equal(got, w) {
				t.Errorf("%s, limit %d: %v, want %v", name, limit, got, w)
			}
		}
	}
	if got := listIDs(t, s, timer.JobQuery{Topic: "a", Key: "k8", Limit: 10}); len(got) != 1 || got[0] != 8 {
		t.Errorf("by key k8: %v", got)
	}
	for _, bad := range []timer.JobQuery{{Limit: 10}, {Topic: "a"}, {Topic: "a", Limit: timer.MaxJobPage + 1}} {
		if _, err := s.ListJobs(ctx, bad); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("ListJobs(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}
