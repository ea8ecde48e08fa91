// The reads over many jobs: the backstop's scan of pending jobs and the
// counts by status.

package taskdb

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// The backstop's page is read topic by topic in toc_jobs_topic_due
// (topic, status, action_time, job_id, and the columns a Timer needs):
// toc_jobs has no index by status and due time across topics, since
// completing a job would move it in that index too (issue 35). A page is
// the rest of the topic the cursor is in; then, until the page is full,
// the next topics with pending jobs in the due range (the dialect's
// pendingTopics, one index dive a topic) and their jobs, in one range
// read of the index per topic, in index order (no sort on MariaDB). Each
// joins toc_topics by primary key: a LEFT JOIN, so that a job whose topic
// has no row is still found, with Slots 0, rather than silently skipped.
const (
	selectTimer = `SELECT j.job_id, j.topic, j.biz_id, j.action_time, j.attempts, j.priority, COALESCE(t.slots, 0), j.window_ms
	FROM toc_jobs j LEFT JOIN toc_topics t ON t.name = j.topic
	`
	// scanTopicRest: topic, status, since, before, after (due, due, id), limit.
	scanTopicRest = selectTimer + `WHERE j.topic = ? AND j.status = ? AND j.action_time >= ? AND j.action_time < ?
	AND (j.action_time > ? OR (j.action_time = ? AND j.job_id > ?))
	ORDER BY j.action_time, j.job_id LIMIT ?`
	// scanTopics: the topics (replacing "?topics"), status, since, before, limit.
	scanTopics = selectTimer + `WHERE j.topic IN (?topics) AND j.status = ? AND j.action_time >= ? AND j.action_time < ?
	ORDER BY j.topic, j.action_time, j.job_id LIMIT ?`
)

// topicsPage is the statement, and its arguments, that reads up to limit
// pending jobs of topics due in [since, before), in (topic, due time, id)
// order.
//
// A page of one topic is the rest of the topic from its start
// (scanTopicRest), ordered without the topic. MariaDB, given one topic in
// scanTopics, drops j.topic from the ORDER BY as a constant, and on a
// table just filled (the recover bench: 1,000,000 jobs of one topic, then
// a loss of Redis) then failed to see that toc_jobs_topic_due gives the
// order ("order can not be resolved by key", in its optimizer trace): it
// read and sorted every pending job of the topic to return a page, a
// second for the first page.
func topicsPage(topics []any, since, before int64, limit int) (string, []any) {
	pending := int64(timer.StatusPending)
	if len(topics) == 1 {
		return scanTopicRest, []any{topics[0], pending, since, before, int64(math.MinInt64), int64(math.MinInt64), 0, limit}
	}
	args := append(topics[:len(topics):len(topics)], pending, since, before, limit)
	return strings.Replace(scanTopics, "?topics", placeholders(len(topics)), 1), args
}

// ScanPending returns up to q.Limit pending jobs due in [q.Since,
// q.Before), ordered by (topic, due time, id), strictly after q.After. It
// reads no payload. A job whose topic has no row in toc_topics comes with
// Slots 0. EXPLAIN on MariaDB:
//
//	pendingTopics  toc_jobs range  toc_jobs_topic_due  Using where; Using index for group-by
//	scanTopicRest  j        range  toc_jobs_topic_due  Using where; Using index
//	               t        const  PRIMARY
//	scanTopics     j        range  toc_jobs_topic_due  Using where; Using index
//	               t        eq_ref PRIMARY
func (s *Store) ScanPending(ctx context.Context, q timer.ScanQuery) ([]timer.Timer, error) {
	if q.Limit <= 0 {
		return nil, fmt.Errorf("scan pending jobs: limit %d: %w", q.Limit, timer.ErrInvalid)
	}
	since, before := int64(math.MinInt64), timer.MillisOf(q.Before)
	if !q.Since.IsZero() {
		since = timer.MillisOf(q.Since)
	}
	pending := int64(timer.StatusPending)
	timers := make([]timer.Timer, 0, min(q.Limit, 1024))
	var err error
	if q.After.Topic != "" {
		due := timer.MillisOf(q.After.DueAt)
		timers, err = s.scanTimers(ctx, timers, scanTopicRest, q.After.Topic, pending, since, before, due, due, int64(q.After.ID), q.Limit)
		if err != nil || len(timers) == q.Limit {
			return timers, err
		}
	}
	// The next topics, a few at first and twice as many each time they
	// leave the page short: a page of a few large topics reads a few, and
	// no statement lists more topics than it needs or its range reads
	// can use (the optimizer's cost grows with the ranges of an IN list).
	after := q.After.Topic
	for want := firstTopics; len(timers) < q.Limit; want = min(2*want, maxInList) {
		topics, err := s.pendingTopics(ctx, after, since, before, min(want, q.Limit-len(timers)))
		if err != nil || len(topics) == 0 {
			return timers, err
		}
		query, args := topicsPage(topics, since, before, q.Limit-len(timers))
		if timers, err = s.scanTimers(ctx, timers, query, args...); err != nil {
			return nil, err
		}
		after = topics[len(topics)-1].(string)
	}
	return timers, nil
}

