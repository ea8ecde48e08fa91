// Retention (timer.Retirer): the ended jobs by topic, status and end
// time, deleted by primary key a batch at a time; finished groups without
// members; old audit entries.
//
// Done jobs, nearly all of them, are found by due time in
// toc_jobs_topic_due, which completing a job moves anyway: a done job
// ends at or after its due time, when its last attempt started, so its
// end is its due time plus that attempt's length, and reading by due time
// while asking for ends before a cutoff finds them all. The other ends
// (cancelled, dead, purged, expired) can come before the due time; their
// jobs are in toc_jobs_ended (migrations 0025 and 0027), by end time.
// Keeping done jobs out of that index saved MariaDB a third of the
// completing UPDATE (BenchmarkFireCycle).

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

	"github.com/toc-project/toc/timer"
)

// maxBackgroundRead bounds each of the retirer's reads of toc_jobs on
// MySQL (dialect.bounded). With its index one takes a millisecond or
// less; one cut short fails the retirer's pass, which tries again later.
const maxBackgroundRead = 500 * time.Millisecond

var (
	_ timer.RetireStore  = (*Store)(nil)
	_ timer.GroupRetirer = (*Store)(nil)
	_ timer.AuditPruner  = (*Store)(nil)
)

// The skip scan of EndedClasses: the oldest ended job of the next
// status of a topic (arguments topic, status), else of the next topic's
// first status (argument topic), in toc_jobs_ended; and the next topic
// with any job (argument topic), whose done jobs are then read by due
// time. Two queries, not one with an OR, which SQLite reads as two ranges
// merged and sorted.
const (
	nextEndedStatus = `SELECT ended_topic, ended_status, ended_at FROM toc_jobs
	WHERE ended_topic = ? AND ended_status > ? ORDER BY ended_status, ended_at LIMIT 1`
	nextEndedTopic = `SELECT ended_topic, ended_status, ended_at FROM toc_jobs
	WHERE ended_topic > ? ORDER BY ended_topic, ended_status, ended_at LIMIT 1`
	nextTopic = `SELECT topic FROM toc_jobs WHERE topic > ? ORDER BY topic LIMIT 1`
)

// EndedClasses implements timer.RetireStore: a skip scan of
// toc_jobs_ended, an index dive or two per topic and status, whose first
// entry is its oldest; and one of the topics, with the oldest end of each
// one's done jobs (oldestDone). (MariaDB makes no loose index scan of an
// index on virtual columns: a GROUP BY would read every ended row.)
// EXPLAIN on MariaDB: toc_jobs range toc_jobs_ended, Using index; range
// of a topic index, Using index.
func (s *Store) EndedClasses(ctx context.Context) ([]timer.EndedClass, error) {
	var out []timer.EndedClass
	next, ok, err := s.nextEnded(ctx, nextEndedTopic, "") // no topic is ""
	for ok && err == nil {
		out = append(out, next)
		c := next
		if next, ok, err = s.nextEnded(ctx, nextEndedStatus, c.Topic, int64(c.Status)); err == nil && !ok {
			next, ok, err = s.nextEnded(ctx, nextEndedTopic, c.Topic)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read ended jobs by topic and status: %w", err)
	}
	for topic := ""; ; {
		err := s.rdb.QueryRowContext(ctx, s.d.bounded+nextTopic, topic).Scan(&topic)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		var oldest time.Time
		if err == nil {
			oldest, err = s.oldestDone(ctx, topic)
		}
		if err != nil {
			return nil, fmt.Errorf("read done jobs by topic: %w", err)
		}
		if !oldest.IsZero() {
			out = append(out, timer.EndedClass{Topic: topic, Status: timer.StatusDone, Oldest: oldest})
		}
	}
	slices.SortFunc(out, func(a, b timer.EndedClass) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Status, b.Status))
	})
	return out, nil
}

// nextEnded runs one query of the skip scan; ok is false when it found
// nothing.
func (s *Store) nextEnded(ctx context.Context, query string, args ...any) (c timer.EndedClass, ok bool, err error) {
	var st, end int64
	err = s.rdb.QueryRowContext(ctx, s.d.bounded+query, args...).Scan(&c.Topic, &st, &end)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return c, false, nil
	case err != nil:
		return c, false, err
	}
	c.Status, c.Oldest = timer.Status(st), timer.TimeOf(end)
	return c, true, nil
}

