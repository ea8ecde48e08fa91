// Jobs: schedule, look up, cancel, reschedule, find, and their attempts.

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/internal/jsonw"
)

// Status is a job's state.
type Status string

// The states of a job.
const (
	StatusPending   Status = "pending"   // waiting for its due time, or for a retry
	StatusFiring    Status = "firing"    // an attempt is under way
	StatusDone      Status = "done"      // its webhook answered 2xx
	StatusCancelled Status = "cancelled" // cancelled before it fired
	StatusDead      Status = "dead"      // its attempts ran out: a dead letter
	StatusPurged    Status = "purged"    // a dead letter purged
	StatusExpired   Status = "expired"   // no attempt could start by its deadline
)

// Priority orders the jobs of a slot due at about the same time.
type Priority string

// The priorities of a job: a high job goes before a normal one due up to
// 10 s earlier, and a low one due up to 60 s earlier.
const (
	PriorityHigh   Priority = "high"
	PriorityNormal Priority = "normal"
	PriorityLow    Priority = "low"
)

// Job is a job as the API shows it (GET /v1/jobs/{id}).
type Job struct {
	ID      uint64
	Topic   string
	Key     string // the idempotency key, "" for none
	BizID   uint64 // the business object's id, 0 for none
	BizType uint64
	Status  Status
	// FireAt is when the job is due: its next attempt's time once one
	// has failed.
	FireAt      time.Time
	Attempts    int // attempts made
	MaxAttempts int
	Priority    Priority
	// LastError and LastStatus are of the last failed attempt: the error,
	// and the receiver's HTTP status (0: it did not answer).
	LastError   string
	LastStatus  int
	CallbackURL string
	// Payload is the JSON value sent in the webhook, nil for none.
	Payload   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// NextAttemptAt is when a pending job that has failed is retried (the
	// zero time otherwise).
	NextAttemptAt time.Time
	// Version counts the job's changes (its ETag is the version quoted):
	// give it to IfMatch to change the job only if it is unchanged since.
	Version int64
	// ExpireAfter and ExpireAt are the job's deadline rule and deadline:
	// no attempt starts after ExpireAt (zero: no deadline).
	ExpireAfter time.Duration
	ExpireAt    time.Time
	// Window is the job's flexible window: it may fire until FireAt plus
	// Window; 0 for none.
	Window time.Duration
	// ConcurrencyKey is the job's concurrency key, "" for none (see
	// JobRequest.ConcurrencyKey).
	ConcurrencyKey string
	// GroupID is the job's group, "" for none.
	GroupID string
	// DiedAt is when a dead job died (the zero time unless it is dead):
	// the time the dead letters are listed by.
	DiedAt time.Time
}

type jobJSON struct {
	ID             decimal         `json:"id"`
	Topic          string          `json:"topic"`
	Key            string          `json:"key"`
	BizID          decimal         `json:"biz_id"`
	BizType        decimal         `json:"biz_type"`
	Status         Status          `json:"status"`
	FireAt         stamp           `json:"fire_at"`
	Attempts       int             `json:"attempts"`
	MaxAttempts    int             `json:"max_attempts"`
	Priority       Priority        `json:"priority"`
	LastError      string          `json:"last_error"`
	LastStatus     int             `json:"last_status"`
	CallbackURL    string          `json:"callback_url"`
	Payload        json.RawMessage `json:"payload"`
	CreatedAt      stamp           `json:"created_at"`
	UpdatedAt      stamp           `json:"updated_at"`
	NextAttemptAt  stamp           `json:"next_attempt_at,omitzero"`
	Version        int64           `json:"version"`
	ExpireAfterMS  *int64          `json:"expire_after_ms,omitempty"`
	ExpireAt       stamp           `json:"expire_at,omitzero"`
	WindowMS       int64           `json:"window_ms"`
	ConcurrencyKey string          `json:"concurrency_key"`
	GroupID        string          `json:"group_id,omitempty"`
	DiedAt         stamp           `json:"died_at,omitzero"`
}

