package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/testenv"
)

const benchUsage = `bench [--scenarios schedule,fire,drain,memory,recover] [--short] [--stack real|embedded|external] [flags]

Measures toc: scheduling throughput and latency, firing lateness at a
steady rate, draining a burst, Redis and process memory, and recovery
after Redis loses its data. A job counts as fired only when the built-in
receiver verified its Standard Webhooks signature.

Stacks:
  real      (default) a throwaway mariadbd and redis-server (or the ones
            given by --mysql-dsn and --redis-addr) and toc serve as a
            child process of this one
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
	short        bool
	duration     time.Duration
	rate         int
	rates        []int
	pending      int
	concurrency  []int
	drainJobs    int
	memoryJobs   int
	recoverJobs  int
	floodJobs    int
	floodRate    int
	jsonOut      string
	profileDir   string
	tocArgs      []string
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench", benchUsage)
	fs.SetOutput(stderr)
	scenarios := fs.string("scenarios", "schedule,fire,drain,memory,recover,fairness", "comma-separated scenarios to run")
	stack := fs.string("stack", "real", "real, embedded or external")
	server := fs.string("server", "", "external: toc's URL")
	token := fs.string("token", "", "external: bearer token")
	secret := fs.string("secret", "", "external: the webhook secret toc signs with")
	receiverAddr := fs.string("receiver-addr", "127.0.0.1:0", "where the webhook receiver listens")
	mysqlDSN := fs.string("mysql-dsn", "", "real: use this task store instead of starting a mariadbd")
	redisAddr := fs.string("redis-addr", "", "real: use this Redis instead of starting a redis-server (its data is flushed!)")
	short := fs.bool("short", false, "a short run of every scenario (make bench)")
	duration := fs.duration("duration", 0, "length of each timed run (default 10s, --short 3s)")
	rates := fs.string("rates", "", "fire: steady rates in jobs/s, comma-separated (default 1000,5000; --short 1000)")
	pending := fs.int("pending", -1, "fire: far-future jobs pending in the store during the run (default 1000000 with the 5000/s rate, else 0; --short 0)")
	conc := fs.string("concurrency", "", "schedule: concurrent clients, comma-separated (default 1,16,64; --short 64)")
	drainJobs := fs.int("drain-jobs", 0, "drain: jobs due at the same instant (default 100000, --short 10000)")
	memoryJobs := fs.int("memory-jobs", 0, "memory: pending jobs, 10% within the horizon (default 1000000, --short 100000)")
	recoverJobs := fs.int("recover-jobs", 0, "recover: pending jobs within the horizon to restore (default 1000000, --short 100000)")
	floodJobs := fs.int("flood-jobs", 0, "fairness: jobs of the flood topic due at one instant (default 50000, --short 10000)")
	floodRate := fs.int("flood-rate", 2000, "fairness: the flood topic's rate_limit, jobs/s")
	jsonOut := fs.string("json", "", "write the results as JSON to this file")
	profileDir := fs.string("profile", "", "write a CPU profile of toc over the whole run (toc.cpu.pprof) and a heap profile at its end (heap.pprof) to this directory")
	tocArgs := fs.string("toc-args", "", "extra flags for the toc child process, space-separated")
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg := benchConfig{
		scenarios: strings.Split(*scenarios, ","), stack: *stack, server: *server, token: *token, secret: *secret,
		receiverAddr: *receiverAddr, mysqlDSN: *mysqlDSN, redisAddr: *redisAddr, short: *short,
		duration: *duration, pending: *pending, drainJobs: *drainJobs, memoryJobs: *memoryJobs,
		recoverJobs: *recoverJobs, floodJobs: *floodJobs, floodRate: *floodRate, jsonOut: *jsonOut, profileDir: *profileDir, tocArgs: strings.Fields(*tocArgs),
	}
	var err error
	if cfg.rates, err = intList(*rates, "--rates"); err != nil {
		return err
	}
	if cfg.concurrency, err = intList(*conc, "--concurrency"); err != nil {
		return err
	}
	cfg.defaults()
	for flag, v := range map[string]int{"--drain-jobs": cfg.drainJobs, "--memory-jobs": cfg.memoryJobs,
		"--recover-jobs": cfg.recoverJobs, "--flood-jobs": cfg.floodJobs, "--flood-rate": cfg.floodRate} {
		if v < 1 {
			return fmt.Errorf("%s: %d, want a positive number (0 for the default, where it has one)", flag, v)
		}
	}
	for _, s := range cfg.scenarios {
		if !slices.Contains([]string{"schedule", "fire", "drain", "memory", "recover", "fairness"}, s) {
			return fmt.Errorf("--scenarios: unknown scenario %q", s)
		}
	}

	b, err := startBench(ctx, &cfg, stderr)
	if err != nil {
		return err
	}
	defer b.close()
	fmt.Fprintf(stdout, "toc bench: stack %s, toc at %s, %d cores\n", cfg.stack, b.url, numCPU())
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
		}
		if err != nil {
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
	pick := func(v *int, full, short int) {
		if *v == 0 {
			*v = full
			if c.short {
				*v = short
			}
		}
	}
	if c.duration == 0 {
		c.duration = 10 * time.Second
		if c.short {
			c.duration = 3 * time.Second
		}
	}
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
	pick(&c.drainJobs, 100000, 10000)
	pick(&c.memoryJobs, 1000000, 100000)
	pick(&c.recoverJobs, 1000000, 100000)
	pick(&c.floodJobs, 50000, 10000)
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
	cfg      *benchConfig
	url      string
	token    string
	client   *http.Client
	recv     *benchReceiver
	rdb      *redis.Client // nil unless the bench can reach toc's Redis
	tocPID   int           // 0 when toc is not our child
	pprof    string        // toc's pprof address, when profiling
	closers  []func()
	results  []result
	topicSeq int
	log      io.Writer
}

func (b *bench) close() {
	for _, c := range slices.Backward(b.closers) {
		c()
	}
}

const benchSecret = "whsec_dG9jLWJlbmNoLXNpZ25pbmcta2V5LTI0Yg=="

func startBench(ctx context.Context, cfg *benchConfig, log io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, log: log}
	secret := cfg.secret
	if cfg.stack != "external" {
		secret = benchSecret
	}
	recv, err := newBenchReceiver(cfg.receiverAddr, secret)
	if err != nil {
		b.close()
		return nil, err
	}
	b.recv = recv
	b.closers = append(b.closers, recv.close)
	b.client = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 512}}

	switch cfg.stack {
	case "external":
		if cfg.server == "" || cfg.secret == "" {
			return nil, errors.New("--stack external needs --server and --secret")
		}
		b.url, b.token = strings.TrimRight(cfg.server, "/"), cfg.token
		if cfg.redisAddr != "" {
			b.rdb = redis.NewClient(&redis.Options{Addr: cfg.redisAddr})
		}
		return b, nil
	case "embedded":
		dir, err := os.MkdirTemp("", "toc-bench-")
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { os.RemoveAll(dir) })
		err = b.startToc(ctx, "dev", "--data", filepath.Join(dir, "bench.db"), "--webhook-secret", benchSecret)
		if err != nil {
			b.close()
			return nil, err
		}
		return b, nil
	case "real":
	default:
		return nil, fmt.Errorf("--stack: %q is not real, embedded or external", cfg.stack)
	}

	redisAddr, dsn := cfg.redisAddr, cfg.mysqlDSN
	if redisAddr == "" {
		r, err := testenv.StartRedis(testenv.RedisOptions{})
		if err != nil {
			b.close()
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		b.closers = append(b.closers, func() { r.Stop() })
		redisAddr = r.Addr
	}
	if dsn == "" {
		m, err := testenv.StartMariaDB()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("start mariadbd: %w", err)
		}
		b.closers = append(b.closers, func() { m.Stop() })
		if dsn, err = m.CreateDatabase("tocbench"); err != nil {
			b.close()
			return nil, err
		}
	}
	b.rdb = redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	b.closers = append(b.closers, func() { b.rdb.Close() })
	if err := b.rdb.FlushAll(ctx).Err(); err != nil {
		b.close()
		return nil, fmt.Errorf("redis at %s: %w", redisAddr, err)
	}
	b.token = "bench-token"
	err = b.startToc(ctx, "serve", "--mysql-dsn", dsn, "--redis-addr", redisAddr, "--api-token", b.token,
		"--webhook-secret", benchSecret, "--allow-private-callbacks")
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// startToc runs this binary as toc's child process and waits until it
// answers /healthz.
func (b *bench) startToc(ctx context.Context, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	addr, err := freeLoopback()
	if err != nil {
		return err
	}
	args = append(args, "--addr", addr, "--log-level", "warn")
	if b.cfg.profileDir != "" {
		if err := os.MkdirAll(b.cfg.profileDir, 0o755); err != nil {
			return err
		}
		if b.pprof, err = freeLoopback(); err != nil {
			return err
		}
		args = append(args, "--pprof-addr", b.pprof, "--cpu-profile", filepath.Join(b.cfg.profileDir, "toc.cpu.pprof"))
	}
	args = append(args, b.cfg.tocArgs...)
	cmd := exec.Command(exe, args...)
	cmd.Stderr = b.log
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	b.tocPID = cmd.Process.Pid
	b.closers = append(b.closers, func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	b.url = "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(b.url + "/healthz"); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("toc %s exited at start", args[0])
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("toc did not answer /healthz within 60 s")
		}
	}
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (b *bench) saveProfile(ctx context.Context, path, file string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.pprof+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(b.log, "profile %s: %v\n", path, err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if len(data) > 0 {
		os.WriteFile(file, data, 0o644)
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

// send sends a JSON body with method and decodes the answer into out.
func (b *bench) send(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.url+path, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, err
		}
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s: %d %s", path, resp.StatusCode, bytes.TrimSpace(data))
	}
	return resp.StatusCode, nil
}

// result is one row of the report.
type result struct {
	Scenario string         `json:"scenario"`
	Name     string         `json:"name"`
	Count    int            `json:"count"`
	Errors   int            `json:"errors"`
	Seconds  float64        `json:"seconds"`
	Rate     float64        `json:"rate_per_s"`
	Latency  *dist          `json:"latency_ms,omitempty"`
	Lost     *int           `json:"lost,omitempty"`
	Dups     *int           `json:"duplicates,omitempty"`
	Early    *int           `json:"early,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
}

