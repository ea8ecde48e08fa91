// The forecast over shards: each shard counts its own jobs, the sums are
// the topic's.

package shard

import (
	"context"

	"github.com/toc-project/toc/timer"
)

var _ timer.Forecaster = (*Store)(nil)

// Forecast implements timer.Forecaster: every shard at once, the counts
// summed. A shard that stopped at limit stopped at its own CountedTo; the
// sums are whole before the earliest of them, which is the CountedTo of
// the sum.
func (s *Store) Forecast(ctx context.Context, q timer.ForecastQuery, limit int64) (timer.Forecast, error) {
	parts := make([]timer.Forecast, len(s.shards))
	err := s.all(func(i int) error {
		var err error
		parts[i], err = s.shards[i].Forecast(ctx, q, limit)
		return err
	})
	if err != nil {
		return timer.Forecast{}, err
	}
	sum := timer.Forecast{Counts: make([]int64, q.Buckets())}
	for _, p := range parts {
		for i, n := range p.Counts {
			sum.Counts[i] += n
		}
		if !p.CountedTo.IsZero() && (sum.CountedTo.IsZero() || p.CountedTo.Before(sum.CountedTo)) {
			sum.CountedTo = p.CountedTo
		}
	}
	return sum, nil
}
