// Recurring schedules: create, list, get, pause, resume, delete.

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// JobTemplate is the job each occurrence of a schedule makes: a
// JobRequest without its time and key, which the occurrence sets.
type JobTemplate struct {
	Topic       string
	CallbackURL string
	BizID       uint64
	BizType     uint64
	Payload     json.RawMessage
	MaxAttempts int // 0: the topic's
	Priority    Priority
	// ConcurrencyKey, when not "", is every occurrence's job's (see
	// JobRequest.ConcurrencyKey).
	ConcurrencyKey string
}

// CatchUp is what a schedule does with occurrences missed while no toc
// ran: skip them, fire the last, or fire all (up to 1,000).
type CatchUp string

// The catch-up policies; "" is the server's default, last.
const (
	CatchUpSkip CatchUp = "skip"
	CatchUpLast CatchUp = "last"
	CatchUpAll  CatchUp = "all"
)

// ScheduleRequest creates a schedule (CreateSchedule): exactly one of
// Cron (5 fields, or 6 with seconds first, in TimeZone, "" for UTC) or
// Every (whole milliseconds, at least a second).
type ScheduleRequest struct {
	Cron     string
	TimeZone string
	Every    time.Duration
	// StartAt and EndAt bound the occurrences; zero: none.
	StartAt, EndAt time.Time
	CatchUp        CatchUp
	Job            JobTemplate
}

