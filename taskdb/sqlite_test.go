package taskdb

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// openSQLite returns a migrated store on a new SQLite file.
func openSQLite(tb testing.TB) *Store {
	tb.Helper()
	s := openSQLiteEmpty(tb)
	if err := s.Migrate(tb.Context()); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return s
}

// openSQLiteEmpty returns a store on a new SQLite file, not migrated.
func openSQLiteEmpty(tb testing.TB) *Store {
	tb.Helper()
	s, err := OpenSQLite(tb.Context(), filepath.Join(tb.TempDir(), "toc.db"), Config{})
	if err != nil {
		tb.Fatalf("OpenSQLite: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestSQLite(t *testing.T) {
	runConformance(t, func(t *testing.T) *Store { return openSQLite(t) }, func(t *testing.T) *Store { return openSQLiteEmpty(t) })
}

func TestSQLiteRejectsMemory(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:", "a.db?mode=ro"} {
		if s, err := OpenSQLite(t.Context(), path, Config{}); err == nil {
			s.Close()
			t.Errorf("OpenSQLite(%q) succeeded", path)
		}
	}
}

func TestConfig(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Validate(zero) = %v", err)
	}
	for field, c := range map[string]Config{
		"MaxOpenConns":    {MaxOpenConns: -1},
		"ConnMaxLifetime": {ConnMaxLifetime: -time.Second},
	} {
		var fe *timer.FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("Validate(%+v) = %v, want a FieldError naming %s", c, err, field)
		}
		s, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "toc.db"), c)
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "taskdb config: "+field+": ") {
			t.Errorf("OpenSQLite with %+v = %v", c, err)
		}
		if s != nil {
			s.Close()
		}
	}
	if c := (Config{}).withDefaults(); c.ConnMaxLifetime != DefaultConnMaxLifetime || c.Clock == nil {
		t.Errorf("defaults = %+v", c)
	}
}

// TestSQLitePlans checks that the hot queries use the intended indexes.
func TestSQLitePlans(t *testing.T) {
	s := openSQLite(t)
	complete, completeArgs := completeStatement([]timer.JobID{1, 2}, completeEnd{attempts: 1, status: 200}, time.Time{})
	tests := []struct {
		name, query string
		args        []any
		want        string
	}{
		{"Get", selectJob + "WHERE job_id = ?", []any{1}, "USING INTEGER PRIMARY KEY"},
		{"GetMany", selectJob + "WHERE job_id IN (?, ?, ?)", []any{1, 2, 3}, "USING INTEGER PRIMARY KEY"},
		{"GetByKey", selectJob + "WHERE topic = ? AND idem_key = ?", []any{"t", []byte("k")}, "USING INDEX toc_jobs_topic_key"},
		{"PendingTopics", sqliteDialect.pendingTopics, []any{"", 0, 0, 10, 100}, "USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)"},
		{"ScanTopicRest", scanTopicRest, []any{"t", 0, 0, 10, 0, 0, 0, 100}, "USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)"},
		{"ScanTopics", strings.Replace(scanTopics, "?topics", "?, ?", 1), []any{"t", "u", 0, 0, 10, 100}, "USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)"},
		{"Transition", "UPDATE toc_jobs SET status = ? WHERE job_id = ? AND status = ?", []any{2, 1, 0}, "USING INTEGER PRIMARY KEY"},
		{"Complete", complete, completeArgs, "USING INTEGER PRIMARY KEY"},
		{"ScanOverdue", scanOverdue, []any{10, 100}, "USING INDEX toc_jobs_overdue (waiting_deadline<?)"},
		{"CountByStatus", "SELECT status, COUNT(*) FROM toc_jobs WHERE topic = ? GROUP BY status", []any{"t"}, "USING COVERING INDEX toc_jobs_topic_"},
		{"ListDead", fromDeadTable.list + fromDeadTable.order, []any{"t", 4, 0, 3_600_000, 0, 0, 0, 50}, "SEARCH toc_dead USING PRIMARY KEY (topic=? AND died_at>? AND died_at<?)"},
		{"GroupLive", "SELECT 1 FROM toc_jobs WHERE group_id = ? AND " + liveStatus + " LIMIT 1", []any{[]byte("g")}, "INDEX toc_jobs_group (group_id=? AND group_status=?)"},
		{"NextDeadTopic", fromDeadTable.nextTopic, []any{"t"}, "SEARCH toc_dead USING "},
		{"OldestDead", fromDeadTable.oldest, []any{"t", 4}, "SEARCH toc_dead USING PRIMARY KEY (topic=?)"},
		{"DeadJobs", fromDeadTable.jobs, []any{"t", 4, 3_600_000, 0, 0, 0, 1000}, "SEARCH toc_dead USING PRIMARY KEY (topic=? AND died_at>? AND died_at<?)"},
		{"NextTopic", nextTopic, []any{"t"}, "USING COVERING INDEX toc_jobs_topic_"},
		{"CancelPurgeExpire", cancelPurgeExpire, []any{"t", "t", "t"}, "USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=?)"},
		{"ByDue", byDue, []any{"t", 3, 0, 0, 0, 64}, "USING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>?)"},
		{"ByDueJobs", byDueJobs, []any{"t", 2, 3_600_000, 3_600_000, 0, 0, 0, 1000}, "USING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)"},
		{"LockEnded", lockEnded + "?, ?, ?)", []any{3_600_000, 1, 2, 3}, "USING INTEGER PRIMARY KEY"},
		{"DeleteEndedAttempts", deleteEndedAttempts + "?, ?, ?)", []any{1, 2, 3}, "USING INDEX sqlite_autoindex_toc_attempts_1 (job_id=?)"},
		{"DeleteEnded", deleteEnded + "?, ?, ?)", []any{1, 2, 3}, "USING INTEGER PRIMARY KEY"},
		// The window's jobs from the covering index in its order; their
		// grouping by bucket takes a temporary B-tree (below).
		{"Forecast", fmt.Sprintf(forecast, sqliteDialect.intDiv, sqliteDialect.unsortedGroups), []any{0, 1000, "t", 0, 0, 3_600_000, 1_000_001},
			"USING COVERING INDEX toc_jobs_topic_due (topic=? AND status=? AND action_time>? AND action_time<?)"},
	}
	for _, tc := range tests {
		rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		// Forecast's one sort is of the jobs by bucket, for GROUP BY.
		sorts := strings.ReplaceAll(p, "USE TEMP B-TREE FOR GROUP BY", "")
		if tc.name != "Forecast" {
			sorts = p
		}
		if !strings.Contains(p, tc.want) || strings.Contains(sorts, "TEMP B-TREE") {
			t.Errorf("%s: plan\n%s\nwant %q and no sort", tc.name, p, tc.want)
		}
		t.Logf("%s:\n%s", tc.name, p)
	}
}

