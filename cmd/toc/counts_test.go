package main

import (
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
)

// TestJobCounter counts topics on two MariaDB shards with a live limit of
// 10 jobs a shard: a small topic is counted at each request; a big one
// gets the estimate first, then the background recount's exact figure,
// which stays until it is recountAfter old even as jobs are added, and
// then is counted again.
func TestJobCounter(t *testing.T) {
	mdb := testenv.MariaDB(t)
	st, err := shard.OpenMySQL(t.Context(), []string{mdb.NewDatabase(t), mdb.NewDatabase(t)}, taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids := timer.NewIDGen(1, nil)
	add := func(topic string, n int, status timer.Status) {
		t.Helper()
		js := make([]*timer.Job, n)
		for i := range js {
			now := time.Now()
			js[i] = &timer.Job{ID: ids.NextIn(i % 2), Topic: topic, Status: status, DueAt: now.Add(time.Hour),
				CallbackURL: "http://localhost:1/", CreatedAt: now}
		}
		if err := st.Insert(t.Context(), js); err != nil {
			t.Fatal(err)
		}
	}
	add("small", 12, timer.StatusPending) // 6 a shard
	add("small", 3, timer.StatusDead)
	add("big", 60, timer.StatusPending)
	add("big", 4, timer.StatusDead)

	c := newJobCounter(t.Context(), st)
	c.liveMax = 10
	counts := func(topic string) jobCounts {
		t.Helper()
		got, err := c.counts(t.Context(), topic)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := counts("small"); got.estimated || got.pending != 12 || got.dead != 3 || time.Since(got.at) > time.Minute {
		t.Errorf("small: %+v, want 12 pending and 3 dead, counted now", got)
	}
	if got := counts("big"); !got.estimated || got.pending <= 10 || got.dead != 4 {
		t.Errorf("big, first: %+v, want an estimate over 10 pending, 4 dead", got)
	}
	waitCount := func(want int64) jobCounts {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := counts("big")
			if !got.estimated && got.pending == want {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("big: %+v, want %d pending counted exactly", got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	first := waitCount(60)
	add("big", 10, timer.StatusPending)
	if got := counts("big"); got != first {
		t.Errorf("big, within recountAfter: %+v, want the last count %+v", got, first)
	}
	c.recount = 0 // every count is old now
	if got := waitCount(70); got.dead != 4 || !got.at.After(first.at) {
		t.Errorf("big, recounted: %+v after %+v", got, first)
	}
}
