// Store, its Config, the dialects' common shape, and what the other
// files share: transactions, error translation, conditional updates,
// placeholders and unsigned columns. jobs.go, topics.go and scans.go hold
// the queries; mysql.go and sqlite.go open the backends.

package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/timer"
)

// Store is the task store on MySQL/MariaDB or SQLite. It is safe for
// concurrent use.
type Store struct {
	// db takes every write, and the reads too on MySQL.
	db *sql.DB
	// rdb takes the reads: the same pool as db on MySQL, a pool of
	// read-only connections beside the one writer on SQLite.
	rdb *sql.DB
	d   dialect
	now func() time.Time
	// topicStats is the dialect's last smallTopics answer, kept for
	// topicStatsFor: its source (information_schema) costs tens of ms.
	topicStats struct {
		sync.Mutex
		small bool
		at    time.Time
	}
	// deadTable is set once toc_dead is the one record of dead letters
	// (deadTableMigration applied): see readsDeadTable.
	deadTable atomic.Bool
	// fresh is the pending jobs inserted lately, for FireNew.
	fresh fresh
}

// topicStatsFor is how long ScanPending keeps an answer of smallTopics.
// InnoDB recomputes the statistics it reads after a tenth of the table
// changed, not faster.
const topicStatsFor = time.Minute

var _ timer.Store = (*Store)(nil)

// dialect is what differs between the backends.
type dialect struct {
	// name names the backend and its directory of migrations.
	name string
	// maxVars is the most placeholders one statement may hold.
	maxVars int
	// uint64Arg turns the value of an unsigned 64-bit column into an
	// argument.
	uint64Arg func(uint64) any
	// keepTopic ends insertTopics: a row whose name exists is skipped.
	keepTopic string
	// insertAttempts begins a multi-row insert of attempts (job_id,
	// attempt, started_at, duration_ms, status_code, error, excerpt) that
	// skips a row whose primary key exists.
	insertAttempts string
	// insertIgnore begins an INSERT that skips a row whose primary key
	// exists ("INSERT IGNORE", "INSERT OR IGNORE").
	insertIgnore string
	// pruneAttempts deletes up to ? attempts that started before ?
	// (arguments: before, limit).
	pruneAttempts string
	// lockRows ends a SELECT whose rows the transaction must hold until
	// it ends (" FOR UPDATE"); empty where the one writer holds them all.
	lockRows string
	// prunePacks deletes up to ? packs of toc_done_attempts written
	// before ? (arguments: before, limit).
	prunePacks string
	// pruneAudit deletes up to ? audit entries recorded before ?
	// (arguments: before, limit).
	pruneAudit string
	// isConflict reports a duplicate primary or unique key.
	isConflict func(error) bool
	// nowMillis is an SQL expression of the database's clock in Unix ms.
	nowMillis string
	// clockMicros reads the database's clock in Unix µs (ClockNow).
	clockMicros string
	// tableExists counts the tables of the database named ? (0 or 1).
	tableExists string
	// bounded begins a background read of toc_jobs (the retirer's) that
	// the database ends after maxBackgroundRead: a read that walked the
	// table instead of its index (an index a migration is rebuilding)
	// would hold the table's metadata lock for as long, and an ALTER
	// waiting for that lock holds every write of the fire path behind it.
	// Empty where the backend has no such limit (SQLite, one process).
	bounded string
	// intDiv is the operator of integer division, rounding toward zero.
	intDiv string
	// unsortedGroups ends a GROUP BY whose groups may come in any order:
	// MySQL sorts them unless told not to; SQLite needs nothing.
	unsortedGroups string
	// pendingTopics selects (topic, a number) of the topics after
	// ? with jobs of status ? due in [?, ?), in order, up to ? of them,
	// walking toc_jobs_topic_due one dive a topic rather than row by row:
	// MySQL's loose index scan does it; SQLite needs it spelled out.
	pendingTopics string
	// looseScan reports whether the database plans pendingTopics as one
	// dive a topic; nil where it always does (SQLite spells it out).
	// MariaDB plans it from its index statistics, which a table that grew
	// fast, or holds one or two topics, can leave so far off that it reads
	// every entry of those topics instead: then ScanPending finds the
	// topics one statement at a time (nextPendingTopic).
	looseScan func(ctx context.Context, db *sql.DB, query string, args ...any) (bool, error)
	// smallTopics reports whether the database's statistics count topics
	// of a few entries of toc_jobs_topic_due each, on average: then a
	// plan of pendingTopics that is not a loose index scan is the
	// optimizer's fair choice (reading a topic's few entries costs less
	// than a dive), and ScanPending runs it rather than a statement a
	// topic. Statistics that count no topic, or one, are the stale kind
	// looseScan is wary of.
	smallTopics func(ctx context.Context, db *sql.DB) (bool, error)
	// estimateRows returns the database's estimate of the rows a SELECT
	// reads, which costs a few index dives however many there are; nil
	// when the backend makes none.
	estimateRows func(ctx context.Context, db *sql.DB, query string, args ...any) (int64, error)
	// lockMigrations keeps other migrators out until unlock is called.
	// On MySQL it also bounds the migrator's waits for a table's metadata
	// lock to migrationLockWait.
	lockMigrations func(ctx context.Context, conn *sql.Conn) (unlock func(), err error)
	// isLockWait reports a statement that gave up waiting for a lock
	// (nil where none gives up).
	isLockWait func(error) bool
}

