// Retention (timer.Retirer): the ended jobs by topic, status and end
// time, deleted by primary key a batch at a time; finished groups without
// members; old audit entries.
//
// Ended jobs but the dead are found by due time in toc_jobs_topic_due,
// which ending a job moves anyway (its status is in that index): a done,
// expired or purged job ends at or after its due time (its last attempt,
// or its deadline, came after it; a purged job was dead), so reading by
// due time while asking for ends before a cutoff finds them all. A
// cancelled job can end before it is due, and is then found once its due
// time too is past the cutoff: its retention counts from the later of its
// cancel and its due time, so a cancel never keeps a row longer than the
// job would have lived. The dead are found by time of death in toc_dead
// (dead.go). An index of ended jobs on virtual columns of toc_jobs
// (toc_jobs_ended, migrations 0025 to 0032) cost MariaDB time on every
// fire, though a fire changes none of its columns (BenchmarkFireCycle).

package taskdb

import (
	"cmp"
	"context"
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

// nextTopic is the next topic after ? with a job; cancelPurgeExpire says
// which of the statuses found by due time but done a topic's jobs are in,
// one dive each into toc_jobs_topic_due.
const (
	nextTopic         = `SELECT topic FROM toc_jobs WHERE topic > ? ORDER BY topic LIMIT 1`
	cancelPurgeExpire = `SELECT EXISTS (SELECT 1 FROM toc_jobs WHERE topic = ? AND status = 3),
	EXISTS (SELECT 1 FROM toc_jobs WHERE topic = ? AND status = 5), EXISTS (SELECT 1 FROM toc_jobs WHERE topic = ? AND status = 6)`
)

// EndedClasses implements timer.RetireStore: the dead by topic
// (deadClasses); then a walk of the topics, one dive each, with the
// oldest done job of each (oldestByDue), and of its cancelled, purged and
// expired jobs if it has any (cancelPurgeExpire). An ended class's
// oldest is when the retention of its first job started, the later of its
// end and its due time. EXPLAIN on MariaDB: range of a topic index, Using
// index; toc_jobs_topic_due.
func (s *Store) EndedClasses(ctx context.Context) ([]timer.EndedClass, error) {
	src, err := s.deadSource(ctx)
	if err != nil {
		return nil, fmt.Errorf("read dead jobs by topic: %w", err)
	}
	out, err := s.deadClasses(ctx, src)
	if err != nil {
		return nil, err
	}
	err = s.eachTopic(ctx, nextTopic, func(topic string) error {
		var has [3]bool
		if err := s.rdb.QueryRowContext(ctx, s.d.bounded+cancelPurgeExpire, topic, topic, topic).Scan(&has[0], &has[1], &has[2]); err != nil {
			return err
		}
		statuses := []timer.Status{timer.StatusDone}
		for i, st := range []timer.Status{timer.StatusCancelled, timer.StatusPurged, timer.StatusExpired} {
			if has[i] {
				statuses = append(statuses, st)
			}
		}
		for _, st := range statuses {
			oldest, err := s.oldestByDue(ctx, topic, st)
			if err != nil {
				return err
			}
			out = appendClass(out, topic, st, oldest)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read ended jobs by topic: %w", err)
	}
	slices.SortFunc(out, func(a, b timer.EndedClass) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Status, b.Status))
	})
	return out, nil
}

// byDue is a page of a topic's jobs of a status by due time after a
// cursor (due time, id), with their ends: a range of toc_jobs_topic_due.
const byDue = `SELECT job_id, action_time, gmt_modified FROM toc_jobs WHERE topic = ? AND status = ?
	AND action_time >= ? AND (action_time > ? OR job_id > ?) ORDER BY action_time, job_id LIMIT ?`

// byDuePages are the pages oldestByDue reads, at most, one after the
// other: nearly always the first is enough.
var byDuePages = []int{16, 240, 768}

