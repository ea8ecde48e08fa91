package http

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// topicAt is the input of a route on the topic of the path; the gate
// qualifies name and checks the token may use it.
type topicAt struct{ name string }

// readTopicAt reads the {topic} of the path.
func readTopicAt(r *http.Request, in *topicAt) (*claim, error) {
	in.name = chi.URLParam(r, "topic")
	return &claim{topics: []topicRef{{field: "topic", name: &in.name}}}, nil
}

// TopicBreakers is implemented by a Stats that knows the circuit
// breakers of the callback hosts a topic's jobs call (toc serve's and
// dev's, from the member's webhook client); GET /v1/topics/{topic}/stats
// shows them and counts the jobs they hold back as overdue.
type TopicBreakers interface {
	// TopicBreakers returns the breakers that are open, half-open or
	// counting failures and that jobs of topic met, at now.
	TopicBreakers(topic string, now time.Time) []webhook.BreakerState
}

// breakerView is a breaker as the API shows it.
type breakerView struct {
	Host            string `json:"host"`
	State           string `json:"state"`
	Since           string `json:"since"`
	Failures        int    `json:"failures"`
	OpenUntil       string `json:"open_until"`
	OldestHeldDueAt string `json:"oldest_held_due_at"`
}

// topicStats: GET /v1/topics/{topic}/stats. A job an open breaker holds
// back is overdue from its due time: its timer in Redis waits for the
// breaker, not for the job's time.
func (a *API) topicStats(w http.ResponseWriter, r *http.Request, in *topicAt, _ *admission) {
	topic := in.name
	st, err := a.stats.TopicStats(r.Context(), topic)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	now := a.cfg.Now()
	oldest := st.NextDue
	breakers := []breakerView{}
	if tb, ok := a.stats.(TopicBreakers); ok {
		for _, b := range tb.TopicBreakers(topic, now) {
			breakers = append(breakers, breakerView{Host: b.Host, State: b.State, Since: formatTime(b.Since), Failures: b.Failures,
				OpenUntil: formatTime(b.OpenUntil), OldestHeldDueAt: formatTime(b.OldestHeld)})
			if !b.OldestHeld.IsZero() && (oldest.IsZero() || b.OldestHeld.Before(oldest)) {
				oldest = b.OldestHeld
			}
		}
	}
	var overdue int64
	if !oldest.IsZero() && oldest.Before(now) {
		overdue = now.Sub(oldest).Milliseconds()
	}
	view := map[string]any{
		"topic":             shownTopic(st.Topic),
		"slots":             st.Slots,
		"pending":           st.Pending,
		"in_flight":         st.InFlight,
		"dead":              st.Dead,
		"counted_at":        formatTime(cmp.Or(st.CountedAt, now)),
		"counts_estimated":  st.CountsEstimated,
		"next_due_at":       formatTime(st.NextDue),
		"oldest_overdue_ms": overdue,
		"breakers":          breakers,
		"retention":         retentionViewOf(st.Retention.Over(a.cfg.Retention)),
		"storage":           storageViewOf(st.Storage),
	}
	if d, err := a.jobs.DestinationOf(r.Context(), topic); err == nil {
		view["delivery"] = d.Of()
		if d.Of() == timer.WayPull && a.cfg.Pull != nil {
			view["pull"] = map[string]int{"waiting": max(a.cfg.Pull.Waiting(topic), 0)}
		}
	}
	writeJSON(w, http.StatusOK, view)
}

// retentionView is the retention in force as the API shows it, in ms;
// 0 keeps forever.
type retentionView struct {
	DoneMS      int64 `json:"done_ms"`
	CancelledMS int64 `json:"cancelled_ms"`
	ExpiredMS   int64 `json:"expired_ms"`
	DeadMS      int64 `json:"dead_ms"`
	PurgedMS    int64 `json:"purged_ms"`
}

