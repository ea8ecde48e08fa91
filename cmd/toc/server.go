package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	runtimepprof "runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/deadletter"
	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/http/metrics"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/deliver/pull"
	"github.com/toc-project/toc/internal/gcfloor"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/cron"
)

// defaultMaxTopics is --max-topics unless set: 100,000 idle topics were
// measured to cost under 5 % of a core and 200 MB (BENCHMARKS.md).
const defaultMaxTopics = 100_000

// serviceFlags are the flags dev and serve share.
type serviceFlags struct {
	addr            *string
	secrets         *listFlag
	amqp, nats      *listFlag
	horizon         *time.Duration
	slots           *int
	node            *int
	concurrency     *int
	batch           *int
	claimAhead      *time.Duration
	lease           *time.Duration
	callbackTimeout *time.Duration
	maxCallback     *time.Duration
	grace           *time.Duration
	shutdownDelay   *time.Duration
	retention       *time.Duration
	// retain holds --retain-done and the other retention flags, by the
	// status they set.
	retain         map[timer.Status]*time.Duration
	auditRetention *time.Duration
	retentionDuty  *float64
	retentionBatch *int
	retentionYield *time.Duration
	retentionEvery *time.Duration
	clockTolerance *time.Duration
	clockSkew      *time.Duration
	clockRef       *string
	logFormat      *string
	logLevel       *string
	redisPrefix    *string
	pprofAddr      *string
	cpuProfile     *string
	gcHeadroom     *int
	autoCreate     *bool
	maxTopics      *int
	metricsAddr    *string
	metricsTopics  *int
	// otlpEndpoint and traceSampleRatio turn tracing on (see tracing.go).
	otlpEndpoint     *string
	traceSampleRatio *float64
}

