package http

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// Jobs is the engine's scheduling side; *timer.Scheduler implements it.
type Jobs interface {
	Topics
	// Schedule commits one job; concurrent calls share a commit.
	Schedule(ctx context.Context, r timer.Request) (timer.Result, error)
	ScheduleBatch(ctx context.Context, reqs []timer.Request) ([]timer.Result, error)
	Get(ctx context.Context, id timer.JobID) (*timer.Job, error)
	Cancel(ctx context.Context, id timer.JobID) (*timer.Job, error)
	Reschedule(ctx context.Context, id timer.JobID, fireAt time.Time, delay time.Duration) (*timer.Job, error)
	Replay(ctx context.Context, id timer.JobID, fireAt time.Time, delay time.Duration) (*timer.Job, error)
}

// Topics creates, changes and lists topics.
type Topics interface {
	// PutTopic creates a topic or updates its defaults, reporting whether
	// it created it; a new slot count for an existing topic wraps
	// timer.ErrConflict.
	PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error)
	Topic(ctx context.Context, name string) (timer.Topic, error)
	Topics(ctx context.Context) ([]timer.Topic, error)
}

// DeadLetters lists and purges dead jobs.
type DeadLetters interface {
	// ListDead returns up to limit dead jobs of topic after the cursor
	// after ("" for the first page) and the next page's cursor ("" at the
	// end). An unknown topic is an error wrapping timer.ErrNotFound.
	ListDead(ctx context.Context, topic, after string, limit int) ([]*timer.Job, string, error)
	// PurgeDead removes a dead job from the Dead set; its row keeps status
	// dead. It returns an error wrapping timer.ErrNotFound when the job is
	// not in the Dead set, and timer.ErrConflict when it is not dead.
	PurgeDead(ctx context.Context, id timer.JobID) error
}

// Stats reports on topics.
type Stats interface {
	// TopicStats returns the counts of topic, or an error wrapping
	// timer.ErrNotFound for an unknown topic.
	TopicStats(ctx context.Context, topic string) (TopicStats, error)
	// TopicUsage returns the live use of topic over the cluster.
	TopicUsage(ctx context.Context, topic timer.Topic) (TopicUsage, error)
}

// TopicUsage is the live use of a topic that GET /v1/topics/{topic} shows.
type TopicUsage struct {
	// DueWaiting counts the jobs due but not yet claimed: throttled, or
	// waiting for a worker.
	DueWaiting int64
	// InFlight counts the handler calls running, Rate the dispatches per
	// second, Throttled the claims held back by the topic's limits since
	// each member started, summed over the Members that reported.
	InFlight  int64
	Rate      float64
	Throttled int64
	Members   int
}

// TopicStats is what GET /v1/topics/{topic}/stats shows.
type TopicStats struct {
	Topic string
	Slots int
	// Pending counts the pending rows, InFlight the leases held by
	// workers, Dead the jobs in the Dead set.
	Pending  int64
	InFlight int64
	Dead     int64
	// NextDue is the earliest due time in Redis (zero: none within the
	// horizon); a NextDue in the past is overdue by that much.
	NextDue time.Time
}

// Defaults of the API.
const (
	DefaultMaxBodyBytes      = 256 << 10
	DefaultMaxBatchBodyBytes = 32 << 20
	MaxBatchJobs             = 1000
	DefaultDeadPage          = 100
	MaxDeadPage              = 1000
	requestTimeout           = 30 * time.Second
	readyTimeout             = 2 * time.Second
)