// TestMigrations checks that both dialects have the same migrations, each
// of at least one statement.
func TestMigrations(t *testing.T) {
	my, err := loadMigrations("mysql")
	if err != nil {
		t.Fatal(err)
	}
	lite, err := loadMigrations("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if len(my) != len(lite) {
		t.Fatalf("%d mysql migrations, %d sqlite", len(my), len(lite))
	}
	for i := range my {
		if my[i].name != lite[i].name || len(my[i].stmts) == 0 || len(lite[i].stmts) == 0 {
			t.Errorf("migration %d: mysql %s (%d statements), sqlite %s (%d statements)",
				i+1, my[i].name, len(my[i].stmts), lite[i].name, len(lite[i].stmts))
		}
	}
}

// Issue 34, item 2: every MySQL statement that changes a table declares
// how MariaDB must do it, ALGORITHM (INSTANT, NOCOPY or INPLACE, never
// COPY) and LOCK = NONE, so that MariaDB refuses a change that would
// copy toc_jobs or block its writes instead of doing it for as long as
// the table takes; a migration that cannot be online needs another way
// (docs/operations.md, Migrations).
func TestMySQLMigrationsAreOnline(t *testing.T) {
	ms, err := loadMigrations("mysql")
	if err != nil {
		t.Fatal(err)
	}
	// The migrations MariaDB cannot apply online, and why: each ran on
	// every store before the rule, and no new one may join them.
	offline := map[int]string{
		19: "adds a stored column to toc_jobs, whose indexed virtual column (0018) makes MariaDB rebuild it with writes blocked",
	}
	norm := strings.NewReplacer(" ", "", "\n", "", "\t", "")
	for _, m := range ms {
		for _, stmt := range m.stmts {
			up := strings.ToUpper(stmt)
			if !strings.HasPrefix(up, "ALTER TABLE") && !strings.HasPrefix(up, "CREATE INDEX") && !strings.HasPrefix(up, "CREATE UNIQUE INDEX") {
				continue
			}
			flat := norm.Replace(up)
			lock := strings.Contains(flat, "LOCK=NONE") || (offline[m.version] != "" && strings.Contains(flat, "LOCK=SHARED"))
			online := lock && (strings.Contains(flat, "ALGORITHM=INSTANT") ||
				strings.Contains(flat, "ALGORITHM=NOCOPY") || strings.Contains(flat, "ALGORITHM=INPLACE"))
			if !online {
				t.Errorf("%s: %.60q... declares no online ALGORITHM and LOCK = NONE", m.name, stmt)
			}
		}
	}
}

// Issue 34, item 3: every migration after v0.1.0's last (0021) is
// additive, in both dialects, so that v0.1.0 serves on the schema this
// build migrated and a rolling upgrade can go back (docs/operations.md, Upgrades). A
// migration that cannot be additive makes its release a full-stop one:
// raise lastOfPrevious to it when that release is out, and say so in
// CHANGELOG. A contract migration is the exception that keeps the rule:
// Migrate leaves it alone under the previous release's members (see
// migration.contract).
func TestMigrationsSincePreviousReleaseAreAdditive(t *testing.T) {
	const lastOfPrevious = 21 // v0.1.0
	for _, dialect := range []string{"mysql", "sqlite"} {
		ms, err := loadMigrations(dialect)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.version > lastOfPrevious && !m.additive && !m.contract {
				t.Errorf("%s/%s is not marked %q: a build before it would misread the schema, or refuse it, mid-upgrade", dialect, m.name, additiveMark)
			}
		}
	}
}
