package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

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
	insertTopic: "INSERT INTO toc_topics (name, slots, max_attempts, gmt_create) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE name = name",
	isConflict: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1062 // ER_DUP_ENTRY
	},
	lockMigrations: lockMySQL,
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
	return func() {
		_, err := conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+migrationLock+")")
		if err != nil {
			// Drop the connection: its session, and so the lock, ends.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}