func retentionViewOf(r timer.Retention) retentionView {
	ms := func(d time.Duration) int64 {
		if timer.Keeps(d) {
			return 0
		}
		return d.Milliseconds()
	}
	return retentionView{DoneMS: ms(r.Done), CancelledMS: ms(r.Cancelled), ExpiredMS: ms(r.Expired), DeadMS: ms(r.Dead), PurgedMS: ms(r.Purged)}
}

// statusStorageView is a StatusStorage as the API shows it.
type statusStorageView struct {
	Rows                   int64  `json:"rows"`
	RowsEstimated          bool   `json:"rows_estimated"`
	OldestEndedAt          string `json:"oldest_ended_at"`
	PastRetention          int64  `json:"past_retention"`
	PastRetentionEstimated bool   `json:"past_retention_estimated"`
}

// storageViewOf shows every retired status, by name.
func storageViewOf(s map[timer.Status]StatusStorage) map[string]statusStorageView {
	out := make(map[string]statusStorageView, len(timer.RetiredStatuses()))
	for _, st := range timer.RetiredStatuses() {
		c := s[st]
		out[st.String()] = statusStorageView{Rows: c.Rows, RowsEstimated: c.RowsEstimated, OldestEndedAt: formatTime(c.OldestEnded),
			PastRetention: c.PastRetention, PastRetentionEstimated: c.PastRetentionEstimated}
	}
	return out
}

// DefaultMaxCallbackTimeout is the longest callback_timeout_ms a topic
// may set unless APIConfig.MaxCallbackTimeout says otherwise.
const DefaultMaxCallbackTimeout = 5 * time.Minute

// topicView is a topic as the API shows it: the settings in force, the
// worker's defaults filled in where the topic sets none, and on GET
// /v1/topics/{topic} its live usage.
type topicView struct {
	Name        string  `json:"name"`
	Slots       int     `json:"slots"`
	MaxAttempts int     `json:"max_attempts"`
	RateLimit   float64 `json:"rate_limit"`
	// Burst is a number: the default, a tenth of rate_limit, may be
	// fractional. 0 without a rate limit.
	Burst             float64    `json:"burst"`
	MaxInFlight       int        `json:"max_in_flight"`
	Weight            int        `json:"weight"`
	Retry             retryView  `json:"retry"`
	LeaseMS           int64      `json:"lease_ms"`
	CallbackTimeoutMS int64      `json:"callback_timeout_ms"`
	LatenessSLOMS     int64      `json:"lateness_slo_ms"`
	Paused            bool       `json:"paused"`
	CreatedAt         string     `json:"created_at"`
	Usage             *usageView `json:"usage,omitempty"`
	// ExpireAfterMS is the deadline of the topic's jobs that set none:
	// null for none.
	ExpireAfterMS *int64 `json:"expire_after_ms"`
	// Retention is the retention in force: the topic's own over the
	// global one.
	Retention retentionView `json:"retention"`
	// Delivery is how the topic's due jobs go out: webhook, amqp or
	// nats; AMQP and NATS are the settings of those ways.
	Delivery string      `json:"delivery"`
	AMQP     *amqpFields `json:"amqp,omitempty"`
	NATS     *natsFields `json:"nats,omitempty"`
}

// amqpFields are a topic's RabbitMQ settings, as shown and as given.
type amqpFields struct {
	Broker     *string `json:"broker"`
	Exchange   *string `json:"exchange"`
	RoutingKey *string `json:"routing_key"`
	// Persistent publishes with delivery mode 2 (the default: true).
	Persistent *bool `json:"persistent"`
}

// natsFields are a topic's NATS JetStream settings.
type natsFields struct {
	Broker  *string `json:"broker"`
	Subject *string `json:"subject"`
}