// APIConfig configures the API. The zero value serves without auth and
// refuses callbacks to private addresses.
type APIConfig struct {
	// Tokens, when any, are the bearer tokens every /v1 call needs.
	Tokens []string
	// MaxBodyBytes bounds a request body; MaxBatchBodyBytes a batch's.
	MaxBodyBytes      int64
	MaxBatchBodyBytes int64
	// AllowPrivateCallbacks lets callback URLs resolve to loopback and
	// private addresses (dev mode, or a trusted network).
	AllowPrivateCallbacks bool
	// Resolver looks up the hosts of callback URLs (default
	// net.DefaultResolver).
	Resolver *net.Resolver
	// Ready are the readiness checks of /readyz, by name.
	Ready map[string]func(context.Context) error
	// Metrics serves /metrics when set.
	Metrics http.Handler
	// Cluster returns what GET /v1/cluster shows: the members, the leader
	// and the assignment (nil: a standalone process).
	Cluster func() any
	// TopicDefaults are the worker's retry policy, lease and callback
	// timeout, shown for a topic that sets none (default: timer's).
	TopicDefaults timer.Limits
	Logger        *slog.Logger
	Now           func() time.Time
}

// API is toc's REST API.
type API struct {
	jobs   Jobs
	dead   DeadLetters
	stats  Stats
	cfg    APIConfig
	log    *slog.Logger
	guard  *webhook.Guard
	router chi.Router
}

// NewAPI returns the API over jobs, dead and stats.
func NewAPI(jobs Jobs, dead DeadLetters, stats Stats, cfg APIConfig) *API {
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.MaxBatchBodyBytes = cmp.Or(cfg.MaxBatchBodyBytes, DefaultMaxBatchBodyBytes)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &cfg.TopicDefaults
	d.Retry.Base = cmp.Or(d.Retry.Base, timer.DefaultRetryBase)
	d.Retry.Max = cmp.Or(d.Retry.Max, timer.DefaultRetryMax)
	d.Lease = cmp.Or(d.Lease, timer.DefaultLease)
	d.CallbackTimeout = cmp.Or(d.CallbackTimeout, timer.DefaultAttemptTimeout)
	guard := webhook.NewGuard(webhook.GuardConfig{AllowPrivate: cfg.AllowPrivateCallbacks, Resolver: cfg.Resolver})
	a := &API{jobs: jobs, dead: dead, stats: stats, cfg: cfg, log: cfg.Logger, guard: guard}
	a.router = a.routes()
	return a
}

// ServeHTTP serves the API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.router.ServeHTTP(w, r) }

func (a *API) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(a.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fmt.Errorf("no such path %s: %w", r.URL.Path, timer.ErrNotFound))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{Code: CodeInvalid, Message: "method " + r.Method + " not allowed on " + r.URL.Path}})
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", a.ready)
	if a.cfg.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", a.cfg.Metrics)
	}
	r.Route("/v1", func(r chi.Router) {
		r.Use(a.authenticate, a.limitTime)
		r.With(a.limitBody(a.cfg.MaxBodyBytes)).Post("/jobs", a.createJob)
		r.With(a.limitBody(a.cfg.MaxBatchBodyBytes)).Post("/jobs/batch", a.createBatch)
		r.Get("/jobs/{id}", a.getJob)
		r.Delete("/jobs/{id}", a.cancelJob)
		r.With(a.limitBody(a.cfg.MaxBodyBytes)).Patch("/jobs/{id}", a.rescheduleJob)
		r.Get("/deadletters", a.listDead)
		r.With(a.limitBody(a.cfg.MaxBodyBytes)).Post("/deadletters/{id}/replay", a.replayDead)
		r.Delete("/deadletters/{id}", a.purgeDead)
		r.Get("/topics", a.listTopics)
		r.Get("/topics/{topic}", a.getTopic)
		r.With(a.limitBody(a.cfg.MaxBodyBytes)).Put("/topics/{topic}", a.putTopic)
		r.Get("/topics/{topic}/stats", a.topicStats)
		r.Get("/cluster", a.cluster)
		r.Get("/openapi.json", serveOpenAPI)
	})
	return r
}

func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.writeError(w, r, fmt.Errorf("panic serving %s: %v", r.URL.Path, p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (a *API) authenticate(next http.Handler) http.Handler {
	if len(a.cfg.Tokens) == 0 {
		return next
	}
	tokens := make([][]byte, len(a.cfg.Tokens))
	for i, t := range a.cfg.Tokens {
		tokens[i] = []byte(t)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			for _, t := range tokens {
				if subtle.ConstantTimeCompare([]byte(got), t) == 1 {
					next.ServeHTTP(w, r)
					return
				}
			}
		}
		a.writeError(w, r, errUnauthenticated)
	})
}

