package http

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/http/ui"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/deliver/pull"
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
	// CancelIf and RescheduleIf are Cancel and Reschedule on the condition
	// that the job is at version version (timer.AnyVersion: at any), one
	// conditional statement; a job at another version is left unchanged,
	// with a *timer.VersionError.
	CancelIf(ctx context.Context, id timer.JobID, version int64) (*timer.Job, error)
	RescheduleIf(ctx context.Context, id timer.JobID, version int64, fireAt time.Time, delay time.Duration) (*timer.Job, error)
	Replay(ctx context.Context, id timer.JobID, fireAt time.Time, delay time.Duration) (*timer.Job, error)
	// Find returns a page of the jobs a query selects.
	Find(ctx context.Context, q timer.JobQuery) ([]*timer.Job, error)
	// CancelMatching and RescheduleMatching change every pending job of
	// the query's business id or key.
	CancelMatching(ctx context.Context, q timer.JobQuery) (timer.Bulk, error)
	RescheduleMatching(ctx context.Context, q timer.JobQuery, fireAt time.Time, delay time.Duration) (timer.Bulk, error)
	// DestinationOf returns where the jobs of topic go, from the
	// scheduler's catalog: a webhook for a topic not created yet.
	DestinationOf(ctx context.Context, topic string) (timer.Destination, error)
}

// Topics creates, changes and lists topics.
type Topics interface {
	// PutTopic creates a topic or updates its defaults, reporting whether
	// it created it; a new slot count for an existing topic wraps
	// timer.ErrConflict.
	PutTopic(ctx context.Context, t timer.Topic) (timer.Topic, bool, error)
	Topic(ctx context.Context, name string) (timer.Topic, error)
	Topics(ctx context.Context) ([]timer.Topic, error)
	// TopicNames returns the names of the topics for which match is
	// true, in no order, as the process knows them: a moment behind
	// another process's changes (timer.Scheduler.TopicNames).
	TopicNames(ctx context.Context, match func(name string) bool) ([]string, error)
	// PauseTopic pauses or resumes a topic; an unknown one wraps
	// timer.ErrNotFound.
	PauseTopic(ctx context.Context, name string, paused bool) (timer.Topic, error)
	// DeleteTopic deletes a topic none of whose jobs is pending, firing or
	// dead; otherwise a *timer.TopicInUseError (timer.ErrConflict).
	DeleteTopic(ctx context.Context, name string) error
}

// DeadLetters lists and purges dead jobs.
type DeadLetters interface {
	// ListDead returns up to q.Limit dead jobs of q.Topic (without one, of
	// q.Topics together) matching q, in the order they died, after the
	// cursor after ("" for the first page), and the next page's cursor (""
	// at the end). An unknown q.Topic is an error wrapping
	// timer.ErrNotFound.
	ListDead(ctx context.Context, q timer.DeadQuery, after string) ([]*timer.Job, string, error)
	// PurgeDead ends a dead job: its row becomes purged (kept, never listed
	// or fired). It returns an error wrapping timer.ErrNotFound for an
	// unknown job and timer.ErrConflict for one that is not dead.
	PurgeDead(ctx context.Context, id timer.JobID) error
	// Summary groups the dead letters a filter selects by signature, and
	// reports whether it read them all.
	Summary(ctx context.Context, f timer.DeadFilter) ([]timer.DeadGroup, bool, error)
	// Each acts on up to limit of the dead letters a filter selects, at
	// most rate a second, and reports how many and whether more remain.
	Each(ctx context.Context, f timer.DeadFilter, limit int, rate float64, act func(context.Context, *timer.Job) error) (int, bool, error)
}

// Stats reports on topics.
type Stats interface {
	// TopicStats returns the counts of topic, or an error wrapping
	// timer.ErrNotFound for an unknown topic.
	TopicStats(ctx context.Context, topic string) (TopicStats, error)
	// TopicUsage returns the live use of topic over the cluster, which
	// GET /v1/topics/{topic} shows.
	TopicUsage(ctx context.Context, topic timer.Topic) (timer.Usage, error)
}

