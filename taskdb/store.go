package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
}

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
	// insertTopic inserts a topic (name, slots, max_attempts, gmt_create) unless one of
	// that name exists.
	insertTopic string
	// isConflict reports a duplicate primary or unique key.
	isConflict func(error) bool
	// lockMigrations keeps other migrators out until unlock is called.
	lockMigrations func(ctx context.Context, conn *sql.Conn) (unlock func(), err error)
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

// Bounds of the columns, checked before a write so both backends reject
// the same values (SQLite would store anything).
const (
	maxTopicBytes     = 64
	maxCallbackBytes  = 2048
	maxLastErrorBytes = 1024
	// maxChunkBytes bounds the SQL text of one multi-row statement, well
	// under MariaDB's default max_allowed_packet of 16 MiB.
	maxChunkBytes = 4 << 20
	// maxInList bounds the ids of one IN (...) list.
	maxInList = 5000
)

// The columns of toc_jobs as Insert writes them, and one row's placeholders.
const (
	insertJobs = `INSERT INTO toc_jobs (job_id, topic, idem_key, biz_id, biz_type, status,
		action_time, attempts, max_attempts, last_error, callback, payload, gmt_create, gmt_modified, priority) VALUES `
	jobRow     = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	jobColumns = 15
)

// Insert commits jobs in one transaction, all or none, with one multi-row
// INSERT per chunk of rows (one chunk, and no explicit transaction, for
// up to 2,340 rows on SQLite and 4,681 on MySQL, less when payloads are
// large). A duplicate job id or (topic, key) returns an error wrapping
// timer.ErrConflict; a job that does not fit its columns, one wrapping
// timer.ErrInvalid. A zero CreatedAt is stored as the store's clock, a
// zero UpdatedAt as CreatedAt. LastError is cut to 1,024 bytes.
func (s *Store) Insert(ctx context.Context, jobs []*timer.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if err := checkJob(j); err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(jobs), err)
		}
	}
	now := s.now().UnixMilli()
	chunks := chunkJobs(jobs, s.d.maxVars/jobColumns)
	err := s.inTx(ctx, len(chunks) > 1, func(ex execer) error {
		for _, c := range chunks {
			q, args := s.insertStatement(c, now)
			if _, err := ex.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d jobs: %w", len(jobs), s.translate(err))
	}
	return nil
}

// checkJob rejects, with timer.ErrInvalid, a job its row cannot hold.
func checkJob(j *timer.Job) error {
	switch {
	case j == nil:
		return fmt.Errorf("nil job: %w", timer.ErrInvalid)
	case !j.ID.Valid():
		return fmt.Errorf("job id %d out of range: %w", j.ID, timer.ErrInvalid)
	}
	if err := checkTopicName(j.Topic); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	var bad string
	switch {
	case len(j.Key) > timer.MaxKeyBytes:
		bad = "key of " + strconv.Itoa(len(j.Key)) + " bytes"
	case !knownStatus(j.Status):
		bad = "status " + j.Status.String()
	case j.Attempts < 0 || j.Attempts > math.MaxInt32:
		bad = "attempts " + strconv.Itoa(j.Attempts)
	case j.MaxAttempts < 0 || j.MaxAttempts > math.MaxInt32:
		bad = "max attempts " + strconv.Itoa(j.MaxAttempts)
	case !j.Priority.Valid():
		bad = "priority " + j.Priority.String()
	case len(j.CallbackURL) > maxCallbackBytes || !utf8.ValidString(j.CallbackURL):
		bad = "callback URL of " + strconv.Itoa(len(j.CallbackURL)) + " bytes or not UTF-8"
	case len(j.Payload) > timer.MaxPayloadBytes:
		bad = "payload of " + strconv.Itoa(len(j.Payload)) + " bytes"
	default:
		return nil
	}
	return fmt.Errorf("job %d: %s: %w", j.ID, bad, timer.ErrInvalid)
}

func checkTopicName(name string) error {
	if name == "" || len(name) > maxTopicBytes || !utf8.ValidString(name) {
		return fmt.Errorf("topic %q: empty, longer than %d bytes or not UTF-8: %w", name, maxTopicBytes, timer.ErrInvalid)
	}
	return nil
}

func knownStatus(st timer.Status) bool {
	switch st {
	case timer.StatusPending, timer.StatusDone, timer.StatusCancelled, timer.StatusDead:
		return true
	}
	return false
}

// chunkJobs splits jobs into runs of at most maxRows rows and about
// maxChunkBytes of SQL text each.
func chunkJobs(jobs []*timer.Job, maxRows int) [][]*timer.Job {
	var chunks [][]*timer.Job
	start, size := 0, 0
	for i, j := range jobs {
		n := 256 + len(j.Topic) + 2*(len(j.Key)+len(j.Payload)) + len(j.LastError) + len(j.CallbackURL)
		if i > start && (i-start == maxRows || size+n > maxChunkBytes) {
			chunks = append(chunks, jobs[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(chunks, jobs[start:])
}

func (s *Store) insertStatement(jobs []*timer.Job, now int64) (string, []any) {
	var b strings.Builder
	b.Grow(len(insertJobs) + len(jobs)*(len(jobRow)+2))
	b.WriteString(insertJobs)
	args := make([]any, 0, len(jobs)*jobColumns)
	for i, j := range jobs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(jobRow)
		created, modified := now, now
		if !j.CreatedAt.IsZero() {
			created, modified = j.CreatedAt.UnixMilli(), j.CreatedAt.UnixMilli()
		}
		if !j.UpdatedAt.IsZero() {
			modified = j.UpdatedAt.UnixMilli()
		}
		args = append(args, int64(j.ID), j.Topic, keyArg(j.Key),
			s.d.uint64Arg(j.BizID), s.d.uint64Arg(j.BizType), int64(j.Status),
			timer.MillisOf(j.DueAt), int64(j.Attempts), int64(j.MaxAttempts),
			truncateError(j.LastError), j.CallbackURL, j.Payload, created, modified, int64(j.Priority))
	}
	return b.String(), args
}

// keyArg is the idem_key of key: NULL for none, so that any number of
// jobs without a key pass the unique (topic, idem_key) index. It is bytes,
// never text: SQLite never finds a BLOB equal to a TEXT.
func keyArg(key string) any {
	if key == "" {
		return nil
	}
	return []byte(key)
}

// truncateError makes lastErr valid UTF-8 and cuts it to at most
// maxLastErrorBytes bytes at a rune boundary, so it fits last_error in
// either backend.
func truncateError(lastErr string) string {
	if !utf8.ValidString(lastErr) {
		lastErr = strings.ToValidUTF8(lastErr, "\uFFFD")
	}
	if len(lastErr) <= maxLastErrorBytes {
		return lastErr
	}
	i := maxLastErrorBytes
	for i > 0 && !utf8.RuneStart(lastErr[i]) {
		i--
	}
	return lastErr[:i]
}

// execer is a pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
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

// Transition moves a job from status from to status to, reporting whether
// it was in status from. One UPDATE by primary key.
func (s *Store) Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error) {
	if !knownStatus(from) || !knownStatus(to) {
		return false, fmt.Errorf("move job %d from %s to %s: %w", id, from, to, timer.ErrInvalid)
	}
	ok, err := s.updateOne(ctx, "UPDATE toc_jobs SET status = ?, gmt_modified = ? WHERE job_id = ? AND status = ?",
		int64(to), now.UnixMilli(), int64(id), int64(from))
	if err != nil {
		return false, fmt.Errorf("move job %d from %s to %s: %w", id, from, to, err)
	}
	return ok, nil
}

// Fail records a failed attempt of a pending job, and makes it dead when
// dead is set, reporting whether it was pending. lastErr is cut to 1,024
// bytes at a UTF-8 boundary.
func (s *Store) Fail(ctx context.Context, id timer.JobID, attempts int, lastErr string, dead bool, now time.Time) (bool, error) {
	if attempts < 0 || attempts > math.MaxInt32 {
		return false, fmt.Errorf("fail job %d: attempts %d: %w", id, attempts, timer.ErrInvalid)
	}
	to := timer.StatusPending
	if dead {
		to = timer.StatusDead
	}
	ok, err := s.updateOne(ctx, `UPDATE toc_jobs SET status = ?, attempts = ?, last_error = ?, gmt_modified = ?
		WHERE job_id = ? AND status = ?`,
		int64(to), int64(attempts), truncateError(lastErr), now.UnixMilli(), int64(id), int64(timer.StatusPending))
	if err != nil {
		return false, fmt.Errorf("fail job %d: %w", id, err)
	}
	return ok, nil
}

// Reschedule sets a pending job's due time, reporting whether it was
// pending.
func (s *Store) Reschedule(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	ok, err := s.updateOne(ctx, "UPDATE toc_jobs SET action_time = ?, gmt_modified = ? WHERE job_id = ? AND status = ?",
		timer.MillisOf(dueAt), now.UnixMilli(), int64(id), int64(timer.StatusPending))
	if err != nil {
		return false, fmt.Errorf("reschedule job %d: %w", id, err)
	}
	return ok, nil
}

// Replay moves a dead job back to pending at dueAt with no attempts and
// no last error, reporting whether it was dead.
func (s *Store) Replay(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	ok, err := s.updateOne(ctx, `UPDATE toc_jobs SET status = ?, action_time = ?, attempts = 0, last_error = '', gmt_modified = ?
		WHERE job_id = ? AND status = ?`,
		int64(timer.StatusPending), timer.MillisOf(dueAt), now.UnixMilli(), int64(id), int64(timer.StatusDead))
	if err != nil {
		return false, fmt.Errorf("replay job %d: %w", id, err)
	}
	return ok, nil
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

// completeChunk is how many completions one UPDATE takes: three
// placeholders each.
const completeChunk = 1000

// Complete moves pending jobs to done with their attempt counts, one
// UPDATE per 1,000 jobs:
//
//	UPDATE toc_jobs SET status = 2, attempts = CASE job_id WHEN ? THEN ? ... END,
//	gmt_modified = ? WHERE +status = 0 AND job_id IN (...)
//
// and returns how many were pending.
func (s *Store) Complete(ctx context.Context, done []timer.Completion, now time.Time) (int, error) {
	if len(done) == 0 {
		return 0, nil
	}
	for _, c := range done {
		if c.Attempts < 0 || c.Attempts > math.MaxInt32 {
			return 0, fmt.Errorf("complete job %d: attempts %d: %w", c.ID, c.Attempts, timer.ErrInvalid)
		}
	}
	var total int64
	err := s.inTx(ctx, len(done) > completeChunk, func(ex execer) error {
		for chunk := range slices.Chunk(done, completeChunk) {
			q, args := completeStatement(chunk, now)
			res, err := ex.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("complete %d jobs: %w", len(done), err)
	}
	return int(total), nil
}

func completeStatement(done []timer.Completion, now time.Time) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, 3+3*len(done))
	b.WriteString("UPDATE toc_jobs SET status = ?, attempts = CASE job_id")
	args = append(args, int64(timer.StatusDone))
	for _, c := range done {
		b.WriteString(" WHEN ? THEN ?")
		args = append(args, int64(c.ID), int64(c.Attempts))
	}
	// "+status" keeps SQLite's planner, when it has no statistics, from
	// walking every pending job in toc_jobs_status_due instead of looking
	// the ids up by primary key. MySQL ignores the plus.
	b.WriteString(" END, gmt_modified = ? WHERE +status = ? AND job_id IN (")
	b.WriteString(placeholders(len(done)))
	b.WriteString(")")
	args = append(args, now.UnixMilli(), int64(timer.StatusPending))
	for _, c := range done {
		args = append(args, int64(c.ID))
	}
	return b.String(), args
}

// placeholders returns "?, ?, ?" with n question marks.
func placeholders(n int) string {
	return strings.Repeat(", ?", n)[2:]
}

// selectJob selects every column of a job row, in the order scanJob reads
// them. "payload IS NULL" tells a nil payload from an empty one, which
// the SQLite driver reads back alike.
const selectJob = `SELECT job_id, topic, idem_key, biz_id, biz_type, status, action_time, attempts,
	max_attempts, last_error, callback, payload, payload IS NULL, gmt_create, gmt_modified, priority FROM toc_jobs `

func scanJob(row interface{ Scan(...any) error }) (*timer.Job, error) {
	var (
		j                     timer.Job
		id, bizID, bizType    unsigned
		key, payload          []byte
		status, due           int64
		created, modified     int64
		attempts, maxAttempts int64
		priority              int64
		noPayload             bool
	)
	err := row.Scan(&id, &j.Topic, &key, &bizID, &bizType, &status, &due, &attempts,
		&maxAttempts, &j.LastError, &j.CallbackURL, &payload, &noPayload, &created, &modified, &priority)
	if err != nil {
		return nil, err
	}
	j.ID, j.Key, j.BizID, j.BizType = timer.JobID(id), string(key), uint64(bizID), uint64(bizType)
	j.Status, j.DueAt = timer.Status(status), timer.TimeOf(due)
	j.Attempts, j.MaxAttempts = int(attempts), int(maxAttempts)
	j.Priority = timer.Priority(priority)
	j.Payload = payload
	if j.Payload == nil && !noPayload {
		j.Payload = []byte{}
	}
	j.CreatedAt, j.UpdatedAt = timer.TimeOf(created), timer.TimeOf(modified)
	return &j, nil
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

// Get returns one job, or an error wrapping timer.ErrNotFound. A primary
// key lookup.
func (s *Store) Get(ctx context.Context, id timer.JobID) (*timer.Job, error) {
	j, err := scanJob(s.rdb.QueryRowContext(ctx, selectJob+"WHERE job_id = ?", int64(id)))
	if err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, s.translate(err))
	}
	return j, nil
}

// GetMany returns the jobs of ids that exist, in no particular order, with
// one primary key IN (...) query per 5,000 ids.
func (s *Store) GetMany(ctx context.Context, ids []timer.JobID) ([]*timer.Job, error) {
	jobs := make([]*timer.Job, 0, len(ids))
	for chunk := range slices.Chunk(ids, maxInList) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = int64(id)
		}
		var err error
		jobs, err = s.queryJobs(ctx, jobs, selectJob+"WHERE job_id IN ("+placeholders(len(chunk))+")", args...)
		if err != nil {
			return nil, fmt.Errorf("get %d jobs: %w", len(ids), err)
		}
	}
	return jobs, nil
}

func (s *Store) queryJobs(ctx context.Context, jobs []*timer.Job, query string, args ...any) ([]*timer.Job, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, rows.Err()
}

// GetByKey returns the job of topic with idempotency key key, or an error
// wrapping timer.ErrNotFound. EXPLAIN on MariaDB: toc_jobs const
// toc_jobs_topic_key, a lookup in the unique index.
func (s *Store) GetByKey(ctx context.Context, topic, key string) (*timer.Job, error) {
	if key == "" {
		return nil, fmt.Errorf("get job of topic %q by empty key: %w", topic, timer.ErrNotFound)
	}
	j, err := scanJob(s.rdb.QueryRowContext(ctx, selectJob+"WHERE topic = ? AND idem_key = ?", topic, []byte(key)))
	if err != nil {
		return nil, fmt.Errorf("get job of topic %q by key %q: %w", topic, key, s.translate(err))
	}
	return j, nil
}

// scanPending is the backstop's page: a range scan of toc_jobs_status_due
// in index order (no sort), then one primary key lookup in toc_topics per
// row. A LEFT JOIN, so that a job whose topic has no row is still found,
// with Slots 0, rather than silently skipped.
const scanPending = `SELECT j.job_id, j.topic, j.biz_id, j.action_time, j.attempts, j.priority, COALESCE(t.slots, 0)
	FROM toc_jobs j LEFT JOIN toc_topics t ON t.name = j.topic
	WHERE j.status = ? AND j.action_time < ? AND (j.action_time > ? OR (j.action_time = ? AND j.job_id > ?))
	ORDER BY j.action_time, j.job_id
	LIMIT ?`

// ScanPending returns up to limit pending jobs due before before, ordered
// by (due time, id), strictly after cursor. It reads no payload. A job
// whose topic has no row in toc_topics comes with Slots 0. EXPLAIN on
// MariaDB:
//
//	table type   key                 key_len Extra
//	j     range  toc_jobs_status_due 17      Using where; Using index
//	t     eq_ref PRIMARY             258
func (s *Store) ScanPending(ctx context.Context, after timer.Cursor, before time.Time, limit int) ([]timer.Timer, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("scan pending jobs: limit %d: %w", limit, timer.ErrInvalid)
	}
	afterMs := int64(math.MinInt64)
	if after != (timer.Cursor{}) {
		afterMs = timer.MillisOf(after.DueAt)
	}
	rows, err := s.rdb.QueryContext(ctx, scanPending, int64(timer.StatusPending), timer.MillisOf(before),
		afterMs, afterMs, int64(after.ID), limit)
	if err != nil {
		return nil, fmt.Errorf("scan pending jobs: %w", err)
	}
	defer rows.Close()
	timers := make([]timer.Timer, 0, min(limit, 1024))
	for rows.Next() {
		var (
			id, bizID                       unsigned
			due, attempts, priority, nSlots int64
			t                               timer.Timer
		)
		if err := rows.Scan(&id, &t.Topic, &bizID, &due, &attempts, &priority, &nSlots); err != nil {
			return nil, fmt.Errorf("scan pending jobs: %w", err)
		}
		t.ID, t.Slots, t.DueAt, t.Attempt = timer.JobID(id), int(nSlots), timer.TimeOf(due), int(attempts)
		t.Basis, t.Priority = timer.SlotBasis(t.ID, uint64(bizID)), timer.Priority(priority)
		timers = append(timers, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan pending jobs: %w", err)
	}
	return timers, nil
}

// EnsureTopic creates t unless a topic of that name exists, and returns
// the stored topic, whose slot count wins over t's. A zero t.Slots means
// timer.DefaultSlots; any other count must be a power of two up to
// timer.MaxSlots. A zero t.CreatedAt is stored as the store's clock.
func (s *Store) EnsureTopic(ctx context.Context, t timer.Topic) (timer.Topic, error) {
	t.Slots = cmp.Or(t.Slots, timer.DefaultSlots)
	if err := checkTopicName(t.Name); err != nil {
		return timer.Topic{}, fmt.Errorf("ensure topic: %w", err)
	}
	if t.Slots < 1 || t.Slots > timer.MaxSlots || t.Slots&(t.Slots-1) != 0 {
		return timer.Topic{}, fmt.Errorf("ensure topic %q: %d slots, want a power of two up to %d: %w",
			t.Name, t.Slots, timer.MaxSlots, timer.ErrInvalid)
	}
	created := t.CreatedAt
	if created.IsZero() {
		created = s.now()
	}
	if t.MaxAttempts < 0 || t.MaxAttempts > timer.MaxAttemptsLimit {
		return timer.Topic{}, fmt.Errorf("ensure topic %q: max attempts %d: %w", t.Name, t.MaxAttempts, timer.ErrInvalid)
	}
	if _, err := s.db.ExecContext(ctx, s.d.insertTopic, t.Name, int64(t.Slots), int64(t.MaxAttempts), created.UnixMilli()); err != nil {
		return timer.Topic{}, fmt.Errorf("ensure topic %q: %w", t.Name, err)
	}
	return s.Topic(ctx, t.Name)
}

// PutTopic creates t or replaces the defaults and limits of the topic of
// that name; a different slot count for an existing topic is an error
// wrapping timer.ErrConflict, and nothing changes then. Of two calls
// racing to create one topic, both may report that they created it.
func (s *Store) PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error) {
	if t.MaxAttempts < 0 || t.MaxAttempts > timer.MaxAttemptsLimit {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: max attempts %d: %w", t.Name, t.MaxAttempts, timer.ErrInvalid)
	}
	if err := t.Limits.Validate(); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	existing, err := s.Topic(ctx, t.Name)
	created := errors.Is(err, timer.ErrNotFound)
	switch {
	case created:
		if existing, err = s.EnsureTopic(ctx, t); err != nil {
			return timer.Topic{}, false, err
		}
	case err != nil:
		return timer.Topic{}, false, err
	}
	if t.Slots != 0 && t.Slots != existing.Slots {
		return existing, false, fmt.Errorf("topic %q has %d slots, fixed at its creation: %w", t.Name, existing.Slots, timer.ErrConflict)
	}
	if existing.MaxAttempts == t.MaxAttempts && existing.Limits == t.Limits {
		return existing, created, nil
	}
	l := t.Limits
	if _, err := s.db.ExecContext(ctx, `UPDATE toc_topics SET max_attempts = ?, rate_limit = ?, burst = ?,
		max_in_flight = ?, weight = ?, retry_base_ms = ?, retry_max_ms = ?, lease_ms = ?, callback_timeout_ms = ?
		WHERE name = ?`, int64(t.MaxAttempts), l.RateLimit, int64(l.Burst), int64(l.MaxInFlight), int64(l.Weight),
		l.Retry.Base.Milliseconds(), l.Retry.Max.Milliseconds(), l.Lease.Milliseconds(), l.CallbackTimeout.Milliseconds(),
		t.Name); err != nil {
		return timer.Topic{}, false, fmt.Errorf("put topic %q: %w", t.Name, err)
	}
	got, err := s.Topic(ctx, t.Name)
	return got, created, err
}