// MarshalJSON writes j as the API does.
func (j Job) MarshalJSON() ([]byte, error) {
	w := jobJSON{
		ID: decimal(j.ID), Topic: j.Topic, Key: j.Key, BizID: decimal(j.BizID), BizType: decimal(j.BizType),
		Status: j.Status, FireAt: stamp(j.FireAt), Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		Priority: j.Priority, LastError: j.LastError, LastStatus: j.LastStatus, CallbackURL: j.CallbackURL,
		Payload: payloadOf(j.Payload), CreatedAt: stamp(j.CreatedAt), UpdatedAt: stamp(j.UpdatedAt),
		NextAttemptAt: stamp(j.NextAttemptAt), Version: j.Version, ExpireAt: stamp(j.ExpireAt), WindowMS: ms(j.Window),
		ConcurrencyKey: j.ConcurrencyKey, GroupID: j.GroupID, DiedAt: stamp(j.DiedAt),
	}
	if !j.ExpireAt.IsZero() {
		after := j.ExpireAfter.Milliseconds()
		w.ExpireAfterMS = &after
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a job.
func (j *Job) UnmarshalJSON(data []byte) error {
	var w jobJSON
	if !w.decodeFast(data) {
		if err := json.Unmarshal(data, &w); err != nil {
			return err
		}
	}
	w.to(j)
	return nil
}

// to sets j from the API's JSON of it. An answer that holds jobs is
// decoded into jobJSONs, then converted: a Job in it would be decoded
// through its UnmarshalJSON, which scans its bytes twice more.
func (w *jobJSON) to(j *Job) {
	*j = Job{
		ID: uint64(w.ID), Topic: w.Topic, Key: w.Key, BizID: uint64(w.BizID), BizType: uint64(w.BizType),
		Status: w.Status, FireAt: time.Time(w.FireAt), Attempts: w.Attempts, MaxAttempts: w.MaxAttempts,
		Priority: w.Priority, LastError: w.LastError, LastStatus: w.LastStatus, CallbackURL: w.CallbackURL,
		Payload: rawPayload(w.Payload), CreatedAt: time.Time(w.CreatedAt), UpdatedAt: time.Time(w.UpdatedAt),
		NextAttemptAt: time.Time(w.NextAttemptAt), Version: w.Version, ExpireAt: time.Time(w.ExpireAt),
		Window: time.Duration(w.WindowMS) * time.Millisecond, ConcurrencyKey: w.ConcurrencyKey,
		GroupID: w.GroupID, DiedAt: time.Time(w.DiedAt),
	}
	if w.ExpireAfterMS != nil {
		j.ExpireAfter = time.Duration(*w.ExpireAfterMS) * time.Millisecond
	}
}

// JobRequest is a job to schedule (POST /v1/jobs).
type JobRequest struct {
	Topic       string
	CallbackURL string
	// FireAt is when the job is due; when it is zero, Delay from now
	// (0: now). A due time is kept in whole milliseconds, rounded up.
	FireAt time.Time
	Delay  time.Duration
	// Key, the idempotency key: a second request with the same key and
	// content answers the job of the first (created false), one with
	// other content is refused (ErrConflict). A request with a Key is
	// safe to retry, and is retried (see Retries).
	Key string
	// BizID and BizType name the business object the job is about (0:
	// none): jobs of one BizID share a slot, and CancelMatching and
	// RescheduleMatching find them by it.
	BizID   uint64
	BizType uint64
	// Payload is sent in the webhook; nil for none.
	Payload json.RawMessage
	// MaxAttempts, when not 0, overrides the topic's.
	MaxAttempts int
	// Priority, when not "", overrides normal.
	Priority Priority
	// ExpireAfterMS, when not nil, is the job's deadline in ms after its
	// due time (0: it must not fire late at all; NoExpiry: none, even if
	// its topic has one); nil takes the topic's.
	ExpireAfterMS *int64
	// Window, when not 0, lets toc fire the job anywhere from its due
	// time to Window after it (whole milliseconds, at most a day): at the
	// due time without pressure, by the ends of windows under its topic's
	// limits or a spike.
	Window time.Duration
	// ConcurrencyKey, when not "", makes the job one of its topic's that
	// are never in flight at once: while a job of the key is firing or
	// waiting for a retry, the next waits until it is done, dead or
	// cancelled. At most 128 bytes.
	ConcurrencyKey string
	// GroupID, when not "", makes the job a member of that group, which
	// must exist and be open (CreateGroup).
	GroupID string
}

// NoExpiry is the ExpireAfterMS of a job without a deadline.
const NoExpiry int64 = -1

// MarshalJSON writes r as the API reads it.
func (r JobRequest) MarshalJSON() ([]byte, error) { return r.appendJSON(nil) }

// appendJSON appends r as the API reads it, the bytes encoding/json
// wrote of it (TestJobRequestJSON holds the two alike), by hand: every
// Schedule writes one, and the reflection cost the coalescing client as
// much as its whole batch request.
func (r JobRequest) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"topic":`...)
	b = jsonw.AppendString(b, r.Topic)
	if r.Key != "" {
		b = append(b, `,"key":`...)
		b = jsonw.AppendString(b, r.Key)
	}
	if r.BizID != 0 {
		b = strconv.AppendUint(append(b, `,"biz_id":"`...), r.BizID, 10)
		b = append(b, '"')
	}
	if r.BizType != 0 {
		b = strconv.AppendUint(append(b, `,"biz_type":"`...), r.BizType, 10)
		b = append(b, '"')
	}
	if !r.FireAt.IsZero() {
		// wire's fire_at, formatted in place: RFC 3339 needs no escape.
		b = r.FireAt.UTC().AppendFormat(append(b, `,"fire_at":"`...), time.RFC3339Nano)
		b = append(b, '"')
	} else {
		b = strconv.AppendInt(append(b, `,"delay_ms":`...), ms(r.Delay), 10)
	}
	b = append(b, `,"callback_url":`...)
	b = jsonw.AppendString(b, r.CallbackURL)
	if len(r.Payload) > 0 {
		var ok bool
		if b, ok = jsonw.AppendRaw(append(b, `,"payload":`...), r.Payload); !ok {
			return nil, fmt.Errorf("payload: %w", json.Unmarshal(r.Payload, new(any)))
		}
	}
	if r.MaxAttempts != 0 {
		b = strconv.AppendInt(append(b, `,"max_attempts":`...), int64(r.MaxAttempts), 10)
	}
	if r.Priority != "" {
		b = append(b, `,"priority":`...)
		b = jsonw.AppendString(b, string(r.Priority))
	}
	if r.ExpireAfterMS != nil {
		b = strconv.AppendInt(append(b, `,"expire_after_ms":`...), *r.ExpireAfterMS, 10)
	}
	if w := ms(r.Window); w != 0 {
		b = strconv.AppendInt(append(b, `,"window_ms":`...), w, 10)
	}
	if r.ConcurrencyKey != "" {
		b = append(b, `,"concurrency_key":`...)
		b = jsonw.AppendString(b, r.ConcurrencyKey)
	}
	if r.GroupID != "" {
		b = append(b, `,"group_id":`...)
		b = jsonw.AppendString(b, r.GroupID)
	}
	return append(b, '}'), nil
}