// TopicStats is what GET /v1/topics/{topic}/stats shows.
type TopicStats struct {
	Topic string
	Slots int
	// Pending and Dead count the rows of the task store (the truth) that
	// are pending (firing ones included) and dead; InFlight the leases
	// the workers hold in Redis.
	Pending  int64
	InFlight int64
	Dead     int64
	// CountedAt is when Pending and Dead were counted: a big topic's are
	// counted in the background, at most a few minutes before.
	// CountsEstimated is true when they are the database's estimate
	// instead, until that count is done.
	CountedAt       time.Time
	CountsEstimated bool
	// NextDue is the earliest due time in Redis (zero: none within the
	// horizon); a NextDue in the past is overdue by that much.
	NextDue time.Time
	// Retention is the retention in force for the topic's ended jobs: its
	// own over the global one. A zero field is the API's
	// APIConfig.Retention.
	Retention timer.Retention
	// Storage is the task store's picture of the topic's ended jobs, by
	// the status they ended in (timer.RetiredStatuses); a status left
	// out shows as none.
	Storage map[timer.Status]StatusStorage
}

// StatusStorage is what the task store holds of a topic's jobs that ended
// in one status.
type StatusStorage struct {
	// Rows counts them; RowsEstimated is true when it is the database's
	// estimate of a big count.
	Rows          int64
	RowsEstimated bool
	// OldestEnded is when the oldest of them ended, or for a job
	// cancelled before it was due its due time (zero: none).
	OldestEnded time.Time
	// PastRetention counts those that ended longer ago than their
	// retention: the retirer's backlog. PastRetentionEstimated as
	// RowsEstimated.
	PastRetention          int64
	PastRetentionEstimated bool
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
	// Tokens, when any, are the bearer tokens every /v1 call needs, each
	// an admin of every topic (--api-token).
	Tokens []string
	// TokenSet, when set, returns the tokens in force instead (a tokens
	// file, reloaded: --tokens-file), each with its role, topics and
	// quotas (see http/auth). It also makes /metrics on the API's address
	// need a token (see metricsFor).
	TokenSet func() *auth.Set
	// staticTokens is Tokens as a set, made by NewAPI.
	staticTokens *auth.Set
	// Namespaces are the namespaces besides the default one, by name,
	// with what the API enforces of each (see Namespace). Their tokens
	// come from TokenSet; a token of a namespace gives and sees topic
	// names, and toc holds them qualified by it (timer.QualifiedTopic).
	Namespaces map[string]Namespace
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
	// Schedules serves /v1/schedules (nil: those routes answer 404).
	Schedules Schedules
	// Audit keeps the audit log of admin and bulk actions, which GET
	// /v1/audit lists (nil: nothing is recorded and that route answers
	// 404).
	Audit timer.AuditLog
	// AuditFailed, when set, hears of each audit entry that could not be
	// written (the action stands; see http/audit.go).
	AuditFailed func()
	// Series reads the cluster's series for GET /v1/series and GET
	// /v1/topics/{topic}/series (nil: those routes answer 404).
	Series SeriesReader
	// Cluster returns what GET /v1/cluster shows: the members, the leader
	// and the assignment (nil: a standalone process).
	Cluster func() any
	// TopicDefaults are the worker's retry policy, lease and callback
	// timeout, shown for a topic that sets none (default: timer's).
	TopicDefaults timer.Limits
	// MaxCallbackTimeout is the longest callback_timeout_ms a topic may
	// set (default DefaultMaxCallbackTimeout, and at least
	// TopicDefaults.CallbackTimeout).
	MaxCallbackTimeout time.Duration
	// Pull hands the jobs of pull topics to the workers that lease them
	// (POST /v1/topics/{topic}/leases, /v1/leases/{token}/...; nil: those
	// routes answer 404).
	Pull *pull.Broker
	// Brokers names the message brokers of each way a topic may deliver
	// to (toc serve's --amqp and --nats): a topic names one, never its
	// URL.
	Brokers map[timer.Way][]string
	// Retention is the global retention of ended jobs (toc serve's
	// --retain-* flags; timer.KeepForever for 0), shown for a topic
	// that sets none of its own. A zero field keeps forever, as in
	// timer.RetirerConfig.
	Retention timer.Retention
	Logger    *slog.Logger
	Now       func() time.Time
}

