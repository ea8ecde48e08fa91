package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/toc-project/toc/http/client"
)

const benchUsage = `bench [--scenarios schedule,fire,drain,memory,recover,fairness,topics,hostile,shards,spike,aged,soak,coalesce,inout,bus,pull,bullmq] [--short] [--stack real|embedded|external] [flags]

Measures toc: scheduling throughput and latency, firing lateness at a
steady rate, draining a burst, Redis and process memory, and recovery
after Redis loses its data. A job counts as fired only when the built-in
receiver verified its Standard Webhooks signature. The drain and each
schedule run also say what a job cost each part in CPU: toc, the
mariadbds the bench started, Redis, the bench itself and the machine.

topics measures toc at rest with --topics idle topics (toc's and the
task store's CPU as % of one core, toc's RSS), then --topics-rate jobs/s
spread over them:
  toc bench --scenarios topics [--topics 3000] [--topic-slots 16]
  toc bench --scenarios topics --topics 100000 --topics-rate 0   # at rest only

hostile measures a steady topic's lateness at 200 jobs/s for --duration
alone, for twice that while another client creates --hostile-topics
topics on first use (batch calls of 1,000 jobs, one new topic each), and
after; toc's --max-topics, set through --toc-args, refuses calls past it:
  toc bench --scenarios hostile [--hostile-topics 10000]

shards, run only when named, measures durable single-job schedules a
second at each --concurrency (default 64) with toc serve over one task
store shard, then over two, each on a mariadbd of its own that it
starts (--stack real only), and states the ratio:
  toc bench --scenarios spike [--spike-jobs 100000] [--spike-window 60s] [--spike-rate 2000]
  toc bench --scenarios shards [--concurrency 64] [--duration 10s]

aged, run only when named (--stack real), runs fire at 1,000 and 5,000
jobs/s, single schedules (64 clients), batches of 1,000 (4 clients) and
the drain on an empty store, then fills the task store by SQL with
--aged-rows finished jobs (ended over the past 48 h, over 50 topics;
spread over the shards) and runs them again with toc keeping every row,
then fire at 1,000/s while toc migrate applies migrations 0025 and 0027
again (their index of toc_jobs, taken back out first), then fire at 1,000/s only,
twice, each time on a toc restarted for it: keeping every row (the
control), then with a 24 h retention, so that it deletes half of them
meanwhile:
  toc bench --scenarios aged [--aged-rows 20000000] [--aged-phase empty|aged|migrating|deleting|all]
With --aged-phase upgrading (run only when named), it starts the toc
binary of an older release (--aged-release, v0.1.0) on databases of its
own beside the bench's, fills them with the aged rows under the
release's schema, and fires 1,000 jobs/s through the release while this
build's toc migrate brings that schema to this build's:
  toc bench --scenarios aged --aged-phase upgrading --aged-release toc-v0.1.0 [--aged-rows 10000000]

soak, run only when named (--stack real), schedules --soak-rate jobs/s
for --duration (default 1h) with toc keeping ended jobs --soak-retention,
and reports each --soak-window: jobs fired, lateness, toc's RSS, the rows
of toc_jobs and the rows deleted; it fails if a job was lost, early or
fired twice:
  toc bench --scenarios soak --duration 1h [--soak-rate 1000] [--soak-retention 1m] [--soak-window 5m]

coalesce, run only when named, measures the Go client's Schedule, one
job a call, from 64 goroutines and from one, each through a client that
coalesces concurrent calls into batches (client.WithCoalescing) and one
that does not, with the CPU a job cost each part:
  toc bench --scenarios coalesce [--duration 10s] [--coalesce-in-flight 2] [--coalesce-linger 0] [--coalesce-regroup -1ns]

inout, run only when named, posts single jobs at each --rates from 64
connections, each due 1.5 s after it was to be sent, over --pending
far-future jobs (default 200,000), so that jobs go in and fire out at
the same rate; it reports lateness, the schedule call's latency (from
when it was to be sent) and the CPU a job cost each part; with
--inout-search it then steps the rate up by 1,000/s from 1,000/s and
reports the highest at which both p99s stay within 10 ms:
  toc bench --scenarios inout --rates 5000 [--pending 200000] [--inout-search]

bus, run only when named (--stack real), measures each way a topic may
deliver by as webhooks are: for each of --bus-ways, a topic delivered by
it fires the first of --rates for --duration; then, every way's fire
done, each way drains --drain-jobs due at once; a job counts when its
consumer got it, signature verified.
nats: a JetStream stream (file storage) on a nats-server the bench
starts; amqp: a queue of the machine's RabbitMQ (127.0.0.1:5672, guest),
persistent messages through a topic exchange; pull: a worker of the Go
client (Work, 100 jobs at once) long-polling toc, a job counted when
leased. pull is the bus scenario over webhook and pull:
  toc bench --scenarios bus [--bus-ways webhook,pull,nats,amqp] [--rates 1000] [--drain-jobs 50000]
  toc bench --scenarios pull [--rates 1000] [--drain-jobs 50000]

bullmq, run only when named, measures BullMQ (the peer issue 35 compares
toc with) on this machine, each part on a redis-server of its own: 64
callers adding one delayed job at a time for --duration, then a Worker
of concurrency 64 with an in-process handler draining --drain-jobs due
at once; with the CPU a job cost BullMQ's process, Redis and the
machine. Run beside toc's scenarios, its figures are the same minute's
yardstick for theirs. It needs node and npm; npm ci installs its pinned
packages once into the user's cache directory:
  toc bench --scenarios coalesce,drain,bullmq [--drain-jobs 100000]

Stacks:
  real      (default) a throwaway mariadbd and redis-server (or the ones
            given by --mysql-dsn and --redis-addr; --redis-cluster starts
            a Redis Cluster of 3 masters and 3 replicas instead) and toc
            serve as a child process of this one; --store-shards N
            splits the task store over N mariadbds it starts
  embedded  toc dev (SQLite, in-process Redis) as a child process; memory
            and recover need Redis access and are skipped
  external  a running toc at --server (with --token and the --secret it
            signs with); the receiver listens on --receiver-addr, which
            that toc must reach`

