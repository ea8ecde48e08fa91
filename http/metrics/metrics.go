package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// MaxTopicLabels is the default bound of the topic label's cardinality:
// the first this many topics seen get their own series, later ones share
// topic="_other" (OtherTopic).
const MaxTopicLabels = 200

// OtherTopic is the topic label shared by the topics past the bound.
const OtherTopic = "_other"

// Config configures an Observer. The zero value is valid.
type Config struct {
	// MaxTopics bounds the topic label's cardinality: the first MaxTopics
	// topics seen get series of their own, later ones share OtherTopic.
	// Default MaxTopicLabels.
	MaxTopics int
	// Series, when set, also counts each attempt, dead job and throttled
	// claim, under the topic label the metrics give it (so that it keeps
	// the same topics, the rest under OtherTopic): the dashboard's
	// series (timer.Series).
	Series SeriesRecorder
}

// SeriesRecorder counts what the dashboard's series show; *timer.Series
// implements it.
type SeriesRecorder interface {
	Fired(topic string, lateness time.Duration, err error)
	Buried(topic string)
	Throttled(topic string)
}

var _ SeriesRecorder = (*timer.Series)(nil)

// nopSeries is the SeriesRecorder of a Config without one.
type nopSeries struct{}

func (nopSeries) Fired(string, time.Duration, error) {}
func (nopSeries) Buried(string)                      {}
func (nopSeries) Throttled(string)                   {}

// Validate reports the first field of c that is out of range.
func (c Config) Validate() error {
	if c.MaxTopics < 0 {
		return &timer.FieldError{Field: "MaxTopics", Message: "must not be negative"}
	}
	return nil
}

// Observer is a timer.Observer, and a webhook.Client's BreakerObserver, that
// exports Prometheus metrics.
type Observer struct {
	registry  *prometheus.Registry
	scheduled *prometheus.CounterVec
	fired     *prometheus.CounterVec
	retried   *prometheus.CounterVec
	dead      *prometheus.CounterVec
	lateness  *prometheus.HistogramVec
	dispatch  prometheus.Histogram
	claims    prometheus.Histogram
	unclaimed prometheus.Counter
	restored  prometheus.Counter
	indexErrs *prometheus.CounterVec
	owned     prometheus.Gauge
	assigns   prometheus.Counter
	opened    prometheus.Counter
	rejected  *prometheus.CounterVec
	openHosts prometheus.Gauge
	throttled *prometheus.CounterVec
	expired   *prometheus.CounterVec
	audit     prometheus.Counter
	skipped   *prometheus.CounterVec
	retired   *prometheus.CounterVec
	offset    prometheus.Gauge
	bound     prometheus.Gauge
	delivered *prometheus.CounterVec
	deliverT  *prometheus.HistogramVec

	series    SeriesRecorder
	maxTopics int
	mu        sync.Mutex // held to add to topics
	topics    sync.Map   // the topics with a label of their own
	nTopics   int

	// The series every fire touches, looked up once: firedBy holds a
	// *firedSeries by topic label, byWay a wayDeliveries for each of
	// timer.Ways (read only once made). A lookup by label values hashes
	// them and takes a lock each time, about 2 % of toc's CPU a fire
	// (BENCHMARKS.md, "... a fire's series looked up once").
	firedBy sync.Map
	byWay   map[timer.Way]wayDeliveries
}

// firedSeries are the series of one topic label that Fired counts.
type firedSeries struct {
	success, failure prometheus.Counter
	lateness         prometheus.Observer
}

// wayDeliveries are the series of one way that Delivered counts.
type wayDeliveries struct {
	done, failed, notSent prometheus.Counter
	took                  prometheus.Observer
}

var (
	_ timer.Observer          = (*Observer)(nil)
	_ webhook.BreakerObserver = (*Observer)(nil)
	_ timer.RetireObserver    = (*Observer)(nil)
	_ timer.ClockObserver     = (*Observer)(nil)
)

// New is NewWith the zero Config.
func New() *Observer {
	m, _ := NewWith(Config{})
	return m
}

