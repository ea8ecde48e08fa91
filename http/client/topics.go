// Topics: their settings, pause and resume, and their counts.

package client

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Topic is a topic as the API shows it: its settings in force, the
// server's defaults filled in where it sets none.
type Topic struct {
	Name string
	// Slots is fixed when the topic is created.
	Slots       int
	MaxAttempts int
	// RateLimit is in dispatches a second over the cluster, 0 for none.
	RateLimit float64
	// Burst is the dispatches that may go at once after a quiet spell: a
	// tenth of RateLimit by default (so it may be fractional), 0 without
	// a rate limit.
	Burst float64
	// MaxInFlight caps the webhook calls running at once, 0 for none.
	MaxInFlight int
	// Weight is the topic's share of a saturated worker.
	Weight int
	// Retry is the backoff of failed attempts.
	Retry Backoff
	// Lease is how long a claimed job stays with its worker, and
	// CallbackTimeout bounds one webhook call.
	Lease           time.Duration
	CallbackTimeout time.Duration
	// LatenessSLO is the topic's lateness objective, 0 for none.
	LatenessSLO time.Duration
	Paused      bool
	CreatedAt   time.Time
	// Usage is the topic's live use; only Topic (GET /v1/topics/{topic})
	// reports it.
	Usage *Usage
	// ExpireAfter is the deadline of the topic's jobs that set none, in
	// force when Expires.
	ExpireAfter time.Duration
	Expires     bool
	// Retention is how long the topic's jobs are kept after they end, in
	// force: the topic's own over the server's global retention.
	Retention Retention
	// Delivery is how the topic's due jobs go out.
	Delivery Delivery
}

// Delivery is how a topic's due jobs go out: Way "webhook" (the zero
// Delivery's meaning) POSTs each to its job's callback URL; "pull" hands
// each to a worker that leases it (Lease, Work); "amqp" publishes it to
// RabbitMQ (Broker, Exchange, RoutingKey, persistent unless Transient)
// and "nats" to NATS JetStream (Broker, Subject). A broker is named,
// from the server's --amqp and --nats lists; a routing key or subject
// may use {topic}, {job_id}, {key}, {biz_id}, {biz_type}.
type Delivery struct {
	Way                  string
	Broker               string
	Exchange, RoutingKey string
	Subject              string
	Transient            bool
}

// deliveryJSON is a Delivery as the API's topic writes it: the way, and
// its object.
type deliveryJSON struct {
	Delivery string    `json:"delivery,omitempty"`
	AMQP     *amqpJSON `json:"amqp,omitempty"`
	NATS     *natsJSON `json:"nats,omitempty"`
}

type amqpJSON struct {
	Broker     string `json:"broker"`
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
	Persistent *bool  `json:"persistent,omitempty"`
}

type natsJSON struct {
	Broker  string `json:"broker"`
	Subject string `json:"subject"`
}

func (d Delivery) wire() deliveryJSON {
	w := deliveryJSON{Delivery: d.Way}
	switch d.Way {
	case "amqp":
		persistent := !d.Transient
		w.AMQP = &amqpJSON{Broker: d.Broker, Exchange: d.Exchange, RoutingKey: d.RoutingKey, Persistent: &persistent}
	case "nats":
		w.NATS = &natsJSON{Broker: d.Broker, Subject: d.Subject}
	}
	return w
}

func (w deliveryJSON) delivery() Delivery {
	d := Delivery{Way: w.Delivery}
	if a := w.AMQP; a != nil {
		d.Broker, d.Exchange, d.RoutingKey, d.Transient = a.Broker, a.Exchange, a.RoutingKey, a.Persistent != nil && !*a.Persistent
	}
	if n := w.NATS; n != nil {
		d.Broker, d.Subject = n.Broker, n.Subject
	}
	return d
}

// Retention is how long jobs are kept after they end, by the status they
// ended in; 0 keeps them forever. The server deletes a job that ended
// longer ago; pending and firing jobs, and members of a group not yet
// complete, are never deleted.
type Retention struct {
	Done, Cancelled, Expired, Dead, Purged time.Duration
}

