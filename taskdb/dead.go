// Dead letters. Every dead job has a row in toc_dead (topic, died_at,
// job_id), written in the transaction that kills it and deleted in the
// one that replays or purges it, or by the retirer with the job. A page
// of dead letters is a range of toc_dead in its order, each row then read
// by primary key and checked still dead since died_at.
//
// Until toc_dead (migration 0031) the dead were found in toc_jobs_ended,
// an index on virtual columns of toc_jobs whose upkeep cost every fire
// 3.5 µs of MariaDB's CPU (issue 35), though a fire changes none of its
// columns. A member of v0.1.0 kills jobs without writing toc_dead, so
// until the contract migration 0032 copies its dead there and drops that
// index, this build reads the dead from toc_jobs_ended too (deadSource).

package taskdb

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// deadTableMigration is the migration from which toc_dead holds every
// dead job: the contract migration that copies the dead of v0.1.0's
// members into it and drops toc_jobs_ended.
const deadTableMigration = 32

// The writes of toc_dead, each ended by an id list and ")": the dead jobs
// of the list recorded (after the dialect's insertIgnore), and the list's
// entries deleted.
const (
	recordDead = " INTO toc_dead (topic, died_at, job_id) SELECT topic, gmt_modified, job_id FROM toc_jobs WHERE status = 4 AND job_id IN ("
	forgetDead = "DELETE FROM toc_dead WHERE job_id IN ("
)

// recordDead records in toc_dead, within ex, the jobs of ids that are
// dead.
func (s *Store) recordDead(ctx context.Context, ex execer, ids []timer.JobID) error {
	_, err := ex.ExecContext(ctx, s.d.insertIgnore+recordDead+idList(ids)+")")
	return err
}

// forgetDeadJobs deletes, within ex, the toc_dead entries of ids.
func forgetDeadJobs(ctx context.Context, ex execer, ids []timer.JobID) error {
	_, err := ex.ExecContext(ctx, forgetDead+idList(ids)+")")
	return err
}

// deadMoved returns what moving job id from status from to status to
// does to toc_dead, to run in the same transaction: records the job when
// it dies, forgets it when it stops being dead; nil for any other move.
func (s *Store) deadMoved(from, to timer.Status, id timer.JobID) func(context.Context, execer) error {
	switch {
	case from == to:
		return nil
	case to == timer.StatusDead:
		return func(ctx context.Context, ex execer) error { return s.recordDead(ctx, ex, []timer.JobID{id}) }
	case from == timer.StatusDead:
		return func(ctx context.Context, ex execer) error { return forgetDeadJobs(ctx, ex, []timer.JobID{id}) }
	}
	return nil
}

// updateOneAnd is updateOne, followed in the same transaction by then
// when the UPDATE changed a row; without then, updateOne alone.
func (s *Store) updateOneAnd(ctx context.Context, then func(context.Context, execer) error, query string, args ...any) (bool, error) {
	if then == nil {
		return s.updateOne(ctx, query, args...)
	}
	changed := false
	err := s.inTx(ctx, true, func(ex execer) error {
		res, err := ex.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if changed = n > 0; err != nil || !changed {
			return err
		}
		return then(ctx, ex)
	})
	return changed && err == nil, err
}

// deadSource is where the dead jobs are read: toc_dead, or
// toc_jobs_ended before deadTableMigration. Its queries take the
// arguments (topic, status) first, status being timer.StatusDead.
type deadSource struct {
	// list is a page of a topic's dead letters (then from, to, the
	// cursor's time twice and its id); an error filter may follow, then
	// order (with LIMIT ?). topic is list's condition on the topic, which
	// a list of topics replaces.
	list, topic, order string
	// oldest is the time of death of a topic's oldest dead job.
	oldest string
	// nextTopic is the next topic after ? with a dead job, or with some
	// other job in toc_jobs_ended.
	nextTopic string
	// before is " FROM ... WHERE" the dead of a topic before a time
	// (then before); jobs is a page of them (id, time of death, group,
	// due time) after a cursor (then its time twice and its id) in the
	// order of death, up to ? of them.
	before, jobs string
}

