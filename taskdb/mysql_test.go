package taskdb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// openMariaDB returns a migrated store on a new database of the shared
// mariadbd.
func openMariaDB(tb testing.TB) *Store {
	tb.Helper()
	s := openMariaDBEmpty(tb)
	if err := s.Migrate(tb.Context()); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

// openMariaDBEmpty returns a store on a new database of the shared
// mariadbd, not migrated.
func openMariaDBEmpty(tb testing.TB) *Store {
	tb.Helper()
	dsn := testenv.MariaDB(tb).NewDatabase(tb)
	s, err := OpenMySQL(tb.Context(), dsn, Config{MaxOpenConns: 8})
	if err != nil {
		tb.Fatalf("OpenMySQL: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestMariaDB(t *testing.T) {
	runConformance(t, func(t *testing.T) *Store { return openMariaDB(t) }, func(t *testing.T) *Store { return openMariaDBEmpty(t) })
}

// TestMariaDBConcurrentMigrate runs four migrators on one empty database.
func TestMariaDBConcurrentMigrate(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := OpenMySQL(t.Context(), dsn, Config{})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			errs <- s.Migrate(t.Context())
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestMariaDBFoundRows checks that OpenMySQL sets clientFoundRows whatever
// the DSN says: an update that changes nothing still reports its match.
func TestMariaDBFoundRows(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	s, err := OpenMySQL(t.Context(), dsn+"&clientFoundRows=false", Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, newJob(1, "t", 0))
	for range 2 {
		if ok, err := s.Reschedule(t.Context(), 1, base, base); !ok || err != nil {
			t.Errorf("Reschedule to the same values = %t, %v; want true", ok, err)
		}
	}
}

// explain is one row of MariaDB's EXPLAIN.
type explain struct {
	table, typ, key, extra string
}

// TestMariaDBExplain checks that the hot queries use the intended indexes
// on a table large enough for the optimizer to care.
func TestMariaDBExplain(t *testing.T) {
	s := openMariaDB(t)
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "t", Slots: 16}); err != nil {
		t.Fatal(err)
	}
	statuses := []timer.Status{timer.StatusPending, timer.StatusDone, timer.StatusDone, timer.StatusCancelled, timer.StatusDead}
	js := jobs(1, 5000, "t")
	for i, j := range js {
		j.Status = statuses[i%len(statuses)]
		j.DueAt = base.Add(time.Duration(i%500) * time.Second)
		j.Key = fmt.Sprint("k", i)
		j.BizID = uint64(i%100 + 1)
	}
	mustInsert(t, s, js...)
	if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE toc_jobs, toc_topics, toc_dead"); err != nil {
		t.Fatal(err)
	}
	complete, completeArgs := completeStatement([]timer.JobID{1, 2, 3}, completeEnd{attempts: 1, status: 200}, base)
	tests := []struct {
		name, query string
		args        []any
		want        []explain // the key and type per table
	}{
		{"Get", selectJob + "WHERE job_id = ?", []any{1},
			[]explain{{table: "toc_jobs", typ: "const", key: "PRIMARY"}}},
		{"GetMany", selectJob + "WHERE job_id IN (?, ?, ?)", []any{1, 2, 3},
			[]explain{{table: "toc_jobs", typ: "range", key: "PRIMARY"}}},
		{"GetByKey", selectJob + "WHERE topic = ? AND idem_key = ?", []any{"t", []byte("k7")},
			[]explain{{table: "toc_jobs", typ: "const", key: "toc_jobs_topic_key"}}},
		// The backstop's page: one dive a topic for the topics with
		// pending jobs in the range, then ranges of the covering index in
		// its order (no filesort).
		{"PendingTopics", mysqlDialect.pendingTopics, []any{"", 0, base.UnixMilli(), base.Add(100 * time.Second).UnixMilli(), 100},
			[]explain{{table: "toc_jobs", typ: "range", key: "toc_jobs_topic_due", extra: "Using index for group-by"}}},
		{"ScanTopicRest", scanTopicRest, []any{"t", 0, 0, base.Add(100 * time.Second).UnixMilli(), base.UnixMilli(), base.UnixMilli(), 10, 100},
			[]explain{{table: "j", typ: "range", key: "toc_jobs_topic_due", extra: "Using index"}, {table: "t", typ: "const|eq_ref", key: "PRIMARY"}}},
		{"ScanTopics", strings.Replace(scanTopics, "?topics", "?, ?", 1), []any{"t", "u", 0, 0, base.Add(100 * time.Second).UnixMilli(), 100},
			[]explain{{table: "j", typ: "range", key: "toc_jobs_topic_due", extra: "Using index"}, {table: "t", typ: "eq_ref", key: "PRIMARY"}}},
		{"Transition", "UPDATE toc_jobs SET status = ?, gmt_modified = ? WHERE job_id = ? AND status = ?", []any{2, 0, 1, 0},
			[]explain{{table: "toc_jobs", typ: "range", key: "PRIMARY"}}},
		{"Complete", complete, completeArgs,
			[]explain{{table: "toc_jobs", typ: "range", key: "PRIMARY"}}},
		// The jobs waiting past their deadline are one range of
		// toc_jobs_overdue in its order, whatever the other pending jobs.
		{"ScanOverdue", scanOverdue, []any{base.Add(time.Hour).UnixMilli(), 100},
			[]explain{{table: "toc_jobs", typ: "range", key: "toc_jobs_overdue"}}},
		{"CountByStatus", "SELECT status, COUNT(*) FROM toc_jobs WHERE topic = ? GROUP BY status", []any{"t"},
			[]explain{{table: "toc_jobs", typ: "ref", key: "toc_jobs_topic_due"}}},
		{"CountJobs", "SELECT 1 FROM toc_jobs WHERE topic = ? AND status = ? LIMIT ?", []any{"t", 0, 10001},
			[]explain{{table: "toc_jobs", typ: "ref", key: "toc_jobs_topic_due", extra: "Using index"}}},
		// A page of dead letters reads the topic's range of toc_dead in
		// its order, each row by primary key (before 0032, the topic's dead
		// rows of toc_jobs_ended), and a group's live member is a lookup in
		// toc_jobs_group alone.
		{"ListDead", fromDeadTable.list + fromDeadTable.order, []any{"t", 4, 0, base.Add(time.Hour).UnixMilli(), 0, 0, 0, 50},
			[]explain{{table: "toc_dead", typ: "ref|range", key: "PRIMARY"}, {table: "toc_jobs", typ: "eq_ref", key: "PRIMARY"}}},
		{"GroupLive", "SELECT 1 FROM toc_jobs WHERE group_id = ? AND " + liveStatus + " LIMIT 1", []any{[]byte("g")},
			[]explain{{table: "toc_jobs", typ: "ref|range", key: "toc_jobs_group", extra: "Using index"}}},
		// Retention of the dead: the next topic with one is a dive into
		// toc_dead, its oldest another, a page of them a range of it in
		// its order, each row by primary key.
		{"NextDeadTopic", fromDeadTable.nextTopic, []any{"t"},
			[]explain{{table: "toc_dead", typ: "range", key: "PRIMARY|toc_dead_job", extra: "Using index"}}},
		{"OldestDead", fromDeadTable.oldest, []any{"t", 4},
			[]explain{{table: "toc_dead", typ: "ref|range", key: "PRIMARY"}, {table: "toc_jobs", typ: "eq_ref", key: "PRIMARY"}}},
		{"DeadJobs", fromDeadTable.jobs, []any{"t", 4, base.Add(time.Hour).UnixMilli(), 0, 0, 0, 1000},
			[]explain{{table: "toc_dead", typ: "ref|range", key: "PRIMARY"}, {table: "toc_jobs", typ: "eq_ref", key: "PRIMARY"}}},
		// The other ended jobs: the next topic is one dive into an index
		// that leads with the topic; whether it has cancelled, purged or
		// expired jobs one dive each; its jobs of a status a range of
		// toc_jobs_topic_due by due time, which their end moved them into.
		{"NextTopic", nextTopic, []any{"t"},
			[]explain{{table: "toc_jobs", typ: "range", key: "toc_jobs_topic_due|toc_jobs_topic_key|toc_jobs_topic_biz", extra: "Using index"}}},
		{"CancelPurgeExpire", cancelPurgeExpire, []any{"t", "t", "t"}, []explain{{extra: "No tables used"},
			{table: "toc_jobs", typ: "ref", key: "toc_jobs_topic_due", extra: "Using index"},
			{table: "toc_jobs", typ: "ref", key: "toc_jobs_topic_due", extra: "Using index"},
			{table: "toc_jobs", typ: "ref", key: "toc_jobs_topic_due", extra: "Using index"}}},
		{"ByDue", byDue, []any{"t", 3, 0, 0, 0, 64},
			[]explain{{table: "toc_jobs", typ: "ref|range", key: "toc_jobs_topic_due"}}},
		{"ByDueJobs", byDueJobs, []any{"t", 2, base.Add(time.Hour).UnixMilli(), base.Add(time.Hour).UnixMilli(), 0, 0, 0, 1000},
			[]explain{{table: "toc_jobs", typ: "ref|range", key: "toc_jobs_topic_due"}}},
		{"LockEnded", lockEnded + "?, ?, ?)", []any{base.Add(time.Hour).UnixMilli(), 1, 2, 3},
			[]explain{{table: "toc_jobs", typ: "range", key: "PRIMARY"}}},
		{"DeleteEndedAttempts", deleteEndedAttempts + "?, ?, ?)", []any{1, 2, 3},
			[]explain{{table: "toc_attempts", typ: "range", key: "PRIMARY"}}},
		{"DeleteEnded", deleteEnded + "?, ?, ?)", []any{1, 2, 3},
			[]explain{{table: "toc_jobs", typ: "range", key: "PRIMARY"}}},
		// The jobs of the window are one range of the index in its order,
		// read from the index alone; the buckets are grouped in a
		// temporary table, unsorted.
		{"Forecast", fmt.Sprintf(forecast, mysqlDialect.intDiv, mysqlDialect.unsortedGroups), []any{base.UnixMilli(), 10_000, "t", 0, base.UnixMilli(), base.Add(time.Hour).UnixMilli(), 1_000_001},
			[]explain{{table: "<derived2>", typ: "ALL"}, {table: "toc_jobs", typ: "range", key: "toc_jobs_topic_due", extra: "Using index"}}},
	}
	// ListJobs: a topic's pending jobs from a cursor, a business id's, a
	// key's, each a range of an index in its order (no filesort).
	after := timer.Cursor{DueAt: base.Add(10 * time.Second), ID: 5}
	for name, c := range map[string]struct {
		q      timer.JobQuery
		states []rowState
		want   explain
	}{
		"ListJobs pending": {timer.JobQuery{Topic: "t", After: after, Limit: 50}, rowStatuses([]timer.Status{timer.StatusPending}),
			explain{table: "toc_jobs", typ: "range|ref", key: "toc_jobs_topic_due"}},
		"ListJobs biz_id": {timer.JobQuery{Topic: "t", BizID: 7, After: after, Limit: 50}, nil,
			explain{table: "toc_jobs", typ: "range|ref", key: "toc_jobs_topic_biz"}},
		"ListJobs key": {timer.JobQuery{Topic: "t", Key: "k7", Limit: 50}, nil,
			explain{table: "toc_jobs", typ: "const|range|ref", key: "toc_jobs_topic_key"}},
	} {
		query, args := searchQuery(c.q, c.states, mysqlDialect.uint64Arg)
		tests = append(tests, struct {
			name, query string
			args        []any
			want        []explain
		}{name, query, args, []explain{c.want}})
	}
	for _, tc := range tests {
		got := runExplain(t, s, tc.query, tc.args...)
		var lines []string
		for _, e := range got {
			lines = append(lines, fmt.Sprintf("%s %s %s %s", e.table, e.typ, e.key, e.extra))
		}
		t.Logf("%s:\n%s", tc.name, strings.Join(lines, "\n"))
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d tables in the plan, want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i, w := range tc.want {
			g := got[i]
			if g.table != w.table || !slices.Contains(strings.Split(w.key, "|"), g.key) || !slices.Contains(strings.Split(w.typ, "|"), g.typ) ||
				strings.Contains(g.extra, "filesort") ||
				!strings.Contains(g.extra, w.extra) {
				t.Errorf("%s: table %s: type %s key %s (%s), want type %s key %s (%s) and no filesort",
					tc.name, g.table, g.typ, g.key, g.extra, w.typ, w.key, w.extra)
			}
		}
	}
}

func runExplain(t *testing.T, s *Store, query string, args ...any) []explain {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var plan []explain
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		col := func(name string) string {
			for i, c := range cols {
				if c == name && vals[i] != nil {
					return fmt.Sprintf("%s", vals[i])
				}
			}
			return ""
		}
		plan = append(plan, explain{table: col("table"), typ: col("type"), key: col("key"), extra: col("Extra")})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}

// The retirer's reads are bounded on MariaDB (dialect.bounded): one that
// would run long, as a walk of the table while a migration rebuilds its
// index would, is ended by the server with an error, and so cannot hold
// toc_jobs's metadata lock, and an ALTER and the fire path behind it,
// longer than maxBackgroundRead (issue 34, item 2).
func TestMariaDBBackgroundReadsAreBounded(t *testing.T) {
	s := openMariaDB(t)
	var n int
	err := s.rdb.QueryRowContext(t.Context(), s.d.bounded+"SELECT SLEEP(?)", (4 * maxBackgroundRead).Seconds()).Scan(&n)
	if err == nil || !strings.Contains(err.Error(), "max_statement_time") {
		t.Fatalf("a bounded read of 4 × %v = %d, %v; want it ended by max_statement_time", maxBackgroundRead, n, err)
	}
	if err := s.rdb.QueryRowContext(t.Context(), s.d.bounded+"SELECT ? + 1", 41).Scan(&n); err != nil || n != 42 {
		t.Fatalf("a short bounded read = %d, %v", n, err)
	}
}

// A migration waits at most migrationLockWait for a table's metadata lock
// (issue 34, item 2): an ALTER waiting for it holds every later
// statement on the table, the fire path's writes among them, behind it.
// Behind a transaction that keeps toc_jobs open it gives up, tries
// again, and says what to do when it never gets the lock; once the
// transaction ends, it applies.
func TestMariaDBMigrationWaitsBoundedForALock(t *testing.T) {
	s := openMariaDB(t)
	ctx := t.Context()
	unmigrate := func() {
		t.Helper()
		for _, stmt := range []string{
			"ALTER TABLE toc_jobs DROP INDEX IF EXISTS toc_jobs_ended, ALGORITHM = NOCOPY, LOCK = NONE",
			"DELETE FROM toc_schema_migrations WHERE version = 25",
		} {
			if _, err := s.db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	hold := func() *sql.Tx {
		t.Helper()
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM toc_jobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	tries := migrationLockTries
	t.Cleanup(func() { migrationLockTries = tries })

	unmigrate()
	migrationLockTries = 2
	blocker := hold()
	err := s.Migrate(ctx)
	blocker.Rollback()
	if err == nil || !s.d.isLockWait(err) || !strings.Contains(err.Error(), "SHOW PROCESSLIST") || !strings.Contains(err.Error(), "0025") {
		t.Fatalf("Migrate behind an open transaction = %v, want a lock wait timeout on 0025 saying what to do", err)
	}

	migrationLockTries = tries
	blocker = hold()
	go func() {
		time.Sleep(3 * migrationLockWait / 2)
		blocker.Rollback()
	}()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate behind a transaction that ends after %v: %v", 3*migrationLockWait/2, err)
	}
	if pending, _, err := s.Pending(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("pending after Migrate: %v, %v", pending, err)
	}
}

// A MariaDB whose statistics would make it read every entry of a topic
// for pendingTopics (a table that grew fast, one or two topics) gets the
// topics one statement at a time instead: the same pages, in the same
// order, as the loose index scan gives.
func TestMariaDBScanPendingWithoutLooseScan(t *testing.T) {
	s := openMariaDB(t)
	ctx := t.Context()
	var js []*timer.Job
	statuses := []timer.Status{timer.StatusPending, timer.StatusDone, timer.StatusPending, timer.StatusCancelled}
	for i := range 600 {
		j := newJob(timer.JobID(i+1), fmt.Sprintf("t%02d", i%23), int64(i%40)*1000)
		j.Status = statuses[i%len(statuses)]
		if i%23 == 7 {
			j.Status = timer.StatusDone // a topic with nothing pending
		}
		js = append(js, j)
	}
	mustInsert(t, s, js...)
	if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE toc_jobs"); err != nil {
		t.Fatal(err)
	}
	pages := func(q timer.ScanQuery) []timer.Timer {
		t.Helper()
		var all []timer.Timer
		for {
			page, err := s.ScanPending(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, page...)
			if len(page) < q.Limit {
				return all
			}
			q.After = timer.ScanCursorOf(page[len(page)-1])
		}
	}
	explained := 0
	looseScan := s.d.looseScan
	counting := func(ctx context.Context, db *sql.DB, query string, args ...any) (bool, error) {
		explained++
		return looseScan(ctx, db, query, args...)
	}
	for _, q := range []timer.ScanQuery{
		{Before: base.Add(time.Hour), Limit: 7},
		{Since: base.Add(10 * time.Second), Before: base.Add(30 * time.Second), Limit: 50},
		{Before: base.Add(time.Hour), Limit: 1000},
	} {
		explained, s.d.looseScan = 0, counting
		want := pages(q)
		if explained == 0 || len(want) == 0 {
			t.Fatalf("%+v: %d timers, %d plans checked; want some of each", q, len(want), explained)
		}
		s.d.looseScan = func(context.Context, *sql.DB, string, ...any) (bool, error) { return false, nil }
		for _, small := range []bool{false, true} {
			s.d.smallTopics = func(context.Context, *sql.DB) (bool, error) { return small, nil }
			s.topicStats.at = time.Time{} // forget the last answer
			got := pages(q)
			if !slices.EqualFunc(got, want, func(a, b timer.Timer) bool { return timer.CompareScan(a, b) == 0 && a.Slots == b.Slots }) {
				t.Errorf("%+v, small topics %v: without the loose index scan read %d timers, with it %d, or in another order", q, small, len(got), len(want))
			}
		}
	}
	// After ANALYZE, MariaDB plans the loose index scan, and its
	// statistics count 23 topics of about 26 rows each: small ones.
	loose, err := explainsLooseScan(ctx, s.db, mysqlDialect.pendingTopics, "", 0, 0, base.Add(time.Hour).UnixMilli(), 16)
	if err != nil || !loose {
		t.Errorf("explainsLooseScan after ANALYZE = %v, %v; want true", loose, err)
	}
	if small, err := statsSmallTopics(ctx, s.db); err != nil || !small {
		t.Errorf("statsSmallTopics after ANALYZE of 600 rows in 23 topics = %v, %v; want true", small, err)
	}
}

// A page of the backstop's scan reads its jobs in index order, with no
// sort, on a table just filled: given one topic in scanTopics' IN list,
// MariaDB dropped the topic from the ORDER BY as a constant, no longer
// saw that toc_jobs_topic_due gives the order, and read and sorted every
// pending job of the topic for each page (issue 35, a second a page for
// 1,000,000 jobs). EXPLAIN shows that sort as "Using filesort".
func TestMariaDBScanPageNeedsNoSort(t *testing.T) {
	s := openMariaDB(t)
	ctx := t.Context()
	for c := range 20 {
		js := make([]*timer.Job, 0, 1000)
		for i := range 1000 {
			n := c*1000 + i
			js = append(js, newJob(timer.JobID(n+1), []string{"one", "two"}[n%7/6], int64(n%5000)*1000))
		}
		mustInsert(t, s, js...)
	}
	for _, topics := range [][]any{{"one"}, {"two"}, {"one", "two"}} {
		query, args := topicsPage(topics, math.MinInt64, math.MaxInt64, 100)
		extra, err := explainColumn(ctx, s.db, "Extra", query, args...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.Join(extra, "; "), "filesort") {
			t.Errorf("a page of %v: EXPLAIN %q; want no sort", topics, extra)
		}
	}
}

// Issue 35: statistics that count one topic, or none, for thousands of
// rows are not small topics, so a scan without the loose index scan goes
// a topic a statement (dialect.smallTopics).
func TestMariaDBStatsSmallTopics(t *testing.T) {
	s := openMariaDB(t)
	ctx := t.Context()
	var js []*timer.Job
	for i := range 3000 {
		js = append(js, newJob(timer.JobID(i+1), fmt.Sprintf("t%d", i%2), int64(i)*10))
	}
	mustInsert(t, s, js...)
	if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE toc_jobs"); err != nil {
		t.Fatal(err)
	}
	if small, err := statsSmallTopics(ctx, s.db); err != nil || small {
		t.Errorf("statsSmallTopics of 3,000 rows in 2 topics = %v, %v; want false", small, err)
	}
	empty := openMariaDB(t)
	if small, err := statsSmallTopics(ctx, empty.db); err != nil || small {
		t.Errorf("statsSmallTopics of an empty toc_jobs = %v, %v; want false", small, err)
	}
}
