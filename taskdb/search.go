// Finding jobs (timer.JobLister): each common filter is a range of an
// index read in its order, never a scan of the topic.

package taskdb

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/toc-project/toc/timer"
)

// ListJobs implements timer.JobLister. It reads, by the filters given:
//
//	key          toc_jobs_topic_key (topic, idem_key): one row at most
//	biz_id       toc_jobs_topic_biz (topic, biz_id, action_time, job_id)
//	status(es)   toc_jobs_topic_due (topic, status, action_time, job_id),
//	             one range per row status, merged; no status: each of them
//
// each from the cursor on in index order, up to q.Limit rows; the other
// filters are checked on those rows. EXPLAIN on MariaDB for the status
// and business id forms: type range, the index above, no filesort
// (TestMariaDBSearchPlans).
func (s *Store) ListJobs(ctx context.Context, q timer.JobQuery) ([]*timer.Job, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var lists [][]*timer.Job
	switch {
	case q.Key != "" || q.BizID != 0:
		jobs, err := s.searchOne(ctx, q, rowStatuses(q.Statuses))
		if err != nil {
			return nil, err
		}
		lists = append(lists, jobs)
	default:
		statuses := q.Statuses
		if len(statuses) == 0 {
			statuses = []timer.Status{timer.StatusPending, timer.StatusFiring, timer.StatusDone, timer.StatusCancelled, timer.StatusDead, timer.StatusPurged}
		}
		for _, st := range rowStatuses(statuses) {
			jobs, err := s.searchOne(ctx, q, []rowState{st})
			if err != nil {
				return nil, err
			}
			lists = append(lists, jobs)
		}
	}
	out := slices.Concat(lists...)
	slices.SortFunc(out, func(a, b *timer.Job) int {
		return cmp.Or(a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), q.Limit)], nil
}

// rowState is a status as the row holds it: status, and fired where it
// tells pending from firing (-1: either).
type rowState struct{ status, fired int64 }

// rowStatuses maps statuses to row states, one per row status: pending
// and firing together are status pending with either fired.
func rowStatuses(statuses []timer.Status) []rowState {
	var out []rowState
	for _, st := range statuses {
		status, fired := rowStatus(st)
		i := slices.IndexFunc(out, func(r rowState) bool { return r.status == status })
		switch {
		case i < 0:
			out = append(out, rowState{status, fired})
		case out[i].fired != fired:
			out[i].fired = -1
		}
	}
	return out
}

// searchOne reads one index range: by key, business id or (when it is
// the one state) status, keeping the rows in states (none: any).
func (s *Store) searchOne(ctx context.Context, q timer.JobQuery, states []rowState) ([]*timer.Job, error) {
	query, args := searchQuery(q, states, s.d.uint64Arg)
	jobs, err := s.queryJobs(ctx, nil, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs of %s: %w", q.Topic, err)
	}
	return jobs, nil
}

// searchQuery is searchOne's statement.
func searchQuery(q timer.JobQuery, states []rowState, uint64Arg func(uint64) any) (string, []any) {
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.FireAfter.IsZero() {
		from = timer.MillisOf(q.FireAfter)
	}
	if !q.FireBefore.IsZero() {
		to = timer.MillisOf(q.FireBefore)
	}
	afterMs := int64(math.MinInt64)
	if q.After != (timer.Cursor{}) {
		afterMs = timer.MillisOf(q.After.DueAt)
	}
	query, args := selectJob+"WHERE topic = ?", []any{q.Topic}
	if q.Key != "" {
		query, args = query+" AND idem_key = ?", append(args, keyArg(q.Key))
	}
	if q.BizID != 0 {
		query, args = query+" AND biz_id = ?", append(args, uint64Arg(q.BizID))
	}
	if len(states) > 0 {
		var conds []string
		for _, st := range states {
			if st.fired < 0 {
				conds, args = append(conds, "status = ?"), append(args, st.status)
			} else {
				conds, args = append(conds, "(status = ? AND fired = ?)"), append(args, st.status, st.fired)
			}
		}
		query += " AND (" + strings.Join(conds, " OR ") + ")"
	}
	query += " AND action_time >= ? AND action_time < ? AND (action_time > ? OR (action_time = ? AND job_id > ?)) ORDER BY action_time, job_id LIMIT ?"
	return query, append(args, from, to, afterMs, afterMs, int64(q.After.ID), q.Limit)
}