// jsonSize is about the length of r's JSON, escapes aside: a buffer
// of it takes appendJSON's bytes without growing.
func (r JobRequest) jsonSize() int {
	return 192 + len(r.Topic) + len(r.Key) + len(r.CallbackURL) + len(r.Payload) + len(r.ConcurrencyKey) + len(r.GroupID)
}

// When is when a job is to fire: at FireAt, or when that is zero, Delay
// from when toc takes the call. The zero When is now.
type When struct {
	FireAt time.Time
	Delay  time.Duration
}

// At is the When of a time.
func At(t time.Time) When { return When{FireAt: t} }

// After is the When of a delay from now.
func After(d time.Duration) When { return When{Delay: d} }

// wire is w as the API reads it: fire_at, or delay_ms.
func (w When) wire() (string, *int64) {
	if !w.FireAt.IsZero() {
		return w.FireAt.UTC().Format(time.RFC3339Nano), nil
	}
	d := ms(w.Delay)
	return "", &d
}

type whenJSON struct {
	FireAt  string `json:"fire_at,omitempty"`
	DelayMS *int64 `json:"delay_ms,omitempty"`
}

func (w When) body() whenJSON {
	var b whenJSON
	b.FireAt, b.DelayMS = w.wire()
	return b
}

// Schedule schedules a job (POST /v1/jobs). created is false when its Key
// named a job made before with the same content, which is returned. A
// request without a Key is sent once, never retried (see Retries).
//
// With WithCoalescing, calls made at the same time share requests, and
// each gets what its own call would have answered (see Coalescing).
func (c *Client) Schedule(ctx context.Context, r JobRequest) (job *Job, created bool, err error) {
	if c.coalescer != nil {
		return c.coalescer.schedule(ctx, r)
	}
	return c.scheduleOne(ctx, r)
}

