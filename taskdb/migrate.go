package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// The numbered migrations of each dialect, applied in order by Migrate.
//
//go:embed migrations
var migrationFS embed.FS

// migration is one numbered SQL file, split into statements.
type migration struct {
	version int
	name    string
	stmts   []string
	// additive: the file has a line "-- toc:additive". It only adds what
	// an older build ignores (a nullable or defaulted column, a virtual
	// column, an index, a table) or widens a column, so a build that does
	// not know it still serves on the schema: a rolling upgrade can go
	// back. Without the mark a migration is breaking, and builds older
	// than it refuse the schema (CheckSchema).
	additive bool
	// contract: the file has a line "-- toc:contract". It removes what
	// this build no longer reads but the release before it does (an
	// index its queries need), so Migrate applies it only to a new
	// database; to one the previous release served, MigrateContract does,
	// once no member of that release is left. Builds older than it that
	// check the schema (CheckSchema: v0.2.0 on) refuse it then, as for a
	// breaking migration; this one serves with it applied or not. A contract migration is additive to the release
	// after this one, and is marked so there.
	contract bool
}

// additiveMark marks an additive migration (see migration.additive),
// contractMark a contract one (see migration.contract).
const (
	additiveMark = "-- toc:additive"
	contractMark = "-- toc:contract"
)

// loadMigrations reads the migrations of one dialect, ordered by version.
func loadMigrations(dir string) ([]migration, error) {
	entries, err := fs.ReadDir(migrationFS, path.Join("migrations", dir))
	if err != nil {
		return nil, fmt.Errorf("read migrations %s: %w", dir, err)
	}
	var ms []migration
	for _, e := range entries {
		prefix, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %s/%s: want NNNN_name.sql", dir, e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s/%s: %w", dir, e.Name(), err)
		}
		lines := strings.Split(string(b), "\n")
		marked := func(mark string) bool {
			return slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSpace(l) == mark })
		}
		m := migration{version: v, name: e.Name(), stmts: splitStatements(string(b)), additive: marked(additiveMark), contract: marked(contractMark)}
		if m.additive && m.contract {
			return nil, fmt.Errorf("migration %s/%s: marked both additive and contract", dir, e.Name())
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	// Versions rise, each once; a gap is allowed, since work in parallel
	// is given its numbers ahead and may land in any order. A version is
	// applied whenever it is missing from toc_schema_migrations, so one
	// that lands after a later one is still applied.
	for i, m := range ms {
		if i > 0 && m.version == ms[i-1].version {
			return nil, fmt.Errorf("migration %s/%s: version %d twice", dir, m.name, m.version)
		}
	}
	return ms, nil
}

// splitStatements drops "--" comment lines and splits the rest on ";".
// Migrations hold no string literal with a semicolon in it.
func splitStatements(src string) []string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
		}
	}
	var stmts []string
	for s := range strings.SplitSeq(b.String(), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// Migrate brings the schema up to date, but for the contract migrations
// (see migration.contract), which it applies only to a new database: one
// with no migration applied. Each migration runs in a
// transaction and is recorded in toc_schema_migrations; one already
// recorded is skipped, so running Migrate again is harmless. Concurrent
// migrators are serialized: by GET_LOCK on MySQL, by the write lock of
// BEGIN IMMEDIATE on SQLite.
//
// MySQL commits DDL implicitly, so there a migration that fails halfway
// is not rolled back; its statements are written to be run again (CREATE
// ... IF NOT EXISTS).
func (s *Store) Migrate(ctx context.Context) error { return s.migrateTo(ctx, math.MaxInt, false) }

// MigrateContract is Migrate with the contract migrations too: run it
// once no member of the release before this build is left (toc migrate
// --contract). Going back to that release is no rolling step afterwards.
func (s *Store) MigrateContract(ctx context.Context) error {
	return s.migrateTo(ctx, math.MaxInt, true)
}

// migrateTo is Migrate up to migration version (for the tests of an
// upgrade), with the contract migrations when contract is set or the
// database is new.
func (s *Store) migrateTo(ctx context.Context, version int, contract bool) error {
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		return err
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	unlock, err := s.d.lockMigrations(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer unlock()

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS toc_schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at BIGINT  NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: create toc_schema_migrations: %w", err)
	}
	// The applied migrations that builds older than them serve on.
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS toc_schema_additive (
		version INTEGER NOT NULL PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrate: create toc_schema_additive: %w", err)
	}
	var applied int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM toc_schema_migrations").Scan(&applied); err != nil {
		return fmt.Errorf("migrate: read toc_schema_migrations: %w", err)
	}
	contract = contract || applied == 0 // no release before this one served it
	for _, m := range ms {
		if m.version > version {
			break
		}
		if m.contract && !contract {
			continue
		}
		if err := s.applyRetrying(ctx, conn, m); err != nil {
			return fmt.Errorf("migrate %s/%s: %w", s.d.name, m.name, err)
		}
	}
	return nil
}

