package taskdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.OverdueScanner = (*Store)(nil)

// scanOverdue reads the jobs waiting to fire whose deadline has passed,
// by toc_jobs_overdue (migration 0024): only the rows it reads are in
// that range, whatever the pending jobs without a deadline.
const scanOverdue = selectJob + "WHERE waiting_deadline < ? ORDER BY waiting_deadline, job_id LIMIT ?"

// ScanOverdue implements timer.OverdueScanner: up to limit jobs pending,
// not firing, whose deadline is before now's millisecond, by deadline,
// with their topics' slot counts. EXPLAIN on MariaDB: toc_jobs range
// toc_jobs_overdue.
func (s *Store) ScanOverdue(ctx context.Context, now time.Time, limit int) ([]timer.Overdue, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("scan overdue jobs: limit %d: %w", limit, timer.ErrInvalid)
	}
	jobs, err := s.queryJobs(ctx, nil, scanOverdue, timer.MillisOf(now), limit)
	if err != nil {
		return nil, fmt.Errorf("scan overdue jobs: %w", err)
	}
	return withSlots(jobs, func(topic string) (timer.Topic, error) { return s.Topic(ctx, topic) })
}

// withSlots pairs jobs with the slot counts of their topics, read by
// topic once each; a topic without a row counts 0 slots.
func withSlots(jobs []*timer.Job, topic func(name string) (timer.Topic, error)) ([]timer.Overdue, error) {
	out := make([]timer.Overdue, len(jobs))
	slots := make(map[string]int)
	for i, j := range jobs {
		n, ok := slots[j.Topic]
		if !ok {
			t, err := topic(j.Topic)
			switch {
			case errors.Is(err, timer.ErrNotFound):
			case err != nil:
				return nil, fmt.Errorf("scan overdue jobs: %w", err)
			}
			n = t.Slots
			slots[j.Topic] = n
		}
		out[i] = timer.Overdue{Job: j, Slots: n}
	}
	return out, nil
}

// ExpireWaiting implements timer.OverdueScanner: Expire of a row that is
// pending and not firing. One UPDATE by primary key.
func (s *Store) ExpireWaiting(ctx context.Context, id timer.JobID, reason string, now time.Time) (bool, error) {
	ok, err := s.updateOne(ctx, `UPDATE toc_jobs SET version = version + 1, status = ?, last_error = ?, gmt_modified = ?
		WHERE job_id = ? AND status = ? AND fired = 0 AND expire_at < ?`,
		int64(timer.StatusExpired), timer.TruncateError(reason), now.UnixMilli(), int64(id), int64(timer.StatusPending), timer.MillisOf(now))
	if err != nil {
		return false, fmt.Errorf("expire waiting job %d: %w", id, err)
	}
	return ok, nil
}