// Validate reports the first field of c that is out of range.
func (c APIConfig) Validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return &timer.FieldError{Field: "MaxBodyBytes", Message: "must not be negative"}
	case c.MaxBatchBodyBytes < 0:
		return &timer.FieldError{Field: "MaxBatchBodyBytes", Message: "must not be negative"}
	case slices.Contains(c.Tokens, "") && c.TokenSet == nil:
		return &timer.FieldError{Field: "Tokens", Message: "must not hold an empty token"}
	}
	if err := c.TopicDefaults.Validate(); err != nil {
		return &timer.FieldError{Field: "TopicDefaults", Message: err.Error()}
	}
	if err := c.Retention.Validate("Retention"); err != nil {
		return err
	}
	if c.MaxCallbackTimeout < 0 || c.MaxCallbackTimeout > timer.MaxLease-timer.LeaseMargin {
		return &timer.FieldError{Field: "MaxCallbackTimeout", Message: fmt.Sprintf("must be within 0..%v", timer.MaxLease-timer.LeaseMargin)}
	}
	if def := cmp.Or(c.TopicDefaults.CallbackTimeout, timer.DefaultAttemptTimeout); c.MaxCallbackTimeout > 0 && def > c.MaxCallbackTimeout {
		return &timer.FieldError{Field: "MaxCallbackTimeout", Message: fmt.Sprintf("%v is below the default callback timeout %v", c.MaxCallbackTimeout, def)}
	}
	return nil
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
	ui     http.Handler
	quotas *quotas
}

// NewAPI returns the API over jobs, dead and stats.
func NewAPI(jobs Jobs, dead DeadLetters, stats Stats, cfg APIConfig) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("api config: %w", err)
	}
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
	cfg.MaxCallbackTimeout = cmp.Or(cfg.MaxCallbackTimeout, max(DefaultMaxCallbackTimeout, d.CallbackTimeout))
	if err := cfg.setTokens(); err != nil {
		return nil, err
	}
	guard := webhook.NewGuard(webhook.GuardConfig{AllowPrivate: cfg.AllowPrivateCallbacks, Resolver: cfg.Resolver})
	a := &API{jobs: jobs, dead: dead, stats: stats, cfg: cfg, log: cfg.Logger, guard: guard, ui: ui.Handler(), quotas: newQuotas()}
	a.router = a.routes()
	return a, nil
}

// ServeHTTP serves the API, and the dashboard under /ui: pages, not API
// routes, so they stay out of the router that openapi.json lists.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ui.Prefix || strings.HasPrefix(r.URL.Path, ui.Prefix+"/") {
		a.ui.ServeHTTP(w, r)
		return
	}
	a.router.ServeHTTP(w, r)
}

// Routes exposes the router, for walking its routes.
func (a *API) Routes() chi.Routes { return a.router }

func (a *API) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(a.recoverer)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		a.writeError(w, r, fmt.Errorf("no such path %s: %w", r.URL.Path, timer.ErrNotFound))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			if a.router.Match(chi.NewRouteContext(), m, r.URL.Path) {
				w.Header().Add("Allow", m)
			}
		}
		a.writeError(w, r, fmt.Errorf("method %s not allowed on %s: %w", r.Method, r.URL.Path, errMethodNotAllowed))
	})
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", a.ready)
	if a.cfg.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", metricsFor(&a.cfg))
	}
	// The document holds no data: a client generator or linter fetches it
	// without a token.
	r.Get("/v1/openapi.json", serveOpenAPI)
	r.Route("/v1", func(r chi.Router) {
		r.Use(a.enter)
		for _, o := range a.ops() {
			r.Method(o.method, strings.TrimPrefix(o.pattern, "/v1"), a.serveOp(o))
		}
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