// migrationLockWait is how long a migration waits for a table's
// metadata lock (MySQL), and so how long the statements queued behind it,
// toc's writes among them, wait; migrationLockTries is how many times it
// is tried before toc migrate gives up.
var (
	migrationLockWait  = time.Second
	migrationLockTries = 10
)

// applyRetrying is apply, tried again, after as long as it waited, when
// it gave up waiting for a lock: another statement held the table then.
func (s *Store) applyRetrying(ctx context.Context, conn *sql.Conn, m migration) error {
	for try := 1; ; try++ {
		err := s.apply(ctx, conn, m)
		if err == nil || s.d.isLockWait == nil || !s.d.isLockWait(err) {
			return err
		}
		if try == migrationLockTries {
			return fmt.Errorf("%w: %d times a statement held the table for more than %v; find it (SHOW PROCESSLIST) and end it, or run toc migrate when it is done",
				err, try, migrationLockWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(migrationLockWait):
		}
	}
}

// apply runs migration m in a transaction unless it is recorded already.
func (s *Store) apply(ctx context.Context, conn *sql.Conn, m migration) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var applied, marked int
	err = tx.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM toc_schema_migrations WHERE version = ?), (SELECT COUNT(*) FROM toc_schema_additive WHERE version = ?)",
		m.version, m.version).Scan(&applied, &marked)
	if err != nil {
		return err
	}
	if applied == 0 {
		for _, stmt := range m.stmts {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO toc_schema_migrations (version, applied_at) VALUES (?, ?)",
			m.version, s.now().UnixMilli())
		if err != nil {
			return err
		}
	}
	// Marked also when a build before the table applied it.
	if m.additive && marked == 0 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO toc_schema_additive (version) VALUES (?)", m.version); err != nil {
			return err
		}
	}
	if applied > 0 && (!m.additive || marked > 0) {
		return nil
	}
	return tx.Commit()
}

// MigrationState is one migration as a store holds it.
type MigrationState struct {
	Version int
	Name    string
	// AppliedAt is when it was applied; zero while it is pending.
	AppliedAt time.Time
	// Statements are what applying it runs.
	Statements []string
	// Contract: Migrate leaves it pending on a database that is not new;
	// MigrateContract applies it (see migration.contract).
	Contract bool
}

// ErrSchemaNewer is wrapped by CheckSchema's error when the store holds
// migrations this build does not know.
var ErrSchemaNewer = errors.New("the task store's schema is newer than this build of toc knows")

