// The forecast: how many of a topic's jobs fall due in each step of a
// window.

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ForecastQuery asks for a topic's forecast (GET
// /v1/topics/{topic}/forecast). Zero fields take the API's defaults: From
// now, To From + 24 h, Step an hour.
type ForecastQuery struct {
	Topic    string
	From, To time.Time
	// Step is a bucket's length: at least a second, whole milliseconds,
	// at most 1,000 buckets from From to To.
	Step time.Duration
}

func (q ForecastQuery) values() url.Values { return windowValues(q.From, q.To, q.Step) }

// windowValues are the parameters of a window of time by steps (a
// forecast's, a series'), each left out when zero.
func windowValues(from, to time.Time, step time.Duration) url.Values {
	v := url.Values{}
	setTime(v, "from", from)
	setTime(v, "to", to)
	if step != 0 {
		v.Set("step", step.String())
	}
	return v
}

// Forecast counts a topic's pending jobs by when they fall due: one
// bucket per Step from From, the last ending at To, zeros included.
type Forecast struct {
	Topic    string
	From, To time.Time
	Step     time.Duration
	// Complete is false when a task-store shard held more jobs in the
	// window than a forecast counts: every job due before CountedTo is
	// counted, none after, so the bucket holding it and those after are
	// lower bounds.
	Complete  bool
	CountedTo time.Time
	Buckets   []ForecastBucket
}

// ForecastBucket is how many pending jobs fall due in [Start, Start+Step).
type ForecastBucket struct {
	Start time.Time
	Count int64
}

type forecastJSON struct {
	Topic     string               `json:"topic"`
	From      stamp                `json:"from"`
	To        stamp                `json:"to"`
	Step      string               `json:"step"`
	Complete  bool                 `json:"complete"`
	CountedTo stamp                `json:"counted_to,omitzero"`
	Buckets   []forecastBucketJSON `json:"buckets"`
}

type forecastBucketJSON struct {
	Start stamp `json:"start"`
	Count int64 `json:"count"`
}

// MarshalJSON writes f as the API does.
func (f Forecast) MarshalJSON() ([]byte, error) {
	w := forecastJSON{Topic: f.Topic, From: stamp(f.From), To: stamp(f.To), Step: f.Step.String(), Complete: f.Complete,
		CountedTo: stamp(f.CountedTo), Buckets: make([]forecastBucketJSON, len(f.Buckets))}
	for i, b := range f.Buckets {
		w.Buckets[i] = forecastBucketJSON{Start: stamp(b.Start), Count: b.Count}
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a forecast.
func (f *Forecast) UnmarshalJSON(data []byte) error {
	var w forecastJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	var step time.Duration
	if w.Step != "" {
		var err error
		if step, err = time.ParseDuration(w.Step); err != nil {
			return fmt.Errorf("forecast step: %w", err)
		}
	}
	*f = Forecast{Topic: w.Topic, From: time.Time(w.From), To: time.Time(w.To), Step: step, Complete: w.Complete,
		CountedTo: time.Time(w.CountedTo), Buckets: make([]ForecastBucket, len(w.Buckets))}
	for i, b := range w.Buckets {
		f.Buckets[i] = ForecastBucket{Start: time.Time(b.Start), Count: b.Count}
	}
	return nil
}

// Forecast returns how many of q.Topic's pending jobs fall due in each
// step of q's window (GET /v1/topics/{topic}/forecast), read from the
// task store's index. An unknown topic is ErrNotFound; a window out of
// range an *Error naming the field (from, to or step).
func (c *Client) Forecast(ctx context.Context, q ForecastQuery) (*Forecast, error) {
	f := new(Forecast)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: topicPath(q.Topic, "/forecast"), query: q.values(), safety: idempotent}, f); err != nil {
		return nil, err
	}
	return f, nil
}
