// The forecast: how many of a topic's jobs fall due in each step of a
// window, read from the task store's (topic, status, due) index, so that
// a team sees tomorrow's spike today.

package timer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Bounds of a forecast.
const (
	// MaxForecastBuckets is the most buckets one forecast holds.
	MaxForecastBuckets = 1000
	// MinForecastStep is the shortest bucket.
	MinForecastStep = time.Second
	// MaxForecastJobs is how many jobs a forecast counts on one shard
	// before it stops (Forecast.CountedTo): the walk of the index costs
	// time in proportion to the jobs counted, about 0.8 s a million on
	// MariaDB (taskdb's BenchmarkForecast).
	MaxForecastJobs = 1_000_000
)

// ForecastQuery asks how many of Topic's jobs fall due in each bucket
// [From+i·Step, From+(i+1)·Step) from From to To; the last bucket ends at
// To.
type ForecastQuery struct {
	Topic    string
	From, To time.Time
	Step     time.Duration
}

// Check returns a *FieldError naming the first field of q out of range.
func (q ForecastQuery) Check() error {
	switch {
	case !ValidTopic(q.Topic):
		return invalid("topic", "required; must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	case q.From.IsZero():
		return invalid("from", "required")
	case q.To.IsZero():
		return invalid("to", "required")
	case !q.From.Before(q.To):
		return invalid("to", "must be after from")
	case q.Step < MinForecastStep:
		return invalid("step", "must be at least %v", MinForecastStep)
	case q.Step%time.Millisecond != 0:
		return invalid("step", "must be whole milliseconds")
	case (q.To.Sub(q.From)-1)/q.Step >= MaxForecastBuckets || q.To.Sub(q.From) == 1<<63-1:
		return invalid("step", "(to - from) / step is more than %d buckets", MaxForecastBuckets)
	}
	return nil
}

// Buckets is how many buckets q asks for: (To-From)/Step, rounded up.
func (q ForecastQuery) Buckets() int {
	return int((q.To.Sub(q.From)-1)/q.Step) + 1
}

// Start is when bucket i begins.
func (q ForecastQuery) Start(i int) time.Time {
	return q.From.Add(time.Duration(i) * q.Step)
}

// Bucket returns the bucket a job due at due (in Unix ms) falls in, and
// false when it is outside [From, To). Due times are whole milliseconds,
// rounded up, so the bounds are too.
func (q ForecastQuery) Bucket(due int64) (int, bool) {
	from, to := CeilMillis(q.From), CeilMillis(q.To)
	if due < from || due >= to {
		return 0, false
	}
	return int((due - from) / q.Step.Milliseconds()), true
}

// Forecast is the answer to a ForecastQuery.
type Forecast struct {
	// Counts holds one count per bucket.
	Counts []int64
	// CountedTo, when not zero, is where counting stopped because a shard
	// held more than MaxForecastJobs jobs in the window: every job due
	// before it is counted, none after it, so the bucket holding it and
	// those after it are lower bounds.
	CountedTo time.Time
}

// Forecaster counts jobs by due time. A Store may implement it; the
// Scheduler's Forecast then reads it.
type Forecaster interface {
	// Forecast counts q.Topic's pending jobs by due time in q's buckets,
	// from an index, without reading the rows. A firing job counts at its
	// due time (which has passed), a job waiting for a retry at its retry
	// time, when it will fire; done, cancelled, dead and purged jobs do
	// not count. On each shard it counts the limit jobs due first and
	// stops there, setting CountedTo; limit 0 counts every one. q is
	// checked by the caller.
	Forecast(ctx context.Context, q ForecastQuery, limit int64) (Forecast, error)
}

// Forecast counts the pending jobs of q's topic by due time (see
// Forecaster), at most MaxForecastJobs a shard. An unknown topic is an
// error wrapping ErrNotFound; a store that cannot forecast, one wrapping
// errors.ErrUnsupported.
func (s *Scheduler) Forecast(ctx context.Context, q ForecastQuery) (Forecast, error) {
	if err := q.Check(); err != nil {
		return Forecast{}, err
	}
	if _, err := s.store.Topic(ctx, q.Topic); err != nil {
		return Forecast{}, err
	}
	f, ok := s.store.(Forecaster)
	if !ok {
		return Forecast{}, fmt.Errorf("forecast %s: %w", q.Topic, errors.ErrUnsupported)
	}
	return f.Forecast(ctx, q, MaxForecastJobs)
}