// Defaults of the connection pool.
const (
	// DefaultMaxOpenConns caps the connections to MySQL.
	DefaultMaxOpenConns = 32
	// DefaultConnMaxLifetime bounds how long a connection is reused, so
	// that a load balancer or a failover does not find it stale.
	DefaultConnMaxLifetime = 3 * time.Minute
)

// Config configures a Store as it is opened. The zero Config is the
// defaults.
type Config struct {
	// MaxOpenConns caps the open connections: to MySQL
	// (DefaultMaxOpenConns when 0), or the read-only connections of SQLite
	// (GOMAXPROCS, at least 4, when 0). SQLite always has exactly one
	// writer.
	MaxOpenConns int
	// ConnMaxLifetime bounds how long a connection is reused;
	// DefaultConnMaxLifetime when 0.
	ConnMaxLifetime time.Duration
	// Clock is read where a call carries no time: a job inserted with a
	// zero CreatedAt, a topic ensured with a zero CreatedAt, and a
	// migration's applied_at; time.Now when nil.
	Clock func() time.Time
}

// Validate returns a *timer.FieldError naming the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.MaxOpenConns < 0:
		return &timer.FieldError{Field: "MaxOpenConns", Message: fmt.Sprintf("%d is negative", c.MaxOpenConns)}
	case c.ConnMaxLifetime < 0:
		return &timer.FieldError{Field: "ConnMaxLifetime", Message: fmt.Sprintf("%v is negative", c.ConnMaxLifetime)}
	}
	return nil
}

// withDefaults fills the fields that have a default whatever the backend;
// MaxOpenConns has one per backend, filled where the pool is opened.
func (c Config) withDefaults() Config {
	c.ConnMaxLifetime = cmp.Or(c.ConnMaxLifetime, DefaultConnMaxLifetime)
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Close closes the connection pools.
func (s *Store) Close() error {
	if s.rdb == s.db {
		return s.db.Close()
	}
	return errors.Join(s.db.Close(), s.rdb.Close())
}

// ClockNow reads the database's clock: the reference time of a cluster's
// members (timer.Clock). MySQL's UTC_TIMESTAMP, in microseconds, is free
// of the session's time zone.
func (s *Store) ClockNow(ctx context.Context) (time.Time, error) {
	var us int64
	if err := s.rdb.QueryRowContext(ctx, s.d.clockMicros).Scan(&us); err != nil {
		return time.Time{}, fmt.Errorf("read the %s clock: %w", s.d.name, err)
	}
	return time.UnixMicro(us), nil
}

// Ping checks that the database answers, for readiness probes.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", s.d.name, err)
	}
	if s.rdb != s.db {
		if err := s.rdb.PingContext(ctx); err != nil {
			return fmt.Errorf("ping %s readers: %w", s.d.name, err)
		}
	}
	return nil
}