type retentionJSON struct {
	DoneMS      millis `json:"done_ms"`
	CancelledMS millis `json:"cancelled_ms"`
	ExpiredMS   millis `json:"expired_ms"`
	DeadMS      millis `json:"dead_ms"`
	PurgedMS    millis `json:"purged_ms"`
}

func (r Retention) wire() retentionJSON {
	return retentionJSON{millis(r.Done), millis(r.Cancelled), millis(r.Expired), millis(r.Dead), millis(r.Purged)}
}

func (w retentionJSON) retention() Retention {
	return Retention{time.Duration(w.DoneMS), time.Duration(w.CancelledMS), time.Duration(w.ExpiredMS), time.Duration(w.DeadMS), time.Duration(w.PurgedMS)}
}

// Backoff is a topic's retry backoff: Base doubled at each failed
// attempt, up to Max.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Usage is a topic's live use over the cluster.
type Usage struct {
	// DueWaiting counts the due jobs still waiting in Redis.
	DueWaiting int64
	// InFlight, Rate (dispatches a second) and Throttled (claims held
	// back by the limits) are summed over the Members that published in
	// the last 5 s.
	InFlight  int64
	Rate      float64
	Throttled int64
	Members   int
	// LatenessP50 and LatenessP99 are the percentiles of how late the
	// LatenessCalls calls of the last 5 minutes started, each the upper
	// bound of its bucket; 0 when LatenessCalls is 0.
	LatenessP50   time.Duration
	LatenessP99   time.Duration
	LatenessCalls int64
}

type topicJSON struct {
	Name              string        `json:"name"`
	Slots             int           `json:"slots"`
	MaxAttempts       int           `json:"max_attempts"`
	RateLimit         float64       `json:"rate_limit"`
	Burst             float64       `json:"burst"`
	MaxInFlight       int           `json:"max_in_flight"`
	Weight            int           `json:"weight"`
	Retry             backoffMS     `json:"retry"`
	LeaseMS           millis        `json:"lease_ms"`
	CallbackTimeoutMS millis        `json:"callback_timeout_ms"`
	LatenessSLOMS     millis        `json:"lateness_slo_ms"`
	Paused            bool          `json:"paused"`
	CreatedAt         stamp         `json:"created_at"`
	Usage             *usageJSON    `json:"usage,omitempty"`
	ExpireAfterMS     *millis       `json:"expire_after_ms"`
	Retention         retentionJSON `json:"retention"`
	deliveryJSON
}

type backoffMS struct {
	BaseMS millis `json:"base_ms"`
	MaxMS  millis `json:"max_ms"`
}

type usageJSON struct {
	DueWaiting    int64   `json:"due_waiting"`
	InFlight      int64   `json:"in_flight"`
	Rate          float64 `json:"rate"`
	Throttled     int64   `json:"throttled"`
	Members       int     `json:"members"`
	LatenessP50MS *millis `json:"lateness_p50_ms,omitempty"`
	LatenessP99MS *millis `json:"lateness_p99_ms,omitempty"`
	LatenessCalls int64   `json:"lateness_calls"`
}

