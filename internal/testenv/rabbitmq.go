package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The machine's RabbitMQ, which runs as a system service: a test gets a
// virtual host of its own on it rather than a server (an Erlang node takes
// seconds and hundreds of MB to start).
const (
	rabbitAddr = "127.0.0.1:5672"
	rabbitUser = "guest"
	rabbitPass = "guest"
	// rabbitVHostPrefix starts the name of every vhost testenv makes,
	// followed by the pid of the test binary that made it.
	rabbitVHostPrefix = "toc-test-"
	// rabbitctlTimeout bounds one rabbitmqctl command (about a second each).
	rabbitctlTimeout = time.Minute
)

// RabbitVHost is a virtual host of its own on the machine's RabbitMQ
// (127.0.0.1:5672, guest/guest), deleted with everything in it by the
// test's Cleanup.
type RabbitVHost struct {
	// Name is the vhost, e.g. toc-test-4242-3.
	Name string
	// URL is amqp://guest:guest@127.0.0.1:5672/<Name>.
	URL string

	ctl string // rabbitmqctl
}

var (
	rabbitSeq       atomic.Int64
	rabbitStaleOnce sync.Once
)

// RabbitMQ makes a vhost on the machine's RabbitMQ with all permissions
// for guest and deletes it when tb ends. When rabbitmqctl is missing or
// the broker does not answer on 127.0.0.1:5672, the test is skipped, or
// fails under [Required]: the broker is a system service that testenv does
// not start (`rabbitmq-server -detached` does).
func RabbitMQ(tb testing.TB) *RabbitVHost {
	tb.Helper()
	bins, err := lookPath("apt-get install rabbitmq-server", "rabbitmqctl")
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	conn, err := net.DialTimeout("tcp", rabbitAddr, time.Second)
	if err != nil {
		unavailable(tb, fmt.Errorf("RabbitMQ does not answer on %s (rabbitmq-server -detached starts it): %w", rabbitAddr, err))
		return nil
	}
	conn.Close()
	v := &RabbitVHost{ctl: bins[0]}
	rabbitStaleOnce.Do(v.deleteStale)
	v.Name = fmt.Sprintf("%s%d-%d", rabbitVHostPrefix, os.Getpid(), rabbitSeq.Add(1))
	v.URL = (&url.URL{Scheme: "amqp", User: url.UserPassword(rabbitUser, rabbitPass), Host: rabbitAddr, Path: "/" + v.Name}).String()
	if _, err := v.run("add_vhost", v.Name); err != nil {
		unavailable(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		if _, err := v.run("delete_vhost", v.Name); err != nil {
			tb.Errorf("testenv: %v", err)
		}
	})
	if _, err := v.run("set_permissions", "-p", v.Name, rabbitUser, ".*", ".*", ".*"); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return v
}

// CloseConnections closes every client connection to the vhost, as a
// broker restart would: the clients see their connection closed with
// CONNECTION_FORCED (320).
func (v *RabbitVHost) CloseConnections(tb testing.TB) {
	tb.Helper()
	if _, err := v.run("close_all_connections", "--vhost", v.Name, "--limit", "1000", "testenv: closed by the test"); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Down takes the vhost down for its clients as a stopped broker would,
// without touching the other tests' vhosts: it refuses new connections
// (a connection limit of 0) and closes those it has. Up ends it.
func (v *RabbitVHost) Down(tb testing.TB) {
	tb.Helper()
	if _, err := v.run("set_vhost_limits", "-p", v.Name, `{"max-connections": 0}`); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	v.CloseConnections(tb)
}

// Up lets clients connect to the vhost again after Down.
func (v *RabbitVHost) Up(tb testing.TB) {
	tb.Helper()
	if _, err := v.run("clear_vhost_limits", "-p", v.Name); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Connections returns how many client connections the vhost has.
func (v *RabbitVHost) Connections(tb testing.TB) int {
	tb.Helper()
	out, err := v.run("list_connections", "--quiet", "--no-table-headers", "vhost")
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	n := 0
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == v.Name {
			n++
		}
	}
	return n
}

// run runs rabbitmqctl with args and returns its output.
func (v *RabbitVHost) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rabbitctlTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, v.ctl, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("rabbitmqctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// deleteStale deletes the vhosts left by test binaries that have exited
// (crashed before their Cleanup).
func (v *RabbitVHost) deleteStale() {
	out, err := v.run("list_vhosts", "--quiet", "--no-table-headers", "name")
	if err != nil {
		return
	}
	for line := range strings.Lines(out) {
		name := strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(name, rabbitVHostPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_, _ = v.run("delete_vhost", name)
		}
	}
}