func addServiceFlags(fs *flagSet, logFormat string) *serviceFlags {
	retain := map[timer.Status]*time.Duration{}
	def := timer.DefaultRetention()
	for _, st := range timer.RetiredStatuses() {
		retain[st] = fs.duration("retain-"+st.String(), def.Of(st), fmt.Sprintf("how long a job that ended %s is kept before it is deleted (0: forever); a topic's retention.%s_ms overrides it", st, st))
	}
	return &serviceFlags{
		retain:         retain,
		auditRetention: fs.duration("audit-retention", timer.DefaultAuditRetention, "how long audit log entries are kept (0: forever)"),
		retentionEvery: fs.duration("retention-interval", timer.DefaultRetireInterval, "how often the retirer looks for ended jobs past their retention once it has caught up"),
		retentionDuty:  fs.float("retention-duty", timer.DefaultRetireDuty, "share of its time the retirer spends deleting while it has a backlog, 0..1 (doubled, up to 1, while it falls behind): lower leaves the task store freer for firing"),
		retentionBatch: fs.int("retention-batch", timer.DefaultRetireBatch, fmt.Sprintf("most rows one DELETE of the retirer removes, 1..%d: smaller statements hold the task store for less time each", timer.DefaultRetireBatch)),
		retentionYield: fs.duration("retention-yield", timer.DefaultRetireYield, "the retirer waits (up to 1s a batch) while a call this process started in the last half second was later than this (0: it never waits)"),
		clockTolerance: fs.duration("clock-tolerance", timer.DefaultClockTolerance, "how far this member's clock may be off the task store's before /readyz says it is wrong (due times follow the task store's clock whatever it is; 0: never says)"),
		clockRef:       fs.string("clock-reference", "store", "the clock due times follow: store (the task store's, shard 0's, shared by every member) or local (this machine's, as it is)"),
		clockSkew:      fs.duration("clock-skew", 0, "for drills and tests: shift this process's reading of its machine's clock, as if it were wrong by this much"),
		addr:           fs.string("addr", "127.0.0.1:8080", "address the REST API listens on"),
		secrets:        fs.list("webhook-secret", "webhook signing secret, whsec_<base64>; several sign with each while rotating"),
		amqp:           fs.list("amqp", "a RabbitMQ broker topics may deliver to, name=amqp://user:password@host:5672/vhost; a topic names it (\"amqp\": {\"broker\": name})"),
		nats:           fs.list("nats", "a NATS server with JetStream topics may deliver to, name=nats://host:4222; a topic names it (\"nats\": {\"broker\": name})"),
		horizon:        fs.duration("horizon", timer.DefaultHorizon, "jobs due within this go to Redis at once; later ones wait in the task store"),
		slots:          fs.int("slots", timer.DefaultSlots, "slot count of a topic created on first use (a power of two, fixed per topic)"),
		node:           fs.int("node", 0, fmt.Sprintf("node number of this process in job ids, 0..%d; leased from the task store: without the flag the lowest free one, with it this one or toc refuses to start", timer.MaxNode)),
		concurrency:    fs.int("concurrency", timer.DefaultConcurrency, "webhook calls in flight"),
		batch:          fs.int("batch", timer.DefaultBatchSize, "jobs claimed from a slot at once"),
		claimAhead: fs.duration("claim-ahead", timer.DefaultClaimAhead, fmt.Sprintf("how long before its due time a job is claimed and marked firing in the task store, 0..%v; "+
			"its call still starts at the due time, a cancel inside it is 409 in_flight, and a task store that stalls for less than it does not make the job late (0: only once due)", maxClaimAhead)),
		shutdownDelay: fs.duration("shutdown-delay", 0, "on SIGTERM, how long /readyz fails while the API still answers, before it stops taking requests and the grace starts: "+
			"time for a load balancer to stop sending to this member; claims stop at SIGTERM, as without it (0: none)"),
		lease:           fs.duration("lease", 0, "how long a claimed job stays with a worker before another takes it back (default: max(30s, 2×callback timeout+2s))"),
		callbackTimeout: fs.duration("callback-timeout", webhook.DefaultTimeout, "timeout of one webhook call"),
		maxCallback:     fs.duration("max-callback-timeout", tochttp.DefaultMaxCallbackTimeout, "longest callback_timeout_ms a topic may set (a longer one is a 400); at least --callback-timeout"),
		grace:           fs.duration("shutdown-grace", timer.DefaultGrace, "on SIGTERM, how long webhook calls in flight may finish"),
		retention:       fs.duration("attempt-retention", timer.DefaultAttemptRetention, "how long the history of webhook attempts is kept at most; a job's attempts are deleted with the job in any case (0: as long as their job)"),
		logFormat:       fs.string("log-format", logFormat, "text or json"),
		logLevel:        fs.string("log-level", "info", "debug, info, warn or error"),
		redisPrefix:     fs.string("redis-prefix", slots.DefaultPrefix, "prefix of every Redis key toc writes"),
		pprofAddr:       fs.string("pprof-addr", "", "serve net/http/pprof on this address (off when empty; keep it on loopback)"),
		cpuProfile:      fs.string("cpu-profile", "", "write a CPU profile of the whole run to this file"),
		gcHeadroom: fs.int("gc-headroom", defaultGCHeadroom, "MiB the heap may grow by between two garbage collections, at least: "+
			"a small heap then collects less often, for less CPU a job (0: Go's default, GOGC=100; ignored when GOGC is set)"),
		autoCreate:    fs.bool("auto-create-topics", true, "a job of an unknown topic creates it with the defaults (else: 400; PUT /v1/topics/{topic} first)"),
		maxTopics:     fs.int("max-topics", defaultMaxTopics, "most topics there may be; creating one more, by PUT or a job's first use, is a 400 naming topic (0: no cap)"),
		metricsAddr:   fs.string("metrics-addr", "", "serve /metrics on this address, and not on the API's (empty: on the API's address, without a token)"),
		metricsTopics: fs.int("metrics-max-topics", metrics.MaxTopicLabels, "topics with metric series of their own, the first seen; later ones share topic=\"_other\""),
		otlpEndpoint: fs.string("otlp-endpoint", "", "export OpenTelemetry spans over OTLP/HTTP to this URL, http://collector:4318 (/v1/traces is added unless the path ends with it); "+
			"empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT when set, else tracing is off"),
		traceSampleRatio: fs.float("trace-sample-ratio", 1, "share of the traces begun at toc (a schedule without a traceparent) that are recorded, 0..1; a request's sampled flag decides for its own"),
	}
}