// scheduleOne is Schedule's call alone.
func (c *Client) scheduleOne(ctx context.Context, r JobRequest) (job *Job, created bool, err error) {
	s := once
	if r.Key != "" {
		s = idempotent
	}
	var w jobJSON
	status, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/jobs", body: r, safety: s}, &w)
	if err != nil {
		return nil, false, err
	}
	job = new(Job)
	w.to(job)
	return job, status == http.StatusCreated, nil
}

// BatchResult is what a batch answers of each of its jobs.
type BatchResult struct {
	ID      uint64
	Status  Status
	Created bool // false: its key named a job made before
}

type batchResultJSON struct {
	ID      decimal `json:"id"`
	Status  Status  `json:"status"`
	Created bool    `json:"created"`
}

// MarshalJSON writes r as the API does.
func (r BatchResult) MarshalJSON() ([]byte, error) {
	return marshal(batchResultJSON{ID: decimal(r.ID), Status: r.Status, Created: r.Created})
}

// UnmarshalJSON reads the API's JSON of a batch's result.
func (r *BatchResult) UnmarshalJSON(data []byte) error {
	var w batchResultJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = BatchResult{ID: uint64(w.ID), Status: w.Status, Created: w.Created}
	return nil
}

// ScheduleBatch schedules up to 1,000 jobs at once, all or nothing
// (POST /v1/jobs/batch), and returns their results in request order. A
// refused batch is an *Error whose Items name each refused job. It is
// retried only when every job has a Key.
func (c *Client) ScheduleBatch(ctx context.Context, jobs []JobRequest) ([]BatchResult, error) {
	s := idempotent
	for _, j := range jobs {
		if j.Key == "" {
			s = once
		}
	}
	var out struct {
		Results []BatchResult `json:"results"`
	}
	body := struct {
		Jobs []JobRequest `json:"jobs"`
	}{jobs}
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", body: body, safety: s}, &out); err != nil {
		return nil, err
	}
	return out.Results, nil
}

func jobPath(id uint64, rest string) string {
	return "/v1/jobs/" + strconv.FormatUint(id, 10) + rest
}

// Get looks a job up (GET /v1/jobs/{id}).
func (c *Client) Get(ctx context.Context, id uint64) (*Job, error) {
	return c.job(ctx, request{method: http.MethodGet, path: jobPath(id, ""), safety: idempotent})
}

// Cancel cancels a pending job (DELETE /v1/jobs/{id}). A nil error means
// its webhook will never be called from then on; too late, it is
// ErrInFlight (an attempt is under way: the job may still end done) or
// ErrAlreadyFired, and a job cancelled before is ErrConflict. With
// IfMatch, a job that changed since is ErrVersionMismatch, unchanged.
func (c *Client) Cancel(ctx context.Context, id uint64, opts ...ChangeOption) (*Job, error) {
	return c.job(ctx, change(request{method: http.MethodDelete, path: jobPath(id, "")}, opts))
}

// Reschedule moves a pending job to w (PATCH /v1/jobs/{id}): a nil error
// means the old time never fires and the new one will. Too late, it is
// ErrInFlight or ErrAlreadyFired, and with IfMatch ErrVersionMismatch, as
// for Cancel.
func (c *Client) Reschedule(ctx context.Context, id uint64, w When, opts ...ChangeOption) (*Job, error) {
	return c.job(ctx, change(request{method: http.MethodPatch, path: jobPath(id, ""), body: w.body()}, opts))
}

