// The schedules: POST /v1/schedules, GET /v1/schedules,
// GET|DELETE /v1/schedules/{id}, POST /v1/schedules/{id}/pause|resume.

package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// Schedules creates, lists, pauses, resumes and deletes recurring
// schedules; *timer.Schedules implements it. Unknown ids wrap
// timer.ErrNotFound; a bad schedule is a *timer.FieldError.
type Schedules interface {
	Create(ctx context.Context, s timer.Schedule) (timer.ScheduleView, error)
	Get(ctx context.Context, id timer.ScheduleID) (timer.ScheduleView, error)
	// List returns up to limit schedules with an id above after, by id.
	List(ctx context.Context, after timer.ScheduleID, limit int) ([]timer.ScheduleView, error)
	Pause(ctx context.Context, id timer.ScheduleID) (timer.ScheduleView, error)
	Resume(ctx context.Context, id timer.ScheduleID) (timer.ScheduleView, error)
	Delete(ctx context.Context, id timer.ScheduleID) error
}

// Pages of GET /v1/schedules.
const (
	DefaultSchedulePage = 100
	MaxSchedulePage     = 1000
)

// errNoSchedules answers the schedule routes of an API without them.
var errNoSchedules = fmt.Errorf("this toc serves no schedules: %w", timer.ErrNotFound)

// scheduleRequest is the body of POST /v1/schedules. Job is decoded on
// its own, so that its errors are named "job.<field>".
type scheduleRequest struct {
	Cron     *string         `json:"cron"`
	TimeZone *string         `json:"time_zone"`
	EveryMS  *int64          `json:"every_ms"`
	StartAt  *string         `json:"start_at"`
	EndAt    *string         `json:"end_at"`
	CatchUp  *string         `json:"catch_up"`
	Job      json.RawMessage `json:"job"`
}