const selectTopic = `SELECT name, slots, max_attempts, gmt_create, rate_limit, burst, max_in_flight, weight,
	retry_base_ms, retry_max_ms, lease_ms, callback_timeout_ms FROM toc_topics `

func scanTopic(row interface{ Scan(...any) error }) (timer.Topic, error) {
	var (
		t                                  timer.Topic
		slots, maxAttempts, created        int64
		burst, inFlight, weight            int64
		retryBase, retryMax, lease, cbTime int64
	)
	if err := row.Scan(&t.Name, &slots, &maxAttempts, &created, &t.RateLimit, &burst, &inFlight, &weight,
		&retryBase, &retryMax, &lease, &cbTime); err != nil {
		return timer.Topic{}, err
	}
	t.Slots, t.MaxAttempts, t.CreatedAt = int(slots), int(maxAttempts), timer.TimeOf(created)
	t.Burst, t.MaxInFlight, t.Weight = int(burst), int(inFlight), int(weight)
	t.Retry = timer.RetryPolicy{Base: time.Duration(retryBase) * time.Millisecond, Max: time.Duration(retryMax) * time.Millisecond}
	t.Lease = time.Duration(lease) * time.Millisecond
	t.CallbackTimeout = time.Duration(cbTime) * time.Millisecond
	return t, nil
}