// destinationFields shows d as the view's delivery, amqp and nats.
func destinationFields(v *topicView, d timer.Destination) {
	v.Delivery = string(d.Of())
	switch d.Way {
	case timer.WayAMQP:
		v.AMQP = &amqpFields{Broker: &d.Broker, Exchange: &d.Exchange, RoutingKey: &d.RoutingKey, Persistent: new(!d.Transient)}
	case timer.WayNATS:
		v.NATS = &natsFields{Broker: &d.Broker, Subject: &d.Subject}
	}
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
	// LatenessP50MS and LatenessP99MS are the percentiles of how late the
	// calls of the last LatenessWindow started, as their bucket's upper
	// bound (60000: a minute or more); absent when there were none.
	LatenessP50MS *int64 `json:"lateness_p50_ms,omitempty"`
	LatenessP99MS *int64 `json:"lateness_p99_ms,omitempty"`
	// LatenessCalls counts those calls.
	LatenessCalls int64 `json:"lateness_calls"`
}

// usageViewOf is the view of u.
func usageViewOf(u timer.Usage) *usageView {
	v := &usageView{DueWaiting: u.DueWaiting, InFlight: u.InFlight, Rate: u.Rate, Throttled: u.Throttled, Members: u.Members}
	for _, c := range u.Lateness {
		v.LatenessCalls += c
	}
	v.LatenessP50MS, v.LatenessP99MS = latenessMS(u.Lateness, .50), latenessMS(u.Lateness, .99)
	return v
}

func (a *API) topicViewOf(t timer.Topic) topicView {
	l := timer.InForce(t.Limits, a.cfg.TopicDefaults)
	burst := float64(l.Burst)
	if burst == 0 {
		burst = timer.DefaultBurst(l.RateLimit)
	}
	v := topicView{
		Name:              shownTopic(t.Name),
		Slots:             t.Slots,
		MaxAttempts:       cmp.Or(t.MaxAttempts, timer.DefaultMaxAttempts),
		RateLimit:         l.RateLimit,
		Burst:             burst,
		MaxInFlight:       l.MaxInFlight,
		Weight:            l.Weight,
		Retry:             retryView{BaseMS: l.Retry.Base.Milliseconds(), MaxMS: l.Retry.Max.Milliseconds()},
		LeaseMS:           l.Lease.Milliseconds(),
		CallbackTimeoutMS: l.CallbackTimeout.Milliseconds(),
		LatenessSLOMS:     l.LatenessSLO.Milliseconds(),
		Paused:            t.Paused,
		CreatedAt:         formatTime(t.CreatedAt),
		Retention:         retentionViewOf(t.Retention.Over(a.cfg.Retention)),
	}
	if t.Expiry.Set {
		ms := t.Expiry.After.Milliseconds()
		v.ExpireAfterMS = &ms
	}
	destinationFields(&v, t.Destination)
	return v
}

// topicRequest is the body of PUT and PATCH /v1/topics/{topic}. A field
// given sets the value, which must be in its range: none is stored as
// another value. A field left out is the default under PUT (which
// replaces the whole configuration) and unchanged under PATCH (which
// merges); null is the default under both.
type topicRequest struct {
	Slots             *int          `json:"slots"`
	MaxAttempts       *int          `json:"max_attempts"`
	RateLimit         *float64      `json:"rate_limit"`
	Burst             *int          `json:"burst"`
	MaxInFlight       *int          `json:"max_in_flight"`
	Weight            *int          `json:"weight"`
	Retry             *retryRequest `json:"retry"`
	LeaseMS           *int64        `json:"lease_ms"`
	CallbackTimeoutMS *int64        `json:"callback_timeout_ms"`
	LatenessSLOMS     *int64        `json:"lateness_slo_ms"`
	// ExpireAfterMS: 0 or more sets the deadline of the topic's jobs
	// that set none; null (or left out of a PUT) is none.
	ExpireAfterMS *int64 `json:"expire_after_ms"`
	// Retention sets how long the topic's ended jobs are kept, by status:
	// see retentionRequest.
	Retention *retentionRequest `json:"retention"`
	// Delivery is webhook (the default), amqp or nats; amqp and
	// nats hold the settings of those ways, each replaced whole when
	// given (see destinationOf).
	Delivery *string     `json:"delivery"`
	AMQP     *amqpFields `json:"amqp"`
	NATS     *natsFields `json:"nats"`
}

