package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RedisServer is a redis-server listening on Addr, 127.0.0.1:port (Addr,
// Dir and LogFile are fields of the embedded server). Dir is its working
// dir: the append-only files, if any, and the log. Start, after a Kill,
// waits until it answers PING.
type RedisServer struct {
	server

	opts RedisOptions
	bin  string
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

var sharedRedis = onceShared(func() (*RedisServer, error) { return startRedis(RedisOptions{}) })

// Redis returns the package's shared redis-server, started on first use and
// stopped by [Main]. A failed start is reported to every caller. If a test
// killed the server and left it down, Redis starts it again.
func Redis(tb testing.TB) *RedisServer {
	tb.Helper()
	return useShared(tb, "Redis", sharedRedis)
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
	return newPrivate(tb, func() (*RedisServer, error) { return startRedis(opts) })
}

func startRedis(opts RedisOptions) (*RedisServer, error) {
	bins, err := lookPath("apt-get install redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	r := &RedisServer{opts: opts, bin: bins[0]}
	r.cmdline, r.ping = r.argv, r.Ping
	if err := r.init("redis-server", "redis", "redis.log"); err != nil {
		return nil, err
	}
	if err := r.listen(nil); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RedisServer) argv() []string {
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
	return append(argv, r.opts.Args...)
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
// the digits of an integer, the bytes of a bulk string ("" for nil), the
// values of an array joined by newlines. Error replies are errors.
func (r *RedisServer) Do(args ...string) (string, error) {
	return respDo(r.Addr, args...)
}

// respDo is a minimal RESP2 client: one connection, one command, one reply.
// An array reply comes back as its elements' text joined by newlines,
// nested arrays flattened.
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
	var out []string
	if err := readReply(bufio.NewReader(conn), &out); err != nil {
		return "", fmt.Errorf("redis %s: %w", addr, err)
	}
	return strings.Join(out, "\n"), nil
}

// readReply appends the text of one reply's values to out.
func readReply(br *bufio.Reader, out *[]string) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return errors.New("empty reply")
	}
	switch body := line[1:]; line[0] {
	case '+', ':':
		*out = append(*out, body)
	case '-':
		return errors.New(body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			*out = append(*out, "")
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("read reply: %w", err)
		}
		*out = append(*out, string(buf[:n]))
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return fmt.Errorf("bad array length %q", body)
		}
		for range n {
			if err := readReply(br, out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported reply %q", line)
	}
	return nil
}
