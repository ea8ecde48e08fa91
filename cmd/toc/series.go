// The dashboard's series: this member's, kept in memory (timer.Series,
// fed by the metrics' observer), published to Redis every 10 s, and
// added up with the other members' for GET /v1/series.

package main

import (
	"context"
	"log/slog"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/timer"
)

// seriesCatchUp bounds the finished 10 s buckets a publish writes after
// a pause (Redis away): the last five minutes'.
const seriesCatchUp = 30

// seriesRecorder samples this member's calls in flight into its series
// every second and publishes its finished buckets every 10 s.
type seriesRecorder struct {
	series *timer.Series
	pub    *prepare.SeriesPublisher
	// label is the metrics' topic label of a topic (its own name, or
	// _other past the bound), so that the series keep the metrics' topics.
	label func(string) string
	now   func() time.Time
	// published is the start of the last 10 s bucket published.
	published time.Time
}

// run samples and publishes until ctx ends; usage is the worker's use of
// each topic.
func (r *seriesRecorder) run(ctx context.Context, usage func() map[string]timer.TopicUsage, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		inFlight := map[string]int64{}
		for topic, u := range usage() {
			inFlight[r.label(topic)] += u.InFlight
		}
		r.series.SampleInFlight(inFlight)
		_, err := r.runOnce(ctx)
		if err != nil && !failing && ctx.Err() == nil {
			log.Warn("publish series failed", "err", err)
		}
		failing = err != nil
	}
}

// runOnce publishes the 10 s buckets finished since the last publish (at
// most seriesCatchUp of them), and their minutes, of every series that
// counted anything, and returns how many buckets it wrote.
func (r *seriesRecorder) runOnce(ctx context.Context) (int, error) {
	now := r.now()
	current := now.Truncate(timer.SeriesFine)
	from := r.published.Add(timer.SeriesFine)
	if oldest := current.Add(-seriesCatchUp * timer.SeriesFine); from.Before(oldest) {
		from = oldest // the first publish, or after a pause
	}
	if !from.Before(current) {
		return 0, nil
	}
	var records []prepare.SeriesRecord
	for _, label := range r.series.Labels() {
		fine := r.series.Buckets(label, timer.SeriesFine, from, current)
		for i, b := range fine {
			if !b.IsZero() {
				records = append(records, prepare.SeriesRecord{Label: label, Res: timer.SeriesFine, Start: from.Add(time.Duration(i) * timer.SeriesFine), Bucket: b})
			}
		}
		// The minutes of those buckets, whole or still filling: written
		// again each time until they end.
		firstMinute := from.Truncate(timer.SeriesCoarse)
		for i, b := range r.series.Buckets(label, timer.SeriesCoarse, firstMinute, current.Add(-1).Truncate(timer.SeriesCoarse).Add(timer.SeriesCoarse)) {
			if !b.IsZero() {
				records = append(records, prepare.SeriesRecord{Label: label, Res: timer.SeriesCoarse, Start: firstMinute.Add(time.Duration(i) * timer.SeriesCoarse), Bucket: b})
			}
		}
	}
	if err := r.pub.Publish(ctx, records, now); err != nil {
		return 0, err
	}
	r.published = current.Add(-timer.SeriesFine)
	return len(records), nil
}

// seriesReader adds this member's series, from memory, to the others',
// from Redis.
type seriesReader struct {
	series *timer.Series
	queue  *prepare.Index
	member string
	now    func() time.Time
}

var _ tochttp.SeriesReader = (*seriesReader)(nil)

// Series implements tochttp.SeriesReader.
func (s *seriesReader) Series(ctx context.Context, q timer.SeriesQuery) ([]timer.SeriesBucket, int, error) {
	res := q.Resolution(s.now())
	base := s.series.Buckets(q.Label, res, q.From, q.To)
	others, members, err := s.queue.ReadSeries(ctx, q.Label, res, q.From, q.To, s.member)
	if err != nil {
		return nil, 0, err
	}
	for i := range base {
		base[i].Add(others[i])
	}
	return timer.FoldSeries(q, res, base), len(members) + 1, nil
}