// templateRequest is the job of a schedule: the fields of POST /v1/jobs
// but the time and the key, which each occurrence sets. Those are read
// to be refused by name rather than as unknown.
type templateRequest struct {
	Topic       string          `json:"topic"`
	BizID       decimal         `json:"biz_id"`
	BizType     decimal         `json:"biz_type"`
	CallbackURL *string         `json:"callback_url"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts *int            `json:"max_attempts"`
	Priority    *string         `json:"priority"`
	FireAt      json.RawMessage `json:"fire_at"`
	DelayMS     json.RawMessage `json:"delay_ms"`
	Key         json.RawMessage `json:"key"`
	// ExpireAfterMS: as a job's.
	ExpireAfterMS *int64 `json:"expire_after_ms"`
	// ConcurrencyKey is each occurrence's job's.
	ConcurrencyKey string `json:"concurrency_key"`
}

// inJob names err's field under "job".
func inJob(err error) error {
	var fe *timer.FieldError
	if errors.As(err, &fe) {
		name := "job"
		if fe.Field != "" {
			name += "." + fe.Field
		}
		return &timer.FieldError{Field: name, Message: fe.Message}
	}
	return err
}

// template reads the job of a schedule, checking what the domain does
// not: presence, the time and key left out, the payload's form.
func (b *scheduleRequest) template() (timer.JobTemplate, error) {
	if len(b.Job) == 0 || bytes.Equal(b.Job, []byte("null")) {
		return timer.JobTemplate{}, &timer.FieldError{Field: "job", Message: "required: the job each occurrence makes"}
	}
	var jr templateRequest
	if err := decodeBytes(b.Job, &jr); err != nil {
		return timer.JobTemplate{}, inJob(err)
	}
	for name, raw := range map[string]json.RawMessage{"fire_at": jr.FireAt, "delay_ms": jr.DelayMS, "key": jr.Key} {
		if raw != nil {
			return timer.JobTemplate{}, &timer.FieldError{Field: "job." + name, Message: "set by each occurrence; leave it out"}
		}
	}
	var r timer.Request
	if err := (jobFields{jr.CallbackURL, jr.Payload, jr.MaxAttempts, jr.Priority, jr.ExpireAfterMS, jr.ConcurrencyKey}).apply(&r); err != nil {
		return timer.JobTemplate{}, inJob(err)
	}
	return timer.JobTemplate{Topic: jr.Topic, BizID: uint64(jr.BizID), BizType: uint64(jr.BizType), CallbackURL: r.CallbackURL,
		Payload: r.Payload, MaxAttempts: r.MaxAttempts, Priority: r.Priority, Expiry: r.Expiry, NoExpiry: r.NoExpiry,
		ConcurrencyKey: r.ConcurrencyKey}, nil
}

// schedule turns the body into a schedule for timer.Schedules.Create,
// which checks the rest.
func (b *scheduleRequest) schedule() (timer.Schedule, error) {
	var s timer.Schedule
	var err error
	if s.Job, err = b.template(); err != nil {
		return s, err
	}
	if b.Cron != nil {
		if *b.Cron == "" {
			return s, &timer.FieldError{Field: "cron", Message: "must be a cron expression; leave it out for every_ms"}
		}
		s.Cron = *b.Cron
	}
	if b.TimeZone != nil {
		if *b.TimeZone == "" {
			return s, &timer.FieldError{Field: "time_zone", Message: "must be an IANA time zone name; leave it out for UTC"}
		}
		s.TimeZone = *b.TimeZone
	}
	if b.EveryMS != nil {
		if *b.EveryMS < timer.MinEvery.Milliseconds() || *b.EveryMS > timer.MaxEvery.Milliseconds() {
			return s, &timer.FieldError{Field: "every_ms", Message: fmt.Sprintf("must be within %d..%d", timer.MinEvery.Milliseconds(), timer.MaxEvery.Milliseconds())}
		}
		s.Every = time.Duration(*b.EveryMS) * time.Millisecond
	}
	for _, f := range []struct {
		name string
		in   *string
		out  *time.Time
	}{{"start_at", b.StartAt, &s.StartAt}, {"end_at", b.EndAt, &s.EndAt}} {
		if f.in == nil {
			continue
		}
		t, err := time.Parse(time.RFC3339, *f.in)
		if err != nil {
			return s, &timer.FieldError{Field: f.name, Message: "must be an RFC 3339 time, like 2026-01-02T15:04:05Z"}
		}
		if !timer.ValidDue(t) {
			return s, &timer.FieldError{Field: f.name, Message: timer.DueRange()}
		}
		*f.out = t
	}
	s.CatchUp = timer.DefaultCatchUp
	if b.CatchUp != nil {
		if *b.CatchUp == "" {
			return s, &timer.FieldError{Field: "catch_up", Message: "must be skip, last or all"}
		}
		if s.CatchUp, err = timer.ParseCatchUp(*b.CatchUp); err != nil {
			return s, err
		}
	}
	return s, nil
}

// scheduleView is a schedule as the API shows it.
type scheduleView struct {
	ID       string `json:"id"`
	Cron     string `json:"cron,omitempty"`
	TimeZone string `json:"time_zone,omitempty"`
	EveryMS  int64  `json:"every_ms,omitempty"`
	StartAt  string `json:"start_at,omitempty"`
	EndAt    string `json:"end_at,omitempty"`
	CatchUp  string `json:"catch_up"`
	Paused   bool   `json:"paused"`
	// KeyPrefix begins the idempotency key of every job the schedule
	// makes: the prefix, then the occurrence's time in Unix ms.
	KeyPrefix     string       `json:"key_prefix"`
	NextFireTimes []string     `json:"next_fire_times"`
	Job           templateView `json:"job"`
	CreatedAt     string       `json:"created_at"`
	UpdatedAt     string       `json:"updated_at"`
	// Owner is the token that created it, absent when auth is off.
	Owner string `json:"owner,omitempty"`
	// Skipped counts the occurrences its owner's max_pending refused;
	// the last's time and reason are absent until the first.
	Skipped        int64  `json:"skipped"`
	LastSkippedAt  string `json:"last_skipped_at,omitempty"`
	LastSkipReason string `json:"last_skip_reason,omitempty"`
}

type templateView struct {
	Topic       string          `json:"topic"`
	BizID       decimal         `json:"biz_id"`
	BizType     decimal         `json:"biz_type"`
	CallbackURL string          `json:"callback_url"`
	Payload     json.RawMessage `json:"payload"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Priority    string          `json:"priority"`
	// ExpireAfterMS is the occurrences' own deadline, -1 for none; absent:
	// the topic's.
	ExpireAfterMS  *int64 `json:"expire_after_ms,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

func scheduleViewOf(v timer.ScheduleView) scheduleView {
	s := v.Schedule
	out := scheduleView{
		ID:            s.ID.String(),
		Cron:          s.Cron,
		TimeZone:      s.TimeZone,
		EveryMS:       s.Every.Milliseconds(),
		StartAt:       formatTime(s.StartAt),
		EndAt:         formatTime(s.EndAt),
		CatchUp:       s.CatchUp.String(),
		Paused:        s.Paused,
		KeyPrefix:     "schedule:" + s.ID.String() + ":",
		NextFireTimes: make([]string, len(v.NextFireTimes)),
		Job: templateView{
			Topic:       shownTopic(s.Job.Topic),
			BizID:       decimal(s.Job.BizID),
			BizType:     decimal(s.Job.BizType),
			CallbackURL: s.Job.CallbackURL,
			Payload:     json.RawMessage("null"),
			MaxAttempts: s.Job.MaxAttempts,
			Priority:    s.Job.Priority.String(),

			ConcurrencyKey: s.Job.ConcurrencyKey,
		},
		CreatedAt: formatTime(s.CreatedAt),
		UpdatedAt: formatTime(s.UpdatedAt),

		Owner:          s.Owner,
		Skipped:        s.Skipped,
		LastSkippedAt:  formatTime(s.LastSkippedAt),
		LastSkipReason: s.LastSkipReason,
	}
	if s.Cron != "" && s.TimeZone == "" {
		out.TimeZone = "UTC"
	}
	if len(s.Job.Payload) > 0 {
		out.Job.Payload = s.Job.Payload
	}
	switch ms := s.Job.Expiry.After.Milliseconds(); {
	case s.Job.Expiry.Set:
		out.Job.ExpireAfterMS = &ms
	case s.Job.NoExpiry:
		ms = NoExpiryMS
		out.Job.ExpireAfterMS = &ms
	}
	for i, t := range v.NextFireTimes {
		out.NextFireTimes[i] = formatTime(t)
	}
	return out
}

// readSchedule reads POST /v1/schedules: a schedule, whose jobs will
// create its topic, so it must fit the token's max_topics now, and whose
// occurrences will be pending jobs, so max_pending must have room.
func (a *API) readSchedule(r *http.Request, s *timer.Schedule) (*claim, error) {
	if a.cfg.Schedules == nil {
		return nil, errNoSchedules
	}
	var body scheduleRequest
	if err := decode(r.Body, &body); err != nil {
		return nil, err
	}
	var err error
	if *s, err = body.schedule(); err != nil {
		return nil, err
	}
	s.Owner = PrincipalName(r.Context())
	return &claim{
		topics:    []topicRef{{field: "job.topic", name: &s.Job.Topic, create: true}},
		callbacks: []callbackRef{{field: "job.callback_url", url: s.Job.CallbackURL, topic: &s.Job.Topic, item: -1}},
		schedules: 1,
	}, nil
}

// createSchedule: POST /v1/schedules answers 201 with the schedule and
// its next fire times.
func (a *API) createSchedule(w http.ResponseWriter, r *http.Request, s *timer.Schedule, _ *admission) {
	v, err := a.cfg.Schedules.Create(r.Context(), *s)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, scheduleViewOf(v))
}

// listSchedules: GET /v1/schedules?limit=N&cursor=C, by id; next_cursor
// is "" after the last page.
func (a *API) listSchedules(w http.ResponseWriter, r *http.Request, _ *struct{}, _ *admission) {
	if a.cfg.Schedules == nil {
		a.writeError(w, r, errNoSchedules)
		return
	}
	q := r.URL.Query()
	for name, vals := range q {
		switch {
		case name != "limit" && name != "cursor":
			a.writeError(w, r, &timer.FieldError{Field: name, Message: "not a parameter here; use limit, cursor"})
			return
		case len(vals) > 1:
			a.writeError(w, r, &timer.FieldError{Field: name, Message: "given more than once"})
			return
		}
	}
	limit := DefaultSchedulePage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxSchedulePage {
			a.writeError(w, r, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxSchedulePage)})
			return
		}
		limit = n
	}
	var after timer.ScheduleID
	if s := q.Get("cursor"); s != "" {
		id, err := timer.ParseScheduleID(s)
		if err != nil {
			a.writeError(w, r, &timer.FieldError{Field: "cursor", Message: "not a cursor this API returned"})
			return
		}
		after = id
	}
	list, next, err := a.visibleSchedules(r.Context(), after, limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	views := make([]scheduleView, len(list))
	for i, v := range list {
		views[i] = scheduleViewOf(v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": views, "next_cursor": next})
}

func scheduleID(r *http.Request) (timer.ScheduleID, error) {
	id, err := timer.ParseScheduleID(chi.URLParam(r, "id"))
	if err != nil {
		return 0, &timer.FieldError{Field: "id", Message: "must be a schedule id: a positive decimal integer below 2^63"}
	}
	return id, nil
}

// readScheduleAt reads the {id} of the path: a schedule the token must
// see.
func (a *API) readScheduleAt(r *http.Request, id *timer.ScheduleID) (*claim, error) {
	if a.cfg.Schedules == nil {
		return nil, errNoSchedules
	}
	var err error
	*id, err = scheduleID(r)
	return &claim{schedule: *id}, err
}

// withSchedule answers the schedule fn returns for the path's id,
// recording it in the audit log as audited ("": a read, not recorded).
func (a *API) withSchedule(w http.ResponseWriter, r *http.Request, id timer.ScheduleID, ad *admission, audited string, fn func(context.Context, timer.ScheduleID) (timer.ScheduleView, error)) {
	v, err := fn(r.Context(), id)
	if audited != "" {
		a.audit(w, r, auditNote{action: audited, topic: ad.scheduleTopic, target: "schedule " + id.String()}, err)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, scheduleViewOf(v))
}

// maxScheduleScan bounds the schedules one listing reads to fill a page
// of those a token may see: past it the page is short, and its
// next_cursor goes on from where the scan stopped.
const maxScheduleScan = 10 * MaxSchedulePage

// visibleSchedules returns up to limit of the schedules after after
// that the request's token may see, and the next page's cursor ("" at
// the end). It reads on past those it may not see, so that a page is
// short only at the end or after maxScheduleScan schedules.
func (a *API) visibleSchedules(ctx context.Context, after timer.ScheduleID, limit int) ([]timer.ScheduleView, string, error) {
	p := principalFrom(ctx)
	var out []timer.ScheduleView
	for scanned := 0; ; {
		list, err := a.cfg.Schedules.List(ctx, after, limit)
		if err != nil {
			return nil, "", err
		}
		scanned += len(list)
		for _, v := range list {
			if p == nil || p.Allows(v.Job.Topic) {
				out = append(out, v)
			}
			after = v.ID
			if len(out) == limit {
				return out, after.String(), nil
			}
		}
		if len(list) < limit {
			return out, "", nil
		}
		if scanned >= maxScheduleScan {
			return out, after.String(), nil
		}
	}
}

// visibleSchedule returns the topic of schedule id when the request's
// token may see it; one of a topic it may not use is answered as a
// missing one.
func (a *API) visibleSchedule(ctx context.Context, id timer.ScheduleID) (string, error) {
	v, err := a.cfg.Schedules.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if p := principalFrom(ctx); p != nil && !p.Allows(v.Job.Topic) {
		return "", fmt.Errorf("get schedule %s: %w", id, timer.ErrNotFound)
	}
	return v.Job.Topic, nil
}

// getSchedule: GET /v1/schedules/{id}, with its next fire times.
func (a *API) getSchedule(w http.ResponseWriter, r *http.Request, id *timer.ScheduleID, ad *admission) {
	a.withSchedule(w, r, *id, ad, "", a.cfg.Schedules.Get)
}

// pauseSchedule: POST /v1/schedules/{id}/pause.
func (a *API) pauseSchedule(w http.ResponseWriter, r *http.Request, id *timer.ScheduleID, ad *admission) {
	a.withSchedule(w, r, *id, ad, auditSchedulePause, a.cfg.Schedules.Pause)
}

// resumeSchedule: POST /v1/schedules/{id}/resume.
func (a *API) resumeSchedule(w http.ResponseWriter, r *http.Request, id *timer.ScheduleID, ad *admission) {
	a.withSchedule(w, r, *id, ad, auditScheduleResume, a.cfg.Schedules.Resume)
}

// deleteSchedule: DELETE /v1/schedules/{id} answers 204; the jobs it
// made stay. The audit entry is filed under the schedule's topic, and so
// in its namespace.
func (a *API) deleteSchedule(w http.ResponseWriter, r *http.Request, id *timer.ScheduleID, ad *admission) {
	err := a.cfg.Schedules.Delete(r.Context(), *id)
	a.audit(w, r, auditNote{action: auditScheduleDelete, topic: ad.scheduleTopic, target: "schedule " + id.String()}, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