// Topic returns one topic, or an error wrapping timer.ErrNotFound.
func (s *Store) Topic(ctx context.Context, name string) (timer.Topic, error) {
	t, err := scanTopic(s.rdb.QueryRowContext(ctx, selectTopic+"WHERE name = ?", name))
	if err != nil {
		return timer.Topic{}, fmt.Errorf("get topic %q: %w", name, s.translate(err))
	}
	return t, nil
}

// Topics returns every topic, ordered by name (bytewise).
func (s *Store) Topics(ctx context.Context) ([]timer.Topic, error) {
	rows, err := s.rdb.QueryContext(ctx, selectTopic+"ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	defer rows.Close()
	var topics []timer.Topic
	for rows.Next() {
		t, err := scanTopic(rows)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		topics = append(topics, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return topics, nil
}

// CountByStatus counts the jobs of topic, or of every topic when topic is
// "", by status. Every known status is in the map, with 0 when no job has
// it. It walks the index toc_jobs_topic_status (toc_jobs_status_due for
// every topic) without reading rows, so it takes time in proportion to
// the jobs counted.
func (s *Store) CountByStatus(ctx context.Context, topic string) (map[timer.Status]int64, error) {
	q, args := "SELECT status, COUNT(*) FROM toc_jobs GROUP BY status", []any(nil)
	if topic != "" {
		q, args = "SELECT status, COUNT(*) FROM toc_jobs WHERE topic = ? GROUP BY status", []any{topic}
	}
	rows, err := s.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("count jobs of topic %q: %w", topic, err)
	}
	defer rows.Close()
	counts := map[timer.Status]int64{
		timer.StatusPending: 0, timer.StatusDone: 0, timer.StatusCancelled: 0, timer.StatusDead: 0,
	}
	for rows.Next() {
		var status, n int64
		if err := rows.Scan(&status, &n); err != nil {
			return nil, fmt.Errorf("count jobs of topic %q: %w", topic, err)
		}
		counts[timer.Status(status)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs of topic %q: %w", topic, err)
	}
	return counts, nil
}