// ChangeOption qualifies a Cancel or a Reschedule.
type ChangeOption func(*changeOptions)

type changeOptions struct{ version int64 }

// IfMatch makes a Cancel or Reschedule act only if the job is still at
// version (Job.Version, as a Get or an earlier change returned it): the
// If-Match header. A job changed since is left as it is, with an *Error
// that is ErrVersionMismatch and carries the job's CurrentVersion.
//
// Such a call is repeated only after an answer that refused it (429,
// 503), not after a transport error: had the lost attempt gone through,
// the repeat would report the job's own change as someone else's.
func IfMatch(version int64) ChangeOption {
	return func(o *changeOptions) { o.version = version }
}

// change is r with its options: the If-Match header and the safety that
// goes with it.
func change(r request, opts []ChangeOption) request {
	var o changeOptions
	for _, opt := range opts {
		opt(&o)
	}
	r.safety = idempotent
	if o.version != 0 {
		r.safety = refused
		r.header = http.Header{"If-Match": {`"` + strconv.FormatInt(o.version, 10) + `"`}}
	}
	return r
}

func (c *Client) job(ctx context.Context, r request) (*Job, error) {
	j := new(Job)
	if _, err := c.call(ctx, r, j); err != nil {
		return nil, err
	}
	return j, nil
}

// SearchQuery selects a topic's jobs (GET /v1/jobs). Topic is required;
// every other field left zero selects all.
type SearchQuery struct {
	Topic    string
	Statuses []Status
	BizID    uint64
	Key      string
	// FireAfter and FireBefore bound the due time: at or after, before.
	FireAfter  time.Time
	FireBefore time.Time
	// Limit is the page's size, 1..1000 (0: the API's, 100).
	Limit int
	// Cursor is where the page starts: the NextCursor of the page before.
	Cursor string
}

func (q SearchQuery) values() url.Values {
	v := url.Values{"topic": {q.Topic}}
	if len(q.Statuses) > 0 {
		s := make([]string, len(q.Statuses))
		for i, st := range q.Statuses {
			s[i] = string(st)
		}
		v.Set("status", strings.Join(s, ","))
	}
	setUint(v, "biz_id", q.BizID)
	setString(v, "key", q.Key)
	setTime(v, "fire_after", q.FireAfter)
	setTime(v, "fire_before", q.FireBefore)
	setInt(v, "limit", q.Limit)
	setString(v, "cursor", q.Cursor)
	return v
}

func setString(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

func setUint(v url.Values, k string, n uint64) {
	if n != 0 {
		v.Set(k, strconv.FormatUint(n, 10))
	}
}

func setInt(v url.Values, k string, n int) {
	if n != 0 {
		v.Set(k, strconv.Itoa(n))
	}
}

func setTime(v url.Values, k string, t time.Time) {
	if !t.IsZero() {
		v.Set(k, t.UTC().Format(time.RFC3339Nano))
	}
}

// JobPage is a page of a search, in (due time, id) order.
type JobPage struct {
	Jobs []Job `json:"jobs"`
	// NextCursor is the next page's SearchQuery.Cursor, "" after the last.
	NextCursor string `json:"next_cursor"`
}

// Search returns a page of the jobs q selects (GET /v1/jobs).
func (c *Client) Search(ctx context.Context, q SearchQuery) (*JobPage, error) {
	p := new(JobPage)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/jobs", query: q.values(), safety: idempotent}, p); err != nil {
		return nil, err
	}
	if p.Jobs == nil {
		p.Jobs = []Job{}
	}
	return p, nil
}

// SearchAll iterates over every job q selects from q.Cursor on, a page at
// a time; it ends after the first error, which it yields.
func (c *Client) SearchAll(ctx context.Context, q SearchQuery) iter.Seq2[Job, error] {
	return all(q.Cursor, func(cursor string) ([]Job, string, error) {
		q.Cursor = cursor
		p, err := c.Search(ctx, q)
		if err != nil {
			return nil, "", err
		}
		return p.Jobs, p.NextCursor, nil
	})
}