// retentionRequest is a topic's own retention: a field of 0 keeps
// forever, a positive one that many ms; null (or left out under PUT) is
// the global retention. Under PATCH the fields merge one by one, and
// retention null resets them all.
type retentionRequest struct {
	DoneMS      *int64 `json:"done_ms"`
	CancelledMS *int64 `json:"cancelled_ms"`
	ExpiredMS   *int64 `json:"expired_ms"`
	DeadMS      *int64 `json:"dead_ms"`
	PurgedMS    *int64 `json:"purged_ms"`
}

// of returns the field of st.
func (r *retentionRequest) of(st timer.Status) *int64 {
	switch st {
	case timer.StatusDone:
		return r.DoneMS
	case timer.StatusCancelled:
		return r.CancelledMS
	case timer.StatusExpired:
		return r.ExpiredMS
	case timer.StatusDead:
		return r.DeadMS
	case timer.StatusPurged:
		return r.PurgedMS
	}
	return nil
}

type retryRequest struct {
	BaseMS *int64 `json:"base_ms"`
	MaxMS  *int64 `json:"max_ms"`
}

// topicBody is a decoded topicRequest and the keys it held, so that a
// key given as null can be told from one left out.
type topicBody struct {
	req       topicRequest
	keys      map[string]json.RawMessage
	retry     map[string]json.RawMessage
	retention map[string]json.RawMessage
}

// readTopicBody decodes the body of a PUT or PATCH; an empty body is an
// empty object.
func readTopicBody(r *http.Request) (topicBody, error) {
	var b topicBody
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return b, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return b, nil
	}
	// The objects inside first, so that an error names its field by its
	// path ("retention.colour_ms"): encoding/json names an unknown key
	// alone.
	if json.Unmarshal(raw, &b.keys) == nil {
		for key, dst := range map[string]any{"retry": &retryRequest{}, "retention": &retentionRequest{}, "amqp": &amqpFields{}, "nats": &natsFields{}} {
			if v := bytes.TrimSpace(b.keys[key]); len(v) > 0 && v[0] == '{' {
				if err := decodeBytes(v, dst); err != nil {
					return b, under(key, err)
				}
			}
		}
	}
	if err := decode(bytes.NewReader(raw), &b.req); err != nil {
		return b, err
	}
	// Well-formed: decode took it. Only the keys matter here.
	_ = json.Unmarshal(raw, &b.keys)
	if rr, ok := b.keys["retry"]; ok {
		_ = json.Unmarshal(rr, &b.retry)
	}
	if rr, ok := b.keys["retention"]; ok {
		_ = json.Unmarshal(rr, &b.retention)
	}
	return b, nil
}

// setter applies one field of a body to a topic: a value given (after
// check), else the default (zero) when reset, else nothing.
type setter struct {
	patch bool
	keys  map[string]json.RawMessage
}

// reset reports whether the field key, not given a value, goes back to its
// default: always under PUT, when given as null under PATCH.
func (s setter) reset(key string) bool {
	_, given := s.keys[key]
	return !s.patch || given
}

func set[T any](s setter, key string, v *T, dst *T, check func(T) error) error {
	switch {
	case v != nil:
		if err := check(*v); err != nil {
			return err
		}
		*dst = *v
	case s.reset(key):
		var zero T
		*dst = zero
	}
	return nil
}

func within[T int | int64 | float64](field string, lo, hi T, note string) func(T) error {
	return func(v T) error {
		if v < lo || v > hi || v != v {
			return &timer.FieldError{Field: field, Message: fmt.Sprintf("must be within %v..%v%s", lo, hi, note)}
		}
		return nil
	}
}

// ms sets a duration given in milliseconds, within 1..hi.
func ms(s setter, key, field string, v *int64, dst *time.Duration, hi time.Duration) error {
	var n int64
	if v == nil && !s.reset(key) {
		return nil
	}
	if err := set(s, key, v, &n, within(field, 1, hi.Milliseconds(), "; null for the default")); err != nil {
		return err
	}
	*dst = time.Duration(n) * time.Millisecond
	return nil
}

