package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toc-project/toc/timer"
)

// sqliteDialect is SQLite through modernc.org/sqlite.
var sqliteDialect = dialect{
	name:    "sqlite",
	maxVars: 32766, // SQLITE_MAX_VARIABLE_NUMBER
	// SQLite's INTEGER is signed: keep the bits, read them back the same.
	uint64Arg:      func(v uint64) any { return int64(v) },
	keepTopic:      " ON CONFLICT (name) DO NOTHING",
	insertIgnore:   "INSERT OR IGNORE",
	insertAttempts: "INSERT OR IGNORE INTO toc_attempts (job_id, attempt, started_at, duration_ms, status_code, error, excerpt) VALUES ",
	// DELETE ... LIMIT needs a compile-time option; a rowid subquery does not.
	pruneAttempts: "DELETE FROM toc_attempts WHERE rowid IN (SELECT rowid FROM toc_attempts WHERE started_at < ? ORDER BY started_at LIMIT ?)",
	prunePacks:    "DELETE FROM toc_done_attempts WHERE (done_at, first_job) IN (SELECT done_at, first_job FROM toc_done_attempts WHERE done_at < ? ORDER BY done_at LIMIT ?)",
	pruneAudit:    "DELETE FROM toc_audit_log WHERE audit_id IN (SELECT audit_id FROM toc_audit_log WHERE at < ? ORDER BY at, audit_id LIMIT ?)",
	isConflict: func(err error) bool {
		var se *sqlite.Error
		return errors.As(err, &se) &&
			(se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE)
	},
	nowMillis: "CAST(unixepoch('subsec') * 1000 AS INTEGER)",
	// SQLite's clock has milliseconds.
	clockMicros: "SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER) * 1000",
	tableExists: "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
	intDiv:      " / ", // of two integers, an integer
	// Each topic in turn by MIN(topic) past the last, one index search
	// each, then whether it has a job in the range, another.
	pendingTopics: `WITH RECURSIVE topics(name) AS (
			SELECT MIN(topic) FROM toc_jobs WHERE topic > ?
			UNION ALL
			SELECT (SELECT MIN(topic) FROM toc_jobs WHERE topic > name) FROM topics WHERE name IS NOT NULL)
		SELECT name, 0 FROM topics WHERE EXISTS (SELECT 1 FROM toc_jobs
			WHERE topic = name AND status = ? AND action_time >= ? AND action_time < ?)
		LIMIT ?`,
	// BEGIN IMMEDIATE (see _txlock) takes the database's write lock.
	lockMigrations: func(context.Context, *sql.Conn) (func(), error) { return func() {}, nil },
}

// SQLite connection settings. Each connection waits up to busyTimeout for
// a lock instead of failing with SQLITE_BUSY; synchronous=FULL makes a
// commit durable across power loss, as the source of truth must be.
const (
	busyTimeout  = "10000" // ms
	sqliteCommon = "_pragma=busy_timeout(" + busyTimeout + ")&_pragma=foreign_keys(0)&_pragma=synchronous(FULL)"
	// The writer sets WAL (it persists in the file) and begins every
	// transaction with BEGIN IMMEDIATE, taking the write lock up front.
	sqliteWriter = "?_pragma=journal_mode(WAL)&" + sqliteCommon + "&_txlock=immediate"
	sqliteReader = "?" + sqliteCommon + "&_pragma=query_only(1)"
)

// OpenSQLite opens a Store on the SQLite database file at path, creating
// the file if needed. It uses WAL and two pools: one writer connection,
// so concurrent writers queue in Go rather than collide on SQLite's lock,
// and read-only connections (see Config.MaxOpenConns), which WAL lets
// read beside the writer. The database must be a file: ":memory:" would
// give each connection its own database. An invalid cfg is an error
// wrapping its *timer.FieldError.
func OpenSQLite(ctx context.Context, path string, cfg Config) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.Contains(path, ":memory:") {
		return nil, fmt.Errorf("open sqlite %q: want a file path without '?': %w", path, timer.ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("taskdb config: %w", err)
	}
	cfg = cfg.withDefaults()
	w, err := sql.Open("sqlite", path+sqliteWriter)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// Open the writer first, so WAL is set before any reader connects.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", path+sqliteReader)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	n := cmp.Or(cfg.MaxOpenConns, max(4, runtime.GOMAXPROCS(0)))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return &Store{db: w, rdb: r, d: sqliteDialect, now: cfg.Clock}, nil
}