// NewWith registers toc's metrics, and the Go and process collectors,
// in a registry of their own.
func NewWith(cfg Config) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("metrics config: %w", err)
	}
	reg := prometheus.NewRegistry()
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Observer{registry: reg, maxTopics: cmp.Or(cfg.MaxTopics, MaxTopicLabels), series: cfg.Series}
	if m.series == nil {
		m.series = nopSeries{}
	}
	m.scheduled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_jobs_scheduled_total", Help: "Jobs committed to the task store."}, []string{"topic"})
	m.fired = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_jobs_fired_total", Help: "Dispatch attempts, by outcome (success or failure)."}, []string{"topic", "outcome"})
	m.retried = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_jobs_retried_total", Help: "Failed attempts put back to retry."}, []string{"topic"})
	m.dead = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_jobs_dead_total", Help: "Jobs that ran out of attempts."}, []string{"topic"})
	m.lateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "toc_firing_lateness_seconds",
		Help: "Start of an attempt minus the time it was meant to start: the due time, or, for the first attempt of a job " +
			"scheduled already past due, the time it was scheduled (so a job scheduled in the past is not counted late by its age).",
		Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"topic"})
	m.dispatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "toc_dispatch_duration_seconds",
		Help:    "Duration of one dispatch attempt (the handler or webhook call).",
		Buckets: prometheus.ExponentialBuckets(.0005, 2, 16),
	})
	m.claims = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "toc_claim_batch_size",
		Help:    "Jobs returned by one claim.",
		Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500},
	})
	m.unclaimed = prometheus.NewCounter(prometheus.CounterOpts{Name: "toc_lost_claim_leases_total",
		Help: "Leases made by claims whose replies were lost (a Redis failover), taken back at once instead of waiting out their lease."})
	m.restored = prometheus.NewCounter(prometheus.CounterOpts{Name: "toc_backstop_restored_total", Help: "Timers the backstop put back in Redis (repairs and far-future jobs entering the horizon)."})
	m.indexErrs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_index_failures_total", Help: "Redis writes that failed after the task store committed (the backstop repairs them)."}, []string{"op"})
	// The index writes whose failures count (timer.Scheduler's "add" and
	// "reindex") start at 0: a rate over them is then 0 until the first,
	// not absent, and the alert and the dashboard read a series.
	for _, op := range []string{"add", "reindex"} {
		m.indexErrs.WithLabelValues(op)
	}
	m.owned = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toc_slots_owned", Help: "Slots this process claims from."})
	m.assigns = prometheus.NewCounter(prometheus.CounterOpts{Name: "toc_assignment_changes_total", Help: "Times the set of slots this process owns changed."})
	m.opened = prometheus.NewCounter(prometheus.CounterOpts{Name: "toc_breaker_opened_total", Help: "Times a callback host's circuit breaker opened, again after a failed probe included."})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_breaker_rejected_total", Help: "Jobs not sent, and deferred without counting an attempt, because their callback host's circuit breaker was open."}, []string{"topic"})
	m.openHosts = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toc_breaker_open_hosts", Help: "Callback hosts whose circuit breaker is open or half-open."})
	m.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_topic_throttled_total", Help: "Claims held back by the topic's rate_limit or max_in_flight; the jobs wait in Redis."}, []string{"topic"})
	m.expired = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_jobs_expired_total", Help: "Jobs that ended expired: no attempt could start by their deadline (expire_after_ms), so they never fired late."}, []string{"topic"})
	m.audit = prometheus.NewCounter(prometheus.CounterOpts{Name: "toc_audit_unrecorded_total", Help: "Admin and bulk actions done whose audit log entry could not be written (logged at error level instead)."})
	m.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_schedule_occurrences_skipped_total", Help: "Occurrences of schedules that made no job, by reason (pending_quota: the owner's max_pending was full)."}, []string{"topic", "reason"})
	m.retired = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_retention_deleted_total", Help: "Ended jobs deleted once past their retention, by the status they ended in."}, []string{"topic", "status"})
	m.offset = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toc_clock_offset_seconds", Help: "How far this member's clock is ahead of the task store's (negative: behind), at the last measurement. " +
		"Due times follow the task store's clock whatever it is; past --clock-tolerance /readyz says the clock is wrong."})
	m.bound = prometheus.NewGauge(prometheus.GaugeOpts{Name: "toc_clock_offset_bound_seconds", Help: "The error bound of toc_clock_offset_seconds: half the round trip of the measurement."})
	m.delivered = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "toc_delivery_attempts_total", Help: "Deliveries by way (webhook, amqp, nats) and outcome: " +
		"done (the receiver answered 2xx, or the broker confirmed), failed (a failed attempt), not_sent (no attempt counted: a breaker open, or no broker of the way on this member)."}, []string{"way", "outcome"})
	m.deliverT = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "toc_delivery_duration_seconds",
		Help:    "Duration of one delivery by way: the webhook call, or the publish until the broker's confirm.",
		Buckets: prometheus.ExponentialBuckets(.0005, 2, 16),
	}, []string{"way"})
	m.byWay = make(map[timer.Way]wayDeliveries, len(timer.Ways))
	for _, way := range timer.Ways {
		m.byWay[way] = m.deliveriesOf(way)
	}
	for _, c := range []prometheus.Collector{m.scheduled, m.fired, m.retried, m.dead, m.lateness, m.dispatch, m.claims, m.unclaimed, m.restored, m.indexErrs, m.owned, m.assigns, m.opened, m.rejected, m.openHosts, m.throttled, m.expired, m.audit, m.skipped, m.retired, m.offset, m.bound,
		m.delivered, m.deliverT,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m, nil
}

