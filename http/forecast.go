// The forecast: GET /v1/topics/{topic}/forecast, how many of a topic's
// jobs fall due in each step of a window.

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// Defaults of a forecast whose parameters are absent: from now, for a
// day, by the hour.
const (
	DefaultForecastSpan = 24 * time.Hour
	DefaultForecastStep = time.Hour
)

// Forecaster counts a topic's jobs by due time; *timer.Scheduler
// implements it.
type Forecaster interface {
	// Forecast counts q.Topic's pending jobs in q's buckets of due time
	// (timer.Forecaster). A q out of range is a *timer.FieldError; an
	// unknown topic an error wrapping timer.ErrNotFound.
	Forecast(ctx context.Context, q timer.ForecastQuery) (timer.Forecast, error)
}

// The Jobs that cmd/toc serves must forecast, or the endpoint cannot.
var _ Forecaster = (*timer.Scheduler)(nil)

// forecastView is what GET /v1/topics/{topic}/forecast answers.
type forecastView struct {
	Topic string `json:"topic"`
	From  string `json:"from"`
	To    string `json:"to"`
	Step  string `json:"step"`
	// Complete is false when a shard held more jobs in the window than
	// a forecast counts; CountedTo then says up to when the counts are
	// whole: the buckets from the one holding it on are lower bounds.
	Complete  bool             `json:"complete"`
	CountedTo string           `json:"counted_to,omitempty"`
	Buckets   []forecastBucket `json:"buckets"`
}

type forecastBucket struct {
	Start string `json:"start"`
	Count int64  `json:"count"`
}

// readForecast reads GET /v1/topics/{topic}/forecast?from=T1&to=T2&step=D.
func (a *API) readForecast(r *http.Request, q *timer.ForecastQuery) (*claim, error) {
	var err error
	*q, err = forecastQuery(chi.URLParam(r, "topic"), r.URL.Query(), a.cfg.Now())
	return &claim{topics: []topicRef{{field: "topic", name: &q.Topic}}}, err
}

// forecast: GET /v1/topics/{topic}/forecast.
func (a *API) forecast(w http.ResponseWriter, r *http.Request, qp *timer.ForecastQuery, _ *admission) {
	q, topic := *qp, qp.Topic
	fc, ok := a.jobs.(Forecaster)
	if !ok {
		a.writeError(w, r, fmt.Errorf("forecast %s: %w", topic, errors.ErrUnsupported))
		return
	}
	f, err := fc.Forecast(r.Context(), q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := forecastView{
		Topic: shownTopic(topic), From: formatTime(q.From), To: formatTime(q.To), Step: q.Step.String(),
		Complete: f.CountedTo.IsZero(), CountedTo: formatTime(f.CountedTo),
		Buckets: make([]forecastBucket, len(f.Counts)),
	}
	for i, n := range f.Counts {
		out.Buckets[i] = forecastBucket{Start: formatTime(q.Start(i)), Count: n}
	}
	writeJSON(w, http.StatusOK, out)
}

// forecastQuery reads a forecast's parameters: from (RFC 3339, default
// now), to (RFC 3339, default from + DefaultForecastSpan) and step (Go
// duration syntax, default DefaultForecastStep). Any other parameter, or
// one given twice, is a 400 naming it.
func forecastQuery(topic string, v url.Values, now time.Time) (timer.ForecastQuery, error) {
	allowed := []string{"from", "to", "step"}
	for name, vals := range v {
		if !slices.Contains(allowed, name) {
			return timer.ForecastQuery{}, &timer.FieldError{Field: name, Message: "not a parameter here; use " + strings.Join(allowed, ", ")}
		}
		if len(vals) > 1 {
			return timer.ForecastQuery{}, &timer.FieldError{Field: name, Message: "given more than once"}
		}
	}
	q := timer.ForecastQuery{Topic: topic, From: now, Step: DefaultForecastStep}
	if s := v.Get("from"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, &timer.FieldError{Field: "from", Message: "must be an RFC 3339 time"}
		}
		q.From = t
	}
	q.To = q.From.Add(DefaultForecastSpan)
	if s := v.Get("to"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, &timer.FieldError{Field: "to", Message: "must be an RFC 3339 time"}
		}
		q.To = t
	}
	if s := v.Get("step"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return q, &timer.FieldError{Field: "step", Message: "must be a duration such as 15m or 1h"}
		}
		q.Step = d
	}
	return q, q.Check()
}