// MarshalJSON writes t as the API does.
func (t Topic) MarshalJSON() ([]byte, error) {
	w := topicJSON{
		Name: t.Name, Slots: t.Slots, MaxAttempts: t.MaxAttempts, RateLimit: t.RateLimit, Burst: t.Burst,
		MaxInFlight: t.MaxInFlight, Weight: t.Weight, Retry: backoffMS{millis(t.Retry.Base), millis(t.Retry.Max)},
		LeaseMS: millis(t.Lease), CallbackTimeoutMS: millis(t.CallbackTimeout), LatenessSLOMS: millis(t.LatenessSLO),
		Paused: t.Paused, CreatedAt: stamp(t.CreatedAt), Retention: t.Retention.wire(), deliveryJSON: t.Delivery.wire(),
	}
	if t.Expires {
		n := millis(t.ExpireAfter)
		w.ExpireAfterMS = &n
	}
	if u := t.Usage; u != nil {
		w.Usage = &usageJSON{DueWaiting: u.DueWaiting, InFlight: u.InFlight, Rate: u.Rate, Throttled: u.Throttled,
			Members: u.Members, LatenessCalls: u.LatenessCalls}
		if u.LatenessCalls > 0 {
			p50, p99 := millis(u.LatenessP50), millis(u.LatenessP99)
			w.Usage.LatenessP50MS, w.Usage.LatenessP99MS = &p50, &p99
		}
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a topic.
func (t *Topic) UnmarshalJSON(data []byte) error {
	var w topicJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = Topic{
		Name: w.Name, Slots: w.Slots, MaxAttempts: w.MaxAttempts, RateLimit: w.RateLimit, Burst: w.Burst,
		MaxInFlight: w.MaxInFlight, Weight: w.Weight,
		Retry: Backoff{Base: time.Duration(w.Retry.BaseMS), Max: time.Duration(w.Retry.MaxMS)},
		Lease: time.Duration(w.LeaseMS), CallbackTimeout: time.Duration(w.CallbackTimeoutMS),
		LatenessSLO: time.Duration(w.LatenessSLOMS), Paused: w.Paused, CreatedAt: time.Time(w.CreatedAt),
		Retention: w.Retention.retention(), Delivery: w.delivery(),
	}
	if w.ExpireAfterMS != nil {
		t.ExpireAfter, t.Expires = time.Duration(*w.ExpireAfterMS), true
	}
	if u := w.Usage; u != nil {
		t.Usage = &Usage{DueWaiting: u.DueWaiting, InFlight: u.InFlight, Rate: u.Rate, Throttled: u.Throttled,
			Members: u.Members, LatenessCalls: u.LatenessCalls}
		if u.LatenessP50MS != nil {
			t.Usage.LatenessP50 = time.Duration(*u.LatenessP50MS)
		}
		if u.LatenessP99MS != nil {
			t.Usage.LatenessP99 = time.Duration(*u.LatenessP99MS)
		}
	}
	return nil
}

// TopicSettings are a topic's settings as PutTopic sets them: a field left
// zero is the default (Slots: the server's --slots). Durations are sent
// in whole milliseconds, rounded up. A value out of range is refused
// (ErrInvalid, naming the field), never clamped.
type TopicSettings struct {
	Slots           int     // a power of two, 1..65536; fixed at creation
	MaxAttempts     int     // 1..64 (default 16)
	RateLimit       float64 // dispatches a second (default none)
	Burst           int     // needs a RateLimit (default a tenth of it)
	MaxInFlight     int     // (default none)
	Weight          int     // 1..1000 (default 1)
	Retry           Backoff // (default 1 s doubling to 10 min)
	Lease           time.Duration
	CallbackTimeout time.Duration
	LatenessSLO     time.Duration // the lateness objective (default none)
	// ExpireAfter, when not nil, is the deadline of the topic's jobs that
	// set none (default none).
	ExpireAfter *time.Duration
	// Retain is the topic's own retention of jobs that ended in a status
	// ("done", "cancelled", "expired", "dead", "purged"): 0 keeps them
	// forever; a status left out takes the server's global retention.
	Retain map[string]time.Duration
	// Delivery is how the topic's due jobs go out (default a webhook).
	Delivery Delivery
}

type settingsJSON struct {
	Slots             int              `json:"slots,omitempty"`
	MaxAttempts       int              `json:"max_attempts,omitempty"`
	RateLimit         float64          `json:"rate_limit,omitempty"`
	Burst             int              `json:"burst,omitempty"`
	MaxInFlight       int              `json:"max_in_flight,omitempty"`
	Weight            int              `json:"weight,omitempty"`
	Retry             *retryJSON       `json:"retry,omitempty"`
	LeaseMS           *int64           `json:"lease_ms,omitempty"`
	CallbackTimeoutMS *int64           `json:"callback_timeout_ms,omitempty"`
	LatenessSLOMS     *int64           `json:"lateness_slo_ms,omitempty"`
	ExpireAfterMS     *int64           `json:"expire_after_ms,omitempty"`
	Retention         map[string]int64 `json:"retention,omitempty"`
	deliveryJSON
}

type retryJSON struct {
	BaseMS *int64 `json:"base_ms,omitempty"`
	MaxMS  *int64 `json:"max_ms,omitempty"`
}

// msOrNil is d in ms, nil for 0.
func msOrNil(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	n := ms(d)
	return &n
}

// MarshalJSON writes s as PUT /v1/topics/{topic} reads it.
func (s TopicSettings) MarshalJSON() ([]byte, error) {
	w := settingsJSON{
		Slots: s.Slots, MaxAttempts: s.MaxAttempts, RateLimit: s.RateLimit, Burst: s.Burst, MaxInFlight: s.MaxInFlight,
		Weight: s.Weight, LeaseMS: msOrNil(s.Lease), CallbackTimeoutMS: msOrNil(s.CallbackTimeout),
		LatenessSLOMS: msOrNil(s.LatenessSLO), deliveryJSON: s.Delivery.wire(),
	}
	if s.ExpireAfter != nil {
		n := ms(*s.ExpireAfter)
		w.ExpireAfterMS = &n
	}
	if s.Retry != (Backoff{}) {
		w.Retry = &retryJSON{BaseMS: msOrNil(s.Retry.Base), MaxMS: msOrNil(s.Retry.Max)}
	}
	if len(s.Retain) > 0 {
		w.Retention = make(map[string]int64, len(s.Retain))
		for st, d := range s.Retain {
			w.Retention[st+"_ms"] = ms(d)
		}
	}
	return marshal(w)
}

// Patch is one setting of a TopicPatch: left zero, the setting is
// unchanged; Set gives it a value, Reset puts it back to its default.
type Patch[T any] struct {
	v     T
	given bool // Set, or Reset when reset too
	reset bool
}

// Set is the Patch that gives a setting the value v.
func Set[T any](v T) Patch[T] { return Patch[T]{v: v, given: true} }

// Reset is the Patch that puts a setting back to its default.
func Reset[T any]() Patch[T] { return Patch[T]{given: true, reset: true} }

// put sets key in m to the setting's JSON value, conv of it (null for a
// reset), when it is given.
func (p Patch[T]) put(m map[string]any, key string, conv func(T) any) {
	switch {
	case !p.given:
	case p.reset:
		m[key] = nil
	default:
		m[key] = conv(p.v)
	}
}

func asIs[T any](v T) any { return v }

func inMS(d time.Duration) any { return ms(d) }

// TopicPatch changes some settings of a topic (PatchTopic): each Patch
// left zero is unchanged. A Burst needs a RateLimit: dropping the rate of
// a topic with a burst is RateLimit: Set(0.0), Burst: Reset[int]().
type TopicPatch struct {
	MaxAttempts     Patch[int]
	RateLimit       Patch[float64]
	Burst           Patch[int]
	MaxInFlight     Patch[int]
	Weight          Patch[int]
	RetryBase       Patch[time.Duration]
	RetryMax        Patch[time.Duration]
	Lease           Patch[time.Duration]
	CallbackTimeout Patch[time.Duration]
	LatenessSLO     Patch[time.Duration]
	// ExpireAfter: Reset is no deadline.
	ExpireAfter Patch[time.Duration]
	// Retain sets the topic's own retention of jobs that ended in a
	// status ("done", "cancelled", "expired", "dead", "purged"): Set(0)
	// keeps them forever, Set(d) d (in whole ms, rounded up), Reset the
	// server's global retention.
	Retain map[string]Patch[time.Duration]
	// Delivery, when not nil, sets how the topic's due jobs go out,
	// whole: the way and its settings.
	Delivery *Delivery
}

// MarshalJSON writes p as PATCH /v1/topics/{topic} reads it (a JSON merge
// patch): the settings given, a reset as null.
func (p TopicPatch) MarshalJSON() ([]byte, error) {
	body := map[string]any{}
	p.MaxAttempts.put(body, "max_attempts", asIs)
	p.RateLimit.put(body, "rate_limit", asIs)
	p.Burst.put(body, "burst", asIs)
	p.MaxInFlight.put(body, "max_in_flight", asIs)
	p.Weight.put(body, "weight", asIs)
	p.Lease.put(body, "lease_ms", inMS)
	p.CallbackTimeout.put(body, "callback_timeout_ms", inMS)
	p.LatenessSLO.put(body, "lateness_slo_ms", inMS)
	p.ExpireAfter.put(body, "expire_after_ms", inMS)
	if p.RetryBase.given || p.RetryMax.given {
		retry := map[string]any{}
		p.RetryBase.put(retry, "base_ms", inMS)
		p.RetryMax.put(retry, "max_ms", inMS)
		body["retry"] = retry
	}
	if len(p.Retain) > 0 {
		retention := map[string]any{}
		for st, r := range p.Retain {
			r.put(retention, st+"_ms", inMS)
		}
		body["retention"] = retention
	}
	if p.Delivery != nil {
		w := p.Delivery.wire()
		body["delivery"] = cmp.Or(w.Delivery, "webhook")
		if w.AMQP != nil {
			body["amqp"] = w.AMQP
		}
		if w.NATS != nil {
			body["nats"] = w.NATS
		}
	}
	return marshal(body)
}

func topicPath(name, rest string) string {
	return "/v1/topics/" + url.PathEscape(name) + rest
}

// Topics lists the topics (GET /v1/topics), without their Usage.
func (c *Client) Topics(ctx context.Context) ([]Topic, error) {
	var out struct {
		Topics []Topic `json:"topics"`
		// Items is the list's name before: a server older than the
		// client still answers it.
		Items []Topic `json:"items"`
	}
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/topics", safety: idempotent}, &out); err != nil {
		return nil, err
	}
	if out.Topics == nil {
		out.Topics = out.Items
	}
	if out.Topics == nil {
		out.Topics = []Topic{}
	}
	return out.Topics, nil
}

// Topic looks a topic up with its live Usage (GET /v1/topics/{topic}).
func (c *Client) Topic(ctx context.Context, name string) (*Topic, error) {
	return c.topic(ctx, request{method: http.MethodGet, path: topicPath(name, ""), safety: idempotent})
}

// PutTopic creates a topic or replaces its settings (PUT
// /v1/topics/{topic}), and reports whether it created it. It leaves a
// pause as it is; another slot count than the topic's is ErrConflict.
func (c *Client) PutTopic(ctx context.Context, name string, s TopicSettings) (t *Topic, created bool, err error) {
	t = new(Topic)
	status, err := c.call(ctx, request{method: http.MethodPut, path: topicPath(name, ""), body: s, safety: idempotent}, t)
	if err != nil {
		return nil, false, err
	}
	return t, status == http.StatusCreated, nil
}

// PatchTopic changes the settings p gives of a topic (PATCH
// /v1/topics/{topic}); an unknown topic is ErrNotFound. Of two patches at
// the same instant the last written wins whole.
func (c *Client) PatchTopic(ctx context.Context, name string, p TopicPatch) (*Topic, error) {
	return c.topic(ctx, request{method: http.MethodPatch, path: topicPath(name, ""), body: p, safety: idempotent})
}

// DeleteTopic deletes a topic none of whose jobs is pending, firing or
// dead (DELETE /v1/topics/{topic}); otherwise ErrConflict, whose message
// counts them.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: topicPath(name, ""), safety: idempotent}, nil)
	return err
}