type templateJSON struct {
	Topic       string          `json:"topic"`
	BizID       decimal         `json:"biz_id,omitzero"`
	BizType     decimal         `json:"biz_type,omitzero"`
	CallbackURL string          `json:"callback_url"`
	Payload     json.RawMessage `json:"payload,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Priority    Priority        `json:"priority,omitempty"`

	ConcurrencyKey string `json:"concurrency_key,omitempty"`
}

type scheduleRequestJSON struct {
	Cron     string       `json:"cron,omitempty"`
	TimeZone string       `json:"time_zone,omitempty"`
	EveryMS  int64        `json:"every_ms,omitempty"`
	StartAt  string       `json:"start_at,omitempty"`
	EndAt    string       `json:"end_at,omitempty"`
	CatchUp  CatchUp      `json:"catch_up,omitempty"`
	Job      templateJSON `json:"job"`
}

func templateOf(j JobTemplate) templateJSON {
	return templateJSON{Topic: j.Topic, BizID: decimal(j.BizID), BizType: decimal(j.BizType), CallbackURL: j.CallbackURL,
		Payload: j.Payload, MaxAttempts: j.MaxAttempts, Priority: j.Priority, ConcurrencyKey: j.ConcurrencyKey}
}

// MarshalJSON writes r as POST /v1/schedules reads it.
func (r ScheduleRequest) MarshalJSON() ([]byte, error) {
	w := scheduleRequestJSON{Cron: r.Cron, TimeZone: r.TimeZone, EveryMS: ms(r.Every), CatchUp: r.CatchUp, Job: templateOf(r.Job)}
	if !r.StartAt.IsZero() {
		w.StartAt = formatTime(r.StartAt)
	}
	if !r.EndAt.IsZero() {
		w.EndAt = formatTime(r.EndAt)
	}
	return marshal(w)
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	ID       uint64
	Cron     string // "" for Every
	TimeZone string
	Every    time.Duration // 0 for Cron
	// StartAt and EndAt bound the occurrences; zero: none.
	StartAt, EndAt time.Time
	CatchUp        CatchUp
	Paused         bool
	// KeyPrefix begins the idempotency key of each job it makes: the
	// prefix, then the occurrence in Unix ms.
	KeyPrefix string
	// NextFireTimes are its next occurrences not yet made into jobs, up
	// to 5; none once it is past EndAt.
	NextFireTimes []time.Time
	Job           JobTemplate
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Owner is the name of the token that created it; "" when the
	// server has no tokens.
	Owner string
	// Skipped counts its occurrences that made no job because Owner's
	// max_pending was full; LastSkippedAt and LastSkipReason say when
	// the last was and why (zero and "" before the first).
	Skipped        int64
	LastSkippedAt  time.Time
	LastSkipReason string
}

type scheduleJSON struct {
	ID            decimal      `json:"id"`
	Cron          string       `json:"cron,omitempty"`
	TimeZone      string       `json:"time_zone,omitempty"`
	EveryMS       millis       `json:"every_ms,omitempty"`
	StartAt       stamp        `json:"start_at,omitzero"`
	EndAt         stamp        `json:"end_at,omitzero"`
	CatchUp       CatchUp      `json:"catch_up"`
	Paused        bool         `json:"paused"`
	KeyPrefix     string       `json:"key_prefix"`
	NextFireTimes []stamp      `json:"next_fire_times"`
	Job           templateJSON `json:"job"`
	CreatedAt     stamp        `json:"created_at"`
	UpdatedAt     stamp        `json:"updated_at"`

	Owner          string `json:"owner,omitempty"`
	Skipped        int64  `json:"skipped"`
	LastSkippedAt  stamp  `json:"last_skipped_at,omitzero"`
	LastSkipReason string `json:"last_skip_reason,omitempty"`
}

// MarshalJSON writes s as the API does.
func (s Schedule) MarshalJSON() ([]byte, error) {
	w := scheduleJSON{ID: decimal(s.ID), Cron: s.Cron, TimeZone: s.TimeZone, EveryMS: millis(s.Every),
		StartAt: stamp(s.StartAt), EndAt: stamp(s.EndAt), CatchUp: s.CatchUp, Paused: s.Paused, KeyPrefix: s.KeyPrefix,
		NextFireTimes: make([]stamp, len(s.NextFireTimes)), Job: templateOf(s.Job),
		CreatedAt: stamp(s.CreatedAt), UpdatedAt: stamp(s.UpdatedAt),
		Owner: s.Owner, Skipped: s.Skipped, LastSkippedAt: stamp(s.LastSkippedAt), LastSkipReason: s.LastSkipReason}
	for i, t := range s.NextFireTimes {
		w.NextFireTimes[i] = stamp(t)
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a schedule.
func (s *Schedule) UnmarshalJSON(data []byte) error {
	var w scheduleJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = Schedule{ID: uint64(w.ID), Cron: w.Cron, TimeZone: w.TimeZone, Every: time.Duration(w.EveryMS),
		StartAt: time.Time(w.StartAt), EndAt: time.Time(w.EndAt), CatchUp: w.CatchUp, Paused: w.Paused, KeyPrefix: w.KeyPrefix,
		NextFireTimes: make([]time.Time, len(w.NextFireTimes)),
		Job: JobTemplate{Topic: w.Job.Topic, CallbackURL: w.Job.CallbackURL, BizID: uint64(w.Job.BizID), BizType: uint64(w.Job.BizType),
			Payload: w.Job.Payload, MaxAttempts: w.Job.MaxAttempts, Priority: w.Job.Priority, ConcurrencyKey: w.Job.ConcurrencyKey},
		CreatedAt: time.Time(w.CreatedAt), UpdatedAt: time.Time(w.UpdatedAt),
		Owner: w.Owner, Skipped: w.Skipped, LastSkippedAt: time.Time(w.LastSkippedAt), LastSkipReason: w.LastSkipReason}
	if string(s.Job.Payload) == "null" {
		s.Job.Payload = nil
	}
	for i, t := range w.NextFireTimes {
		s.NextFireTimes[i] = time.Time(t)
	}
	return nil
}

func schedulePath(id uint64, action string) string {
	return "/v1/schedules/" + strconv.FormatUint(id, 10) + action
}

// CreateSchedule creates a recurring schedule (POST /v1/schedules). It is
// sent once: a retry after a lost answer would create a second schedule.
func (c *Client) CreateSchedule(ctx context.Context, r ScheduleRequest) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodPost, path: "/v1/schedules", body: r, safety: once})
}

// Schedules lists up to limit schedules by id (0: the server's page of
// 100) after cursor ("" for the first page), and returns the next page's
// cursor, "" after the last (GET /v1/schedules).
func (c *Client) Schedules(ctx context.Context, limit int, cursor string) ([]Schedule, string, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out struct {
		Schedules  []Schedule `json:"schedules"`
		NextCursor string     `json:"next_cursor"`
	}
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/schedules", query: q, safety: idempotent}, &out); err != nil {
		return nil, "", err
	}
	if out.Schedules == nil {
		out.Schedules = []Schedule{}
	}
	return out.Schedules, out.NextCursor, nil
}

// GetSchedule looks a schedule up with its next fire times (GET
// /v1/schedules/{id}); an unknown one is ErrNotFound.
func (c *Client) GetSchedule(ctx context.Context, id uint64) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodGet, path: schedulePath(id, ""), safety: idempotent})
}

// PauseSchedule stops a schedule making jobs (POST
// /v1/schedules/{id}/pause); those made already, up to about 3 s ahead,
// still fire.
func (c *Client) PauseSchedule(ctx context.Context, id uint64) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodPost, path: schedulePath(id, "/pause"), safety: idempotent})
}

// ResumeSchedule starts a paused schedule again from its next occurrence
// (POST /v1/schedules/{id}/resume).
func (c *Client) ResumeSchedule(ctx context.Context, id uint64) (*Schedule, error) {
	return c.schedule(ctx, request{method: http.MethodPost, path: schedulePath(id, "/resume"), safety: idempotent})
}

// DeleteSchedule deletes a schedule (DELETE /v1/schedules/{id}); the jobs
// it made stay.
func (c *Client) DeleteSchedule(ctx context.Context, id uint64) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: schedulePath(id, ""), safety: idempotent}, nil)
	return err
}

func (c *Client) schedule(ctx context.Context, r request) (*Schedule, error) {
	s := new(Schedule)
	if _, err := c.call(ctx, r, s); err != nil {
		return nil, err
	}
	return s, nil
}