// Migrations returns every migration this build knows, in order, each
// with when it was applied (zero while pending), and the versions the
// store recorded that this build does not know (a newer build's).
func (s *Store) Migrations(ctx context.Context) (known []MigrationState, unknown []int, err error) {
	ms, err := loadMigrations(s.d.name)
	if err != nil {
		return nil, nil, err
	}
	applied, err := s.appliedMigrations(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range ms {
		st := MigrationState{Version: m.version, Name: m.name, Statements: m.stmts, Contract: m.contract}
		if at, ok := applied[m.version]; ok {
			st.AppliedAt = timer.TimeOf(at)
			delete(applied, m.version)
		}
		known = append(known, st)
	}
	for v := range applied {
		unknown = append(unknown, v)
	}
	slices.Sort(unknown)
	return known, unknown, nil
}

// appliedMigrations reads toc_schema_migrations: applied_at by version;
// empty when the table does not exist yet (a fresh database).
func (s *Store) appliedMigrations(ctx context.Context) (map[int]int64, error) {
	out := map[int]int64{}
	err := s.readSchemaTable(ctx, "toc_schema_migrations", "SELECT version, applied_at FROM toc_schema_migrations", func(rows *sql.Rows) error {
		var v int
		var at int64
		err := rows.Scan(&v, &at)
		out[v] = at
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the applied migrations: %w", err)
	}
	return out, nil
}

// readSchemaTable runs query, calling scan for each row, when table
// exists; a table not there yet (an older or new database) reads empty.
func (s *Store) readSchemaTable(ctx context.Context, table, query string, scan func(*sql.Rows) error) error {
	var tables int
	if err := s.rdb.QueryRowContext(ctx, s.d.tableExists, table).Scan(&tables); err != nil || tables == 0 {
		return err
	}
	return eachRow(ctx, s.rdb, scan, query)
}

// SchemaVersion is the version of the last migration this build knows:
// the schema it serves on (toc version prints it).
func SchemaVersion() int {
	ms, err := loadMigrations("mysql")
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// ContractMigrations returns the versions of this build's contract
// migrations (see migration.contract), in order: those toc migrate
// leaves for after a rolling upgrade.
func ContractMigrations() []int {
	ms, err := loadMigrations("mysql")
	if err != nil {
		return nil
	}
	var out []int
	for _, m := range ms {
		if m.contract {
			out = append(out, m.version)
		}
	}
	return out
}

// ErrSchemaOlder is wrapped by the error of a toc serve that finds the
// store lacking migrations this build needs, and was not asked to apply
// them.
var ErrSchemaOlder = errors.New("the task store's schema is older than this build of toc needs")

// Pending returns the versions of this build's migrations that the store
// has not applied and that it needs, in order (a contract migration it
// serves without), and whether it has applied none of them (a new
// database, which a first start sets up).
func (s *Store) Pending(ctx context.Context) (pending []int, fresh bool, err error) {
	known, _, err := s.Migrations(ctx)
	if err != nil {
		return nil, false, err
	}
	var all []int
	for _, m := range known {
		if !m.AppliedAt.IsZero() {
			continue
		}
		all = append(all, m.Version)
		if !m.Contract {
			pending = append(pending, m.Version)
		}
	}
	if fresh = len(all) == len(known); fresh {
		pending = all
	}
	return pending, fresh, nil
}

// CheckSchema returns an error wrapping ErrSchemaNewer, naming the
// versions, when the store recorded migrations this build does not know
// and that are not additive: a newer toc migrated it, and this one may
// misread what it wrote. Additive ones (see migration.additive) it serves
// beside, which lets a rolling upgrade go back a release.
func (s *Store) CheckSchema(ctx context.Context) error {
	_, unknown, err := s.Migrations(ctx)
	if err != nil {
		return err
	}
	if len(unknown) == 0 {
		return nil
	}
	additive, err := s.additiveMigrations(ctx)
	if err != nil {
		return err
	}
	unknown = slices.DeleteFunc(unknown, func(v int) bool { return additive[v] })
	if len(unknown) > 0 {
		return fmt.Errorf("%w: it holds migration(s) %v, which this build does not know and cannot serve beside (up to %d here); run the newer toc",
			ErrSchemaNewer, unknown, SchemaVersion())
	}
	return nil
}

// additiveMigrations reads toc_schema_additive: the applied migrations
// that a build older than them serves on; empty before the table exists.
func (s *Store) additiveMigrations(ctx context.Context) (map[int]bool, error) {
	out := map[int]bool{}
	err := s.readSchemaTable(ctx, "toc_schema_additive", "SELECT version FROM toc_schema_additive", func(rows *sql.Rows) error {
		var v int
		err := rows.Scan(&v)
		out[v] = true
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the additive migrations: %w", err)
	}
	return out, nil
}
