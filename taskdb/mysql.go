package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// mysqlDialect is MySQL and MariaDB through go-sql-driver/mysql.
var mysqlDialect = dialect{
	name: "mysql",
	// The limit of a prepared statement. With interpolateParams the text
	// is sent whole instead, and maxChunkBytes bounds it.
	maxVars:   65535,
	uint64Arg: func(v uint64) any { return v },
	// Not INSERT IGNORE, which would also turn other errors into warnings.
	keepTopic: " ON DUPLICATE KEY UPDATE name = name",
	// INSERT IGNORE turns other errors into warnings too; the values are
	// checked and cut before, and the history is best effort.
	insertIgnore:   "INSERT IGNORE",
	insertAttempts: "INSERT IGNORE INTO toc_attempts (job_id, attempt, started_at, duration_ms, status_code, error, excerpt) VALUES ",
	pruneAttempts:  "DELETE FROM toc_attempts WHERE started_at < ? ORDER BY started_at LIMIT ?",
	lockRows:       " FOR UPDATE",
	prunePacks:     "DELETE FROM toc_done_attempts WHERE done_at < ? ORDER BY done_at LIMIT ?",
	pruneAudit:     "DELETE FROM toc_audit_log WHERE at < ? ORDER BY at, audit_id LIMIT ?",
	isConflict: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1062 // ER_DUP_ENTRY
	},
	nowMillis:      "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
	clockMicros:    "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))",
	tableExists:    "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
	bounded:        fmt.Sprintf("SET STATEMENT max_statement_time = %g FOR ", maxBackgroundRead.Seconds()),
	intDiv:         " DIV ",
	unsortedGroups: " ORDER BY NULL",
	// A loose index scan ("Using index for group-by"): MIN of the column
	// after an equality makes it one.
	pendingTopics: `SELECT topic, MIN(action_time) FROM toc_jobs
		WHERE topic > ? AND status = ? AND action_time >= ? AND action_time < ?
		GROUP BY topic ORDER BY topic LIMIT ?`,
	lockMigrations: lockMySQL,
	isLockWait: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1205 // ER_LOCK_WAIT_TIMEOUT
	},
	estimateRows: explainRows,
	looseScan:    explainsLooseScan,
	smallTopics:  statsSmallTopics,
}

// smallTopicEntries is the average entries of toc_jobs_topic_due a topic
// under which MariaDB's own plan of pendingTopics is trusted when it is
// not a loose index scan (dialect.smallTopics).
const smallTopicEntries = 64

// statsSmallTopics is dialect.smallTopics for MariaDB: InnoDB's sampled
// count of the distinct topics in toc_jobs_topic_due, and of the rows in
// toc_jobs, as the optimizer sees them.
func statsSmallTopics(ctx context.Context, db *sql.DB) (bool, error) {
	var topics, rows sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT s.CARDINALITY, t.TABLE_ROWS
		FROM information_schema.STATISTICS s JOIN information_schema.TABLES t
			ON t.TABLE_SCHEMA = s.TABLE_SCHEMA AND t.TABLE_NAME = s.TABLE_NAME
		WHERE s.TABLE_SCHEMA = DATABASE() AND s.TABLE_NAME = 'toc_jobs'
			AND s.INDEX_NAME = 'toc_jobs_topic_due' AND s.SEQ_IN_INDEX = 1`).Scan(&topics, &rows)
	if err != nil {
		return false, fmt.Errorf("the statistics of toc_jobs_topic_due: %w", err)
	}
	return topics.Int64 > 1 && rows.Int64 <= smallTopicEntries*topics.Int64, nil
}

// explainsLooseScan reports whether MariaDB plans query (pendingTopics)
// as a loose index scan: "Using index for group-by" in the EXPLAIN's
// Extra column.
func explainsLooseScan(ctx context.Context, db *sql.DB, query string, args ...any) (bool, error) {
	extras, err := explainColumn(ctx, db, "Extra", query, args...)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(extras, func(e string) bool { return strings.Contains(e, "Using index for group-by") }), nil
}

// explainRows is the "rows" column of the EXPLAIN of query's first table:
// for a range of an index, InnoDB's estimate from diving into both ends,
// often within a factor of two of the truth.
func explainRows(ctx context.Context, db *sql.DB, query string, args ...any) (int64, error) {
	vals, err := explainColumn(ctx, db, "rows", query, args...)
	if err != nil {
		return 0, err
	}
	if len(vals) == 0 {
		return 0, errors.New("EXPLAIN returned no row")
	}
	n, err := strconv.ParseInt(vals[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("EXPLAIN rows %q: %w", vals[0], err)
	}
	return n, nil
}

// explainColumn returns column col of each row of query's EXPLAIN. The
// column is found by name, since MySQL's EXPLAIN has columns MariaDB's
// has not.
func explainColumn(ctx context.Context, db *sql.DB, col, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN "+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at := slices.Index(cols, col)
	if at < 0 {
		return nil, fmt.Errorf("EXPLAIN has no %s column: %v", col, cols)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(sql.RawBytes)
		}
		if err := rows.Scan(vals...); err != nil {
			return nil, err
		}
		out = append(out, string(*vals[at].(*sql.RawBytes)))
	}
	return out, rows.Err()
}

// OpenMySQL opens a Store on the MySQL or MariaDB database named by dsn,
// a go-sql-driver/mysql DSN, and pings it. Whatever the DSN says, it sets
// clientFoundRows, so that a conditional UPDATE reports the rows it
// matched rather than those it changed, and interpolateParams, so that a
// statement is one round trip instead of prepare, execute and close; it
// clears multiStatements, which nothing here needs (Migrate splits its
// files) and which would let an injected ";" run a second statement. An
// invalid cfg is an error wrapping its *timer.FieldError.
func OpenMySQL(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("taskdb config: %w", err)
	}
	cfg = cfg.withDefaults()
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("open mysql: %w", err)
	}
	mc.ClientFoundRows = true
	mc.InterpolateParams = true
	mc.MultiStatements = false
	connector, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, fmt.Errorf("open mysql %s: %w", mc.Addr, err)
	}
	db := sql.OpenDB(connector)
	n := cmp.Or(cfg.MaxOpenConns, DefaultMaxOpenConns)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open mysql %s: %w", mc.Addr, err)
	}
	return &Store{db: db, rdb: db, d: mysqlDialect, now: cfg.Clock}, nil
}

// migrationLock names the advisory lock of Migrate. GET_LOCK names are
// server-wide, so the lock is per database.
const migrationLock = "CONCAT('toc_schema_migrations.', DATABASE())"

// lockMySQL takes the migration lock on conn, waiting up to a minute.
func lockMySQL(ctx context.Context, conn *sql.Conn) (func(), error) {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+migrationLock+", 60)").Scan(&got); err != nil {
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	if got.Int64 != 1 {
		return nil, errors.New("lock migrations: GET_LOCK not granted within 60s")
	}
	// An ALTER takes the table's metadata lock at its start and end, and
	// waits for every statement running on the table; every statement
	// that comes after waits behind it, the fire path's too. Waiting at
	// most migrationLockWait bounds that; migrateTo tries again.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", int(migrationLockWait.Seconds()))); err != nil {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+migrationLock+")")
		return nil, fmt.Errorf("lock migrations: %w", err)
	}
	return func() {
		// The connection goes back to the pool: without the bound.
		_, err := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION lock_wait_timeout = DEFAULT")
		if err == nil {
			_, err = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+migrationLock+")")
		}
		if err != nil {
			// Drop the connection: its session, and so the lock, ends.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}