// MaxTopics is the bound of the topic label: topics past the first this
// many seen share OtherTopic.
func (m *Observer) MaxTopics() int { return m.maxTopics }

// Handler serves the metrics in the Prometheus text format.
func (m *Observer) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Registry lets the caller add collectors of its own.
func (m *Observer) Registry() *prometheus.Registry { return m.registry }

// Label is the topic label of topic: topic itself, or OtherTopic past
// the bound.
func (m *Observer) Label(topic string) string { return m.topic(topic) }

// topic bounds the label's cardinality.
func (m *Observer) topic(t string) string {
	if _, ok := m.topics.Load(t); ok {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.topics.Load(t); ok {
		return t
	}
	if m.nTopics >= m.maxTopics {
		return OtherTopic
	}
	m.topics.Store(t, struct{}{})
	m.nTopics++
	return t
}

func (m *Observer) Scheduled(topic string, n int) {
	m.scheduled.WithLabelValues(m.topic(topic)).Add(float64(n))
}
func (m *Observer) Claimed(_ timer.Slot, n int) { m.claims.Observe(float64(n)) }

// Unclaimed implements timer.Observer.
func (m *Observer) Unclaimed(_ timer.Slot, n int) { m.unclaimed.Add(float64(n)) }
func (m *Observer) Retried(topic string)          { m.retried.WithLabelValues(m.topic(topic)).Inc() }
func (m *Observer) Buried(topic string) {
	label := m.topic(topic)
	m.dead.WithLabelValues(label).Inc()
	m.series.Buried(label)
}

// Retired implements timer.RetireObserver.
func (m *Observer) Retired(topic string, st timer.Status, n int) {
	m.retired.WithLabelValues(m.topic(topic), st.String()).Add(float64(n))
}

// ClockMeasured implements timer.ClockObserver.
func (m *Observer) ClockMeasured(offset, bound time.Duration) {
	m.offset.Set(offset.Seconds())
	m.bound.Set(bound.Seconds())
}

// WatchDependencies exports toc_dependency_up at each scrape: each of
// checks (/readyz's, by name) run at once within timeout, 1 when it
// passes, 0.5 when it fails with an error degraded says leaves the
// dependency partly up (some task store shards down), 0 when it fails.
func (m *Observer) WatchDependencies(checks map[string]func(context.Context) error, degraded func(error) bool, timeout time.Duration) {
	m.registry.MustRegister(&dependencyCollector{checks: checks, degraded: degraded, timeout: timeout})
}

var dependencyDesc = prometheus.NewDesc("toc_dependency_up", "Whether this process's readiness check of the dependency passes, run at the scrape as /readyz runs it: "+
	"1 ok, 0.5 degraded (some task store shards down), 0 failing.", []string{"dependency"}, nil)

// dependencyCollector runs the readiness checks at each scrape.
type dependencyCollector struct {
	checks   map[string]func(context.Context) error
	degraded func(error) bool
	timeout  time.Duration
}

func (c *dependencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dependencyDesc }

func (c *dependencyCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var wg sync.WaitGroup
	for name, check := range c.checks {
		wg.Go(func() {
			up := 1.0
			if err := check(ctx); err != nil {
				up = 0
				if c.degraded(err) {
					up = 0.5
				}
			}
			ch <- prometheus.MustNewConstMetric(dependencyDesc, prometheus.GaugeValue, up, name)
		})
	}
	wg.Wait()
}

// WatchRetention exports what survey returns (a Retirer's Survey) at each
// scrape: toc_retention_backlog, the ended jobs past their retention
// still held, and toc_retention_oldest_ended_seconds, the age of the
// oldest ended job held, by topic and status, over the task store shards
// this process retires (in a cluster, sum the backlog over members and
// take the oldest's max).
func (m *Observer) WatchRetention(survey func() []timer.RetireStat, now func() time.Time) {
	m.registry.MustRegister(&retentionCollector{m: m, survey: survey, now: now})
}

var (
	backlogDesc = prometheus.NewDesc("toc_retention_backlog", "Ended jobs past their retention still in the task store, by the status they ended in "+
		"(the database's estimate beyond 10,000 a shard); the retirer is deleting them.", []string{"topic", "status"}, nil)
	oldestDesc = prometheus.NewDesc("toc_retention_oldest_ended_seconds", "Age of the oldest ended job still in the task store, by the status it ended in.", []string{"topic", "status"}, nil)
)

// retentionCollector reads a retirer's survey at each scrape.
type retentionCollector struct {
	m      *Observer
	survey func() []timer.RetireStat
	now    func() time.Time
}

func (c *retentionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- backlogDesc
	ch <- oldestDesc
}

func (c *retentionCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	type key struct{ topic, status string }
	backlog := map[key]float64{}
	oldest := map[key]float64{}
	for _, s := range c.survey() {
		k := key{c.m.topic(s.Topic), s.Status.String()}
		backlog[k] += float64(s.Backlog)
		oldest[k] = max(oldest[k], now.Sub(s.Oldest).Seconds())
	}
	for k, v := range backlog {
		ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, v, k.topic, k.status)
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, oldest[k], k.topic, k.status)
	}
}
func (m *Observer) Repaired(n int) { m.restored.Add(float64(n)) }
func (m *Observer) Assigned(n int) {
	m.owned.Set(float64(n))
	m.assigns.Inc()
}

