package http

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// topicName is the {topic} of the path, which must be a topic name.
func topicName(r *http.Request) (string, error) {
	name := chi.URLParam(r, "topic")
	if !timer.ValidTopic(name) {
		return "", &timer.FieldError{Field: "topic", Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$"}
	}
	return name, nil
}

// topicStats: GET /v1/topics/{topic}/stats.
func (a *API) topicStats(w http.ResponseWriter, r *http.Request) {
	var st TopicStats
	topic, err := topicName(r)
	if err == nil {
		st, err = a.stats.TopicStats(r.Context(), topic)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	var overdue int64
	if now := a.cfg.Now(); !st.NextDue.IsZero() && st.NextDue.Before(now) {
		overdue = now.Sub(st.NextDue).Milliseconds()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"topic":             st.Topic,
		"slots":             st.Slots,
		"pending":           st.Pending,
		"in_flight":         st.InFlight,
		"dead":              st.Dead,
		"next_due_at":       formatTime(st.NextDue),
		"oldest_overdue_ms": overdue,
	})
}

// topicView is a topic as the API shows it: its settings, with the
// defaults filled in, and on GET /v1/topics/{topic} its live usage.
type topicView struct {
	Name              string     `json:"name"`
	Slots             int        `json:"slots"`
	MaxAttempts       int        `json:"max_attempts"`
	RateLimit         float64    `json:"rate_limit"`
	Burst             int        `json:"burst"`
	MaxInFlight       int        `json:"max_in_flight"`
	Weight            int        `json:"weight"`
	Retry             retryView  `json:"retry"`
	LeaseMS           int64      `json:"lease_ms"`
	CallbackTimeoutMS int64      `json:"callback_timeout_ms"`
	CreatedAt         string     `json:"created_at"`
	Usage             *usageView `json:"usage,omitempty"`
}

type retryView struct {
	BaseMS int64 `json:"base_ms"`
	MaxMS  int64 `json:"max_ms"`
}

// usageView is a topic's live usage over the cluster.
type usageView struct {
	DueWaiting int64   `json:"due_waiting"`
	InFlight   int64   `json:"in_flight"`
	Rate       float64 `json:"rate"`
	Throttled  int64   `json:"throttled"`
	Members    int     `json:"members"`
}

func (a *API) topicViewOf(t timer.Topic) topicView {
	d := a.cfg.TopicDefaults
	l := t.Limits
	return topicView{
		Name:              t.Name,
		Slots:             t.Slots,
		MaxAttempts:       cmp.Or(t.MaxAttempts, timer.DefaultMaxAttempts),
		RateLimit:         l.RateLimit,
		Burst:             l.Burst,
		MaxInFlight:       l.MaxInFlight,
		Weight:            cmp.Or(l.Weight, 1),
		Retry:             retryView{BaseMS: cmp.Or(l.Retry.Base, d.Retry.Base).Milliseconds(), MaxMS: cmp.Or(l.Retry.Max, d.Retry.Max).Milliseconds()},
		LeaseMS:           cmp.Or(l.Lease, d.Lease).Milliseconds(),
		CallbackTimeoutMS: cmp.Or(l.CallbackTimeout, d.CallbackTimeout).Milliseconds(),
		CreatedAt:         formatTime(t.CreatedAt),
	}
}

// topicRequest is the body of PUT /v1/topics/{topic}. It replaces the
// topic's settings: an omitted field takes the default.
type topicRequest struct {
	Slots       *int     `json:"slots"`
	MaxAttempts *int     `json:"max_attempts"`
	RateLimit   *float64 `json:"rate_limit"`
	Burst       *int     `json:"burst"`
	MaxInFlight *int     `json:"max_in_flight"`
	Weight      *int     `json:"weight"`
	Retry       *struct {
		BaseMS *int64 `json:"base_ms"`
		MaxMS  *int64 `json:"max_ms"`
	} `json:"retry"`
	LeaseMS           *int64 `json:"lease_ms"`
	CallbackTimeoutMS *int64 `json:"callback_timeout_ms"`
}

// topic turns the body into the topic named name.
func (b *topicRequest) topic(name string) (timer.Topic, error) {
	t := timer.Topic{Name: name}
	if b.Slots != nil {
		if *b.Slots < 1 {
			return t, &timer.FieldError{Field: "slots", Message: fmt.Sprintf("must be a power of two within 1..%d", timer.MaxSlots)}
		}
		t.Slots = *b.Slots
	}
	if b.MaxAttempts != nil {
		if *b.MaxAttempts < 1 || *b.MaxAttempts > timer.MaxAttemptsLimit {
			return t, &timer.FieldError{Field: "max_attempts", Message: fmt.Sprintf("must be within 1..%d", timer.MaxAttemptsLimit)}
		}
		t.MaxAttempts = *b.MaxAttempts
	}
	l := &t.Limits
	l.RateLimit = deref(b.RateLimit)
	l.Burst, l.MaxInFlight, l.Weight = deref(b.Burst), deref(b.MaxInFlight), deref(b.Weight)
	ms := func(field string, v *int64) (time.Duration, error) {
		n := deref(v)
		if n < 0 || n > timer.MaxLease.Milliseconds() {
			return 0, &timer.FieldError{Field: field, Message: fmt.Sprintf("must be within 0..%d", timer.MaxLease.Milliseconds())}
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	var err error
	if b.Retry != nil {
		if l.Retry.Base, err = ms("retry.base_ms", b.Retry.BaseMS); err != nil {
			return t, err
		}
		if l.Retry.Max, err = ms("retry.max_ms", b.Retry.MaxMS); err != nil {
			return t, err
		}
	}
	if l.Lease, err = ms("lease_ms", b.LeaseMS); err != nil {
		return t, err
	}
	if l.CallbackTimeout, err = ms("callback_timeout_ms", b.CallbackTimeoutMS); err != nil {
		return t, err
	}
	return t, l.Validate()
}

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}

// putTopic: PUT /v1/topics/{topic}, replacing the topic's settings.
func (a *API) putTopic(w http.ResponseWriter, r *http.Request) {
	var body topicRequest
	if r.ContentLength != 0 {
		if err := decode(r.Body, &body); err != nil && !isEmptyBody(err) {
			a.writeError(w, r, err)
			return
		}
	}
	t, err := body.topic(chi.URLParam(r, "topic"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	got, created, err := a.jobs.PutTopic(r.Context(), t)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, a.topicViewOf(got))
}

// getTopic: GET /v1/topics/{topic}.
func (a *API) getTopic(w http.ResponseWriter, r *http.Request) {
	var t timer.Topic
	name, err := topicName(r)
	if err == nil {
		t, err = a.jobs.Topic(r.Context(), name)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	v := a.topicViewOf(t)
	if a.stats != nil {
		u, err := a.stats.TopicUsage(r.Context(), t)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		v.Usage = &usageView{DueWaiting: u.DueWaiting, InFlight: u.InFlight, Rate: u.Rate, Throttled: u.Throttled, Members: u.Members}
	}
	writeJSON(w, http.StatusOK, v)
}

// listTopics: GET /v1/topics.
func (a *API) listTopics(w http.ResponseWriter, r *http.Request) {
	topics, err := a.jobs.Topics(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	items := make([]topicView, len(topics))
	for i, t := range topics {
		items[i] = a.topicViewOf(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}
