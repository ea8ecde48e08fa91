package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
)

// The bullmq scenario runs BullMQ, the Redis-only queue issue 35 compares
// toc's CPU a job with, on this machine, so that a figure of toc can be
// read against the peer's from the same minute: the machine's speed
// drifts by a third from one hour to the next, and the ratio does not.
// The Node side (peers/bullmq) is embedded; its packages, pinned by its
// lock file, are installed once by npm ci into the user's cache.

//go:embed peers/bullmq/package.json peers/bullmq/package-lock.json peers/bullmq/bench.mjs
var bullmqPeer embed.FS

// bullmqConcurrency is the peer's callers adding jobs, as toc's schedule
// and coalesce scenarios' 64 clients, and its Worker's concurrency, as
// toc's default worker concurrency.
const bullmqConcurrency = 64

// bullmq measures BullMQ's single add from 64 callers for --duration and
// its drain of --drain-jobs due at once, each on a redis-server of its
// own, with the CPU a job cost BullMQ's process, Redis and the machine.
func (b *bench) bullmq(ctx context.Context) ([]result, error) {
	dir, err := b.bullmqDir(ctx)
	if err != nil {
		return nil, err
	}
	var res []result
	for _, run := range []struct {
		phase, name string
		amount      int
	}{
		{"add", fmt.Sprintf("bullmq add c=%d", bullmqConcurrency), int(b.cfg.duration.Milliseconds())},
		{"drain", fmt.Sprintf("bullmq drain %d due at once", b.cfg.drainJobs), b.cfg.drainJobs},
	} {
		r, err := b.bullmqRun(ctx, dir, run.phase, run.amount)
		if err != nil {
			return res, fmt.Errorf("bullmq %s: %w", run.phase, err)
		}
		r.Name = run.name
		res = append(res, r)
	}
	return res, nil
}

// bullmqRun runs one phase of peers/bullmq/bench.mjs against a new
// redis-server and reads the CPU of each part around the measured part:
// from the phase's "ready" line to its "done" line.
func (b *bench) bullmqRun(ctx context.Context, dir, phase string, amount int) (result, error) {
	srv, err := testenv.StartRedis(testenv.RedisOptions{})
	if err != nil {
		return result{}, fmt.Errorf("start redis-server: %w", err)
	}
	defer srv.Stop()
	host, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		return result{}, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()

	cmd := exec.CommandContext(ctx, "node", "bench.mjs", phase, host, port, strconv.Itoa(bullmqConcurrency), strconv.Itoa(amount))
	cmd.Dir, cmd.Stderr = dir, b.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("node: %w", err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	type line struct {
		Ready, Done string
		Count       int
		Errors      int
		Seconds     float64
		Latency     *dist `json:"latency_ms"`
	}
	var out line
	// next reads up to the line that says want is ready or done.
	next := func(want string) error {
		for lines.Scan() {
			var l line
			if json.Unmarshal(lines.Bytes(), &l) == nil && (l.Ready == want || l.Done == want) {
				out = l
				return nil
			}
		}
		return cmp.Or(lines.Err(), fmt.Errorf("node exited before %q (its error is in the log above)", want))
	}
	if err := next(phase); err != nil {
		return result{}, err
	}
	before := peerMark(ctx, cmd.Process.Pid, rdb)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		return result{}, err
	}
	if err := next(phase); err != nil || out.Done != phase {
		return result{}, cmp.Or(err, fmt.Errorf("no %q result", phase))
	}
	after := peerMark(ctx, cmd.Process.Pid, rdb)
	r := result{Scenario: "bullmq", Count: out.Count, Errors: out.Errors, Seconds: out.Seconds, Latency: out.Latency}
	if out.Seconds > 0 {
		r.Rate = float64(out.Count-out.Errors) / out.Seconds
	}
	r.Extra = after.perJob(before, out.Count-out.Errors)
	return r, nil
}

// peerCPU is what the peer's parts had used at one moment: BullMQ's
// process (its callers, or its Worker and handler), its redis-server and
// the machine; -1 for a part that could not be read.
type peerCPU struct {
	node, redis time.Duration
	machine     machineCPU
}

func peerMark(ctx context.Context, pid int, rdb *redis.Client) peerCPU {
	m := peerCPU{node: -1, redis: -1, machine: readMachineCPU()}
	if cpu, err := cpuTime(pid); err == nil {
		m.node = cpu
	}
	user, err1 := infoField(ctx, rdb, "cpu", "used_cpu_user")
	sys, err2 := infoField(ctx, rdb, "cpu", "used_cpu_sys")
	if err1 == nil && err2 == nil {
		m.redis = time.Duration((user + sys) * float64(time.Second))
	}
	return m
}

// perJob is what jobs cost each part between m0 and m, in µs a job, with
// the names toc's scenarios use (cpuPerJob); BullMQ's process is
// "bullmq".
func (m peerCPU) perJob(m0 peerCPU, jobs int) map[string]any {
	return perJobCPU(jobs, m0.machine, m.machine, map[string][2]time.Duration{"bullmq": {m0.node, m.node}, "redis": {m0.redis, m.redis}})
}

// bullmqDir returns a directory holding peers/bullmq with its packages
// installed: in the user's cache, named by a hash of the package files,
// so that npm ci runs once for each version of them; bench.mjs is
// written there each time.
func (b *bench) bullmqDir(ctx context.Context) (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("the bullmq scenario needs node and npm (apt-get install nodejs npm): %w", err)
		}
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	files, err := fs.Sub(bullmqPeer, "peers/bullmq")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	names := []string{"package.json", "package-lock.json"}
	for _, name := range names {
		data, err := fs.ReadFile(files, name)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	dir := filepath.Join(cache, "toc", "bench-bullmq-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, writeBullmqScript(files, dir)
	}
	// Install beside it, then rename: a bench that stops half way, or
	// another one installing at the same time, leaves no half-installed
	// directory under the final name.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, name := range names {
		data, _ := fs.ReadFile(files, name)
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(b.log, "bullmq: npm ci in %s\n", dir)
	npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	npm.Dir, npm.Stdout, npm.Stderr = tmp, b.log, b.log
	npm.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if err := npm.Run(); err != nil {
		return "", fmt.Errorf("npm ci for the bullmq scenario: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); statErr != nil {
			return "", err
		}
	}
	return dir, writeBullmqScript(files, dir)
}

// writeBullmqScript writes the embedded bench.mjs into dir.
func writeBullmqScript(files fs.FS, dir string) error {
	data, err := fs.ReadFile(files, "bench.mjs")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "bench.mjs"), data, 0o644)
}