// doneByDue is a page of a topic's done jobs by due time after a cursor
// (due time, id), with their ends: a range of toc_jobs_topic_due.
const doneByDue = `SELECT job_id, action_time, gmt_modified FROM toc_jobs WHERE topic = ? AND status = 2
	AND action_time >= ? AND (action_time > ? OR job_id > ?) ORDER BY action_time, job_id LIMIT ?`

// donePages are the pages oldestDone reads, at most, one after the
// other: nearly always the first is enough.
var donePages = []int{16, 240, 768}

// oldestDone returns when the done job of topic that ended first ended;
// the zero time when it holds none. It reads the topic's done jobs by due
// time until one is due at or after the earliest end read: a job ends at
// or after its due time, so none from there on ended before it. That is
// nearly always within the first few rows. It reads 1,024 rows at most:
// past them (a burst of jobs due at once that took longer than that to
// fire) it returns the earliest end among them, which the true one
// precedes by less than the burst took.
func (s *Store) oldestDone(ctx context.Context, topic string) (time.Time, error) {
	best := int64(math.MaxInt64)
	afterDue, afterID := int64(math.MinInt64), int64(0)
	for _, page := range donePages {
		rows, err := s.rdb.QueryContext(ctx, s.d.bounded+doneByDue, topic, afterDue, afterDue, afterID, page)
		if err != nil {
			return time.Time{}, err
		}
		n, past := 0, false
		for rows.Next() {
			var id, due, end int64
			if err := rows.Scan(&id, &due, &end); err != nil {
				rows.Close()
				return time.Time{}, err
			}
			n++
			if due >= best {
				past = true
				break
			}
			best, afterDue, afterID = min(best, end), due, id
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return time.Time{}, err
		}
		if past || n < page {
			break
		}
	}
	if best == math.MaxInt64 {
		return time.Time{}, nil
	}
	return timer.TimeOf(best), nil
}

// endedRange is the jobs of a topic and status that ended before a time,
// after a cursor (end time, id), by toc_jobs_ended; doneRange is the done
// jobs of a topic that ended before a time, after a cursor (due time,
// id), by due time in toc_jobs_topic_due (a done job due after the time
// did not end before it).
// endedBefore and doneBefore are the same without the cursor, which
// CountEnded counts.
const (
	endedBefore = ` FROM toc_jobs WHERE ended_topic = ? AND ended_status = ? AND ended_at < ?`
	doneBefore  = ` FROM toc_jobs WHERE topic = ? AND status = 2 AND action_time < ? AND gmt_modified < ?`
	endedRange  = endedBefore + ` AND ended_at >= ? AND (ended_at > ? OR job_id > ?)`
	doneRange   = doneBefore + ` AND action_time >= ? AND (action_time > ? OR job_id > ?)`
)

// endedJobs and doneJobs are a page of endedRange and of doneRange in
// their orders, the job's due time last (for doneRange's cursor).
const (
	endedJobs = "SELECT job_id, ended_at, group_id, action_time" + endedRange + " ORDER BY ended_at, job_id LIMIT ?"
	doneJobs  = "SELECT job_id, gmt_modified, group_id, action_time" + doneRange + " ORDER BY action_time, job_id LIMIT ?"
)

