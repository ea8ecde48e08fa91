// The series: what the cluster fired, bucket by bucket, over the last
// hour (by 10 s) and day (by the minute).

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// SeriesQuery asks for a topic's series (GET /v1/topics/{topic}/series),
// or every topic's when Topic is empty (GET /v1/series, for a token that
// may see every topic). Zero fields take the API's defaults: To now,
// From an hour before To, Step 10 s within the last hour, else whole
// minutes.
type SeriesQuery struct {
	Topic    string
	From, To time.Time
	// Step is a bucket's length: a multiple of 10 s (of a minute for a
	// From more than an hour ago), at most 1,440 buckets.
	Step time.Duration
}

func (q SeriesQuery) values() url.Values { return windowValues(q.From, q.To, q.Step) }

// Series is what the cluster's members counted, added up, one bucket per
// Step from From to To, zeros included.
type Series struct {
	// Topic is empty for the series of every topic.
	Topic    string
	From, To time.Time
	Step     time.Duration
	// Resolution is the width of the buckets the members keep that were
	// added up: 10 s within the last hour, else a minute.
	Resolution time.Duration
	// Members counts the members whose buckets were added up.
	Members int
	Buckets []SeriesBucket
}

// SeriesBucket is what was counted in [Start, Start+Step).
type SeriesBucket struct {
	Start time.Time `json:"-"`
	// Fires counts the webhook attempts that ended, Failures those that
	// failed by class: "4xx", "5xx", "timeout", "other".
	Fires    int64            `json:"fires"`
	Failures map[string]int64 `json:"failures"`
	// Dead counts the jobs that ran out of attempts, Throttled the claims
	// held back by the topic's limits, InFlight the most calls running at
	// once.
	Dead      int64 `json:"dead"`
	Throttled int64 `json:"throttled"`
	InFlight  int64 `json:"in_flight"`
	// LatenessP50MS and LatenessP99MS are how late the attempts started,
	// as the upper bound of their lateness bucket; nil without attempts.
	LatenessP50MS *int64 `json:"lateness_p50_ms"`
	LatenessP99MS *int64 `json:"lateness_p99_ms"`
}

type seriesJSON struct {
	Topic      string             `json:"topic,omitempty"`
	From       stamp              `json:"from"`
	To         stamp              `json:"to"`
	Step       string             `json:"step"`
	Resolution string             `json:"resolution"`
	Members    int                `json:"members"`
	Buckets    []seriesBucketJSON `json:"buckets"`
}

type seriesBucketJSON struct {
	Start stamp `json:"start"`
	SeriesBucket
}

// MarshalJSON writes s as the API does.
func (s Series) MarshalJSON() ([]byte, error) {
	w := seriesJSON{Topic: s.Topic, From: stamp(s.From), To: stamp(s.To), Step: s.Step.String(), Resolution: s.Resolution.String(),
		Members: s.Members, Buckets: make([]seriesBucketJSON, len(s.Buckets))}
	for i, b := range s.Buckets {
		w.Buckets[i] = seriesBucketJSON{Start: stamp(b.Start), SeriesBucket: b}
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a series.
func (s *Series) UnmarshalJSON(data []byte) error {
	var w seriesJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	var durations [2]time.Duration
	for i, s := range []string{w.Step, w.Resolution} {
		if s == "" {
			continue
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("series step or resolution: %w", err)
		}
		durations[i] = d
	}
	step, res := durations[0], durations[1]
	*s = Series{Topic: w.Topic, From: time.Time(w.From), To: time.Time(w.To), Step: step, Resolution: res, Members: w.Members,
		Buckets: make([]SeriesBucket, len(w.Buckets))}
	for i, b := range w.Buckets {
		s.Buckets[i] = b.SeriesBucket
		s.Buckets[i].Start = time.Time(b.Start)
	}
	return nil
}

// Series returns what the cluster counted of q.Topic (of every topic when
// empty) in each step of q's window. A window out of range is an *Error
// naming the field (from, to or step); the series of every topic asked
// with a token that may not see them all, an *Error of HTTP status 403.
func (c *Client) Series(ctx context.Context, q SeriesQuery) (*Series, error) {
	path := "/v1/series"
	if q.Topic != "" {
		path = topicPath(q.Topic, "/series")
	}
	s := new(Series)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: path, query: q.values(), safety: idempotent}, s); err != nil {
		return nil, err
	}
	return s, nil
}