// retentionOf is the topic's own retention of st after a body's field v:
// 0 (the field given as 0) keeps forever, a positive one that many ms;
// unset (0) goes back to the global retention, as a reset does; old stays
// otherwise.
func retentionOf(s setter, st timer.Status, v *int64, old time.Duration) (time.Duration, error) {
	key := st.String() + "_ms"
	switch {
	case v != nil:
		if err := within("retention."+key, 0, timer.MaxRetention.Milliseconds(), " (0: keep forever); null for the global retention")(*v); err != nil {
			return 0, err
		}
		if *v == 0 {
			return timer.KeepForever, nil
		}
		return time.Duration(*v) * time.Millisecond, nil
	case s.reset(key):
		return 0, nil
	}
	return old, nil
}

// apply edits t, the topic as stored (or a new one), by the body: as PUT
// when patch is false, as PATCH when it is true. It checks each value
// given, then the resulting whole configuration with the worker's
// defaults filled in.
func (a *API) apply(b topicBody, t *timer.Topic, patch bool) error {
	s := setter{patch: patch, keys: b.keys}
	q := b.req
	if q.Slots != nil {
		if *q.Slots < 1 {
			return &timer.FieldError{Field: "slots", Message: fmt.Sprintf("must be a power of two within 1..%d", timer.MaxSlots)}
		}
		t.Slots = *q.Slots // the scheduler checks it and refuses a change
	} else if _, given := b.keys["slots"]; given && patch {
		return &timer.FieldError{Field: "slots", Message: "is fixed when the topic is created; it has no default to go back to"}
	}
	l := &t.Limits
	err := cmp.Or(
		set(s, "max_attempts", q.MaxAttempts, &t.MaxAttempts, within("max_attempts", 1, timer.MaxAttemptsLimit, "; null for the default")),
		set(s, "rate_limit", q.RateLimit, &l.RateLimit, within("rate_limit", 0, timer.MaxRateLimit, " (0: none)")),
		set(s, "burst", q.Burst, &l.Burst, within("burst", 1, timer.MaxBurst, " with a rate_limit; null for the default, a tenth of rate_limit")),
		set(s, "max_in_flight", q.MaxInFlight, &l.MaxInFlight, within("max_in_flight", 0, timer.MaxInFlight, " (0: none)")),
		set(s, "weight", q.Weight, &l.Weight, within("weight", 1, timer.MaxWeight, "; null for the default, 1")),
	)
	if err != nil {
		return err
	}
	// retry is an object: under PATCH its fields merge too; null or, under
	// PUT, leaving it out resets both.
	rs := setter{patch: patch && q.Retry != nil, keys: b.retry}
	rq := cmp.Or(q.Retry, &retryRequest{})
	if q.Retry != nil || s.reset("retry") {
		if err := cmp.Or(
			ms(rs, "base_ms", "retry.base_ms", rq.BaseMS, &l.Retry.Base, timer.MaxLease),
			ms(rs, "max_ms", "retry.max_ms", rq.MaxMS, &l.Retry.Max, timer.MaxLease),
		); err != nil {
			return err
		}
	}
	maxTimeout := a.cfg.MaxCallbackTimeout
	if err := cmp.Or(
		ms(s, "lease_ms", "lease_ms", q.LeaseMS, &l.Lease, timer.MaxLease),
		ms(s, "callback_timeout_ms", "callback_timeout_ms", q.CallbackTimeoutMS, &l.CallbackTimeout, maxTimeout),
		ms(s, "lateness_slo_ms", "lateness_slo_ms", q.LatenessSLOMS, &l.LatenessSLO, timer.MaxLatenessSLO),
	); err != nil {
		return err
	}
	switch {
	case q.ExpireAfterMS != nil:
		if err := within("expire_after_ms", 0, timer.MaxExpireAfter.Milliseconds(), "; null for none")(*q.ExpireAfterMS); err != nil {
			return err
		}
		t.Expiry = timer.ExpireAfter(time.Duration(*q.ExpireAfterMS) * time.Millisecond)
	case s.reset("expire_after_ms"):
		t.Expiry = timer.Expiry{}
	}
	if q.Retention != nil || s.reset("retention") {
		// As retry: under PATCH its fields merge; null or, under PUT,
		// leaving it out goes back to the global retention.
		rs := setter{patch: patch && q.Retention != nil, keys: b.retention}
		rq := cmp.Or(q.Retention, &retentionRequest{})
		for _, st := range timer.RetiredStatuses() {
			d, err := retentionOf(rs, st, rq.of(st), t.Retention.Of(st))
			if err != nil {
				return err
			}
			t.Retention = t.Retention.Set(st, d)
		}
	}
	d, err := destinationOf(q, s, t.Destination)
	if err != nil {
		return err
	}
	if err := d.Validate(a.cfg.Brokers); err != nil {
		return err
	}
	t.Destination = d
	// The whole: a value kept from before is checked again too.
	if l.CallbackTimeout > maxTimeout {
		return &timer.FieldError{Field: "callback_timeout_ms", Message: fmt.Sprintf("%d is above the server's maximum %d (--max-callback-timeout)", l.CallbackTimeout.Milliseconds(), maxTimeout.Milliseconds())}
	}
	return timer.CheckLimits(*l, a.cfg.TopicDefaults)
}