// fromDeadTable reads toc_dead, each entry checked against its job's row
// (a job replayed by a member of v0.1.0 left its entry behind).
var fromDeadTable = func() deadSource {
	const (
		join   = " FROM toc_dead JOIN toc_jobs ON toc_jobs.job_id = toc_dead.job_id WHERE toc_dead.topic = ? AND toc_jobs.status = ?"
		still  = " AND toc_jobs.gmt_modified = toc_dead.died_at"
		before = join + still + " AND toc_dead.died_at < ?"
	)
	return deadSource{
		list: "SELECT toc_jobs." + strings.ReplaceAll(jobColumnList, ", ", ", toc_jobs.") + join + still +
			" AND toc_dead.died_at >= ? AND toc_dead.died_at < ? AND (toc_dead.died_at > ? OR (toc_dead.died_at = ? AND toc_dead.job_id > ?))",
		topic:     "toc_dead.topic = ?",
		order:     " ORDER BY toc_dead.died_at, toc_dead.job_id LIMIT ?",
		oldest:    "SELECT toc_dead.died_at" + join + still + " ORDER BY toc_dead.died_at, toc_dead.job_id LIMIT 1",
		nextTopic: "SELECT topic FROM toc_dead WHERE topic > ? ORDER BY topic LIMIT 1",
		before:    before,
		jobs: "SELECT toc_dead.job_id, toc_dead.died_at, toc_jobs.group_id, toc_jobs.action_time" + before +
			" AND toc_dead.died_at >= ? AND (toc_dead.died_at > ? OR toc_dead.job_id > ?) ORDER BY toc_dead.died_at, toc_dead.job_id LIMIT ?",
	}
}()

// fromEndedIndex reads toc_jobs_ended (ended_topic, ended_status,
// ended_at, job_id), whose columns are virtual: a row's topic, status and
// gmt_modified when it is cancelled, dead, purged or expired, else NULL
// (migrations 0025 and 0027).
var fromEndedIndex = func() deadSource {
	const before = " FROM toc_jobs WHERE ended_topic = ? AND ended_status = ? AND ended_at < ?"
	return deadSource{
		list:      selectJob + "WHERE ended_topic = ? AND ended_status = ? AND ended_at >= ? AND ended_at < ? AND (ended_at > ? OR (ended_at = ? AND job_id > ?))",
		topic:     "ended_topic = ?",
		order:     " ORDER BY ended_at, job_id LIMIT ?",
		oldest:    "SELECT ended_at FROM toc_jobs WHERE ended_topic = ? AND ended_status = ? ORDER BY ended_at, job_id LIMIT 1",
		nextTopic: "SELECT ended_topic FROM toc_jobs WHERE ended_topic > ? ORDER BY ended_topic LIMIT 1",
		before:    before,
		jobs:      "SELECT job_id, ended_at, group_id, action_time" + before + " AND ended_at >= ? AND (ended_at > ? OR job_id > ?) ORDER BY ended_at, job_id LIMIT ?",
	}
}()

// deadSource returns where the dead jobs are read: toc_dead once
// deadTableMigration is applied, which it looks up (one primary-key read
// of toc_schema_migrations) until it is, and then remembers. A read of
// toc_jobs_ended made as that migration drops the index still runs: the
// columns stay.
func (s *Store) deadSource(ctx context.Context) (*deadSource, error) {
	if s.deadTable.Load() {
		return &fromDeadTable, nil
	}
	var one int
	err := s.rdb.QueryRowContext(ctx, "SELECT 1 FROM toc_schema_migrations WHERE version = ?", deadTableMigration).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return &fromEndedIndex, nil
	case err != nil:
		return nil, fmt.Errorf("read the schema's migrations: %w", err)
	}
	s.deadTable.Store(true)
	return &fromDeadTable, nil
}

