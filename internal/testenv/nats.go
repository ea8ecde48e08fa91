package testenv

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NATSServer is a nats-server with JetStream listening on Addr,
// 127.0.0.1:port (Addr, Dir and LogFile are fields of the embedded
// server). JetStream keeps its streams in Dir/jetstream, so streams and
// their messages survive a Kill and Start. Start waits until the server
// answers PING with PONG.
type NATSServer struct {
	server

	bin string
}

var sharedNATS = onceShared(startNATS)

// NATS returns the package's shared nats-server, started on first use and
// stopped by [Main]. A failed start is reported to every caller. If a test
// killed the server and left it down, NATS starts it again.
func NATS(tb testing.TB) *NATSServer {
	tb.Helper()
	return useShared(tb, "NATS", sharedNATS)
}

// NewNATS starts a private nats-server that tb's Cleanup stops and
// deletes; for tests that kill and restart it.
func NewNATS(tb testing.TB) *NATSServer {
	tb.Helper()
	return newPrivate(tb, startNATS)
}

func startNATS() (*NATSServer, error) {
	bins, err := lookPath("apt-get install nats-server", "nats-server")
	if err != nil {
		return nil, err
	}
	n := &NATSServer{bin: bins[0]}
	n.cmdline, n.ping = n.argv, n.Ping
	if err := n.init("nats-server", "nats", "nats.log"); err != nil {
		return nil, err
	}
	if err := n.listen(nil); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *NATSServer) argv() []string {
	return []string{n.bin,
		"-a", "127.0.0.1",
		"-p", strconv.Itoa(n.port),
		"-js",
		"-sd", n.Dir,
	}
}

// URL is the server's client URL, nats://127.0.0.1:port.
func (n *NATSServer) URL() string { return "nats://" + n.Addr }

// Ping connects, sends CONNECT and PING, and reports an error unless the
// server answers PONG.
func (n *NATSServer) Ping() error {
	conn, err := net.DialTimeout("tcp", n.Addr, time.Second)
	if err != nil {
		return fmt.Errorf("nats %s: %w", n.Addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return fmt.Errorf("nats %s: %w", n.Addr, err)
	}
	br := bufio.NewReader(conn)
	info, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("nats %s: read INFO: %w", n.Addr, err)
	}
	if !strings.HasPrefix(info, "INFO ") {
		return fmt.Errorf("nats %s: greeted with %q, want INFO", n.Addr, strings.TrimSpace(info))
	}
	if _, err := conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\n")); err != nil {
		return fmt.Errorf("nats %s: %w", n.Addr, err)
	}
	reply, err := br.ReadString('\n')
	if err != nil {
		return fmt.Errorf("nats %s: read PONG: %w", n.Addr, err)
	}
	if reply = strings.TrimSpace(reply); reply != "PONG" {
		return fmt.Errorf("nats %s: PING answered %q", n.Addr, reply)
	}
	return nil
}
