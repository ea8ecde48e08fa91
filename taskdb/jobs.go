// The rows of jobs: inserting them, moving them between statuses,
// completing them in bulk, and reading them back by id or key.

package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// insertColumns are the columns of toc_jobs that Insert writes, in the
// order of rowValues. The first requiredColumns have no default; each of
// the others defaults to NULL (null) or else to 0 or the empty string. A
// chunk of jobs that all leave a column at its default does not name it,
// so a job with only a topic, due time, callback and payload is 9 values
// to parse, not 22: parsing is over a quarter of MariaDB's CPU in a
// 22-column INSERT of 1,000 rows, and the 9-column one costs it about a
// sixth less a row (BenchmarkInsertColumns).
var insertColumns = [...]struct {
	name string
	null bool
}{
	{"job_id", false}, {"topic", false}, {"status", false}, {"action_time", false},
	{"max_attempts", false}, {"gmt_create", false}, {"gmt_modified", false},
	{"idem_key", true}, {"biz_id", false}, {"biz_type", false}, {"attempts", false},
	{"last_error", false}, {"callback", false}, {"payload", true}, {"priority", false},
	{"fired", false}, {"traceparent", false}, {"expire_after_ms", true}, {"expire_at", true},
	{"window_ms", false}, {"concurrency_key", false}, {"group_id", true},
}

const (
	jobColumns      = len(insertColumns)
	requiredColumns = 7
)

// How a status is kept: firing is a pending row (status 0) whose fired
// flag is set, so that moving a job to firing, once per job fired, changes
// a column in no index (status is in two).
//
//	status     status column  fired
//	pending    0              0
//	firing     0              1
//	other s    s              0

// rowStatus returns the status and fired columns of s.
func rowStatus(s timer.Status) (status, fired int64) {
	if s == timer.StatusFiring {
		return int64(timer.StatusPending), 1
	}
	return int64(s), 0
}

// statusOf is the status a row's status and fired columns make.
func statusOf(status, fired int64) timer.Status {
	if status == int64(timer.StatusPending) && fired != 0 {
		return timer.StatusFiring
	}
	return timer.Status(status)
}

