package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedisServer is a redis-server listening on 127.0.0.1.
type RedisServer struct {
	Addr    string // 127.0.0.1:port
	Dir     string // its working dir: the append-only files, if any, and the log
	LogFile string // stdout and stderr of every run

	opts RedisOptions
	bin  string
	port int
	proc process
}

// RedisOptions configures a private redis-server.
type RedisOptions struct {
	// AppendOnly turns the append-only file on, with appendfsync always, so
	// every write acknowledged before Kill is there again after Start.
	// Without it the server keeps nothing on disk and Kill loses all data.
	AppendOnly bool
	// Args are extra redis-server arguments, e.g. "--maxmemory", "64mb".
	Args []string
}

var sharedRedis = sync.OnceValues(func() (*RedisServer, error) {
	r, err := startRedis(RedisOptions{})
	if err != nil {
		return nil, err
	}
	addShared(r.stop)
	return r, nil
})

// Redis returns the package's shared redis-server, started on first use and
// stopped by [Main]. A failed start is reported to every caller. If a test
// killed the server and left it down, Redis starts it again.
func Redis(tb testing.TB) *RedisServer {
	tb.Helper()
	requireMain(tb, "Redis")
	r, err := sharedRedis()
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	if !r.proc.running() {
		r.Start(tb)
	}
	return r
}

// NewRedis starts a private redis-server without persistence that tb's
// Cleanup stops and deletes; for tests that kill and restart it.
func NewRedis(tb testing.TB) *RedisServer {
	tb.Helper()
	return NewRedisWith(tb, RedisOptions{})
}

// NewRedisWith is [NewRedis] with options.
func NewRedisWith(tb testing.TB, opts RedisOptions) *RedisServer {
	tb.Helper()
	r, err := startRedis(opts)
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("redis-server %s: %s", r.Addr, logTail(r.LogFile, 15))
		}
		if err := r.stop(); err != nil {
			tb.Errorf("testenv: %v", err)
		}
	})
	return r
}

func startRedis(opts RedisOptions) (*RedisServer, error) {
	bins, err := lookPath("apt-get install redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := makeDir("redis")
	if err != nil {
		return nil, err
	}
	r := &RedisServer{
		Dir:     dir,
		LogFile: filepath.Join(dir, "redis.log"),
		opts:    opts,
		bin:     bins[0],
	}
	r.proc = process{name: "redis-server", logFile: r.LogFile}
	r.port, err = withFreePort(func(port int) error {
		r.port = port
		r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return r.start()
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return r, nil
}

func (r *RedisServer) start() error {
	argv := []string{r.bin,
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--dir", r.Dir,
		"--daemonize", "no",
		"--logfile", "",
		"--save", "",
	}
	if r.opts.AppendOnly {
		argv = append(argv, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		argv = append(argv, "--appendonly", "no")
	}
	argv = append(argv, r.opts.Args...)
	return r.proc.start(argv, r.Ping)
}

func (r *RedisServer) stop() error {
	err := r.proc.kill()
	return errors.Join(err, os.RemoveAll(r.Dir))
}

// Kill sends SIGKILL to the server and waits until it has exited.
// It does nothing when the server is not running.
func (r *RedisServer) Kill(tb testing.TB) {
	tb.Helper()
	if err := r.proc.kill(); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Start starts the server again on the same port and dir and waits until it
// answers PING. It does nothing when the server is running.
func (r *RedisServer) Start(tb testing.TB) {
	tb.Helper()
	if err := r.start(); err != nil {
		tb.Fatalf("testenv: restart redis-server on %s: %v", r.Addr, err)
	}
}

// Ping sends PING and reports an error unless the server answers PONG.
func (r *RedisServer) Ping() error {
	reply, err := respDo(r.Addr, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("redis %s: PING answered %q", r.Addr, reply)
	}
	return nil
}

// FlushAll deletes every key in every database.
func (r *RedisServer) FlushAll(tb testing.TB) {
	tb.Helper()
	if _, err := respDo(r.Addr, "FLUSHALL"); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Do sends one command and returns its reply: the text of a simple string,
// the digits of an integer, the bytes of a bulk string ("" for nil). Error
// replies and arrays are errors.
func (r *RedisServer) Do(args ...string) (string, error) {
	return respDo(r.Addr, args...)
}

// respDo is a minimal RESP2 client: one connection, one command, one reply.
func respDo(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", fmt.Errorf("redis %s: %w", addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", fmt.Errorf("redis %s: %w", addr, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return "", fmt.Errorf("redis %s: %w", addr, err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("redis %s: read reply: %w", addr, err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("redis %s: empty reply", addr)
	}
	switch body := line[1:]; line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", fmt.Errorf("redis %s: %s", addr, body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("redis %s: bad bulk length %q", addr, body)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", fmt.Errorf("redis %s: read reply: %w", addr, err)
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("redis %s: unsupported reply %q", addr, line)
	}
}