// maxClaimAhead bounds --claim-ahead: a job claimed is held in memory
// and its lease runs from the claim.
const maxClaimAhead = time.Second

// claimAheadOf returns the worker's look-ahead from --claim-ahead.
func (f *serviceFlags) claimAheadOf() (time.Duration, error) {
	switch d := *f.claimAhead; {
	case d < 0 || d > maxClaimAhead:
		return 0, fmt.Errorf("--claim-ahead: %v: want 0..%v", d, maxClaimAhead)
	case d == 0:
		return -1, nil // WorkerConfig: only when due
	default:
		return d, nil
	}
}

// retirer returns the retirer's config from the retention flags.
func (f *serviceFlags) retirer(owner timer.ShardOwner) (timer.RetirerConfig, error) {
	cfg := timer.RetirerConfig{Owner: owner, Duty: *f.retentionDuty, Batch: *f.retentionBatch, Interval: *f.retentionEvery, YieldAbove: *f.retentionYield}
	if b := *f.retentionBatch; b < 1 || b > timer.DefaultRetireBatch {
		return cfg, fmt.Errorf("--retention-batch: %d: want 1..%d", b, timer.DefaultRetireBatch)
	}
	if *f.retentionEvery <= 0 {
		return cfg, fmt.Errorf("--retention-interval: %v: want a positive duration", *f.retentionEvery)
	}
	switch y := *f.retentionYield; {
	case y < 0:
		return cfg, fmt.Errorf("--retention-yield: %v: want 0 (never wait) or a positive duration", y)
	case y == 0:
		cfg.YieldAbove = -1 // never
	}
	for _, st := range timer.RetiredStatuses() {
		d := *f.retain[st]
		if err := timer.CheckRetention("retain-"+st.String(), d); err != nil {
			return cfg, err
		}
		if d == 0 {
			d = timer.KeepForever
		}
		cfg.Retention = cfg.Retention.Set(st, d)
	}
	if err := timer.CheckRetention("audit-retention", *f.auditRetention); err != nil {
		return cfg, err
	}
	cfg.AuditRetention = *f.auditRetention
	if d := *f.retentionDuty; d <= 0 || d > 1 || d != d {
		return cfg, fmt.Errorf("--retention-duty: %v: want a share above 0 and at most 1", d)
	}
	return cfg, nil
}

func (f *serviceFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *f.logFormat {
	case "text":
		return slog.New(rateLimited(slog.NewTextHandler(w, opts))), nil
	case "json":
		return slog.New(rateLimited(slog.NewJSONHandler(w, opts))), nil
	}
	return nil, fmt.Errorf("--log-format: %q is neither text nor json", *f.logFormat)
}

// service is what dev and serve run.
type service struct {
	flags        *serviceFlags
	rdb          redis.UniversalClient
	redisAddr    string // for messages
	tokens       []string
	tokenFile    *auth.File // --tokens-file, joined with tokens; reloaded on SIGHUP and change (nil: none)
	namespaces   namespaces // --namespaces-file: besides the default one
	allowPrivate bool
	log          *slog.Logger
	// onListen is called with the API's address once it listens.
	onListen func(addr string)
	// openStore returns the task store, migrated. run calls it until it
	// succeeds (serve: connect and migrate; dev: the SQLite file, open
	// already); the caller closes what it returned.
	openStore func(ctx context.Context) (*shard.Store, error)
	// cluster, when set, assigns the slots (toc serve --zk).
	cluster *slots.Cluster
	// node is the lease of this process's node number in job ids.
	node *nodeLease
	// catalog is the engine's topic list once the engine exists: the
	// cluster reads the topics from it rather than from the store again.
	catalog atomic.Pointer[timer.Catalog]
}