func (a *API) limitTime(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (a *API) limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				a.writeError(w, r, &http.MaxBytesError{Limit: n})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := make(map[string]string, len(a.cfg.Ready))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
		ok = true
	)
	for name, check := range a.cfg.Ready {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			checks[name] = "ok"
			if err != nil {
				checks[name], ok = err.Error(), false
			}
		})
	}
	wg.Wait()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "checks": checks})
}

// createJob: POST /v1/jobs.
func (a *API) createJob(w http.ResponseWriter, r *http.Request) {
	var body jobRequest
	if err := decode(r.Body, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	req, err := a.checked(r.Context(), &body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.jobs.Schedule(r.Context(), req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	writeJSON(w, status, viewOf(res.Job))
}

// checked turns a body into a request and checks its callback URL.
func (a *API) checked(ctx context.Context, body *jobRequest) (timer.Request, error) {
	req, err := body.request()
	if err != nil {
		return req, err
	}
	return req, a.guard.Check(ctx, req.CallbackURL)
}

type batchRequest struct {
	Jobs []json.RawMessage `json:"jobs"`
}

type batchItem struct {
	ID      string       `json:"id,omitempty"`
	Status  string       `json:"status,omitempty"`
	Created *bool        `json:"created,omitempty"`
	Error   *errorDetail `json:"error,omitempty"`
}

// createBatch: POST /v1/jobs/batch. Items are answered in request order;
// the valid ones are committed in one transaction.
func (a *API) createBatch(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		a.writeError(w, r, decodeError(err))
		return
	}
	// The common case, every item well-formed, is decoded in one pass;
	// otherwise each item is decoded alone so that its error names it.
	var fast struct {
		Jobs []jobRequest `json:"jobs"`
	}
	var bodies []*jobRequest
	var errs []error
	if decode(bytes.NewReader(raw), &fast) == nil {
		bodies = make([]*jobRequest, len(fast.Jobs))
		for i := range fast.Jobs {
			bodies[i] = &fast.Jobs[i]
		}
		errs = make([]error, len(bodies))
	} else {
		var body batchRequest
		if err := decode(bytes.NewReader(raw), &body); err != nil {
			a.writeError(w, r, err)
			return
		}
		bodies = make([]*jobRequest, len(body.Jobs))
		errs = make([]error, len(body.Jobs))
		for i, item := range body.Jobs {
			bodies[i] = new(jobRequest)
			errs[i] = decode(bytes.NewReader(item), bodies[i])
		}
	}
	if len(bodies) == 0 || len(bodies) > MaxBatchJobs {
		a.writeError(w, r, &timer.FieldError{Field: "jobs", Message: fmt.Sprintf("must hold 1..%d jobs", MaxBatchJobs)})
		return
	}
	items := make([]batchItem, len(bodies))
	checkedURL := map[string]error{} // most batches share one callback
	var (
		reqs []timer.Request
		at   []int
	)
	for i, jb := range bodies {
		var req timer.Request
		err := errs[i]
		if err == nil {
			req, err = jb.request()
		}
		if err == nil {
			var seen bool
			if err, seen = checkedURL[req.CallbackURL]; !seen {
				err = a.guard.Check(r.Context(), req.CallbackURL)
				checkedURL[req.CallbackURL] = err
			}
		}
		if err != nil {
			_, d := toDetail(err)
			items[i].Error = &d
			continue
		}
		reqs = append(reqs, req)
		at = append(at, i)
	}
	if len(reqs) > 0 {
		res, err := a.jobs.ScheduleBatch(r.Context(), reqs)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		for n, res := range res {
			i := at[n]
			if res.Err != nil {
				_, d := toDetail(res.Err)
				items[i].Error = &d
				continue
			}
			created := res.Created
			items[i] = batchItem{ID: res.Job.ID.String(), Status: res.Job.Status.String(), Created: &created}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": items})
}

func jobID(r *http.Request) (timer.JobID, error) {
	id, err := timer.ParseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return 0, &timer.FieldError{Field: "id", Message: "must be a job id: a positive decimal integer below 2^63"}
	}
	return id, nil
}

// getJob: GET /v1/jobs/{id}.
func (a *API) getJob(w http.ResponseWriter, r *http.Request) {
	a.withJob(w, r, func(ctx context.Context, id timer.JobID) (*timer.Job, error) { return a.jobs.Get(ctx, id) })
}

// cancelJob: DELETE /v1/jobs/{id}.
func (a *API) cancelJob(w http.ResponseWriter, r *http.Request) {
	a.withJob(w, r, a.jobs.Cancel)
}

// rescheduleJob: PATCH /v1/jobs/{id}.
func (a *API) rescheduleJob(w http.ResponseWriter, r *http.Request) {
	a.withWhen(w, r, false, a.jobs.Reschedule)
}

// replayDead: POST /v1/deadletters/{id}/replay; the body is optional.
func (a *API) replayDead(w http.ResponseWriter, r *http.Request) {
	a.withWhen(w, r, true, a.jobs.Replay)
}

func (a *API) withWhen(w http.ResponseWriter, r *http.Request, optional bool, do func(context.Context, timer.JobID, time.Time, time.Duration) (*timer.Job, error)) {
	var body whenRequest
	if r.ContentLength != 0 || !optional {
		if err := decode(r.Body, &body); err != nil && !(optional && isEmptyBody(err)) {
			a.writeError(w, r, err)
			return
		}
	}
	fireAt, delay, err := body.when(optional)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.withJob(w, r, func(ctx context.Context, id timer.JobID) (*timer.Job, error) {
		return do(ctx, id, fireAt, delay)
	})
}

func isEmptyBody(err error) bool {
	fe, ok := errors.AsType[*timer.FieldError](err)
	return ok && fe.Field == "" && strings.HasPrefix(fe.Message, "the body is empty")
}

func (a *API) withJob(w http.ResponseWriter, r *http.Request, do func(context.Context, timer.JobID) (*timer.Job, error)) {
	id, err := jobID(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	j, err := do(r.Context(), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(j))
}

// listDead: GET /v1/deadletters?topic=T&limit=N&after=CURSOR.
func (a *API) listDead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	topic := q.Get("topic")
	if !timer.ValidTopic(topic) {
		a.writeError(w, r, &timer.FieldError{Field: "topic", Message: "a topic name is required"})
		return
	}
	limit := DefaultDeadPage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxDeadPage {
			a.writeError(w, r, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxDeadPage)})
			return
		}
		limit = n
	}
	jobs, next, err := a.dead.ListDead(r.Context(), topic, q.Get("after"), limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	items := make([]jobView, len(jobs))
	for i, j := range jobs {
		items[i] = viewOf(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next": next})
}

// purgeDead: DELETE /v1/deadletters/{id}.
func (a *API) purgeDead(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err == nil {
		err = a.dead.PurgeDead(r.Context(), id)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id.String(), "purged": true})
}

// topicStats: GET /v1/topics/{topic}/stats.
func (a *API) topicStats(w http.ResponseWriter, r *http.Request) {
	topic := chi.URLParam(r, "topic")
	if !timer.ValidTopic(topic) {
		a.writeError(w, r, &timer.FieldError{Field: "topic", Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$"})
		return
	}
	st, err := a.stats.TopicStats(r.Context(), topic)
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

// Routes exposes the router, for walking its routes.
func (a *API) Routes() chi.Routes { return a.router }

// cluster: GET /v1/cluster.
func (a *API) cluster(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Cluster == nil {
		writeJSON(w, http.StatusOK, map[string]any{"mode": "standalone", "members": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"mode": "cluster", "status": a.cfg.Cluster()})
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
	name := chi.URLParam(r, "topic")
	if !timer.ValidTopic(name) {
		a.writeError(w, r, &timer.FieldError{Field: "topic", Message: "must match ^[a-z0-9][a-z0-9_-]{0,63}$"})
		return
	}
	t, err := a.jobs.Topic(r.Context(), name)
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