// ListDead returns up to q.Limit dead jobs of q.Topic in the order of
// their death (gmt_modified, then id), after q.After, filtered by time of
// death and by a case-insensitive substring of the last error. EXPLAIN on
// MariaDB: toc_dead range PRIMARY, then toc_jobs eq_ref PRIMARY: it reads
// the topic's dead only.
//
// Without q.Topic it lists the dead jobs of q.Topics: one query of up to
// 5,000 of them at a time, "topic IN (...)", the pages merged. Each reads
// the ranges of its topics' dead and sorts them (Using filesort), so a
// page costs in proportion to those topics' dead letters after the
// cursor, and a topic without any one probe of toc_dead.
func (s *Store) ListDead(ctx context.Context, q timer.DeadQuery) ([]*timer.Job, error) {
	from, to, afterMs, err := q.Millis()
	if err != nil {
		return nil, err
	}
	src, err := s.deadSource(ctx)
	if err != nil {
		return nil, fmt.Errorf("list dead jobs: %w", err)
	}
	page := func(jobs []*timer.Job, topics []string) ([]*timer.Job, error) {
		query := src.list
		if len(topics) > 1 {
			query = strings.Replace(query, src.topic, strings.TrimSuffix(src.topic, "= ?")+"IN ("+placeholders(len(topics))+")", 1)
		}
		var args []any
		for _, t := range topics {
			args = append(args, t)
		}
		args = append(args, int64(timer.StatusDead), from, to, afterMs, afterMs, int64(q.After.ID))
		if q.ErrorContains != "" {
			query += " AND LOWER(last_error) LIKE ? ESCAPE '!'"
			args = append(args, "%"+likeEscaper.Replace(strings.ToLower(q.ErrorContains))+"%")
		}
		return s.queryJobs(ctx, jobs, query+src.order, append(args, q.Limit)...)
	}
	if q.Topic != "" {
		jobs, err := page(nil, []string{q.Topic})
		if err != nil {
			return nil, fmt.Errorf("list dead jobs of %s: %w", q.Topic, err)
		}
		return jobs, nil
	}
	var jobs []*timer.Job
	for chunk := range slices.Chunk(q.Topics, maxInList) {
		if jobs, err = page(jobs, chunk); err != nil {
			return nil, fmt.Errorf("list dead jobs of %d topics: %w", len(q.Topics), err)
		}
	}
	slices.SortFunc(jobs, func(a, b *timer.Job) int {
		return cmp.Or(cmp.Compare(a.UpdatedAt.UnixMilli(), b.UpdatedAt.UnixMilli()), cmp.Compare(a.ID, b.ID))
	})
	return jobs[:min(len(jobs), q.Limit)], nil
}

// deadClasses returns the oldest dead job of each topic that has one:
// a walk of the topics of src, one dive each for its oldest.
func (s *Store) deadClasses(ctx context.Context, src *deadSource) ([]timer.EndedClass, error) {
	var out []timer.EndedClass
	err := s.eachTopic(ctx, src.nextTopic, func(topic string) error {
		oldest, err := s.oldestDead(ctx, src, topic)
		out = appendClass(out, topic, timer.StatusDead, oldest)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read dead jobs by topic: %w", err)
	}
	return out, nil
}

// eachTopic calls fn with each topic next finds (the first after ?), in
// order, until fn fails.
func (s *Store) eachTopic(ctx context.Context, next string, fn func(topic string) error) error {
	for topic := ""; ; {
		err := s.rdb.QueryRowContext(ctx, s.d.bounded+next, topic).Scan(&topic)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		if err := fn(topic); err != nil {
			return err
		}
	}
}

// appendClass appends the class of topic's jobs ended in st to out,
// unless oldest is zero (it has none).
func appendClass(out []timer.EndedClass, topic string, st timer.Status, oldest time.Time) []timer.EndedClass {
	if oldest.IsZero() {
		return out
	}
	return append(out, timer.EndedClass{Topic: topic, Status: st, Oldest: oldest})
}

// oldestDead returns when topic's oldest dead job died; the zero time
// when it has none.
func (s *Store) oldestDead(ctx context.Context, src *deadSource, topic string) (time.Time, error) {
	var at int64
	err := s.rdb.QueryRowContext(ctx, s.d.bounded+src.oldest, topic, int64(timer.StatusDead)).Scan(&at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, err
	}
	return timer.TimeOf(at), nil
}