func (m *Observer) IndexFailed(op string, _ error) {
	m.indexErrs.WithLabelValues(op).Inc()
}

// Fired counts an attempt. A job that was not sent (a *timer.NotSentError)
// made none, and is not counted here (Deferred counts it).
func (m *Observer) Fired(topic string, _ int, lateness, took time.Duration, err error) {
	if _, ok := errors.AsType[*timer.NotSentError](err); ok {
		return
	}
	label := m.topic(topic)
	fs := m.firedSeries(label)
	if err != nil {
		fs.failure.Inc()
	} else {
		fs.success.Inc()
	}
	fs.lateness.Observe(lateness.Seconds())
	m.dispatch.Observe(took.Seconds())
	m.series.Fired(label, lateness, err)
}

// firedSeries returns the series of label that Fired counts, made on
// first use.
func (m *Observer) firedSeries(label string) *firedSeries {
	if fs, ok := m.firedBy.Load(label); ok {
		return fs.(*firedSeries)
	}
	fs := &firedSeries{success: m.fired.WithLabelValues(label, "success"), failure: m.fired.WithLabelValues(label, "failure"),
		lateness: m.lateness.WithLabelValues(label)}
	got, _ := m.firedBy.LoadOrStore(label, fs)
	return got.(*firedSeries)
}

// deliveriesOf returns way's series of Delivered.
func (m *Observer) deliveriesOf(way timer.Way) wayDeliveries {
	w := string(way)
	return wayDeliveries{done: m.delivered.WithLabelValues(w, "done"), failed: m.delivered.WithLabelValues(w, "failed"),
		notSent: m.delivered.WithLabelValues(w, "not_sent"), took: m.deliverT.WithLabelValues(w)}
}

// Delivered counts one delivery by way, as its handler returned.
func (m *Observer) Delivered(way timer.Way, took time.Duration, err error) {
	w, ok := m.byWay[way]
	if !ok { // not one of timer.Ways: looked up each time
		w = m.deliveriesOf(way)
	}
	switch _, notSent := errors.AsType[*timer.NotSentError](err); {
	case notSent:
		w.notSent.Inc()
		return
	case err != nil:
		w.failed.Inc()
	default:
		w.done.Inc()
	}
	w.took.Observe(took.Seconds())
}

func (m *Observer) BreakerOpened()             { m.opened.Inc() }
func (m *Observer) BreakerOpenHosts(delta int) { m.openHosts.Add(float64(delta)) }
func (m *Observer) Deferred(topic string)      { m.rejected.WithLabelValues(m.topic(topic)).Inc() }