// firstTopics is how many topics a page of ScanPending lists at first.
const firstTopics = 16

// pendingTopics returns up to limit topics after after with pending jobs
// due in [since, before), in order: each has at least one job for the
// page.
func (s *Store) pendingTopics(ctx context.Context, after string, since, before int64, limit int) ([]any, error) {
	args := []any{after, int64(timer.StatusPending), since, before, limit}
	if s.d.looseScan != nil {
		loose, err := s.d.looseScan(ctx, s.rdb, s.d.pendingTopics, args...)
		if err != nil {
			return nil, fmt.Errorf("scan pending jobs: topics after %q: %w", after, err)
		}
		if !loose {
			small, err := s.smallTopics(ctx)
			if err != nil {
				return nil, fmt.Errorf("scan pending jobs: topics after %q: %w", after, err)
			}
			if !small {
				return s.pendingTopicsOneByOne(ctx, after, since, before, limit)
			}
		}
	}
	rows, err := s.rdb.QueryContext(ctx, s.d.pendingTopics, args...)
	if err != nil {
		return nil, fmt.Errorf("scan pending jobs: topics after %q: %w", after, err)
	}
	defer rows.Close()
	var topics []any
	for rows.Next() {
		var topic string
		var due int64
		if err := rows.Scan(&topic, &due); err != nil {
			return nil, fmt.Errorf("scan pending jobs: topics after %q: %w", after, err)
		}
		topics = append(topics, topic)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan pending jobs: topics after %q: %w", after, err)
	}
	return topics, nil
}

// nextPendingTopic selects the first topic after ? (a dive into an index
// that begins with topic: MIN optimized away) and whether it has a job of
// status ? due in [?, ?) (a range read of toc_jobs_topic_due that stops
// at the first): two index dives whatever the statistics say.
const nextPendingTopic = `SELECT m.t, EXISTS(SELECT 1 FROM toc_jobs j WHERE j.topic = m.t AND j.status = ? AND j.action_time >= ? AND j.action_time < ?)
	FROM (SELECT MIN(topic) AS t FROM toc_jobs WHERE topic > ?) m`

// smallTopics is the dialect's smallTopics, asked at most once every
// topicStatsFor.
func (s *Store) smallTopics(ctx context.Context) (bool, error) {
	s.topicStats.Lock()
	defer s.topicStats.Unlock()
	now := s.now()
	if !s.topicStats.at.IsZero() && now.Sub(s.topicStats.at) < topicStatsFor {
		return s.topicStats.small, nil
	}
	small, err := s.d.smallTopics(ctx, s.rdb)
	if err != nil {
		return false, err
	}
	s.topicStats.small, s.topicStats.at = small, now
	return small, nil
}