// PauseTopic stops firing a topic's jobs (POST /v1/topics/{topic}/pause);
// it still accepts them.
func (c *Client) PauseTopic(ctx context.Context, name string) (*Topic, error) {
	return c.topic(ctx, request{method: http.MethodPost, path: topicPath(name, "/pause"), safety: idempotent})
}

// ResumeTopic fires a paused topic's due jobs again (POST
// /v1/topics/{topic}/resume).
func (c *Client) ResumeTopic(ctx context.Context, name string) (*Topic, error) {
	return c.topic(ctx, request{method: http.MethodPost, path: topicPath(name, "/resume"), safety: idempotent})
}

func (c *Client) topic(ctx context.Context, r request) (*Topic, error) {
	t := new(Topic)
	if _, err := c.call(ctx, r, t); err != nil {
		return nil, err
	}
	return t, nil
}

// TopicStats are a topic's counts (GET /v1/topics/{topic}/stats).
type TopicStats struct {
	Topic string
	Slots int
	// Pending (firing included) and Dead count the task store's rows;
	// InFlight the leases the workers hold.
	Pending  int64
	InFlight int64
	Dead     int64
	// CountedAt is when Pending and Dead were counted: a topic past
	// 10,000 jobs of a status is counted in the background, up to a
	// minute before. CountsEstimated is true while they are the
	// database's estimate, until that count is done.
	CountedAt       time.Time
	CountsEstimated bool
	// NextDueAt is the earliest due time in Redis (zero: none within the
	// horizon), and OldestOverdue how far it is past, if it is.
	NextDueAt     time.Time
	OldestOverdue time.Duration
	// Retention is the topic's retention in force.
	Retention Retention
	// Storage is what the task store holds of the topic's ended jobs, by
	// the status they ended in ("done", "cancelled", "expired", "dead",
	// "purged").
	Storage map[string]StatusStorage
}

