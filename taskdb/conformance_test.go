package taskdb

import (
	"fmt"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// base is the clock of the conformance suite: a round millisecond.
var base = time.UnixMilli(1_700_000_000_000)

// newJob returns a pending job of topic due at base+dueMs.
func newJob(id timer.JobID, topic string, dueMs int64) *timer.Job {
	return &timer.Job{
		ID:          id,
		Topic:       topic,
		Status:      timer.StatusPending,
		DueAt:       base.Add(time.Duration(dueMs) * time.Millisecond),
		MaxAttempts: timer.DefaultMaxAttempts,
		CallbackURL: "https://example.com/hook",
		CreatedAt:   base,
		UpdatedAt:   base,
	}
}

// jobs returns count pending jobs with ids from first, all due at base.
func jobs(first timer.JobID, count int, topic string) []*timer.Job {
	js := make([]*timer.Job, count)
	for i := range js {
		js[i] = newJob(first+timer.JobID(i), topic, 0)
	}
	return js
}

func mustInsert(t testing.TB, s *Store, js ...*timer.Job) {
	t.Helper()
	if err := s.Insert(t.Context(), js); err != nil {
		t.Fatalf("Insert: %v", err)
	}
}

// runConformance runs the task store contract against the stores open
// returns: each a fresh, migrated, empty database. The behaviour of
// timer.Store is timertest.TestStore, which also keeps timertest's
// in-memory Store honest; what only taskdb has (migrations, CountByStatus)
// is tested here.
func runConformance(t *testing.T, open func(t *testing.T) *Store) {
	timertest.TestStore(t, func(t *testing.T) timer.Store { return open(t) })
	tests := []struct {
		name string
		run  func(t *testing.T, s *Store)
	}{
		{"MigrateTwice", testMigrateTwice},
		{"CountByStatus", testCountByStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

func testMigrateTwice(t *testing.T, s *Store) {
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM toc_schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Errorf("toc_schema_migrations has %d rows, want %d", n, len(ms))
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func testCountByStatus(t *testing.T, s *Store) {
	js := append(jobs(1, 5, "a"), jobs(10, 3, "b")...)
	js[0].Status, js[1].Status, js[5].Status = timer.StatusDone, timer.StatusDead, timer.StatusDone
	mustInsert(t, s, js...)
	tests := []struct {
		topic string
		want  map[timer.Status]int64
	}{
		{"a", map[timer.Status]int64{timer.StatusPending: 3, timer.StatusDone: 1, timer.StatusCancelled: 0, timer.StatusDead: 1}},
		{"b", map[timer.Status]int64{timer.StatusPending: 2, timer.StatusDone: 1, timer.StatusCancelled: 0, timer.StatusDead: 0}},
		{"", map[timer.Status]int64{timer.StatusPending: 5, timer.StatusDone: 2, timer.StatusCancelled: 0, timer.StatusDead: 1}},
		{"none", map[timer.Status]int64{timer.StatusPending: 0, timer.StatusDone: 0, timer.StatusCancelled: 0, timer.StatusDead: 0}},
	}
	for _, tc := range tests {
		got, err := s.CountByStatus(t.Context(), tc.topic)
		if err != nil {
			t.Fatalf("CountByStatus(%q): %v", tc.topic, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("CountByStatus(%q) = %v, want %v", tc.topic, got, tc.want)
		}
	}
}