// oldestByDue returns when the retention of the job of topic ended in st
// that is first to go started: the later of its end and its due time
// (its end, but for a job cancelled before it was due); the zero time
// when there is none. It reads the topic's jobs of st by due time until
// one is due at or after the earliest start read: none from there on
// starts before it. That is nearly always within the first few rows. It
// reads 1,024 rows at most: past them (a burst of jobs due at once that
// took longer than that to fire) it returns the earliest start among
// them, which the true one precedes by less than the burst took.
func (s *Store) oldestByDue(ctx context.Context, topic string, st timer.Status) (time.Time, error) {
	best := int64(math.MaxInt64)
	afterDue, afterID := int64(math.MinInt64), int64(0)
	for _, page := range byDuePages {
		rows, err := s.rdb.QueryContext(ctx, s.d.bounded+byDue, topic, int64(st), afterDue, afterDue, afterID, page)
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
			best, afterDue, afterID = min(best, max(due, end)), due, id
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

// byDueBefore is the jobs of a topic and status, the dead excepted, due
// and ended before a time; byDueJobs is a page of them after a cursor
// (due time, id) in order of due time, the job's end and due time among
// its columns (due time last, for the cursor). A range of
// toc_jobs_topic_due: a job due after the time is not past its retention.
const (
	byDueBefore = ` FROM toc_jobs WHERE topic = ? AND status = ? AND action_time < ? AND gmt_modified < ?`
	byDueJobs   = "SELECT job_id, gmt_modified, group_id, action_time" + byDueBefore +
		" AND action_time >= ? AND (action_time > ? OR job_id > ?) ORDER BY action_time, job_id LIMIT ?"
)

// EndedJobs implements timer.RetireStore: a range of toc_jobs_topic_due
// in order of due time, the cursor after.DueAt; for dead jobs, of the
// dead by time of death (deadSource). The group of each row is read by
// primary key. EXPLAIN on MariaDB: toc_jobs range toc_jobs_topic_due; for
// the dead, toc_dead range PRIMARY and toc_jobs eq_ref PRIMARY.
func (s *Store) EndedJobs(ctx context.Context, topic string, st timer.Status, before time.Time, after timer.EndedJob, limit int) ([]timer.EndedJob, error) {
	query, args, cursor := byDueJobs, []any{topic, int64(st), before.UnixMilli(), before.UnixMilli()}, after.DueAt
	if st == timer.StatusDead {
		src, err := s.deadSource(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s jobs of %s: %w", st, topic, err)
		}
		query, args, cursor = src.jobs, []any{topic, int64(st), before.UnixMilli()}, after.EndedAt
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
// ended by the time given (a replayed dead letter has no end any more),
// with their status and end; the attempts of those rows go first, then
// the dead ones' entries in toc_dead (forgetDead), the packs of the done
// ones' successes that hold no other job (retirePacks), then the rows.
const (
	lockEnded           = "SELECT job_id, status, gmt_modified FROM toc_jobs WHERE status IN (2, 3, 4, 5, 6) AND gmt_modified <= ? AND job_id IN ("
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
		rows, err := tx.QueryContext(ctx, lockEnded+placeholders(len(ids))+")"+s.d.lockRows, args...)
		if err != nil {
			return 0, err
		}
		var (
			ended  []any
			dead   []timer.JobID
			doneAt []int64 // the done times of the done ones: their packs
			going  = make(map[timer.JobID]bool, len(ids))
		)
		for rows.Next() {
			var id, st, at int64
			if err := rows.Scan(&id, &st, &at); err != nil {
				rows.Close()
				return 0, err
			}
			ended = append(ended, id)
			going[timer.JobID(id)] = true
			switch st {
			case int64(timer.StatusDead):
				dead = append(dead, timer.JobID(id))
			case int64(timer.StatusDone):
				doneAt = append(doneAt, at)
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(ended) == 0 {
			return 0, err
		}
		list := placeholders(len(ended)) + ")"
		if _, err := tx.ExecContext(ctx, deleteEndedAttempts+list, ended...); err != nil {
			return 0, err
		}
		if dead != nil {
			if err := forgetDeadJobs(ctx, tx, dead); err != nil {
				return 0, err
			}
		}
		if err := s.retirePacks(ctx, tx, doneAt, going); err != nil {
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

// CountEnded implements timer.RetireStore: a count of the range EndedJobs
// reads, up to limit, the database's estimate beyond.
func (s *Store) CountEnded(ctx context.Context, topic string, st timer.Status, before time.Time, limit int64) (n int64, exact bool, err error) {
	from, args := byDueBefore, []any{topic, int64(st), before.UnixMilli(), before.UnixMilli()}
	if st == timer.StatusDead {
		src, err := s.deadSource(ctx)
		if err != nil {
			return 0, false, fmt.Errorf("count %s jobs of %s past retention: %w", st, topic, err)
		}
		from, args = src.before, []any{topic, int64(st), before.UnixMilli()}
	}
	n, exact, err = s.countUpTo(ctx, from, args, limit)
	if err != nil {
		return 0, false, fmt.Errorf("count %s jobs of %s past retention: %w", st, topic, err)
	}
	return n, exact, nil
}

// OldestEnded returns when the retention of the job of topic ended in st
// that is first to go started (oldestByDue; for the dead, when the oldest
// died); the zero time when there is none.
func (s *Store) OldestEnded(ctx context.Context, topic string, st timer.Status) (time.Time, error) {
	oldest, err := time.Time{}, error(nil)
	if st == timer.StatusDead {
		var src *deadSource
		if src, err = s.deadSource(ctx); err == nil {
			oldest, err = s.oldestDead(ctx, src, topic)
		}
	} else {
		oldest, err = s.oldestByDue(ctx, topic, st)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest %s job of %s: %w", st, topic, err)
	}
	return oldest, nil
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