// Expired counts a job that ended expired.
func (m *Observer) Expired(topic string) { m.expired.WithLabelValues(m.topic(topic)).Inc() }
func (m *Observer) Throttled(topic string) {
	label := m.topic(topic)
	m.throttled.WithLabelValues(label).Inc()
	m.series.Throttled(label)
}

// OccurrencesSkipped counts occurrences of schedules that made no job,
// by their topic, so that a tenant's token sees its own.
func (m *Observer) OccurrencesSkipped(topic, reason string, n int) {
	m.skipped.WithLabelValues(m.topic(topic), reason).Add(float64(n))
}

// AuditUnrecorded counts an action whose audit entry was not written
// (tochttp.APIConfig.AuditFailed).
func (m *Observer) AuditUnrecorded() { m.audit.Inc() }

// WatchUsage exports per-topic gauges read at each scrape: usage gives
// this process's worker's use of each topic, due (optional) the due jobs
// still in Redis of each. Topics beyond the bound (Config.MaxTopics) are
// summed under topic="_other".
func (m *Observer) WatchUsage(usage func() map[string]timer.TopicUsage, due func() map[string]int64) {
	m.registry.MustRegister(&usageCollector{m: m, usage: usage, due: due})
}

var (
	inFlightDesc = prometheus.NewDesc("toc_topic_in_flight", "Handler calls of the topic running in this process.", []string{"topic"}, nil)
	heldDesc     = prometheus.NewDesc("toc_topic_held", "Leases of the topic this process holds (running or waiting for a dispatcher).", []string{"topic"}, nil)
	rateDesc     = prometheus.NewDesc("toc_topic_dispatch_rate", "Dispatches of the topic per second in this process, over the last second.", []string{"topic"}, nil)
	dueDesc      = prometheus.NewDesc("toc_topic_due_waiting", "Jobs of the topic due but still in Redis: throttled, or waiting for a worker.", []string{"topic"}, nil)
	sloCallsDesc = prometheus.NewDesc("toc_topic_slo_calls_total", "Webhook calls of the topic started in this process while it declared a lateness objective (lateness_slo_ms).", []string{"topic"}, nil)
	withinDesc   = prometheus.NewDesc("toc_topic_slo_within_total", "Of toc_topic_slo_calls_total, the calls that started within the objective: their ratio is the share on time.", []string{"topic"}, nil)
	missedDesc   = prometheus.NewDesc("toc_window_missed_total", "First webhook calls of jobs with a flexible window (window_ms) that started after the window's end, in this process.", []string{"topic"}, nil)
)

type usageCollector struct {
	m     *Observer
	usage func() map[string]timer.TopicUsage
	due   func() map[string]int64
}

func (c *usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- heldDesc
	ch <- rateDesc
	ch <- dueDesc
	ch <- sloCallsDesc
	ch <- withinDesc
	ch <- missedDesc
}

func (c *usageCollector) Collect(ch chan<- prometheus.Metric) {
	type sums struct{ inFlight, held, rate, sloCalls, within, missed float64 }
	by := map[string]*sums{}
	for topic, u := range c.usage() {
		label := c.m.topic(topic)
		s := by[label]
		if s == nil {
			s = &sums{}
			by[label] = s
		}
		s.inFlight += float64(u.InFlight)
		s.held += float64(u.Held)
		s.rate += u.Rate
		s.sloCalls += float64(u.SLOCalls)
		s.within += float64(u.WithinSLO)
		s.missed += float64(u.WindowMissed)
	}
	for label, s := range by {
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, s.inFlight, label)
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, s.held, label)
		ch <- prometheus.MustNewConstMetric(rateDesc, prometheus.GaugeValue, s.rate, label)
		if s.sloCalls > 0 {
			ch <- prometheus.MustNewConstMetric(sloCallsDesc, prometheus.CounterValue, s.sloCalls, label)
			ch <- prometheus.MustNewConstMetric(withinDesc, prometheus.CounterValue, s.within, label)
		}
		if s.missed > 0 {
			ch <- prometheus.MustNewConstMetric(missedDesc, prometheus.CounterValue, s.missed, label)
		}
	}
	if c.due == nil {
		return
	}
	due := map[string]float64{}
	for topic, n := range c.due() {
		due[c.m.topic(topic)] += float64(n)
	}
	for label, n := range due {
		ch <- prometheus.MustNewConstMetric(dueDesc, prometheus.GaugeValue, n, label)
	}
}