// destinationOf is the topic's destination after a body: delivery sets
// the way (left out of a PUT, or null, is webhook; left out of a PATCH
// keeps it). The settings of a bus way come from its object, amqp or
// nats, replaced whole when given; a PATCH that gives neither the way
// nor its object keeps them. An object of another way than the one in
// force is refused by Destination.Validate.
func destinationOf(q topicRequest, s setter, old timer.Destination) (timer.Destination, error) {
	d := old
	switch {
	case q.Delivery != nil:
		if !slices.Contains(timer.Ways, timer.Way(*q.Delivery)) {
			return d, &timer.FieldError{Field: "delivery", Message: "must be one of webhook, amqp, nats"}
		}
		if timer.Way(*q.Delivery) != old.Of() {
			d = timer.Destination{Way: timer.Way(*q.Delivery)}
		}
	case s.reset("delivery"):
		d = timer.Destination{}
	}
	if d.Of() == timer.WayWebhook {
		d.Way = ""
	}
	if q.AMQP != nil {
		d.Broker, d.Exchange, d.RoutingKey, d.Subject = deref(q.AMQP.Broker), deref(q.AMQP.Exchange), deref(q.AMQP.RoutingKey), ""
		d.Transient = q.AMQP.Persistent != nil && !*q.AMQP.Persistent
		if d.Way != timer.WayAMQP {
			return d, &timer.FieldError{Field: "amqp", Message: fmt.Sprintf("given for a topic delivered by %s; set \"delivery\": \"amqp\" with it", d.Of())}
		}
	}
	if q.NATS != nil {
		d.Broker, d.Subject, d.Exchange, d.RoutingKey, d.Transient = deref(q.NATS.Broker), deref(q.NATS.Subject), "", "", false
		if d.Way != timer.WayNATS {
			return d, &timer.FieldError{Field: "nats", Message: fmt.Sprintf("given for a topic delivered by %s; set \"delivery\": \"nats\" with it", d.Of())}
		}
	}
	return d, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// topicChange is the input of PUT and PATCH /v1/topics/{topic}.
type topicChange struct {
	topicAt
	body topicBody
}

// readTopicPut reads PUT /v1/topics/{topic}: the topic, which it creates
// unless it exists, and its settings.
func readTopicPut(r *http.Request, in *topicChange) (*claim, error) {
	c, _ := readTopicAt(r, &in.topicAt)
	c.topics[0].create = true
	var err error
	in.body, err = readTopicBody(r)
	return c, err
}

// readTopicPatch reads PATCH /v1/topics/{topic}: an existing topic and
// the settings to change.
func readTopicPatch(r *http.Request, in *topicChange) (*claim, error) {
	c, _ := readTopicAt(r, &in.topicAt)
	var err error
	in.body, err = readTopicBody(r)
	return c, err
}

// putTopic: PUT /v1/topics/{topic}, replacing the topic's settings (its
// slot count is fixed, and it stays paused or not).
func (a *API) putTopic(w http.ResponseWriter, r *http.Request, in *topicChange, _ *admission) {
	t := timer.Topic{Name: in.name}
	if err := a.apply(in.body, &t, false); err != nil {
		a.writeError(w, r, err)
		return
	}
	got, created, err := a.jobs.PutTopic(r.Context(), t)
	a.auditTopic(w, r, auditTopicPut, in.name, got, created, err)
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

// patchTopic: PATCH /v1/topics/{topic}, merging the fields given into the
// topic's settings. An unknown topic is a 404: PUT creates.
//
// It reads the topic, merges and writes it back: of two PATCHes of one
// topic at the same instant, the last one written wins whole.
func (a *API) patchTopic(w http.ResponseWriter, r *http.Request, in *topicChange, _ *admission) {
	t, err := a.jobs.Topic(r.Context(), in.name)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.apply(in.body, &t, true); err != nil {
		a.writeError(w, r, err)
		return
	}
	got, _, err := a.jobs.PutTopic(r.Context(), t)
	a.auditTopic(w, r, auditTopicPatch, t.Name, got, false, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a.topicViewOf(got))
}

// pauseTopic: POST /v1/topics/{topic}/pause and /resume.
func (a *API) pauseTopic(paused bool) func(http.ResponseWriter, *http.Request, *topicAt, *admission) {
	return func(w http.ResponseWriter, r *http.Request, in *topicAt, _ *admission) {
		t, err := a.jobs.PauseTopic(r.Context(), in.name, paused)
		action := auditTopicResume
		if paused {
			action = auditTopicPause
		}
		a.audit(w, r, auditNote{action: action, topic: in.name}, err)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, a.topicViewOf(t))
	}
}

// deleteTopic: DELETE /v1/topics/{topic}, for a topic none of whose jobs
// is pending, firing or dead (409 otherwise, counting them).
func (a *API) deleteTopic(w http.ResponseWriter, r *http.Request, in *topicAt, _ *admission) {
	err := a.jobs.DeleteTopic(r.Context(), in.name)
	a.audit(w, r, auditNote{action: auditTopicDelete, topic: in.name}, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getTopic: GET /v1/topics/{topic}.
func (a *API) getTopic(w http.ResponseWriter, r *http.Request, in *topicAt, _ *admission) {
	t, err := a.jobs.Topic(r.Context(), in.name)
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
		v.Usage = usageViewOf(u)
	}
	writeJSON(w, http.StatusOK, v)
}

// listTopics: GET /v1/topics, those the token may use, as {"topics":
// [...]}: a list names its items by their kind, as every list of the API
// does.
func (a *API) listTopics(w http.ResponseWriter, r *http.Request, _ *struct{}, _ *admission) {
	topics, err := a.jobs.Topics(r.Context())
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	topics = visibleTopics(r.Context(), topics)
	items := make([]topicView, len(topics))
	for i, t := range topics {
		items[i] = a.topicViewOf(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"topics": items})
}

// auditTopic records a change of a topic's settings, with the settings it
// has after (none when it failed).
func (a *API) auditTopic(w http.ResponseWriter, r *http.Request, action, name string, got timer.Topic, created bool, err error) {
	n := auditNote{action: action, topic: name}
	switch {
	case err == nil && action == auditTopicPut:
		n.details = map[string]any{"created": created, "settings": a.topicViewOf(got)}
	case err == nil:
		n.details = map[string]any{"settings": a.topicViewOf(got)}
	}
	a.audit(w, r, n, err)
}