// pendingTopicsOneByOne is pendingTopics a topic a statement
// (nextPendingTopic), for a MariaDB that would not plan it as one dive a
// topic.
func (s *Store) pendingTopicsOneByOne(ctx context.Context, after string, since, before int64, limit int) ([]any, error) {
	var topics []any
	for len(topics) < limit {
		var next sql.NullString
		var has bool
		err := s.rdb.QueryRowContext(ctx, nextPendingTopic, int64(timer.StatusPending), since, before, after).Scan(&next, &has)
		if err != nil {
			return nil, fmt.Errorf("scan pending jobs: the topic after %q: %w", after, err)
		}
		if !next.Valid {
			break
		}
		if has {
			topics = append(topics, next.String)
		}
		after = next.String
	}
	return topics, nil
}

// scanTimers appends the Timers query reads (selectTimer's columns) to
// timers.
func (s *Store) scanTimers(ctx context.Context, timers []timer.Timer, query string, args ...any) ([]timer.Timer, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("scan pending jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, bizID                       unsigned
			due, attempts, priority, nSlots int64
			window                          int64
			t                               timer.Timer
		)
		if err := rows.Scan(&id, &t.Topic, &bizID, &due, &attempts, &priority, &nSlots, &window); err != nil {
			return nil, fmt.Errorf("scan pending jobs: %w", err)
		}
		t.ID, t.Slots, t.DueAt, t.Attempt = timer.JobID(id), int(nSlots), timer.TimeOf(due), int(attempts)
		t.Basis, t.Priority = timer.SlotBasis(t.ID, uint64(bizID)), timer.Priority(priority)
		if attempts == 0 { // a job's window holds for its first attempt
			t.Window = time.Duration(window) * time.Millisecond
		}
		timers = append(timers, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan pending jobs: %w", err)
	}
	return timers, nil
}

// CountJobs counts topic's jobs of status (a firing job counts as
// pending). It walks the index toc_jobs_topic_due without reading rows,
// which takes time in proportion to the count (0.14 µs a job on MariaDB:
// 140 ms for a million). With limit > 0 it stops past limit jobs and
// returns instead the database's estimate (no less than limit+1) with exact false;
// SQLite, which makes no estimate, counts them all.
func (s *Store) CountJobs(ctx context.Context, topic string, status timer.Status, limit int64) (n int64, exact bool, err error) {
	n, exact, err = s.countUpTo(ctx, " FROM toc_jobs WHERE topic = ? AND status = ?", []any{topic, int64(status)}, limit)
	if err != nil {
		return 0, false, fmt.Errorf("count %s jobs of %s: %w", status, topic, err)
	}
	return n, exact, nil
}

// countUpTo counts the rows of from (" FROM ... WHERE ...") with args:
// all of them when limit <= 0 or the database makes no estimate (SQLite);
// else up to limit, and past it the database's estimate (no less than
// limit+1) with exact false.
func (s *Store) countUpTo(ctx context.Context, from string, args []any, limit int64) (n int64, exact bool, err error) {
	if limit <= 0 || s.d.estimateRows == nil {
		if err := s.rdb.QueryRowContext(ctx, "SELECT COUNT(*)"+from, args...).Scan(&n); err != nil {
			return 0, false, err
		}
		return n, true, nil
	}
	if err := s.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1"+from+" LIMIT ?) c", append(args, limit+1)...).Scan(&n); err != nil {
		return 0, false, err
	}
	if n <= limit {
		return n, true, nil
	}
	est, err := s.d.estimateRows(ctx, s.rdb, "SELECT 1"+from, args...)
	if err != nil {
		return 0, false, fmt.Errorf("estimate: %w", err)
	}
	return max(est, n), false, nil
}

// likeEscaper escapes LIKE's wildcards with '!', an escape character both
// dialects take as written ('\\' would need doubling in MySQL only).
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// CountByStatus counts the jobs of topic, or of every topic when topic is
// "", by status (a firing job counts as pending: firing is a flag on a
// pending row, in no index). Every known status is in the map, with 0 when no job has
// it. It walks the index toc_jobs_topic_due without reading rows, so it
// takes time in proportion to the jobs counted.
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
