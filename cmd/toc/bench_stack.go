package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/toc-project/toc/internal/testenv"
)

// benchSecret is the webhook secret of a toc the bench starts itself.
const benchSecret = "whsec_dG9jLWJlbmNoLXNpZ25pbmcta2V5LTI0Yg=="

// startBench starts the receiver and the stack cfg names (real,
// embedded or external), and returns the bench with toc answering.
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
	b.client = &fasthttp.Client{MaxConnsPerHost: 512, MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true}

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
	if cfg.redisCluster {
		if redisAddr != "" {
			b.close()
			return nil, errors.New("--redis-cluster starts a cluster: give it without --redis-addr")
		}
		c, err := testenv.StartRedisCluster(testenv.RedisClusterOptions{})
		if err != nil {
			b.close()
			return nil, fmt.Errorf("start a redis cluster: %w", err)
		}
		b.closers = append(b.closers, func() { c.Stop() })
		redisAddr = strings.Join(c.Addrs(), ",")
	}
	if redisAddr == "" {
		r, err := testenv.StartRedis(testenv.RedisOptions{})
		if err != nil {
			b.close()
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		b.closers = append(b.closers, func() { r.Stop() })
		redisAddr = r.Addr
	}
	var dsns []string
	switch {
	case dsn != "" && cfg.storeShards > 1:
		b.close()
		return nil, errors.New("--store-shards starts its mariadbds: give it without --mysql-dsn")
	case dsn != "":
		dsns = []string{dsn}
	}
	for len(dsns) < cfg.storeShards {
		m, err := testenv.StartMariaDB()
		if err != nil {
			b.close()
			return nil, fmt.Errorf("start mariadbd: %w", err)
		}
		b.closers = append(b.closers, func() { m.Stop() })
		b.storePIDs = append(b.storePIDs, m.PID())
		dsn, err := m.CreateDatabase("tocbench")
		if err != nil {
			b.close()
			return nil, err
		}
		dsns = append(dsns, dsn)
	}
	// The scenarios that read Redis (memory, recover, its CPU) read one
	// server, or every master of a cluster (see redisInfo).
	if cfg.redisCluster {
		b.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(redisAddr, ","), PoolSize: 32})
	} else {
		b.rdb = redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 32})
	}
	b.closers = append(b.closers, func() { b.rdb.Close() })
	if err := b.flushAll(ctx); err != nil {
		b.close()
		return nil, fmt.Errorf("redis at %s: %w", redisAddr, err)
	}
	b.token, b.redisAddr = "bench-token", redisAddr
	args := []string{"serve", "--redis-addr", redisAddr, "--api-token", b.token, "--webhook-secret", benchSecret, "--allow-private-callbacks"}
	for _, d := range dsns {
		args = append(args, "--mysql-dsn", d)
	}
	b.serveArgs, b.dsns = args, dsns
	err = b.startToc(ctx, args...)
	if err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// startToc runs this binary as toc's child process, waits until it
// answers /healthz, and makes it the toc the scenarios measure.
func (b *bench) startToc(ctx context.Context, args ...string) error {
	t, err := b.runToc(ctx, "toc", args...)
	if err != nil {
		return err
	}
	b.closers = append(b.closers, t.stop)
	b.toc, b.url, b.tocPID, b.pprof = t, t.url, t.pid, t.pprof
	return nil
}

// tocChild is a toc that the bench runs as its child process.
type tocChild struct {
	url   string
	pid   int
	pprof string // its pprof address, when profiling
	// stop sends SIGTERM, then SIGKILL after 15 s, and waits until toc
	// has exited.
	stop func()
}

// runToc runs this binary with args (and --toc-args) as a child process
// and waits until it answers /healthz. With --profile, its CPU profile
// goes to NAME.cpu.pprof in the profile dir.
func (b *bench) runToc(ctx context.Context, name string, args ...string) (*tocChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return b.runTocBin(ctx, exe, name, true, args...)
}

// runTocBin runs exe, a toc binary, as runToc runs this one. --profile's
// flags and --toc-args go to it when mine is true: a release's toc may
// not know them.
func (b *bench) runTocBin(ctx context.Context, exe, name string, mine bool, args ...string) (*tocChild, error) {
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	t := &tocChild{url: "http://" + addr}
	args = append(args, "--addr", addr, "--log-level", "warn")
	if b.cfg.profileDir != "" && mine {
		if err := os.MkdirAll(b.cfg.profileDir, 0o755); err != nil {
			return nil, err
		}
		if t.pprof, err = freeLoopback(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-addr", t.pprof, "--cpu-profile", filepath.Join(b.cfg.profileDir, name+".cpu.pprof"))
	}
	if mine {
		args = append(args, b.cfg.tocArgs...)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = b.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.pid = cmd.Process.Pid
	t.stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err := http.Get(t.url + "/healthz"); err == nil {
			resp.Body.Close()
			return t, nil
		}
		select {
		case <-done:
			return nil, fmt.Errorf("toc %s exited at start", args[0])
		case <-ctx.Done():
			t.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.stop()
			return nil, errors.New("toc did not answer /healthz within 60 s")
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
