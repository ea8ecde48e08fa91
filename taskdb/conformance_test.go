package taskdb

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
// returns: each a fresh, migrated, empty database; openEmpty returns a
// fresh database not migrated. The behaviour of timer.Store is
// timertest.TestStore, which also keeps timertest's in-memory Store
// honest; what only taskdb has (migrations, CountByStatus) is tested
// here.
func runConformance(t *testing.T, open, openEmpty func(t *testing.T) *Store) {
	t.Run("UpgradeTraceParent", func(t *testing.T) {
		t.Parallel()
		testUpgradeTraceParent(t, openEmpty(t))
	})
	t.Run("MigrationStatus", func(t *testing.T) {
		t.Parallel()
		testMigrationStatus(t, openEmpty(t))
	})
	timertest.TestStore(t, func(t *testing.T) timer.Store { return open(t) })
	t.Run("FireNew", func(t *testing.T) {
		t.Parallel()
		testFireNew(t, open(t))
	})
	t.Run("AttemptLog", func(t *testing.T) {
		t.Parallel()
		timertest.TestAttemptLog(t, func(t *testing.T) timer.AttemptLog { return open(t) })
	})
	t.Run("Forecaster", func(t *testing.T) {
		t.Parallel()
		timertest.TestForecaster(t, func(t *testing.T) timertest.Forecaster { return open(t) })
	})
	t.Run("ScheduleStore", func(t *testing.T) {
		t.Parallel()
		timertest.TestScheduleStore(t, func(t *testing.T) timer.ScheduleStore { return open(t) })
	})
	t.Run("GroupStore", func(t *testing.T) {
		t.Parallel()
		timertest.TestGroupStore(t, func(t *testing.T) timertest.GroupStore { return open(t) })
	})
	t.Run("AuditLog", func(t *testing.T) {
		t.Parallel()
		timertest.TestAuditLog(t, func(t *testing.T) timer.AuditLog { return open(t) })
	})
	t.Run("Overdue", func(t *testing.T) {
		t.Parallel()
		testOverdue(t, open(t))
	})
	t.Run("UpgradeDeadAndGroups", func(t *testing.T) {
		t.Parallel()
		testUpgradeDeadAndGroups(t, openEmpty(t))
	})
	t.Run("UpgradeScheduleOwner", func(t *testing.T) {
		t.Parallel()
		testUpgradeScheduleOwner(t, openEmpty(t))
	})
	t.Run("ContractMigration", func(t *testing.T) {
		t.Parallel()
		testContractMigration(t, openEmpty(t), openEmpty(t))
	})
	tests := []struct {
		name string
		run  func(t *testing.T, s *Store)
	}{
		{"MigrateTwice", testMigrateTwice},
		{"CountByStatus", testCountByStatus},
		{"CountJobs", testCountJobs},
		{"RetirePacks", testRetirePacks},
		{"NodeLeases", testNodeLeases},
		{"NodeLeasesExhausted", testNodeLeasesExhausted},
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

// testCountJobs counts a topic of 30 pending jobs (one of them firing)
// and 3 dead ones, whole and with limits below and above the count: past
// its limit, MySQL estimates (never less than limit+1) and SQLite counts.
func testCountJobs(t *testing.T, s *Store) {
	js := append(jobs(1, 33, "a"), jobs(100, 5, "b")...)
	for _, j := range js[30:33] {
		j.Status = timer.StatusDead
	}
	mustInsert(t, s, js...)
	if n, err := s.Fire(t.Context(), []timer.JobID{1}, base.Add(time.Minute), base); err != nil || n != 1 {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	tests := []struct {
		topic  string
		status timer.Status
		limit  int64
		want   int64
	}{
		{"a", timer.StatusPending, 0, 30},
		{"a", timer.StatusPending, 30, 30},
		{"a", timer.StatusPending, 100, 30},
		{"a", timer.StatusDead, 10, 3},
		{"a", timer.StatusDone, 10, 0},
		{"b", timer.StatusPending, 10, 5},
		{"none", timer.StatusPending, 10, 0},
		{"a", timer.StatusPending, 10, 30}, // past the limit
	}
	for _, tc := range tests {
		n, exact, err := s.CountJobs(t.Context(), tc.topic, tc.status, tc.limit)
		if err != nil {
			t.Fatalf("CountJobs(%s, %s, %d): %v", tc.topic, tc.status, tc.limit, err)
		}
		switch {
		case exact && n != tc.want:
			t.Errorf("CountJobs(%s, %s, %d) = %d exactly, want %d", tc.topic, tc.status, tc.limit, n, tc.want)
		case exact && s.d.estimateRows != nil && tc.limit > 0 && tc.want > tc.limit:
			t.Errorf("CountJobs(%s, %s, %d) counted all %d; want an estimate past the limit", tc.topic, tc.status, tc.limit, n)
		case !exact && (s.d.estimateRows == nil || tc.limit == 0 || tc.want <= tc.limit || n <= tc.limit):
			t.Errorf("CountJobs(%s, %s, %d) = %d, estimated; want %d exactly", tc.topic, tc.status, tc.limit, n, tc.want)
		}
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

// testUpgradeTraceParent migrates a database to 0010, writes a row as a
// toc of then did, and checks that after 0011 it reads back with no
// traceparent and that a new row keeps its own.
// testUpgradeDeadAndGroups writes rows under migration 0020 (a dead job,
// a live one, and a group of a pending and a done member), migrates to the
// last, and finds them through the virtual columns of 0021: the dead
// letter by its topic, the group's live member and counts, and a group
// with nothing live once its member completes.
func testUpgradeDeadAndGroups(t *testing.T, s *Store) {
	ctx := t.Context()
	if err := s.migrateTo(ctx, 20, false); err != nil {
		t.Fatalf("migrate to 0020: %v", err)
	}
	dead := base.Add(time.Minute).UnixMilli()
	for _, r := range []struct {
		id, status, modified int64
		group                any
	}{
		{1, int64(timer.StatusDead), dead, nil},
		{2, int64(timer.StatusPending), dead, nil},
		{3, int64(timer.StatusPending), base.UnixMilli(), []byte("g")},
		{4, int64(timer.StatusDone), base.UnixMilli(), []byte("g")},
	} {
		_, err := s.db.ExecContext(ctx, `INSERT INTO toc_jobs (job_id, topic, status, action_time, max_attempts, gmt_create, gmt_modified, group_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, r.id, "t", r.status, base.UnixMilli(), 3, base.UnixMilli(), r.modified, r.group)
		if err != nil {
			t.Fatalf("insert a 0020 row: %v", err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate to the last: %v", err)
	}
	letters, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t", Limit: 10})
	if err != nil || len(letters) != 1 || letters[0].ID != 1 || !letters[0].UpdatedAt.Equal(timer.TimeOf(dead)) {
		t.Errorf("ListDead = %v, %v; want job 1, dead at %d", letters, err, dead)
	}
	if live, err := s.GroupLive(ctx, "g"); err != nil || !live {
		t.Errorf("GroupLive = %v, %v; want true", live, err)
	}
	counts, err := s.GroupCounts(ctx, "g")
	if err != nil || counts[timer.StatusPending] != 1 || counts[timer.StatusDone] != 1 {
		t.Errorf("GroupCounts = %v, %v; want a pending and a done member", counts, err)
	}
	if n, err := s.Complete(ctx, []timer.Completion{{ID: 3, Attempts: 1}}, base); err != nil || n != 1 {
		t.Fatalf("Complete = %d, %v", n, err)
	}
	if live, err := s.GroupLive(ctx, "g"); err != nil || live {
		t.Errorf("GroupLive after the last member completed = %v, %v; want false", live, err)
	}
}

// testMigrationStatus: a fresh database has every migration pending;
// migrated to 0010, the first ten are applied and the rest pending; a
// version recorded by a newer toc is listed as unknown, and CheckSchema
// refuses the schema, naming it.
func testMigrationStatus(t *testing.T, s *Store) {
	ctx := t.Context()
	known, unknown, err := s.Migrations(ctx)
	if err != nil || len(unknown) > 0 || len(known) < 25 {
		t.Fatalf("Migrations of a fresh database = %d known, unknown %v, %v", len(known), unknown, err)
	}
	for _, m := range known {
		if !m.AppliedAt.IsZero() || len(m.Statements) == 0 {
			t.Errorf("fresh database: %s applied at %v, %d statements", m.Name, m.AppliedAt, len(m.Statements))
		}
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema of a fresh database: %v", err)
	}
	if err := s.migrateTo(ctx, 10, false); err != nil {
		t.Fatal(err)
	}
	if known, _, err = s.Migrations(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range known {
		if applied := !m.AppliedAt.IsZero(); applied != (m.Version <= 10) {
			t.Errorf("migrated to 0010: %s applied = %v", m.Name, applied)
		}
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema of an older schema: %v", err)
	}
	// 0029, 0030 and 0032, contract migrations, are not needed to serve.
	if pending, fresh, err := s.Pending(ctx); err != nil || fresh || len(pending) != len(known)-13 || pending[0] != 11 ||
		slices.Contains(pending, 29) || slices.Contains(pending, 30) || slices.Contains(pending, 32) {
		t.Errorf("Pending after 0010 = %v, fresh %v, %v; want 11 onwards but 0029, 0030 and 0032", pending, fresh, err)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO toc_schema_migrations (version, applied_at) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	if _, unknown, err = s.Migrations(ctx); err != nil || !slices.Equal(unknown, []int{9999}) {
		t.Errorf("Migrations after a newer toc's 9999 = unknown %v, %v", unknown, err)
	}
	if err := s.CheckSchema(ctx); !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), "9999") {
		t.Errorf("CheckSchema with a newer toc's 9999 = %v, want ErrSchemaNewer naming it", err)
	}
	// Migrated on: the additive ones after 0010 are marked as such.
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	additive, err := s.additiveMigrations(ctx)
	if err != nil || !additive[22] || !additive[25] || additive[10] || additive[9999] {
		t.Errorf("additive migrations %v, %v; want 22 to 25 among them, not 10 or 9999", additive, err)
	}
	// A newer toc's additive migration is one this build serves beside.
	if _, err := s.db.ExecContext(ctx, "INSERT INTO toc_schema_additive (version) VALUES (9999)"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema with a newer toc's additive 9999 = %v, want none", err)
	}
	if _, err := s.db.ExecContext(ctx, "INSERT INTO toc_schema_migrations (version, applied_at) VALUES (10000, 1)"); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(ctx); !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), "[10000]") {
		t.Errorf("CheckSchema with 9999 additive and 10000 not = %v, want ErrSchemaNewer naming 10000 alone", err)
	}
}

// testContractMigration: 0029, 0030 and 0032, contract migrations, are
// applied to a new database by Migrate, but to one v0.1.0 (0021) served
// only by MigrateContract. A build that stops at 0021 and checks the
// schema as this one does (v0.1.0 itself predates the check) serves
// beside this build until then, and refuses the schema after; this build
// serves either way. The dead letters listed are the same throughout,
// whichever build killed or replayed them: from toc_jobs_ended before
// 0032, from toc_dead after, where 0032 copied v0.1.0's.
func testContractMigration(t *testing.T, old, fresh *Store) {
	ctx := t.Context()
	// What CheckSchema of a build whose last migration is 0021 refuses:
	// the applied migrations after it that are not additive.
	refusedBy0021 := func() []int {
		t.Helper()
		_, unknown, err := old.Migrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		applied, err := old.appliedMigrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		additive, err := old.additiveMigrations(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var refused []int
		for v := range applied {
			if v > 21 && !additive[v] {
				refused = append(refused, v)
			}
		}
		slices.Sort(refused)
		return append(refused, unknown...)
	}
	if err := old.migrateTo(ctx, 21, false); err != nil {
		t.Fatal(err)
	}
	// Rows as a member of v0.1.0 writes them: job 1 dead, job 2 pending.
	v010Row := func(id, status int64) {
		t.Helper()
		_, err := old.db.ExecContext(ctx, `INSERT INTO toc_jobs (job_id, topic, status, action_time, max_attempts, gmt_create, gmt_modified)
			VALUES (?, 't', ?, ?, 3, ?, ?)`, id, status, base.UnixMilli(), base.UnixMilli(), base.Add(time.Duration(id)*time.Minute).UnixMilli())
		if err != nil {
			t.Fatalf("insert a v0.1.0 row: %v", err)
		}
	}
	v010Row(1, int64(timer.StatusDead))
	v010Row(2, int64(timer.StatusPending))
	if err := old.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	wantDead := func(when string, ids ...timer.JobID) {
		t.Helper()
		letters, err := old.ListDead(ctx, timer.DeadQuery{Topic: "t", Limit: 10})
		var got []timer.JobID
		for _, j := range letters {
			got = append(got, j.ID)
		}
		if err != nil || !slices.Equal(got, ids) {
			t.Errorf("%s: ListDead = %v, %v; want %v", when, got, err, ids)
		}
	}
	wantDead("a v0.1.0 dead letter after Migrate", 1)
	// During the rolling upgrade this build kills job 2, a member of
	// v0.1.0 replays it (leaving its entry in toc_dead behind) and kills
	// job 3 (writing none).
	if ok, err := old.Fail(ctx, 2, timer.Failure{Dead: true, Attempts: 3, Error: "boom"}, base.Add(10*time.Minute)); err != nil || !ok {
		t.Fatalf("Fail job 2 dead = %v, %v", ok, err)
	}
	wantDead("job 2 killed by this build", 1, 2)
	if _, err := old.db.ExecContext(ctx, "UPDATE toc_jobs SET status = 0, gmt_modified = ? WHERE job_id = 2", base.Add(11*time.Minute).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	v010Row(3, int64(timer.StatusDead))
	wantDead("job 2 replayed and job 3 killed by v0.1.0", 1, 3)
	if got := refusedBy0021(); len(got) != 0 {
		t.Errorf("after Migrate, a build of 0021 would refuse %v; want none", got)
	}
	if !hasIndex(t, old, "toc_jobs_status_due") || !hasIndex(t, old, "toc_jobs_dead") {
		t.Error("Migrate dropped toc_jobs_status_due or toc_jobs_dead under v0.1.0's members")
	}
	known, _, err := old.Migrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range known {
		contract := m.Version == 29 || m.Version == 30 || m.Version == 32
		if m.AppliedAt.IsZero() != contract || m.Contract != contract {
			t.Errorf("after Migrate: %s applied %v, contract %v; want 0029, 0030 and 0032 alone pending, contract ones", m.Name, !m.AppliedAt.IsZero(), m.Contract)
		}
	}
	if pending, fresh, err := old.Pending(ctx); err != nil || len(pending) != 0 || fresh {
		t.Errorf("Pending with only 0029, 0030 and 0032 left = %v, fresh %v, %v; want none: this build serves without them", pending, fresh, err)
	}
	if err := old.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema without 0029, 0030 and 0032: %v", err)
	}
	if err := old.MigrateContract(ctx); err != nil {
		t.Fatal(err)
	}
	if got := refusedBy0021(); !slices.Equal(got, []int{29, 30, 32}) {
		t.Errorf("after MigrateContract, a build of 0021 would refuse %v; want [29 30 32]", got)
	}
	if hasIndex(t, old, "toc_jobs_status_due") || hasIndex(t, old, "toc_jobs_dead") || hasIndex(t, old, "toc_jobs_ended") || !hasIndex(t, old, "toc_jobs_topic_due") {
		t.Error("after MigrateContract: want toc_jobs_status_due, toc_jobs_dead and toc_jobs_ended gone, toc_jobs_topic_due kept")
	}
	if err := old.CheckSchema(ctx); err != nil {
		t.Errorf("CheckSchema with 0029, 0030 and 0032: %v", err)
	}
	// 0032 copied v0.1.0's dead into toc_dead and dropped job 2's entry.
	wantDead("after MigrateContract", 1, 3)
	var entries int
	if err := old.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM toc_dead").Scan(&entries); err != nil || entries != 2 {
		t.Errorf("toc_dead after MigrateContract: %d entries, %v; want 2 (jobs 1 and 3)", entries, err)
	}
	// A new database gets the contract migrations at once.
	if pending, isNew, err := fresh.Pending(ctx); err != nil || !isNew || !slices.Contains(pending, 29) || !slices.Contains(pending, 30) || !slices.Contains(pending, 32) {
		t.Errorf("Pending of a new database = %v, fresh %v, %v; want every migration, 0029, 0030 and 0032 too", pending, isNew, err)
	}
	if err := fresh.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if hasIndex(t, fresh, "toc_jobs_status_due") || hasIndex(t, fresh, "toc_jobs_dead") || hasIndex(t, fresh, "toc_jobs_ended") {
		t.Error("Migrate of a new database kept toc_jobs_status_due, toc_jobs_dead or toc_jobs_ended")
	}
}

// hasIndex reports whether toc_jobs has the index name.
func hasIndex(t *testing.T, s *Store, name string) bool {
	t.Helper()
	q := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	if s.d.name == "mysql" {
		q = "SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'toc_jobs' AND INDEX_NAME = ?"
	}
	var n int
	if err := s.db.QueryRowContext(t.Context(), q, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func testUpgradeTraceParent(t *testing.T, s *Store) {
	ctx := t.Context()
	if err := s.migrateTo(ctx, 10, false); err != nil {
		t.Fatalf("migrate to 0010: %v", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO toc_jobs (job_id, topic, status, action_time, max_attempts, callback, gmt_create, gmt_modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, 1, "old", 0, base.UnixMilli(), 3, "https://example.com/hook", base.UnixMilli(), base.UnixMilli())
	if err != nil {
		t.Fatalf("insert a 0010 row: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate to the last: %v", err)
	}
	old, err := s.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if old.TraceParent != "" || old.Topic != "old" || old.MaxAttempts != 3 {
		t.Errorf("a 0010 row reads back as %+v, want no traceparent", old)
	}
	j := newJob(2, "new", 0)
	j.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	mustInsert(t, s, j)
	if got, err := s.Get(ctx, 2); err != nil || got.TraceParent != j.TraceParent {
		t.Errorf("Get = %+v, %v; want traceparent %s", got, err, j.TraceParent)
	}
}