// all iterates over the items of the pages fetch returns, from cursor on,
// until a page without a next cursor; it ends after the first error,
// which it yields.
func all[T any](cursor string, fetch func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			items, next, err := fetch(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" || len(items) == 0 {
				return
			}
			cursor = next
		}
	}
}

// Match names a business object's jobs: its Topic, and its BizID or Key.
type Match struct {
	Topic string
	BizID uint64
	Key   string
}

func (m Match) values() url.Values {
	v := url.Values{"topic": {m.Topic}}
	setUint(v, "biz_id", m.BizID)
	setString(v, "key", m.Key)
	return v
}

// CancelResult counts what CancelMatching did.
type CancelResult struct {
	Cancelled int `json:"cancelled"`
	// TooLate counts the matching jobs in flight, which may still fire.
	TooLate int `json:"too_late"`
}

// RescheduleResult counts what RescheduleMatching did.
type RescheduleResult struct {
	Rescheduled int `json:"rescheduled"`
	// TooLate counts the matching jobs in flight, which may still fire.
	TooLate int `json:"too_late"`
}

// CancelMatching cancels every pending job m names (DELETE
// /v1/jobs?topic&biz_id|key), each as definitely as Cancel does.
func (c *Client) CancelMatching(ctx context.Context, m Match) (*CancelResult, error) {
	out := new(CancelResult)
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: "/v1/jobs", query: m.values(), safety: idempotent}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// RescheduleMatching moves every pending job m names to w (PATCH
// /v1/jobs?topic&biz_id|key), each as definitely as Reschedule does.
func (c *Client) RescheduleMatching(ctx context.Context, m Match, w When) (*RescheduleResult, error) {
	out := new(RescheduleResult)
	if _, err := c.call(ctx, request{method: http.MethodPatch, path: "/v1/jobs", query: m.values(), body: w.body(), safety: idempotent}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Attempt is one delivery of a job's webhook.
type Attempt struct {
	Attempt   int // 1 for the first
	StartedAt time.Time
	Duration  time.Duration // in whole milliseconds
	// StatusCode is the receiver's HTTP status, 0 when it did not answer.
	StatusCode int
	Error      string
	// ResponseExcerpt is the start of the receiver's answer (1 KiB), as
	// text.
	ResponseExcerpt string
}

type attemptJSON struct {
	Attempt         int    `json:"attempt"`
	StartedAt       stamp  `json:"started_at"`
	DurationMS      millis `json:"duration_ms"`
	StatusCode      int    `json:"status_code,omitempty"`
	Error           string `json:"error"`
	ResponseExcerpt string `json:"response_excerpt"`
}

// MarshalJSON writes a as the API does.
func (a Attempt) MarshalJSON() ([]byte, error) {
	return marshal(attemptJSON{Attempt: a.Attempt, StartedAt: stamp(a.StartedAt), DurationMS: millis(a.Duration),
		StatusCode: a.StatusCode, Error: a.Error, ResponseExcerpt: a.ResponseExcerpt})
}

// UnmarshalJSON reads the API's JSON of an attempt.
func (a *Attempt) UnmarshalJSON(data []byte) error {
	var w attemptJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*a = Attempt{Attempt: w.Attempt, StartedAt: time.Time(w.StartedAt), Duration: time.Duration(w.DurationMS),
		StatusCode: w.StatusCode, Error: w.Error, ResponseExcerpt: w.ResponseExcerpt}
	return nil
}

// Attempts lists a job's attempts, the first first (GET
// /v1/jobs/{id}/attempts). Their history is kept for
// --attempt-retention (a week by default) and recorded in batches, so the
// last one may show a moment late.
func (c *Client) Attempts(ctx context.Context, id uint64) ([]Attempt, error) {
	var out struct {
		Attempts []Attempt `json:"attempts"`
	}
	if _, err := c.call(ctx, request{method: http.MethodGet, path: jobPath(id, "/attempts"), safety: idempotent}, &out); err != nil {
		return nil, err
	}
	if out.Attempts == nil {
		out.Attempts = []Attempt{}
	}
	return out.Attempts, nil
}