// EndedJobs implements timer.RetireStore: a range of toc_jobs_ended, or
// of toc_jobs_topic_due for done jobs (in order of due time, their cursor
// after.DueAt), and the group of each row read by primary key. EXPLAIN on
// MariaDB: toc_jobs range toc_jobs_ended, or toc_jobs_topic_due.
func (s *Store) EndedJobs(ctx context.Context, topic string, st timer.Status, before time.Time, after timer.EndedJob, limit int) ([]timer.EndedJob, error) {
	query, args := endedJobs, []any{topic, int64(st), before.UnixMilli()}
	cursor := after.EndedAt
	if st == timer.StatusDone {
		query, args, cursor = doneJobs, []any{topic, before.UnixMilli(), before.UnixMilli()}, after.DueAt
	}
	afterAt := int64(math.MinInt64)
	if !cursor.IsZero() {
		afterAt = cursor.UnixMilli()
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.bounded+query, append(args, afterAt, afterAt, int64(after.ID), limit)...)
	if err != nil {
		return nil, fmt.Errorf("read %s jobs of %s: %w", st, topic, err)
	}
	defer rows.Close()
	var out []timer.EndedJob
	for rows.Next() {
		var (
			id, end, due int64
			group        []byte
		)
		if err := rows.Scan(&id, &end, &group, &due); err != nil {
			return nil, fmt.Errorf("read %s jobs of %s: %w", st, topic, err)
		}
		out = append(out, timer.EndedJob{ID: timer.JobID(id), EndedAt: timer.TimeOf(end), DueAt: timer.TimeOf(due), Group: string(group)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s jobs of %s: %w", st, topic, err)
	}
	return out, nil
}

// The retirer's delete of ended jobs by id: the ids' list and ")" end
// each statement. lockEnded finds, and locks, the rows of the list still
// ended by the time given (a replayed dead letter has no end any more);
// the attempts of those rows go first, then the rows.
const (
	lockEnded           = "SELECT job_id FROM toc_jobs WHERE status IN (2, 3, 4, 5, 6) AND gmt_modified <= ? AND job_id IN ("
	deleteEndedAttempts = "DELETE FROM toc_attempts WHERE job_id IN ("
	deleteEnded         = "DELETE FROM toc_jobs WHERE job_id IN ("
)

// DeleteEnded implements timer.RetireStore: the rows of ids still ended
// at or before until, and their attempts, in one transaction by primary
// key. A job's attempts are read through its row (GET
// /v1/jobs/{id}/attempts is a 404 once the row is gone), so they go with
// it rather than wait for --attempt-retention, which otherwise kept a
// week of them under a retention of a day.
func (s *Store) DeleteEnded(ctx context.Context, ids []timer.JobID, until time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	lock := ""
	if s.d.name == "mysql" {
		lock = " FOR UPDATE"
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, until.UnixMilli())
	for _, id := range ids {
		args = append(args, int64(id))
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete %d ended jobs: %w", len(ids), err)
	}
	n, err := func() (int, error) {
		rows, err := tx.QueryContext(ctx, lockEnded+placeholders(len(ids))+")"+lock, args...)
		if err != nil {
			return 0, err
		}
		var ended []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return 0, err
			}
			ended = append(ended, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(ended) == 0 {
			return 0, err
		}
		list := placeholders(len(ended)) + ")"
		if _, err := tx.ExecContext(ctx, deleteEndedAttempts+list, ended...); err != nil {
			return 0, err
		}
		res, err := tx.ExecContext(ctx, deleteEnded+list, ended...)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		return int(n), err
	}()
	if err != nil {
		return 0, fmt.Errorf("delete %d ended jobs: %w", len(ids), errors.Join(err, ignoreDone(tx.Rollback())))
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete %d ended jobs: commit: %w", len(ids), err)
	}
	return n, nil
}

// CountEnded implements timer.RetireStore: a count of a range of
// toc_jobs_ended, or of toc_jobs_topic_due for done jobs, up to limit, the
// database's estimate beyond.
func (s *Store) CountEnded(ctx context.Context, topic string, st timer.Status, before time.Time, limit int64) (n int64, exact bool, err error) {
	from, args := endedBefore, []any{topic, int64(st), before.UnixMilli()}
	if st == timer.StatusDone {
		from, args = doneBefore, []any{topic, before.UnixMilli(), before.UnixMilli()}
	}
	n, exact, err = s.countUpTo(ctx, from, args, limit)
	if err != nil {
		return 0, false, fmt.Errorf("count %s jobs of %s past retention: %w", st, topic, err)
	}
	return n, exact, nil
}

// OldestEnded returns when the oldest job of topic that ended in st
// ended; the zero time when it holds none. One dive into
// toc_jobs_ended, or for done jobs oldestDone.
func (s *Store) OldestEnded(ctx context.Context, topic string, st timer.Status) (time.Time, error) {
	if st == timer.StatusDone {
		oldest, err := s.oldestDone(ctx, topic)
		if err != nil {
			return time.Time{}, fmt.Errorf("oldest %s job of %s: %w", st, topic, err)
		}
		return oldest, nil
	}
	var end *int64
	if err := s.rdb.QueryRowContext(ctx, s.d.bounded+"SELECT MIN(ended_at) FROM toc_jobs WHERE ended_topic = ? AND ended_status = ?",
		topic, int64(st)).Scan(&end); err != nil {
		return time.Time{}, fmt.Errorf("oldest %s job of %s: %w", st, topic, err)
	}
	if end == nil {
		return time.Time{}, nil
	}
	return timer.TimeOf(*end), nil
}

// FinishedGroups implements timer.GroupRetirer: a range of
// toc_groups_finished.
func (s *Store) FinishedGroups(ctx context.Context, before, afterAt time.Time, after string, limit int) ([]timer.FinishedGroup, error) {
	from := int64(1) // completed_at 0 is not completed
	if !afterAt.IsZero() {
		from = afterAt.UnixMilli()
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT group_id, completed_at FROM toc_groups
		WHERE finished = 1 AND completed_at < ? AND completed_at >= ? AND (completed_at > ? OR group_id > ?)
		ORDER BY completed_at, group_id LIMIT ?`, before.UnixMilli(), from, from, []byte(after), limit)
	if err != nil {
		return nil, fmt.Errorf("read finished groups: %w", err)
	}
	defer rows.Close()
	var out []timer.FinishedGroup
	for rows.Next() {
		var (
			id []byte
			at int64
		)
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("read finished groups: %w", err)
		}
		out = append(out, timer.FinishedGroup{ID: string(id), CompletedAt: timer.TimeOf(at)})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read finished groups: %w", err)
	}
	return out, nil
}

// GroupsWithMembers implements timer.GroupRetirer: which of ids have a
// row in toc_jobs, by toc_jobs_group.
func (s *Store) GroupsWithMembers(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = []byte(id)
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.bounded+"SELECT DISTINCT group_id FROM toc_jobs WHERE group_id IN ("+placeholders(len(ids))+")", args...)
	if err != nil {
		return nil, fmt.Errorf("read the members of %d groups: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id []byte
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read the members of %d groups: %w", len(ids), err)
		}
		out[string(id)] = true
	}
	return out, rows.Err()
}

// DeleteGroups implements timer.GroupRetirer: one DELETE by primary key,
// each row checked again for being finished before before and without
// members in this store (a sharded store checks the other shards first).
func (s *Store) DeleteGroups(ctx context.Context, ids []string, before time.Time) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{before.UnixMilli()}
	for _, id := range ids {
		args = append(args, []byte(id))
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM toc_groups WHERE finished = 1 AND completed_at <> 0 AND completed_at < ?
		AND group_id IN (`+placeholders(len(ids))+`)
		AND NOT EXISTS (SELECT 1 FROM toc_jobs WHERE toc_jobs.group_id = toc_groups.group_id)`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete %d groups: %w", len(ids), err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// PruneAudit implements timer.AuditPruner: one DELETE of up to limit
// entries in time order, a range of toc_audit_at.
func (s *Store) PruneAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := s.db.ExecContext(ctx, s.d.pruneAudit, before.UnixMilli(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune audit entries before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// retentionArg is the retention column of a topic's own settings:
// "status=ms" for each set field, 0 keeping forever.
func retentionArg(r timer.Retention) string {
	var parts []string
	for _, st := range timer.RetiredStatuses() {
		switch d := r.Of(st); {
		case d == 0:
		case timer.Keeps(d):
			parts = append(parts, st.String()+"=0")
		default:
			parts = append(parts, st.String()+"="+strconv.FormatInt(d.Milliseconds(), 10))
		}
	}
	return strings.Join(parts, ",")
}

// parseRetention reads a retention column; what it cannot read is unset.
func parseRetention(s string) timer.Retention {
	var r timer.Retention
	for part := range strings.SplitSeq(s, ",") {
		name, v, ok := strings.Cut(part, "=")
		ms, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || ms < 0 {
			continue
		}
		d := timer.KeepForever
		if ms > 0 {
			d = time.Duration(ms) * time.Millisecond
		}
		for _, st := range timer.RetiredStatuses() {
			if st.String() == name {
				r = r.Set(st, d)
			}
		}
	}
	return r
}