// run serves the API and runs the engine until ctx is done, then stops
// accepting requests, stops claiming, lets webhook calls in flight finish
// within the grace period, and returns nil.
//
// A dependency that does not answer at start is waited for, never fatal:
// run listens at once and reports each dependency in /readyz, retries
// each with backoff, and goes on as each answers, in this order:
//
//  1. The task store: connected and migrated (s.openStore). Until then
//     the API's address answers /healthz, /readyz and /metrics, and 503
//     to /v1 (nothing can be committed without it, and the engine reads
//     its topics from it).
//  2. The API serves /v1: a schedule is committed to the task store, the
//     promise; its Redis write is repaired by the backstop if Redis is
//     still away.
//  3. Redis answers a PING: the engine (worker, backstop, wake-ups) and
//     the ZooKeeper membership start. A member takes slots only once it
//     can claim from them; ZooKeeper itself is retried by the cluster.
//
// Losing a dependency later is the components' to ride out (their own
// retries); /readyz says which one is failing.
func (s *service) run(ctx context.Context) error {
	f := s.flags
	// The dashboard's series count on the reference clock, so that the
	// members' buckets line up; it is made below, before anything fires.
	var clock *timer.Clock
	series := timer.NewSeries(cmp.Or(*f.metricsTopics, metrics.MaxTopicLabels), func() time.Time { return clock.Now() })
	metrics, err := metrics.NewWith(metrics.Config{MaxTopics: *f.metricsTopics, Series: series})
	if err != nil {
		return fmt.Errorf("--metrics-max-topics: %w", err)
	}
	stopFloor, err := startGCFloor(*f.gcHeadroom, s.log)
	if err != nil {
		return err
	}
	defer stopFloor()
	tracer, err := f.tracer(ctx, s.log)
	if err != nil {
		return err
	}
	if tracer != nil {
		defer stopTracer(ctx, tracer, s.log)
	}
	webhook, err := webhook.NewClient(webhook.Config{
		Secrets:          f.secrets.values,
		NamespaceSecrets: s.namespaces.secrets(),
		Timeout:          *f.callbackTimeout,
		AllowPrivate:     s.allowPrivate,
		UserAgent:        "toc/" + version,
		Observer:         metrics,
	})
	if err != nil {
		return err
	}
	// Due times follow the task store's clock (shard 0's), measured at
	// start and every 10 s and carried forward by the monotonic clock, so
	// that a member whose own clock is wrong fires nothing early.
	var clockStore atomic.Pointer[shard.Store]
	tolerance := *f.clockTolerance
	switch {
	case tolerance < 0:
		return fmt.Errorf("--clock-tolerance: %v: want 0 (never) or a positive duration", tolerance)
	case tolerance == 0:
		tolerance = -1
	}
	source := func(ctx context.Context) (time.Time, error) {
		st := clockStore.Load()
		if st == nil {
			return time.Time{}, errors.New("the task store is not connected yet")
		}
		return st.ClockNow(ctx)
	}
	switch *f.clockRef {
	case "store":
	case "local":
		source = nil
	default:
		return fmt.Errorf("--clock-reference: %q, want store or local", *f.clockRef)
	}
	clock, err = timer.NewClock(timer.ClockConfig{
		Source:    source,
		Tolerance: tolerance,
		Skew:      *f.clockSkew,
		Logger:    s.log,
		Observer:  metrics,
	})
	if err != nil {
		return err
	}
	brokers := map[timer.Way]map[string]string{}
	for _, b := range []struct {
		way     timer.Way
		flag    *listFlag
		schemes []string
	}{{timer.WayAMQP, f.amqp, []string{"amqp", "amqps"}}, {timer.WayNATS, f.nats, []string{"nats", "tls"}}} {
		if brokers[b.way], err = brokerFlag(string(b.way), b.flag.values, b.schemes...); err != nil {
			return err
		}
	}
	others, closeWays, err := openWays(brokers, webhook.Message, clock.Now, s.log)
	if err != nil {
		return err
	}
	defer closeWays()
	checkWays(ctx, others, s.log)
	queue, err := prepare.New(s.rdb, prepare.Config{Prefix: *f.redisPrefix, NamespacePrefixes: s.namespaces.prefixes(), Logger: s.log.With("dep", depRedis), Now: clock.Now})
	if err != nil {
		return err
	}
	dead, err := deadletter.New(s.rdb, deadletter.Config{Prefix: *f.redisPrefix, NamespacePrefixes: s.namespaces.prefixes()})
	if err != nil {
		return err
	}
	lease := timer.LeaseFor(*f.lease, *f.callbackTimeout)
	var (
		assignment timer.Assignment // nil: this process owns every slot
		shardOwner timer.ShardOwner // nil: this process scans every shard
		onTopic    func(timer.Topic)
	)
	if s.cluster != nil {
		assignment, shardOwner = s.cluster, s.cluster
		onTopic = func(timer.Topic) { s.cluster.TopicsChanged() }
	}
	engineCfg := timer.Config{
		Now:        clock.Now,
		Assignment: assignment,
		Horizon:    *f.horizon,
		Logger:     s.log,
		Observer:   metrics,
		Scheduler: timer.SchedulerConfig{
			Slots:        *f.slots,
			Node:         *f.node,
			OnTopic:      onTopic,
			NoAutoCreate: !*f.autoCreate,
			MaxTopics:    *f.maxTopics,
		},
		Backstop: timer.BackstopConfig{Owner: shardOwner},
		Worker: timer.WorkerConfig{
			Concurrency:      *f.concurrency,
			BatchSize:        *f.batch,
			Lease:            lease,
			AttemptTimeout:   *f.callbackTimeout,
			Grace:            *f.grace,
			AttemptRetention: *f.retention,
		},
	}
	if tracer != nil {
		engineCfg.Worker.Tracer = tracer
	}
	if engineCfg.Worker.ClaimAhead, err = f.claimAheadOf(); err != nil {
		return err
	}
	if *f.shutdownDelay < 0 {
		return fmt.Errorf("--shutdown-delay: %v: want 0 or more", *f.shutdownDelay)
	}
	if engineCfg.Retention, err = f.retirer(shardOwner); err != nil {
		return err
	}
	if err := engineCfg.Validate(); err != nil {
		return err
	}

	var (
		storeState depState
		store      *shard.Store // set once, before started
		started    atomic.Bool  // the engine and the membership run
	)
	ready := map[string]func(context.Context) error{
		depTaskStore: func(ctx context.Context) error {
			if up, err := storeState.state(); !up {
				return cmp.Or(err, errors.New("connecting"))
			}
			err := store.Ping(ctx)
			if errors.Is(err, shard.ErrSomeDown) {
				return fmt.Errorf("%w: %w", tochttp.ErrDegraded, err)
			}
			return err
		},
		depRedis: queue.Ready,
		depClock: clock.Check,
	}
	if s.cluster != nil {
		ready[depZooKeeper] = func(context.Context) error {
			switch {
			case !started.Load():
				return errors.New("not a member yet: membership starts once the task store and Redis answer")
			case !s.cluster.Status().Connected:
				return errors.New("not connected to ZooKeeper")
			}
			return nil
		}
	}
	metrics.WatchDependencies(ready, func(err error) bool { return errors.Is(err, tochttp.ErrDegraded) }, 2*time.Second)
	// /readyz also fails through --shutdown-delay after SIGTERM, while the
	// API still answers: that is no dependency's, so not in the metrics.
	var draining atomic.Bool
	apiReady := maps.Clone(ready)
	apiReady["shutdown"] = func(context.Context) error {
		if draining.Load() {
			return errors.New("shutting down: this member answers requests for --shutdown-delay more, then stops")
		}
		return nil
	}
	var clusterStatus func() any
	// member names this process in what it publishes to Redis for the
	// others (usage, series).
	member := fmt.Sprintf("pid-%d", os.Getpid())
	if s.cluster != nil {
		clusterStatus = func() any { return s.cluster.Status() }
		member = s.cluster.ID()
	}
	// Pull topics' jobs wait in leases for the workers that long-poll.
	puller, err := pull.New(s.rdb, pull.Config{Prefix: *f.redisPrefix, Member: member, Sign: webhook.Message, Now: clock.Now, Logger: s.log})
	if err != nil {
		return err
	}
	others[timer.WayPull] = puller
	engineCfg.Worker.Demand = puller
	apiCfg := tochttp.APIConfig{
		TopicDefaults: timer.Limits{
			Retry:           timer.RetryPolicy{Base: timer.DefaultRetryBase, Max: timer.DefaultRetryMax},
			Lease:           lease,
			CallbackTimeout: *f.callbackTimeout,
		},
		MaxCallbackTimeout:    *f.maxCallback,
		Cluster:               clusterStatus,
		Tokens:                s.tokens,
		Namespaces:            s.namespaces.api(),
		AllowPrivateCallbacks: s.allowPrivate,
		Logger:                s.log,
		Ready:                 apiReady,
		AuditFailed:           metrics.AuditUnrecorded,
		Retention:             engineCfg.Retention.Retention,
		Brokers:               brokerNames(brokers),
		Pull:                  puller,
		Series:                &seriesReader{series: series, queue: queue, member: member, now: clock.Now},
		Now:                   clock.Now,
	}
	if s.tokenFile != nil {
		apiCfg.TokenSet = s.tokenFile.Set
	}
	if *f.metricsAddr == "" {
		apiCfg.Metrics = metrics.Handler()
	}
	if err := apiCfg.Validate(); err != nil {
		return err
	}

	// Wiring that needs the task store; run does it once the store answers.
	var (
		eng   *timer.Engine
		mat   *timer.Materializer
		front = &frontDoor{starting: tochttp.Starting(apiCfg)}
	)
	wire := func(st *shard.Store) error {
		node, err := s.node.lease(ctx, st)
		if err != nil {
			return err
		}
		s.log.Info("node number leased", "node", node, "holder", s.node.holder)
		engineCfg.Scheduler.Node = node
		if engineCfg.Worker.ReclaimAtStart = s.node.ReclaimAtStart(s.cluster != nil); engineCfg.Worker.ReclaimAtStart {
			s.log.Info("this member's previous run died holding its node number: the leases it held are taken back as its slots are learnt", "member", s.node.holder)
			if s.cluster != nil {
				s.cluster.ReplacePrevious() // and its znodes, rather than wait for its session to end
			}
		}
		if s.cluster != nil {
			s.cluster.SetShards(st.Shards())
		}
		store = st
		clockStore.Store(st)
		if err := clock.Measure(ctx); err != nil {
			s.log.Warn("clock: could not read the task store's clock; measuring again every second", "dep", depTaskStore, "err", err)
		}
		storeState.set(true, nil) // after store: /readyz reads it once up
		handler := ways{webhook: webhook, others: others, now: clock.Now, observe: metrics.Delivered}
		if eng, err = timer.New(st, queue, handler, engineCfg); err != nil {
			return err
		}
		s.catalog.Store(eng.Catalog)
		stats := &topicStats{store: st, catalog: eng.Catalog, counter: newJobCounter(ctx, st), queue: queue, maxTopics: metrics.MaxTopics(), webhook: webhook,
			retention: engineCfg.Retention.Retention}
		metrics.WatchUsage(eng.Worker.Usage, stats.dueWaiting)
		if eng.Retirer != nil {
			metrics.WatchRetention(eng.Retirer.Survey, clock.Now)
		}
		// Every member materializes schedules: idempotency keys and the
		// cursor's compare-and-set make that safe, and no leader's death
		// delays an occurrence (see timer.Materializer).
		// An occurrence is admitted by the API's quotas, as its owner's
		// token (tochttp.API.AdmitOccurrence); the API is made below,
		// before the materializer runs.
		var api *tochttp.API
		admit := func(ctx context.Context, sc *timer.Schedule) error { return api.AdmitOccurrence(ctx, sc) }
		if mat, err = timer.NewMaterializer(st, eng.Scheduler, timer.MaterializerConfig{Cron: cron.Parse, Logger: s.log, Admit: admit, Observer: metrics, Now: clock.Now}); err != nil {
			return err
		}
		apiCfg.Schedules = timer.NewSchedules(st, node, cron.Parse, clock.Now, mat.Wake)
		apiCfg.Audit = st
		if api, err = tochttp.NewAPI(eng, deadletter.NewLetters(dead, st), stats, apiCfg); err != nil {
			return err
		}
		front.api.Store(api)
		return nil
	}
	// A store that answers at once is wired before the API listens, so
	// that a healthy start serves /v1 from its first request.
	st, firstErr := s.openStore(ctx)
	if errors.As(firstErr, new(permanentError)) {
		return firstErr
	}
	if firstErr == nil {
		if err := wire(st); err != nil {
			return err
		}
	} else {
		storeState.set(false, firstErr)
	}

	ln, err := net.Listen("tcp", *f.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *f.addr, err)
	}
	var handler http.Handler = front
	if tracer != nil {
		handler = tracer.Middleware(front)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errorLog(s.log, "api"),
	}
	if s.onListen != nil {
		s.onListen(ln.Addr().String())
	}
	s.log.Info("toc listening", "addr", ln.Addr().String(), "version", version)

	if *f.cpuProfile != "" {
		out, err := os.Create(*f.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer out.Close()
		if err := runtimepprof.StartCPUProfile(out); err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer runtimepprof.StopCPUProfile()
	}
	if *f.pprofAddr != "" {
		stopPprof, err := servePprof(*f.pprofAddr, s.log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	if *f.metricsAddr != "" {
		stopMetrics, err := serveMetrics(*f.metricsAddr, metrics.Handler(), s.log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}

	engineCtx, stopEngine := context.WithCancel(ctx)
	defer stopEngine()
	// The membership outlives the engine: a member that stops keeps its
	// slots until its calls in flight are done, so that the members that
	// take them over know its leases are finished (see timer.Handover)
	// and need not take them back early.
	clusterCtx, stopCluster := context.WithCancel(context.WithoutCancel(ctx))
	defer stopCluster()
	var wg sync.WaitGroup
	var engineErr, serveErr, clusterErr, wireErr, nodeErr, mapErr, matErr error
	if s.tokenFile != nil {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		wg.Go(func() { _ = s.tokenFile.Run(engineCtx, hup, 0) })
	}
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr = err
			stopEngine()
		}
	})
	wg.Go(func() {
		if eng == nil {
			s.log.Warn("dependency unavailable; retrying", "dep", depTaskStore, "err", firstErr)
			var st *shard.Store
			err := await(engineCtx, s.log, depTaskStore, &storeState, func(ctx context.Context) (err error) {
				st, err = s.openStore(ctx)
				return err
			})
			if errors.As(err, new(permanentError)) {
				wireErr = err
				stopEngine()
				return
			}
			if err != nil {
				return
			}
			if wireErr = wire(st); wireErr != nil {
				stopEngine()
				return
			}
		}
		var redisState depState
		if await(engineCtx, s.log, depRedis, &redisState, func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, awaitTry)
			defer cancel()
			return s.rdb.Ping(ctx).Err()
		}) != nil {
			return
		}
		if err := queue.Ready(engineCtx); errors.Is(err, prepare.ErrClusterNode) {
			// Not a passing state: as one server, a cluster node would fire
			// only the jobs of its own hash slots.
			wireErr = fmt.Errorf("--redis-addr %s: %w", s.redisAddr, err)
			stopEngine()
			return
		}
		started.Store(true)
		wg.Go(func() {
			if nodeErr = s.node.keep(engineCtx, store, s); nodeErr != nil {
				s.log.Error("stopping: this process no longer holds its node number, and ids made with it could collide", "err", nodeErr)
				stopEngine()
			}
		})
		wg.Go(func() {
			if mapErr = watchShardMap(engineCtx, store); mapErr != nil {
				s.log.Error("stopping: the task store's shard map changed since this process started; restart it with the new --mysql-dsn list", "err", mapErr)
				stopEngine()
			}
		})
		wg.Go(func() {
			engineErr = eng.Run(engineCtx)
			stopCluster()
		})
		wg.Go(func() { matErr = mat.Run(engineCtx) })
		wg.Go(func() { _ = clock.Run(engineCtx) })
		if s.cluster != nil {
			wg.Go(func() {
				if clusterErr = s.cluster.Run(clusterCtx); clusterErr != nil {
					s.log.Error("stopping: this member cannot join the cluster", "err", clusterErr)
					stopEngine()
				}
			})
		}
		wg.Go(func() { publishUsage(engineCtx, queue, member, eng.Worker, s.log) })
		wg.Go(func() { _ = puller.Run(engineCtx) })
		rec := &seriesRecorder{series: series, pub: queue.NewSeriesPublisher(member), label: metrics.Label, now: clock.Now}
		wg.Go(func() { rec.run(engineCtx, eng.Worker.Usage, s.log) })
	})
	select {
	case <-ctx.Done():
		if d := *f.shutdownDelay; d > 0 {
			draining.Store(true)
			s.log.Info("shutting down: /readyz fails and the API still answers for the delay, so that load balancers stop sending first", "delay", d.String())
			time.Sleep(d)
		}
		s.log.Info("shutting down: no new requests, no new claims; webhook calls in flight may finish", "grace", f.grace.String())
	case <-engineCtx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *f.grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		s.log.Warn("requests still open at shutdown", "err", err)
	}
	stopEngine()
	wg.Wait()
	s.log.Info("stopped")
	return errors.Join(serveErr, wireErr, engineErr, clusterErr, nodeErr, mapErr, matErr)
}