// StatusStorage is what the task store holds of a topic's jobs that ended
// in one status. A count past 10,000 rows a shard is the database's
// estimate, and says so.
type StatusStorage struct {
	Rows          int64 `json:"rows"`
	RowsEstimated bool  `json:"rows_estimated"`
	// OldestEndedAt is when the oldest of them ended, or for a job
	// cancelled before it was due its due time (zero: none).
	OldestEndedAt time.Time `json:"-"`
	// PastRetention counts those past their retention: the server's
	// backlog of rows to delete.
	PastRetention          int64 `json:"past_retention"`
	PastRetentionEstimated bool  `json:"past_retention_estimated"`
}

// MarshalJSON writes s as the API does.
func (s StatusStorage) MarshalJSON() ([]byte, error) {
	type plain StatusStorage // without this method
	return marshal(struct {
		plain
		OldestEndedAt stamp `json:"oldest_ended_at"`
	}{plain(s), stamp(s.OldestEndedAt)})
}

// UnmarshalJSON reads the API's JSON of a status's storage.
func (s *StatusStorage) UnmarshalJSON(data []byte) error {
	type plain StatusStorage
	var w struct {
		plain
		OldestEndedAt stamp `json:"oldest_ended_at"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = StatusStorage(w.plain)
	s.OldestEndedAt = time.Time(w.OldestEndedAt)
	return nil
}

type topicStatsJSON struct {
	Topic           string                   `json:"topic"`
	Slots           int                      `json:"slots"`
	Pending         int64                    `json:"pending"`
	InFlight        int64                    `json:"in_flight"`
	Dead            int64                    `json:"dead"`
	CountedAt       stamp                    `json:"counted_at"`
	CountsEstimated bool                     `json:"counts_estimated"`
	NextDueAt       stamp                    `json:"next_due_at"`
	OldestOverdueMS millis                   `json:"oldest_overdue_ms"`
	Retention       retentionJSON            `json:"retention"`
	Storage         map[string]StatusStorage `json:"storage"`
}

// MarshalJSON writes s as the API does.
func (s TopicStats) MarshalJSON() ([]byte, error) {
	return marshal(topicStatsJSON{Topic: s.Topic, Slots: s.Slots, Pending: s.Pending, InFlight: s.InFlight, Dead: s.Dead,
		CountedAt: stamp(s.CountedAt), CountsEstimated: s.CountsEstimated, NextDueAt: stamp(s.NextDueAt),
		OldestOverdueMS: millis(s.OldestOverdue), Retention: s.Retention.wire(), Storage: s.Storage})
}

// UnmarshalJSON reads the API's JSON of a topic's stats.
func (s *TopicStats) UnmarshalJSON(data []byte) error {
	var w topicStatsJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*s = TopicStats{Topic: w.Topic, Slots: w.Slots, Pending: w.Pending, InFlight: w.InFlight, Dead: w.Dead,
		CountedAt: time.Time(w.CountedAt), CountsEstimated: w.CountsEstimated, NextDueAt: time.Time(w.NextDueAt),
		OldestOverdue: time.Duration(w.OldestOverdueMS), Retention: w.Retention.retention(), Storage: w.Storage}
	return nil
}

// TopicStats returns a topic's counts (GET /v1/topics/{topic}/stats).
func (c *Client) TopicStats(ctx context.Context, name string) (*TopicStats, error) {
	s := new(TopicStats)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: topicPath(name, "/stats"), safety: idempotent}, s); err != nil {
		return nil, err
	}
	return s, nil
}
