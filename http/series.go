// The series: GET /v1/series and GET /v1/topics/{topic}/series, what the
// cluster fired, by 10 s over the last hour and by the minute over the
// last day, for the dashboard's charts.

package http

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// SeriesReader reads what the members of the cluster counted
// (timer.Series), added up.
type SeriesReader interface {
	// Series returns q's buckets, q.Buckets() of q.Step from q.From
	// (q is aligned and checked), summed over the members, and how many
	// members counted. q.Label is a topic as toc holds it, or
	// timer.SeriesAll.
	Series(ctx context.Context, q timer.SeriesQuery) ([]timer.SeriesBucket, int, error)
}

// seriesView is what the series routes answer.
type seriesView struct {
	// Topic is the topic of GET /v1/topics/{topic}/series, absent from
	// GET /v1/series.
	Topic string `json:"topic,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
	Step  string `json:"step"`
	// Resolution is the width of the buckets kept that were added up: 10s
	// for a range within the last hour, else 1m0s.
	Resolution string        `json:"resolution"`
	Members    int           `json:"members"`
	Buckets    []seriesPoint `json:"buckets"`
}

type seriesPoint struct {
	Start     string           `json:"start"`
	Fires     int64            `json:"fires"`
	Failures  map[string]int64 `json:"failures"`
	Dead      int64            `json:"dead"`
	Throttled int64            `json:"throttled"`
	InFlight  int64            `json:"in_flight"`
	// LatenessP50MS and LatenessP99MS are the percentiles of how late the
	// bucket's attempts started, as their lateness bucket's upper bound
	// (timer.LatenessBounds); null without attempts.
	LatenessP50MS *int64 `json:"lateness_p50_ms"`
	LatenessP99MS *int64 `json:"lateness_p99_ms"`
}

// seriesIn is a series request: the query, and whether it names a topic.
type seriesIn struct {
	q     timer.SeriesQuery
	topic bool
}

// readSeries reads GET /v1/topics/{topic}/series (topic) or GET
// /v1/series ?from=T1&to=T2&step=D: to defaults to now, from to an hour
// before to, step to timer.DefaultSeriesStep. The overall series covers
// every topic, so it is only for a token that may see them all (the gate
// refuses any other with 403).
func (a *API) readSeries(topic bool) func(*http.Request, *seriesIn) (*claim, error) {
	return func(r *http.Request, in *seriesIn) (*claim, error) {
		in.topic = topic
		c := &claim{everyTopic: !topic}
		in.q.Label = timer.SeriesAll
		if topic {
			in.q.Label = chi.URLParam(r, "topic")
			c = &claim{topics: []topicRef{{field: "topic", name: &in.q.Label}}}
		}
		v := r.URL.Query()
		if err := onlyParams(v, "from", "to", "step"); err != nil {
			return c, err
		}
		now := a.cfg.Now()
		in.q.To = now
		if err := timeRange(v.Get, &in.q.From, &in.q.To); err != nil {
			return c, err
		}
		if v.Get("from") == "" {
			in.q.From = in.q.To.Add(-time.Hour)
		}
		if s := v.Get("step"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				return c, &timer.FieldError{Field: "step", Message: "must be a duration such as 10s, 1m or 5m"}
			}
			in.q.Step = d
		} else if in.q.From.Before(in.q.To) {
			in.q.Step = timer.DefaultSeriesStep(in.q.From, in.q.To, now)
		}
		in.q.Align()
		return c, in.q.Check(now)
	}
}

// series: GET /v1/series and GET /v1/topics/{topic}/series.
func (a *API) series(w http.ResponseWriter, r *http.Request, in *seriesIn, _ *admission) {
	if a.cfg.Series == nil {
		a.writeError(w, r, fmt.Errorf("no series in this process: %w", timer.ErrNotFound))
		return
	}
	q := in.q
	buckets, members, err := a.cfg.Series.Series(r.Context(), q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := seriesView{From: formatTime(q.From), To: formatTime(q.To), Step: q.Step.String(),
		Resolution: q.Resolution(a.cfg.Now()).String(), Members: members, Buckets: make([]seriesPoint, len(buckets))}
	if in.topic {
		out.Topic = shownTopic(q.Label)
	}
	for i, b := range buckets {
		p := seriesPoint{Start: formatTime(q.Start(i)), Fires: b.Fires, Dead: b.Dead, Throttled: b.Throttled, InFlight: b.InFlight,
			Failures: make(map[string]int64, len(b.Failures))}
		for j, n := range b.Failures {
			p.Failures[timer.FailureClasses[j]] = n
		}
		p.LatenessP50MS, p.LatenessP99MS = latenessMS(b.Lateness[:], .50), latenessMS(b.Lateness[:], .99)
		out.Buckets[i] = p
	}
	writeJSON(w, http.StatusOK, out)
}

// latenessMS is the q-quantile of counts in milliseconds, nil when there
// are none.
func latenessMS(counts []int64, q float64) *int64 {
	d, ok := timer.LatenessQuantile(counts, q)
	if !ok {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}
