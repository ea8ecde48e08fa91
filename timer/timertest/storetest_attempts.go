package timertest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// TestAttemptLog runs the attempt history's contract against the logs
// open returns: each a fresh, empty store. The jobs are spread over
// shards 0 and 1, so that a store over two shards splits and merges.
func TestAttemptLog(t *testing.T, open func(t *testing.T) timer.AttemptLog) {
	ctx := t.Context()
	s := open(t)
	base := time.UnixMilli(1_700_000_000_000)
	ids := timer.NewIDGen(1, func() time.Time { return base })
	a, b := ids.NextIn(0), ids.NextIn(1)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	long := strings.Repeat("é", timer.MaxLastErrorBytes) // 2 bytes a rune: cut at a boundary
	recorded := []timer.Attempt{
		{Job: a, Attempt: 2, StartedAt: at(5000), Duration: 40 * time.Millisecond, StatusCode: 200, Excerpt: []byte("ok")},
		{Job: a, Attempt: 1, StartedAt: at(1000), Duration: 1500 * time.Microsecond, StatusCode: 500, Error: long, Excerpt: bytes.Repeat([]byte{0xff}, 3000)},
		{Job: b, Attempt: 1, StartedAt: at(2000), Duration: time.Second, Error: "dial tcp: connection refused"},
	}
	if err := s.RecordAttempts(ctx, recorded); err != nil {
		t.Fatalf("RecordAttempts: %v", err)
	}
	// The same attempt again (a batch written twice) is no error and no
	// second record.
	if err := s.RecordAttempts(ctx, recorded[:1]); err != nil {
		t.Fatalf("RecordAttempts again: %v", err)
	}
	if err := s.RecordAttempts(ctx, nil); err != nil {
		t.Fatalf("RecordAttempts(nil): %v", err)
	}

	got, err := s.ListAttempts(ctx, a)
	if err != nil {
		t.Fatalf("ListAttempts: %v", err)
	}
	want := []timer.Attempt{recorded[1].Stored(), recorded[0].Stored()}
	if len(want[0].Error) != timer.MaxLastErrorBytes || len(want[0].Excerpt) != timer.MaxExcerptBytes {
		t.Fatalf("Stored kept %d bytes of error, %d of excerpt", len(want[0].Error), len(want[0].Excerpt))
	}
	if !EqualAttempts(got, want) {
		t.Errorf("ListAttempts(a) = %+v\nwant %+v", got, want)
	}
	if got, err := s.ListAttempts(ctx, b); err != nil || !EqualAttempts(got, []timer.Attempt{recorded[2].Stored()}) {
		t.Errorf("ListAttempts(b) = %+v, %v", got, err)
	}
	if got, err := s.ListAttempts(ctx, ids.NextIn(1)); err != nil || len(got) != 0 {
		t.Errorf("ListAttempts(unknown) = %+v, %v; want none", got, err)
	}

	// Started before 5 s: two attempts, one at a time.
	for i, want := range []int{1, 1, 0} {
		if n, err := s.PruneAttempts(ctx, at(5000), 1); err != nil || n != want {
			t.Fatalf("PruneAttempts #%d = %d, %v; want %d", i+1, n, err, want)
		}
	}
	if got, err := s.ListAttempts(ctx, a); err != nil || !EqualAttempts(got, []timer.Attempt{recorded[0].Stored()}) {
		t.Errorf("after pruning, ListAttempts(a) = %+v, %v", got, err)
	}

	if _, ok := s.(timer.Store); ok {
		t.Run("Completed", func(t *testing.T) {
			testCompletedAttempts(t, open(t).(timer.Store))
		})
	}
}

// testCompletedAttempts checks that Complete records the attempts its
// completions carry, beside those RecordAttempts writes, for the rows it
// marks done; and that pruning reaches them. s is a fresh, empty store.
func testCompletedAttempts(t *testing.T, s timer.Store) {
	ctx := t.Context()
	log := s.(timer.AttemptLog)
	base := time.UnixMilli(1_700_000_000_000)
	ids := timer.NewIDGen(1, func() time.Time { return base })
	a, b, c := ids.NextIn(0), ids.NextIn(1), ids.NextIn(0)
	mustInsert(t, s, newJob(a, "t", 0), newJob(b, "t", 0), newJob(c, "t", 0))
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	failed := timer.Attempt{Job: a, Attempt: 1, StartedAt: at(10), Duration: 3 * time.Millisecond, StatusCode: 503, Error: "503 Service Unavailable", Excerpt: []byte("busy")}
	if err := log.RecordAttempts(ctx, []timer.Attempt{failed}); err != nil {
		t.Fatalf("RecordAttempts: %v", err)
	}
	wonA := timer.Attempt{Job: a, Attempt: 2, StartedAt: at(2000), Duration: 2500 * time.Microsecond, StatusCode: 200, Excerpt: []byte{}}
	wonB := timer.Attempt{Job: b, Attempt: 1, StartedAt: at(1990), Duration: 12 * time.Millisecond, StatusCode: 204,
		Excerpt: append([]byte{0, 0xff, '\'', '\\'}, bytes.Repeat([]byte("x"), 2*timer.MaxExcerptBytes)...)}
	done := []timer.Completion{
		{ID: a, Attempts: 2, Status: 200, Attempt: &wonA},
		{ID: b, Attempts: 1, Status: 204, Attempt: &wonB},
		{ID: c, Attempts: 1, Status: 200}, // no history kept of it
	}
	if n, err := s.Complete(ctx, done, at(2100)); n != 3 || err != nil {
		t.Fatalf("Complete = %d, %v; want 3", n, err)
	}
	// A completion of a row done already is no attempt of it.
	again := timer.Attempt{Job: a, Attempt: 3, StartedAt: at(2200), Duration: time.Millisecond, StatusCode: 200}
	if n, err := s.Complete(ctx, []timer.Completion{{ID: a, Attempts: 3, Status: 200, Attempt: &again}}, at(2300)); n != 0 || err != nil {
		t.Fatalf("Complete of a done row = %d, %v; want 0", n, err)
	}
	for _, tc := range []struct {
		id   timer.JobID
		want []timer.Attempt
	}{
		{a, []timer.Attempt{failed.Stored(), wonA.Stored()}},
		{b, []timer.Attempt{wonB.Stored()}},
		{c, nil},
	} {
		if got, err := log.ListAttempts(ctx, tc.id); err != nil || !EqualAttempts(got, tc.want) {
			t.Errorf("ListAttempts(%d) = %+v, %v\nwant %+v", tc.id, got, err, tc.want)
		}
	}
	// Pruning before every start reaches the completed ones too.
	for range 10 {
		n, err := log.PruneAttempts(ctx, at(5000), 1)
		if err != nil {
			t.Fatalf("PruneAttempts: %v", err)
		}
		if n == 0 {
			break
		}
	}
	for _, id := range []timer.JobID{a, b} {
		if got, err := log.ListAttempts(ctx, id); err != nil || len(got) != 0 {
			t.Errorf("after pruning, ListAttempts(%d) = %+v, %v; want none", id, got, err)
		}
	}
}

// EqualAttempts reports whether got and want hold the same attempts in
// the same order.
func EqualAttempts(got, want []timer.Attempt) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Job != w.Job || g.Attempt != w.Attempt || !g.StartedAt.Equal(w.StartedAt) || g.Duration != w.Duration ||
			g.StatusCode != w.StatusCode || g.Error != w.Error || !bytes.Equal(g.Excerpt, w.Excerpt) {
			return false
		}
	}
	return true
}