// Bounds of one statement. The bounds of the columns are timer's (see
// timer.CheckJob), checked before a write so both backends reject the
// same values (SQLite would store anything).
const (
	// maxChunkBytes bounds the SQL text of one multi-row statement, well
	// under MariaDB's default max_allowed_packet of 16 MiB.
	maxChunkBytes = 4 << 20
	// maxInList bounds the ids of one IN (...) list.
	maxInList = 5000
)

// execer is a pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// querier is a pool or a transaction, to read with.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// eachRow runs query with args on q and calls fn with each row, until fn
// fails.
func eachRow(ctx context.Context, q querier, fn func(*sql.Rows) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// inTx runs fn in a transaction when tx is set, else straight on the pool
// (one statement is atomic on its own).
func (s *Store) inTx(ctx context.Context, tx bool, fn func(execer) error) error {
	if !tx {
		return fn(s.db)
	}
	t, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return errors.Join(err, ignoreDone(t.Rollback()))
	}
	return t.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// translate turns a driver error into the domain's sentinels.
func (s *Store) translate(err error) error {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return timer.ErrNotFound
	case s.d.isConflict(err):
		return fmt.Errorf("%w: %w", timer.ErrConflict, err)
	}
	return err
}

// updateOne runs a conditional UPDATE of one row and reports whether the
// row matched. On MySQL this relies on clientFoundRows, which OpenMySQL
// sets: without it an UPDATE that changes nothing reports 0 rows.
func (s *Store) updateOne(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// placeholders returns "?, ?, ?" with n question marks.
func placeholders(n int) string {
	return strings.Repeat(", ?", n)[2:]
}

// idList is ids as the literals of an IN list, "1, 2, 3". An integer
// needs no placeholder, and a statement of a thousand ids so skips a
// thousand arguments, each converted by database/sql and written into
// the text by the driver (or bound by SQLite) one by one.
func idList[ID ~uint64 | ~int64](ids []ID) string {
	b := make([]byte, 0, len(ids)*21)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return string(b)
}

// inline writes v, a statement's value, into b: an integer or NULL as
// its literal, which has no quote or escape to get wrong; anything else
// as a placeholder, whose argument it appends to args.
func inline(b *strings.Builder, args []any, v any) []any {
	var num [20]byte
	switch v := v.(type) {
	case nil:
		b.WriteString("NULL")
	case int64:
		b.Write(strconv.AppendInt(num[:0], v, 10))
	case uint64:
		b.Write(strconv.AppendUint(num[:0], v, 10))
	default:
		b.WriteByte('?')
		return append(args, v)
	}
	return args
}

// rowsOf returns n copies of row, a row's placeholders, joined by commas:
// the values of a multi-row insert.
func rowsOf(row string, n int) string {
	return strings.Repeat(", "+row, n)[2:]
}

// unsigned scans an unsigned 64-bit column: MySQL sends BIGINT UNSIGNED
// as uint64, int64 or text; SQLite keeps the same bits in a signed
// INTEGER.
type unsigned uint64

func (u *unsigned) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*u = unsigned(v)
	case uint64:
		*u = unsigned(v)
	case []byte:
		n, err := strconv.ParseUint(string(v), 10, 64)
		*u = unsigned(n)
		return err
	case string:
		n, err := strconv.ParseUint(v, 10, 64)
		*u = unsigned(n)
		return err
	default:
		return fmt.Errorf("scan %T into an unsigned column", src)
	}
	return nil
}