// frontDoor serves the API once it is wired, and tochttp.Starting before.
type frontDoor struct {
	api      atomic.Pointer[tochttp.API]
	starting http.Handler
}

func (d *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if api := d.api.Load(); api != nil {
		api.ServeHTTP(w, r)
		return
	}
	d.starting.ServeHTTP(w, r)
}

// servePprof serves the profiling endpoints on a listener of their own,
// never on the API's.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog(log, "pprof")}
	go srv.Serve(ln)
	log.Info("pprof listening", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// serveMetrics serves /metrics on a listener of its own (--metrics-addr),
// which can be kept off the network the API is on.
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errorLog(log, "metrics")}
	go srv.Serve(ln)
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() { srv.Close() }, nil
}

// splitList splits values that may themselves be comma-separated.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// explicit reports whether flag name was given on the command line or in
// the environment.
func explicit(fs *flagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	for _, env := range fs.envNames(name) {
		if _, ok := os.LookupEnv(env); ok {
			return true
		}
	}
	return set
}

// mapCheck is how often a running service checks that the task store's
// shard map is still the one it started with.
const mapCheck = 10 * time.Second

// watchShardMap checks the store's shard map every mapCheck until ctx is
// done, and returns the error of a map that changed: a shard was added by
// toc migrate while this process ran, and it would neither find the new
// shard's jobs nor place jobs as the others do. A check that fails
// otherwise (a shard away) is tried again at the next.
func watchShardMap(ctx context.Context, st *shard.Store) error {
	tick := time.NewTicker(mapCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			var me *shard.MapError
			if err := st.CheckMap(ctx, false); errors.As(err, &me) {
				return err
			}
		}
	}
}