// dist is a latency distribution in milliseconds.
type dist struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	N    int     `json:"n"`
}

func distOf(d []time.Duration) *dist {
	if len(d) == 0 {
		return nil
	}
	slices.Sort(d)
	at := func(p float64) float64 {
		i := min(len(d)-1, int(math.Ceil(p*float64(len(d))))-1)
		return ms(d[max(0, i)])
	}
	return &dist{P50: at(.5), P90: at(.9), P99: at(.99), P999: at(.999), Max: ms(d[len(d)-1]), N: len(d)}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

func intp(n int) *int { return &n }

func printResults(w io.Writer, rs []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tcount\trate/s\tp50 ms\tp90\tp99\tp999\tmax\terrors\tlost\tdups\tearly\t")
	for _, r := range rs {
		l := r.Latency
		if l == nil {
			l = &dist{}
		}
		opt := func(p *int) string {
			if p == nil {
				return "-"
			}
			return strconv.Itoa(*p)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t%s\t%s\t%s\t\n",
			r.Name, r.Count, r.Rate, l.P50, l.P90, l.P99, l.P999, l.Max, r.Errors, opt(r.Lost), opt(r.Dups), opt(r.Early))
	}
	tw.Flush()
	for _, r := range rs {
		if len(r.Extra) > 0 {
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range r.Extra {
					if !yield(k) {
						return
					}
				}
			})
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%v", k, r.Extra[k]))
			}
			fmt.Fprintf(w, "  %s: %s\n", r.Name, strings.Join(parts, " "))
		}
	}
	fmt.Fprintln(w)
}