// benchConfig holds the flags of toc bench.
type benchConfig struct {
	scenarios    []string
	stack        string
	server       string
	token        string
	secret       string
	receiverAddr string
	mysqlDSN     string
	redisAddr    string
	redisCluster bool
	storeShards  int
	short        bool
	duration     time.Duration
	rates        []int
	pending      int
	concurrency  []int
	drainJobs    int
	memoryJobs   int
	recoverJobs  int
	floodJobs    int
	floodRate    int
	spikeJobs    int
	spikeWindow  time.Duration
	spikeRate    int
	// lead is how long before its due time the fire scenario schedules a
	// job.
	lead time.Duration
	// The topics scenario.
	topics         int
	topicSlots     int
	topicsRate     int
	topicsDuration time.Duration
	topicsDrain    time.Duration
	idleWindow     time.Duration
	// The hostile scenario.
	hostileTopics int
	// The shards scenario: --concurrency, or 64.
	shardsConcurrency []int
	// The aged scenario.
	agedRows    int
	agedPhase   string
	agedRelease string
	// The soak scenario; soakDuration is --duration when given.
	soakDuration  time.Duration
	soakRate      int
	soakRetention time.Duration
	soakWindow    time.Duration
	// The coalesce scenario's client.Coalescing (zero: its defaults).
	coalesce client.Coalescing
	// inoutSearch makes the inout scenario look for its highest rate.
	inoutSearch bool
	// busWays are the ways the bus scenario measures.
	busWays []string

	jsonOut    string
	profileDir string
	tocArgs    []string
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", benchUsage)
	fs.example = "toc bench --scenarios schedule,fire --short --stack embedded"
	fs.SetOutput(stderr)
	scenarios := fs.string("scenarios", "schedule,fire,drain,memory,recover,fairness,topics,hostile", "comma-separated scenarios to run")
	hostileTopics := fs.int("hostile-topics", 0, "hostile: topics the hostile client creates (default 10000, --short 2000)")
	stack := fs.string("stack", "real", "real, embedded or external")
	server := fs.string("server", "", "external: toc's URL")
	token := fs.string("token", "", "external: bearer token")
	secret := fs.string("secret", "", "external: the webhook secret toc signs with")
	receiverAddr := fs.string("receiver-addr", "127.0.0.1:0", "where the webhook receiver listens")
	mysqlDSN := fs.string("mysql-dsn", "", "real: use this task store instead of starting a mariadbd")
	redisAddr := fs.string("redis-addr", "", "real: use this Redis instead of starting a redis-server (its data is flushed!)")
	storeShards := fs.int("store-shards", 1, "real: task store shards, each on a mariadbd the bench starts (not with --mysql-dsn)")
	redisCluster := fs.bool("redis-cluster", false, "real: start a Redis Cluster of 3 masters and 3 replicas instead of one redis-server")
	short := fs.bool("short", false, "a short run of every scenario (make bench)")
	duration := fs.duration("duration", 0, "length of each timed run (default 10s, --short 3s)")
	rates := fs.string("rates", "", "fire and inout: steady rates in jobs/s, comma-separated (default 1000,5000; --short 1000)")
	lead := fs.duration("lead", fireLead, "fire: how long before its due time each job is scheduled (from 2s on, a job waits in a later bucket in Redis)")
	pending := fs.int("pending", -1, "fire and inout: far-future jobs pending in the store during the run (fire: default 1000000 with the 5000/s rate, else 0, --short 0; inout: default 200000)")
	conc := fs.string("concurrency", "", "schedule and shards: concurrent clients, comma-separated (default 1,16,64, shards 64; --short 64)")
	drainJobs := fs.int("drain-jobs", 0, "drain: jobs due at the same instant (default 100000, --short 10000)")
	memoryJobs := fs.int("memory-jobs", 0, "memory: pending jobs, 10% within the horizon (default 1000000, --short 100000)")
	recoverJobs := fs.int("recover-jobs", 0, "recover: pending jobs within the horizon to restore (default 1000000, --short 100000)")
	floodJobs := fs.int("flood-jobs", 0, "fairness: jobs of the flood topic due at one instant (default 50000, --short 10000)")
	floodRate := fs.int("flood-rate", 2000, "fairness: the flood topic's rate_limit, jobs/s")
	spikeJobs := fs.int("spike-jobs", 0, "spike: jobs due at one instant, each with a flexible window (default 100000, --short 10000)")
	spikeWindow := fs.Duration("spike-window", time.Minute, "spike: the jobs' window_ms")
	spikeRate := fs.int("spike-rate", 2000, "spike: the topic's rate_limit, jobs/s")
	topics := fs.int("topics", 3000, "topics: idle topics to create")
	topicSlots := fs.int("topic-slots", 16, "topics: slots of each topic (a power of two)")
	topicsRate := fs.int("topics-rate", 1000, "topics: jobs/s spread uniformly over the topics (0: measure toc at rest only)")
	topicsDuration := fs.duration("topics-duration", 0, "topics: how long jobs are scheduled (default 20s, --short 5s)")
	topicsDrain := fs.duration("topics-drain", 5*time.Minute, "topics: how long after the last job's due time a job may still arrive before it counts as lost")
	idleWindow := fs.duration("idle-window", 0, "topics: how long toc's CPU is sampled at rest (default 10s, --short 5s)")
	agedRows := fs.int("aged-rows", 0, "aged: finished jobs the task store is filled with (default 20000000, --short 200000)")
	agedPhase := fs.string("aged-phase", "all", "aged: empty, aged, migrating, deleting, all, or upgrading (run only when named)")
	agedRelease := fs.string("aged-release", "", "aged: the toc binary of the release --aged-phase upgrading upgrades from (v0.1.0)")
	soakRate := fs.int("soak-rate", 1000, "soak: jobs/s scheduled")
	soakRetention := fs.duration("soak-retention", time.Minute, "soak: toc's every --retain-* flag")
	soakWindow := fs.duration("soak-window", 5*time.Minute, "soak: the window the figures are reported by")
	coalesceInFlight := fs.int("coalesce-in-flight", 0, fmt.Sprintf("coalesce: the client's requests under way at once (default %d)", client.DefaultCoalesceMaxInFlight))
	inoutSearch := fs.bool("inout-search", false, "inout: also step the rate up by 1000/s from 1000/s and report the highest at which both p99s stay within 10 ms")
	coalesceLinger := fs.duration("coalesce-linger", 0, "coalesce: how long a batch's first call waits for others")
	coalesceRegroup := fs.duration("coalesce-regroup", 0, fmt.Sprintf("coalesce: how long the next batch waits, once a request ends, for the callers it answered (default %v; negative: none)", client.DefaultCoalesceRegroup))
	busWaysFlag := fs.string("bus-ways", strings.Join(busWays, ","), "bus: the ways measured, in order, comma-separated: webhook, pull, nats, amqp")
	jsonOut := fs.string("json", "", "write the results as JSON to this file")
	profileDir := fs.string("profile", "", "write a CPU profile of toc over the whole run (toc.cpu.pprof), one of the bench itself, its load and its receivers (bench.cpu.pprof), and a heap profile of toc at its end (heap.pprof) to this directory")
	tocArgs := fs.string("toc-args", "", "extra flags for the toc child process, space-separated")
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg := benchConfig{
		scenarios: strings.Split(*scenarios, ","), stack: *stack, server: *server, token: *token, secret: *secret,
		receiverAddr: *receiverAddr, mysqlDSN: *mysqlDSN, redisAddr: *redisAddr, redisCluster: *redisCluster, storeShards: *storeShards, short: *short,
		duration: *duration, pending: *pending, drainJobs: *drainJobs, memoryJobs: *memoryJobs,
		recoverJobs: *recoverJobs, floodJobs: *floodJobs, floodRate: *floodRate,
		spikeJobs: *spikeJobs, spikeWindow: *spikeWindow, spikeRate: *spikeRate, lead: *lead,
		topics: *topics, topicSlots: *topicSlots, topicsRate: *topicsRate, topicsDuration: *topicsDuration,
		topicsDrain: *topicsDrain, idleWindow: *idleWindow, hostileTopics: *hostileTopics, jsonOut: *jsonOut, profileDir: *profileDir, tocArgs: strings.Fields(*tocArgs),
		agedRows: *agedRows, agedPhase: *agedPhase, agedRelease: *agedRelease, soakDuration: *duration, soakRate: *soakRate, soakRetention: *soakRetention, soakWindow: *soakWindow,
		coalesce: client.Coalescing{MaxInFlight: *coalesceInFlight, Linger: *coalesceLinger, Regroup: *coalesceRegroup}, inoutSearch: *inoutSearch,
		busWays: strings.Split(*busWaysFlag, ","),
	}
	var err error
	if cfg.rates, err = intList(*rates, "--rates"); err != nil {
		return err
	}
	if cfg.concurrency, err = intList(*conc, "--concurrency"); err != nil {
		return err
	}
	cfg.shardsConcurrency = cfg.concurrency
	cfg.defaults()
	for flag, v := range map[string]int{"--drain-jobs": cfg.drainJobs, "--memory-jobs": cfg.memoryJobs,
		"--recover-jobs": cfg.recoverJobs, "--flood-jobs": cfg.floodJobs, "--flood-rate": cfg.floodRate,
		"--spike-jobs": cfg.spikeJobs, "--spike-rate": cfg.spikeRate, "--spike-window": int(cfg.spikeWindow.Milliseconds()),
		"--topics": cfg.topics, "--topic-slots": cfg.topicSlots, "--hostile-topics": cfg.hostileTopics, "--store-shards": cfg.storeShards,
		"--aged-rows": cfg.agedRows, "--soak-rate": cfg.soakRate} {
		if v < 1 {
			return fmt.Errorf("%s: %d, want a positive number (0 for the default, where it has one)", flag, v)
		}
	}
	if cfg.coalesce.MaxInFlight < 0 || cfg.coalesce.Linger < 0 {
		return fmt.Errorf("--coalesce-in-flight %d, --coalesce-linger %v: want 0 (the client's default) or more", cfg.coalesce.MaxInFlight, cfg.coalesce.Linger)
	}
	if cfg.topicsRate < 0 {
		return fmt.Errorf("--topics-rate: %d, want 0 or more", cfg.topicsRate)
	}
	if cfg.lead <= 0 {
		return fmt.Errorf("--lead: %v, want a positive duration", cfg.lead)
	}
	if err := cfg.checkAgedSoak(); err != nil {
		return err
	}
	for _, s := range cfg.scenarios {
		if !slices.Contains([]string{"schedule", "fire", "drain", "memory", "recover", "fairness", "topics", "hostile", "shards", "spike", "aged", "soak", "coalesce", "inout", "bus", "pull", "bullmq"}, s) {
			return fmt.Errorf("--scenarios: unknown scenario %q", s)
		}
	}

	b, err := startBench(ctx, &cfg, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Fprintf(stdout, "toc bench: stack %s, toc at %s, %d cores\n", cfg.stack, b.url, numCPU())
	if cfg.profileDir != "" {
		// The bench's own CPU is a part of every figure's machine CPU.
		stop, err := profileSelf(filepath.Join(cfg.profileDir, "bench.cpu.pprof"))
		if err != nil {
			return err
		}
		defer stop()
	}
	for _, s := range cfg.scenarios {
		if ctx.Err() != nil {
			break
		}
		var res []result
		switch s {
		case "schedule":
			res, err = b.schedule(ctx)
		case "fire":
			res, err = b.fire(ctx)
		case "drain":
			res, err = b.drain(ctx)
		case "memory":
			res, err = b.memory(ctx)
		case "recover":
			res, err = b.recover(ctx)
		case "fairness":
			res, err = b.fairness(ctx)
		case "topics":
			res, err = b.topics(ctx)
		case "hostile":
			res, err = b.hostile(ctx)
		case "shards":
			res, err = b.shards(ctx)
		case "spike":
			res, err = b.spike(ctx)
		case "aged":
			res, err = b.aged(ctx)
		case "soak":
			res, err = b.soak(ctx)
		case "coalesce":
			res, err = b.coalesce(ctx)
		case "inout":
			res, err = b.inout(ctx)
		case "bus":
			res, err = b.bus(ctx)
		case "bullmq":
			res, err = b.bullmq(ctx)
		case "pull":
			// The bus scenario's pull way beside webhooks, as issue 36 asks.
			cfg.busWays = []string{"webhook", "pull"}
			res, err = b.bus(ctx)
		}
		if err != nil {
			if len(res) > 0 {
				printResults(stdout, res)
			}
			return fmt.Errorf("%s: %w", s, err)
		}
		b.results = append(b.results, res...)
		printResults(stdout, res)
	}
	if cfg.profileDir != "" {
		b.saveProfile(ctx, "/debug/pprof/heap", filepath.Join(cfg.profileDir, "heap.pprof"))
	}
	if cfg.jsonOut != "" {
		out, _ := json.MarshalIndent(map[string]any{
			"date": time.Now().UTC().Format(time.RFC3339), "stack": cfg.stack, "cores": numCPU(),
			"short": cfg.short, "version": version, "results": b.results,
		}, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (c *benchConfig) defaults() {
	if len(c.rates) == 0 {
		c.rates = []int{1000, 5000}
		if c.short {
			c.rates = []int{1000}
		}
	}
	if len(c.concurrency) == 0 {
		c.concurrency = []int{1, 16, 64}
		if c.short {
			c.concurrency = []int{64}
		}
	}
	if len(c.shardsConcurrency) == 0 {
		c.shardsConcurrency = []int{64}
	}
	pick(c.short, &c.duration, 10*time.Second, 3*time.Second)
	pick(c.short, &c.topicsDuration, 20*time.Second, 5*time.Second)
	pick(c.short, &c.idleWindow, 10*time.Second, 5*time.Second)
	pick(c.short, &c.drainJobs, 100000, 10000)
	pick(c.short, &c.memoryJobs, 1000000, 100000)
	pick(c.short, &c.recoverJobs, 1000000, 100000)
	pick(c.short, &c.floodJobs, 50000, 10000)
	pick(c.short, &c.spikeJobs, 100000, 10000)
	pick(c.short, &c.hostileTopics, 10000, 2000)
	pick(c.short, &c.agedRows, 20000000, 200000)
	pick(c.short, &c.soakDuration, time.Hour, 2*time.Minute)
}

// pick sets *v, when it is zero (not given), to full, or to short with
// --short.
func pick[T int | time.Duration](short bool, v *T, full, shortV T) {
	if *v == 0 {
		*v = full
		if short {
			*v = shortV
		}
	}
}

func intList(s, flag string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flag, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func numCPU() int { return runtime.NumCPU() }

// bench is a running benchmark: the stack, the benchReceiver, the results.
type bench struct {
	cfg    *benchConfig
	url    string
	token  string
	client *fasthttp.Client
	recv   *benchReceiver
	// busTopics are the topics delivered by a message broker, whose jobs
	// take no callback URL; brokerPID is the broker's process while the
	// bus scenario measures one (0: none).
	busTopics map[string]bool
	brokerPID int
	rdb       redis.UniversalClient // nil unless the bench can reach toc's Redis (a *redis.ClusterClient on a cluster)
	tocPID    int                   // 0 when toc is not our child
	storePIDs []int                 // the mariadbds the bench started for toc (none with --mysql-dsn), for cpuMark
	pprof     string                // toc's pprof address, when profiling
	closers   []func()
	results   []result
	topicSeq  int
	log       io.Writer

	redisAddr string // toc's Redis, when the bench started toc serve
	// toc is the toc child the scenarios measure, when the bench started
	// it; serveArgs are its arguments under --stack real, and dsns its
	// task store's shards, for the scenarios that restart it with more
	// flags or read its store (aged, soak).
	toc       *tocChild
	serveArgs []string
	dsns      []string
}

func (b *bench) close() {
	for _, c := range slices.Backward(b.closers) {
		c()
	}
}

// topic returns a fresh topic name, so scenarios do not see each other.
func (b *bench) topic(kind string) string {
	b.topicSeq++
	return fmt.Sprintf("bench-%s-%d", kind, b.topicSeq)
}

// post sends a JSON body and decodes the answer into out.
func (b *bench) post(ctx context.Context, path string, body []byte, out any) (int, error) {
	return b.send(ctx, http.MethodPost, path, body, out)
}

// send sends a JSON body with method and decodes the answer into out,
// through fasthttp's client: it costs a request about half the CPU of
// net/http's here (BENCHMARKS.md, "What net/http costs a webhook"), CPU
// that the load generator would otherwise take from the toc it measures
// on a shared machine. A request ends at ctx's deadline, or after a
// minute.
func (b *bench) send(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(b.url + path)
	req.Header.SetMethod(method)
	req.Header.SetContentType("application/json")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	req.SetBodyRaw(body)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	if err := b.client.DoDeadline(req, resp, deadline); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	code, data := resp.StatusCode(), resp.Body()
	if out != nil && code < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return code, err
		}
	}
	if code >= 300 {
		return code, fmt.Errorf("%s: %d %s", path, code, bytes.TrimSpace(data))
	}
	return code, nil
}

// profileSelf starts a CPU profile of the bench process into file and
// returns what stops it.
func profileSelf(file string) (stop func(), err error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("--profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