// defaultGCHeadroom is --gc-headroom's default, in MiB: toc serve's heap
// is about 7 MB under load, so the collector ran every 10 MB allocated at
// Go's default (BENCHMARKS.md, issue 35).
const defaultGCHeadroom = 64

// maxGCHeadroom bounds --gc-headroom, in MiB (1 TiB).
const maxGCHeadroom = 1 << 20

// startGCFloor holds the collector to --gc-headroom MiB of growth between
// cycles (package gcfloor), unless it is 0 or GOGC is set, which the
// runtime then follows as it is. It returns what undoes it.
func startGCFloor(mib int, log *slog.Logger) (stop func(), err error) {
	if mib < 0 || mib > maxGCHeadroom {
		return nil, fmt.Errorf("--gc-headroom: %d: want 0..%d MiB", mib, maxGCHeadroom)
	}
	if gogc, set := os.LookupEnv("GOGC"); set {
		if mib != defaultGCHeadroom {
			log.Warn("--gc-headroom is ignored: GOGC is set", "GOGC", gogc)
		}
		return func() {}, nil
	}
	if mib == 0 {
		return func() {}, nil
	}
	f := gcfloor.Start(uint64(mib) << 20)
	log.Debug("garbage collection held to a headroom", "mib", mib, "gc_percent", f.Percent())
	return f.Stop, nil
}
