package taskdb

import (
	"context"
	"fmt"

	"github.com/toc-project/toc/timer"
)

var _ timer.Forecaster = (*Store)(nil)

// forecast counts a topic's pending jobs by bucket of due time. The inner
// SELECT is one range of toc_jobs_topic_due (topic, status, action_time,
// job_id) in index order, read from the index alone and cut at the limit;
// the outer groups what it read by bucket. Formatted with the dialect's
// intDiv and unsortedGroups. Arguments: from (ms), step (ms), topic,
// status, from, to, limit.
const forecast = `SELECT (action_time - ?) %s ?, COUNT(*), MAX(action_time) FROM (
	SELECT action_time FROM toc_jobs WHERE topic = ? AND status = ? AND action_time >= ? AND action_time < ?
	ORDER BY action_time LIMIT ?) j
	GROUP BY 1%s`

// Forecast implements timer.Forecaster. A firing job is a pending row
// (fired is a flag), and a job waiting for a retry is a pending row whose
// action_time is its retry time, so both count where they will fire. It
// walks the index over the window's jobs, at most limit+1 of them (0.8
// µs a job on MariaDB, BenchmarkForecast); past limit it sets CountedTo.
// EXPLAIN on MariaDB (no filesort: ORDER BY NULL leaves the buckets,
// read back into Counts by number, unsorted):
//
//	table      type  key                Extra
//	<derived2> ALL                      Using temporary
//	toc_jobs   range toc_jobs_topic_due Using where; Using index
//
// SQLite reads the same range of the covering index, then groups the
// jobs read with a sorter (a temporary B-tree): it serves toc dev.
func (s *Store) Forecast(ctx context.Context, q timer.ForecastQuery, limit int64) (timer.Forecast, error) {
	from, to, step := timer.CeilMillis(q.From), timer.CeilMillis(q.To), q.Step.Milliseconds()
	walk := int64(1<<63 - 1)
	if limit > 0 {
		walk = limit + 1
	}
	rows, err := s.rdb.QueryContext(ctx, fmt.Sprintf(forecast, s.d.intDiv, s.d.unsortedGroups), from, step, q.Topic, int64(timer.StatusPending), from, to, walk)
	if err != nil {
		return timer.Forecast{}, fmt.Errorf("forecast %s: %w", q.Topic, err)
	}
	defer rows.Close()
	f := timer.Forecast{Counts: make([]int64, q.Buckets())}
	var total, last int64
	for rows.Next() {
		var bucket, n, latest int64
		if err := rows.Scan(&bucket, &n, &latest); err != nil {
			return timer.Forecast{}, fmt.Errorf("forecast %s: %w", q.Topic, err)
		}
		if bucket < 0 || bucket >= int64(len(f.Counts)) {
			return timer.Forecast{}, fmt.Errorf("forecast %s: bucket %d of %d", q.Topic, bucket, len(f.Counts))
		}
		f.Counts[bucket] = n
		total, last = total+n, max(last, latest)
	}
	if err := rows.Err(); err != nil {
		return timer.Forecast{}, fmt.Errorf("forecast %s: %w", q.Topic, err)
	}
	if limit > 0 && total > limit {
		f.CountedTo = timer.TimeOf(last)
	}
	return f, nil
}