// benchReceiver is the webhook endpoint of the bench: it verifies every
// signature and records the first arrival of each job.
type benchReceiver struct {
	srv  *http.Server
	url  string
	keys [][]byte

	mu       sync.Mutex
	arrivals map[string]arrival
	bad      int

	// sleeping and mostAsleep count the calls held by ?sleep_ms.
	sleeping, mostAsleep atomic.Int64
}

type arrival struct {
	at    time.Time
	due   time.Time
	count int
}

func newBenchReceiver(addr, secret string) (*benchReceiver, error) {
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("benchReceiver: %w", err)
	}
	r := &benchReceiver{url: "http://" + ln.Addr().String() + "/hook", keys: [][]byte{key}, arrivals: map[string]arrival{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

func (r *benchReceiver) close() { r.srv.Close() }

// ServeHTTP verifies the Standard Webhooks signature and records the job.
func (r *benchReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
	due, derr := time.Parse(time.RFC3339, req.Header.Get("toc-due-at"))
	sec, terr := strconv.ParseInt(ts, 10, 64)
	if err != nil || derr != nil || terr != nil || !r.verify(id, sec, body, req.Header.Get("webhook-signature")) {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.mu.Lock()
	a, seen := r.arrivals[id]
	if !seen {
		a = arrival{at: now, due: due}
	}
	a.count++
	r.arrivals[id] = a
	r.mu.Unlock()
	if ms, err := strconv.Atoi(req.URL.Query().Get("sleep_ms")); err == nil && ms > 0 {
		// A slow receiver: answer only after ms.
		n := r.sleeping.Add(1)
		for m := r.mostAsleep.Load(); n > m && !r.mostAsleep.CompareAndSwap(m, n); m = r.mostAsleep.Load() {
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-req.Context().Done():
		}
		r.sleeping.Add(-1)
	}
	w.WriteHeader(http.StatusNoContent)
}

// span returns the first and last arrival of ids.
func (r *benchReceiver) span(ids []string) (first, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		a, ok := r.arrivals[id]
		if !ok {
			continue
		}
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	return first, last
}

func (r *benchReceiver) verify(id string, ts int64, body []byte, header string) bool {
	for _, key := range r.keys {
		want := webhook.Sign(key, id, ts, body)
		for sig := range strings.FieldsSeq(header) {
			if sig == want {
				return true
			}
		}
	}
	return false
}

// outcome reports on the jobs ids: lateness of the first arrival of each,
// and how many never arrived, arrived more than once, or arrived early.
func (r *benchReceiver) outcome(ids []string) (lateness []time.Duration, lost, dups, early int, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		a, ok := r.arrivals[id]
		if !ok {
			lost++
			continue
		}
		dups += a.count - 1
		if a.at.Before(a.due) {
			early++
		}
		lateness = append(lateness, a.at.Sub(a.due))
		if a.at.After(last) {
			last = a.at
		}
	}
	return lateness, lost, dups, early, last
}

// waitArrived waits until every id arrived or until deadline.
func (r *benchReceiver) waitArrived(ctx context.Context, ids []string, deadline time.Time) {
	for i := 0; ; {
		r.mu.Lock()
		for i < len(ids) {
			if _, ok := r.arrivals[ids[i]]; !ok {
				break
			}
			i++
		}
		r.mu.Unlock()
		if i == len(ids) || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