// Insert commits jobs in one transaction, all or none, with one multi-row
// INSERT per chunk of rows (one chunk, and no explicit transaction, for
// up to 1,927 rows on SQLite and 3,855 on MySQL, less when payloads are
// large). A duplicate job id or (topic, key) returns an error wrapping
// timer.ErrConflict; a job that does not fit its columns, one wrapping
// timer.ErrInvalid. A zero CreatedAt is stored as the store's clock, a
// zero UpdatedAt as CreatedAt. LastError is cut to 1,024 bytes. A new
// row's version is the column's default, 1. A dead job (a dead letter
// restored, or moved between shards) is recorded in toc_dead in the same
// transaction.
func (s *Store) Insert(ctx context.Context, jobs []*timer.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	for _, j := range jobs {
		if err := timer.CheckJob(j); err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(jobs), err)
		}
	}
	now := s.now().UnixMilli()
	chunks := chunkJobs(jobs, s.d.maxVars/jobColumns)
	var dead []timer.JobID // a restored or moved dead letter
	for _, j := range jobs {
		if j.Status == timer.StatusDead {
			dead = append(dead, j.ID)
		}
	}
	err := s.inTx(ctx, len(chunks) > 1 || dead != nil, func(ex execer) error {
		for _, c := range chunks {
			q, args := s.insertStatement(c, now)
			if _, err := ex.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		if dead != nil {
			return s.recordDead(ctx, ex, dead)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("insert %d jobs: %w", len(jobs), s.translate(err))
	}
	s.fresh.remember(jobs, now)
	return nil
}

// chunkJobs splits jobs into runs of at most maxRows rows and about
// maxChunkBytes of SQL text each.
func chunkJobs(jobs []*timer.Job, maxRows int) [][]*timer.Job {
	var chunks [][]*timer.Job
	start, size := 0, 0
	for i, j := range jobs {
		n := 256 + len(j.Topic) + 2*(len(j.Key)+len(j.Payload)) + len(j.LastError) + len(j.CallbackURL) + len(j.TraceParent) + len(j.ConcurrencyKey) + 2*len(j.GroupID)
		if i > start && (i-start == maxRows || size+n > maxChunkBytes) {
			chunks = append(chunks, jobs[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(chunks, jobs[start:])
}

func (s *Store) insertStatement(jobs []*timer.Job, now int64) (string, []any) {
	rows := make([][jobColumns]any, len(jobs))
	var written [jobColumns]bool
	for c := range requiredColumns {
		written[c] = true
	}
	for i, j := range jobs {
		rows[i] = s.rowValues(j, now)
		for c := requiredColumns; c < jobColumns; c++ {
			written[c] = written[c] || !isDefault(rows[i][c], insertColumns[c].null)
		}
	}
	return insertSQL(rows, written)
}

// insertSQL is the INSERT of rows, values of rowValues, naming the
// columns written marks.
func insertSQL(rows [][jobColumns]any, written [jobColumns]bool) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO toc_jobs (")
	n := 0
	for c, w := range written {
		if w {
			if n > 0 {
				b.WriteString(", ")
			}
			b.WriteString(insertColumns[c].name)
			n++
		}
	}
	b.WriteString(") VALUES ")
	// Integers and NULLs go in the text (inline), the rest as arguments.
	b.Grow(len(rows) * 16 * n)
	args := make([]any, 0, len(rows)*n/2)
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		first := true
		for c, w := range written {
			if !w {
				continue
			}
			if !first {
				b.WriteString(", ")
			}
			first = false
			args = inline(&b, args, rows[i][c])
		}
		b.WriteByte(')')
	}
	return b.String(), args
}

// rowValues returns j's values for insertColumns: a column at its
// default is nil for NULL, else int64(0) or "".
func (s *Store) rowValues(j *timer.Job, now int64) [jobColumns]any {
	created, modified := rowTimes(j, now)
	status, fired := rowStatus(j.Status)
	var payload any
	if j.Payload != nil {
		payload = j.Payload
	}
	expireAfter, expireAt := expiryArgs(j)
	return [jobColumns]any{
		int64(j.ID), j.Topic, status, timer.MillisOf(j.DueAt),
		int64(j.MaxAttempts), created, modified,
		keyArg(j.Key), s.d.uint64Arg(j.BizID), s.d.uint64Arg(j.BizType), int64(j.Attempts),
		timer.TruncateError(j.LastError), j.CallbackURL, payload, int64(j.Priority),
		fired, j.TraceParent, expireAfter, expireAt,
		j.Window.Milliseconds(), j.ConcurrencyKey, keyArg(j.GroupID),
	}
}

// rowTimes are the gmt_create and gmt_modified columns of j inserted at
// now: a zero CreatedAt is now, a zero UpdatedAt is CreatedAt.
func rowTimes(j *timer.Job, now int64) (created, modified int64) {
	created, modified = now, now
	if !j.CreatedAt.IsZero() {
		created, modified = j.CreatedAt.UnixMilli(), j.CreatedAt.UnixMilli()
	}
	if !j.UpdatedAt.IsZero() {
		modified = j.UpdatedAt.UnixMilli()
	}
	return created, modified
}

// isDefault reports whether v, a value of rowValues, is its column's
// default: nil for a column whose default is NULL (null), else 0 or "".
func isDefault(v any, null bool) bool {
	switch v := v.(type) {
	case nil:
		return null
	case int64:
		return !null && v == 0
	case uint64:
		return !null && v == 0
	case string:
		return !null && v == ""
	}
	return false
}

// expiryArgs are the expire_after_ms and expire_at columns of j: NULL
// for a job without a deadline.
func expiryArgs(j *timer.Job) (after, at any) {
	if !j.Expiry.Set {
		return nil, nil
	}
	return expiryArg(j.Expiry), timer.MillisOf(j.ExpireAt)
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

// Every UPDATE of a job row moves its version in the same statement:
// "version = version + 1" comes first in the SET list, since MySQL
// evaluates the assignments left to right with the values already
// assigned (SQLite with the old ones), and Fire's reads fired.

// Transition moves a job from status from to status to, reporting whether
// it was in status from. One UPDATE by primary key.
func (s *Store) Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error) {
	return s.TransitionIf(ctx, id, from, to, timer.AnyVersion, now)
}

// TransitionIf is Transition on the condition that the row is also at
// version version (timer.AnyVersion: at any), in the same UPDATE.
func (s *Store) TransitionIf(ctx context.Context, id timer.JobID, from, to timer.Status, version int64, now time.Time) (bool, error) {
	if !from.Known() || !to.Known() {
		return false, fmt.Errorf("move job %d from %s to %s: %w", id, from, to, timer.ErrInvalid)
	}
	toStatus, toFired := rowStatus(to)
	fromStatus, fromFired := rowStatus(from)
	q, args := versioned("UPDATE toc_jobs SET version = version + 1, status = ?, fired = ?, gmt_modified = ? WHERE job_id = ? AND status = ? AND fired = ?", version,
		toStatus, toFired, now.UnixMilli(), int64(id), fromStatus, fromFired)
	ok, err := s.updateOneAnd(ctx, s.deadMoved(from, to, id), q, args...)
	if err != nil {
		return false, fmt.Errorf("move job %d from %s to %s: %w", id, from, to, err)
	}
	return ok, nil
}

// Fail records a failed attempt of a pending or firing job: pending again,
// dead when f.Dead is set, expired when f.Expired is, or cancelled when
// f.Stopped is, reporting
// whether it was pending or firing.
// The error is cut to 1,024 bytes at a UTF-8 boundary.
func (s *Store) Fail(ctx context.Context, id timer.JobID, f timer.Failure, now time.Time) (bool, error) {
	if f.Attempts < 0 || f.Attempts > math.MaxInt32 {
		return false, fmt.Errorf("fail job %d: attempts %d: %w", id, f.Attempts, timer.ErrInvalid)
	}
	if f.Status < 0 || f.Status > 999 {
		return false, fmt.Errorf("fail job %d: status %d: %w", id, f.Status, timer.ErrInvalid)
	}
	to, due := timer.StatusPending, any(nil) // nil: the due time stays
	switch {
	case f.Dead:
		to = timer.StatusDead
	case f.Expired:
		to = timer.StatusExpired
	case f.Stopped:
		to = timer.StatusCancelled
	case !f.RetryAt.IsZero():
		due = timer.CeilMillis(f.RetryAt)
	}
	ok, err := s.updateOneAnd(ctx, s.deadMoved(timer.StatusPending, to, id), `UPDATE toc_jobs SET version = version + 1, status = ?, fired = 0, attempts = ?, last_error = ?, last_status = ?, gmt_modified = ?,
		action_time = COALESCE(?, action_time) WHERE job_id = ? AND status = ?`,
		int64(to), int64(f.Attempts), timer.TruncateError(f.Error), int64(f.Status), now.UnixMilli(), due,
		int64(id), int64(timer.StatusPending))
	if err != nil {
		return false, fmt.Errorf("fail job %d: %w", id, err)
	}
	return ok, nil
}

// Reschedule sets a pending job's due time, reporting whether it was
// pending.
func (s *Store) Reschedule(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	return s.RescheduleIf(ctx, id, dueAt, timer.AnyVersion, now)
}

// RescheduleIf is Reschedule on the condition that the row is also at
// version version (timer.AnyVersion: at any), in the same UPDATE.
func (s *Store) RescheduleIf(ctx context.Context, id timer.JobID, dueAt time.Time, version int64, now time.Time) (bool, error) {
	// expire_at moves with the due time, counted from the end of the
	// job's window (timer.Request.job); NULL + n stays NULL.
	due := timer.MillisOf(dueAt)
	q, args := versioned("UPDATE toc_jobs SET version = version + 1, action_time = ?, expire_at = ? + window_ms + expire_after_ms, gmt_modified = ? WHERE job_id = ? AND status = ? AND fired = 0", version,
		due, due, now.UnixMilli(), int64(id), int64(timer.StatusPending))
	ok, err := s.updateOne(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("reschedule job %d: %w", id, err)
	}
	return ok, nil
}

// Expire ends a pending or firing job whose deadline (expire_at) is
// before now's millisecond: expired, its last error reason. One UPDATE by
// primary key.
func (s *Store) Expire(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	ok, err := s.updateOne(ctx, `UPDATE toc_jobs SET version = version + 1, status = ?, fired = 0, last_error = ?, gmt_modified = ?
		WHERE job_id = ? AND status = ? AND expire_at < ?`,
		int64(timer.StatusExpired), timer.TruncateError(reason), now.UnixMilli(), int64(id), int64(timer.StatusPending), timer.MillisOf(now))
	if err != nil {
		return false, fmt.Errorf("expire job %d: %w", id, err)
	}
	return ok, nil
}

// Replay moves a dead job back to pending at dueAt with no attempts and
// no last error, reporting whether it was dead.
func (s *Store) Replay(ctx context.Context, id timer.JobID, dueAt, now time.Time) (bool, error) {
	ok, err := s.updateOneAnd(ctx, s.deadMoved(timer.StatusDead, timer.StatusPending, id), `UPDATE toc_jobs SET version = version + 1, status = ?, fired = 0, action_time = ?, attempts = 0, last_error = '', gmt_modified = ?
		WHERE job_id = ? AND status = ?`,
		int64(timer.StatusPending), timer.MillisOf(dueAt), now.UnixMilli(), int64(id), int64(timer.StatusDead))
	if err != nil {
		return false, fmt.Errorf("replay job %d: %w", id, err)
	}
	return ok, nil
}

// versioned adds the condition "AND version = ?" to query, an UPDATE
// whose WHERE ends it, unless version is timer.AnyVersion.
func versioned(query string, version int64, args ...any) (string, []any) {
	if version == timer.AnyVersion {
		return query, args
	}
	return query + " AND version = ?", append(args, version)
}

// Fire moves the jobs of ids that are pending or firing and due at or
// before until to firing, one UPDATE by primary key per 5,000 ids, and
// returns how many rows it matched. It sets the fired flag, and moves the
// version of the rows that were pending, alone; gmt_modified is left as
// it was. The flag is in no index but toc_jobs_ck_held, whose entry only
// a row with a concurrency key has. A row whose deadline (expire_at) is
// before now's millisecond is left as it is, in the same statement.
//
// A job of a concurrency key that another row holds stays pending: the
// UPDATE that would make it a second holder breaks toc_jobs_ck_held's
// uniqueness, and the database refuses the whole statement. Fire then
// fires the chunk again in parts (fireKeyed): the rows without a key in
// one UPDATE, and each row with one in its own, of which those refused
// are busy. That costs a statement per keyed job, but only in a chunk
// where a key was busy.
func (s *Store) Fire(ctx context.Context, ids []timer.JobID, until, now time.Time) (int, error) {
	var total int64
	for chunk := range slices.Chunk(ids, maxInList) {
		args := []any{int64(timer.StatusPending), timer.MillisOf(until), timer.MillisOf(now)}
		list := idList(chunk)
		// "+status" as in Complete: look the ids up by primary key.
		n, err := s.exec(ctx, fireJobs+"job_id IN ("+list+")", args...)
		if err != nil && s.d.isConflict(err) {
			n, err = s.fireKeyed(ctx, args, list)
		}
		if err != nil {
			return 0, fmt.Errorf("fire %d jobs: %w", len(ids), err)
		}
		total += n
	}
	return int(total), nil
}

// fireJobs is Fire's UPDATE, to which a condition on job_id is added.
const fireJobs = `UPDATE toc_jobs SET version = version + 1 - fired, fired = 1
	WHERE +status = ? AND action_time <= ? AND (expire_at IS NULL OR expire_at >= ?) AND `

// fireKeyed is Fire of one chunk whose UPDATE a held concurrency key
// refused; args and list (the chunk's ids) are that UPDATE's. It fires
// the rows without a key in one UPDATE, then the due pending rows with
// one, each alone, skipping those whose key is held (busy), and returns
// how many rows it matched.
func (s *Store) fireKeyed(ctx context.Context, args []any, list string) (int64, error) {
	total, err := s.exec(ctx, fireJobs+"concurrency_key = '' AND job_id IN ("+list+")", args...)
	if err != nil {
		return 0, err
	}
	rows, err := s.db.QueryContext(ctx, "SELECT job_id FROM toc_jobs WHERE +status = ? AND action_time <= ? AND (expire_at IS NULL OR expire_at >= ?) AND concurrency_key <> '' AND job_id IN ("+list+")", args...)
	if err != nil {
		return 0, err
	}
	var keyed []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		keyed = append(keyed, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range keyed {
		n, err := s.exec(ctx, fireJobs+"job_id = ?", args[0], args[1], args[2], id)
		switch {
		case err != nil && s.d.isConflict(err):
			// busy: another row holds the key; this one stays pending
		case err != nil:
			return 0, err
		}
		total += n
	}
	return total, nil
}

// exec runs a statement and returns the rows it matched.
func (s *Store) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// completeChunk is how many completions one UPDATE takes.
const completeChunk = 1000

// Complete moves pending or firing jobs to done with their attempt
// counts and their receivers' statuses, one UPDATE per pair of attempt
// count and status among them and 1,000 jobs:
//
//	UPDATE toc_jobs SET version = version + 1, status = 2, attempts = ?, last_status = ?,
//	fired = 0, gmt_modified = ? WHERE +status = 0 AND job_id IN (...)
//
// and returns how many it moved. Nearly every job of a batch ends on the
// same attempt, its first, and its receiver answers as the others do
// (200, or 204), so a batch is nearly always one statement. (A CASE job_id
// WHEN ... THEN ... per job, one statement whatever the counts, cost
// MariaDB more than the rest of the UPDATE: it tries the WHENs of a row
// one by one, 1,000 for the last.)
func (s *Store) Complete(ctx context.Context, done []timer.Completion, now time.Time) (int, error) {
	if len(done) == 0 {
		return 0, nil
	}
	byEnd := make(map[completeEnd][]timer.JobID)
	for _, c := range done {
		if c.Attempts < 0 || c.Attempts > math.MaxInt32 {
			return 0, fmt.Errorf("complete job %d: attempts %d: %w", c.ID, c.Attempts, timer.ErrInvalid)
		}
		if c.Status < 0 || c.Status > 999 {
			return 0, fmt.Errorf("complete job %d: status %d: %w", c.ID, c.Status, timer.ErrInvalid)
		}
		end := completeEnd{c.Attempts, c.Status}
		byEnd[end] = append(byEnd[end], c.ID)
	}
	packed := slices.ContainsFunc(done, func(c timer.Completion) bool { return c.Attempt != nil })
	var total int64
	err := s.inTx(ctx, len(byEnd) > 1 || len(done) > completeChunk || packed, func(ex execer) error {
		if packed {
			if err := s.writePacks(ctx, ex, done, now.UnixMilli()); err != nil {
				return err
			}
		}
		for _, end := range slices.SortedFunc(maps.Keys(byEnd), completeEnd.compare) {
			for chunk := range slices.Chunk(byEnd[end], completeChunk) {
				q, args := completeStatement(chunk, end, now)
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
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("complete %d jobs: %w", len(done), err)
	}
	return int(total), nil
}

// completeEnd is how the jobs of one of Complete's UPDATEs ended: on
// which attempt, and what their receivers answered.
type completeEnd struct {
	attempts, status int
}

// compare orders ends by attempts, then status: Complete's UPDATEs run in
// that order, so that two of them take their rows' locks alike.
func (e completeEnd) compare(o completeEnd) int {
	return cmp.Or(cmp.Compare(e.attempts, o.attempts), cmp.Compare(e.status, o.status))
}

// completeStatement is Complete's UPDATE of ids, which end as end says.
func completeStatement(ids []timer.JobID, end completeEnd, now time.Time) (string, []any) {
	args := []any{int64(timer.StatusDone), int64(end.attempts), int64(end.status), now.UnixMilli(), int64(timer.StatusPending)}
	// "+status" keeps SQLite's planner, when it has no statistics, from
	// walking every pending job in an index by status instead of looking
	// the ids up by primary key. MySQL ignores the plus.
	return "UPDATE toc_jobs SET version = version + 1, status = ?, attempts = ?, last_status = ?, fired = 0, gmt_modified = ? WHERE +status = ? AND job_id IN (" +
		idList(ids) + ")", args
}

// selectJob selects every column of a job row, in the order scanJob reads
// them. "payload IS NULL" tells a nil payload from an empty one, which
// the SQLite driver reads back alike.
const selectJob = "SELECT " + jobColumnList + " FROM toc_jobs "

// jobColumnList is the columns selectJob selects, named as in toc_jobs
// alone (fromDeadTable's list names them in a join).
const jobColumnList = "job_id, topic, idem_key, biz_id, biz_type, status, action_time, attempts, max_attempts, last_error, callback, payload, payload IS NULL, " +
	"gmt_create, gmt_modified, priority, last_status, fired, traceparent, version, expire_after_ms, expire_at, window_ms, concurrency_key, group_id"

func scanJob(row interface{ Scan(...any) error }) (*timer.Job, error) {
	// One value for every column, of which Scan takes the addresses: they
	// move to the heap together, one allocation a row, not one each.
	var r struct {
		j                     timer.Job
		id, bizID, bizType    unsigned
		key, payload, ckey    []byte
		status, due           int64
		created, modified     int64
		attempts, maxAttempts int64
		priority, lastStatus  int64
		fired                 int64
		noPayload             bool
		expireAfter, expireAt sql.NullInt64
		window                int64
		group                 []byte
	}
	j := &r.j
	err := row.Scan(&r.id, &j.Topic, &r.key, &r.bizID, &r.bizType, &r.status, &r.due, &r.attempts,
		&r.maxAttempts, &j.LastError, &j.CallbackURL, &r.payload, &r.noPayload, &r.created, &r.modified, &r.priority, &r.lastStatus, &r.fired,
		&j.TraceParent, &j.Version, &r.expireAfter, &r.expireAt, &r.window, &r.ckey, &r.group)
	if err != nil {
		return nil, err
	}
	j.ID, j.Key, j.BizID, j.BizType = timer.JobID(r.id), string(r.key), uint64(r.bizID), uint64(r.bizType)
	j.ConcurrencyKey = string(r.ckey)
	j.Status, j.DueAt = statusOf(r.status, r.fired), timer.TimeOf(r.due)
	j.Attempts, j.MaxAttempts = int(r.attempts), int(r.maxAttempts)
	j.Priority, j.LastStatus = timer.Priority(r.priority), int(r.lastStatus)
	j.Payload, j.GroupID = r.payload, string(r.group)
	if j.Payload == nil && !r.noPayload {
		j.Payload = []byte{}
	}
	j.CreatedAt, j.UpdatedAt = timer.TimeOf(r.created), timer.TimeOf(r.modified)
	if r.expireAfter.Valid && r.expireAt.Valid {
		j.Expiry = timer.ExpireAfter(time.Duration(r.expireAfter.Int64) * time.Millisecond)
		j.ExpireAt = timer.TimeOf(r.expireAt.Int64)
	}
	j.Window = time.Duration(r.window) * time.Millisecond
	return j, nil
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
		var err error
		jobs, err = s.queryJobs(ctx, jobs, selectJob+"WHERE job_id IN ("+idList(chunk)+")")
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
