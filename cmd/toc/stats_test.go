package main

import (
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
)

// TestTopicStorage reads a topic's storage on two MariaDB shards: rows
// per ended status, the oldest one's end and the rows past the retention
// in force, exact while small, the database's estimate (flagged) past
// the live limit a shard; a status kept forever has none past it.
func TestTopicStorage(t *testing.T) {
	mdb := testenv.MariaDB(t)
	now := time.Now().Truncate(time.Millisecond)
	ended := now.Add(-3 * time.Hour)
	st, err := shard.OpenMySQL(t.Context(), []string{mdb.NewDatabase(t), mdb.NewDatabase(t)}, taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids := timer.NewIDGen(1, nil)
	// add inserts n jobs of status last changed (ended) at at.
	add := func(at time.Time, topic string, n int, status timer.Status) {
		t.Helper()
		js := make([]*timer.Job, n)
		for i := range js {
			js[i] = &timer.Job{ID: ids.NextIn(i % 2), Topic: topic, Status: status, DueAt: at,
				CallbackURL: "http://localhost:1/", CreatedAt: ended, UpdatedAt: at}
		}
		if err := st.Insert(t.Context(), js); err != nil {
			t.Fatal(err)
		}
	}
	// Three hours ago: 6 done, 2 dead, 30 cancelled of a big topic.
	add(ended, "small", 6, timer.StatusDone)
	add(ended, "small", 2, timer.StatusDead)
	add(ended, "big", 30, timer.StatusCancelled)
	add(now, "small", 4, timer.StatusDone)
	add(ended, "small", 5, timer.StatusPending) // not ended: in no count
	add(now, "big", 30, timer.StatusCancelled)

	stats := &topicStats{store: st, counter: newJobCounter(t.Context(), st)}
	retention := timer.Retention{Done: time.Hour, Dead: timer.KeepForever}.Over(timer.DefaultRetention())
	got, err := stats.storage(t.Context(), "small", retention, now)
	if err != nil {
		t.Fatal(err)
	}
	if d := got[timer.StatusDone]; d.Rows != 10 || d.RowsEstimated || !d.OldestEnded.Equal(ended) || d.PastRetention != 6 || d.PastRetentionEstimated {
		t.Errorf("done: %+v, want 10 rows, the oldest ended at %v, 6 past an hour's retention", d, ended)
	}
	if d := got[timer.StatusDead]; d.Rows != 2 || !d.OldestEnded.Equal(ended) || d.PastRetention != 0 {
		t.Errorf("dead, kept forever: %+v, want 2 rows and none past retention", d)
	}
	for _, s := range []timer.Status{timer.StatusCancelled, timer.StatusExpired, timer.StatusPurged} {
		if d := got[s]; d != (got[timer.StatusPurged]) || d.Rows != 0 || !d.OldestEnded.IsZero() {
			t.Errorf("%s: %+v, want none", s, d)
		}
	}

	// Past the live limit a shard, the counts are estimates, and say so;
	// never an error.
	stats.counter.liveMax = 10
	got, err = stats.storage(t.Context(), "big", timer.Retention{Cancelled: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if c := got[timer.StatusCancelled]; !c.RowsEstimated || c.Rows <= 20 || !c.PastRetentionEstimated || c.PastRetention <= 20 || !c.OldestEnded.Equal(ended) {
		t.Errorf("big cancelled: %+v, want estimates over 20 rows and 20 past retention", c)
	}
}
