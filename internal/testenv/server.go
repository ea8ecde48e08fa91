package testenv

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// server is what every kind of server shares: where it listens and keeps
// its files, its process, and how to run it. RedisServer, MariaDBServer and
// ZKServer embed it.
type server struct {
	Addr    string // 127.0.0.1:port
	Dir     string // the server's own temp dir: its data, log and socket
	LogFile string // stdout and stderr of every run

	port int
	proc process
	// cmdline is the command of a run; ping returns nil once the server
	// answers.
	cmdline func() []string
	ping    func() error
}

// init makes the server's temp dir, named after kind, and names its log.
func (s *server) init(name, kind, logName string) error {
	dir, err := makeDir(kind)
	if err != nil {
		return err
	}
	s.Dir, s.LogFile = dir, filepath.Join(dir, logName)
	s.proc = process{name: name, logFile: s.LogFile}
	return nil
}

// listen starts the server on a free loopback port, calling configure
// first once the port is known (nil: nothing to configure). On failure it
// deletes the server's dir.
func (s *server) listen(configure func() error) error {
	var err error
	s.port, err = withFreePort(func(port int) error {
		s.port = port
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if configure != nil {
			if err := configure(); err != nil {
				return err
			}
		}
		return s.start()
	})
	if err != nil {
		os.RemoveAll(s.Dir)
	}
	return err
}

// start runs the server and waits until it answers; it does nothing when
// the server is running.
func (s *server) start() error { return s.proc.start(s.cmdline(), s.ping) }

// Stop kills the server and deletes its dir.
func (s *server) Stop() error {
	err := s.proc.kill()
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// Kill sends SIGKILL to the server and waits until it has exited.
// It does nothing when the server is not running.
func (s *server) Kill(tb testing.TB) {
	tb.Helper()
	if err := s.proc.kill(); err != nil {
		tb.Fatalf("testenv: %v", err)
	}
}

// Start starts the server again on the same port and dir and waits until
// it answers (see the server's type for what that means and what survives
// a Kill). It does nothing when the server is running.
func (s *server) Start(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatalf("testenv: restart %s on %s: %v", s.proc.name, s.Addr, err)
	}
}

// PID returns the server's process id, 0 when it is not running: for
// reading its CPU time from /proc, as toc bench does.
func (s *server) PID() int { return s.proc.pid() }

func (s *server) base() *server { return s }

// anyServer is a *RedisServer, *MariaDBServer, *ZKServer or *NATSServer.
type anyServer interface{ base() *server }

// onceShared returns a function that starts the package's shared server of
// a kind on first use, registers it to be stopped by Main, and reports a
// failed start to every caller.
func onceShared[S anyServer](start func() (S, error)) func() (S, error) {
	return sync.OnceValues(func() (S, error) {
		s, err := start()
		if err != nil {
			return s, err
		}
		addShared(s.base().Stop)
		return s, nil
	})
}

// useShared returns the shared server that shared starts, started again if
// a test killed it and left it down; fn names the caller for requireMain.
func useShared[S anyServer](tb testing.TB, fn string, shared func() (S, error)) S {
	tb.Helper()
	requireMain(tb, fn)
	s, err := shared()
	if err != nil {
		unavailable(tb, err)
		return s
	}
	if !s.base().proc.running() {
		s.base().Start(tb)
	}
	return s
}

// newPrivate starts a server that tb's Cleanup stops and deletes, logging
// the tail of its log when the test failed.
func newPrivate[S anyServer](tb testing.TB, start func() (S, error)) S {
	tb.Helper()
	s, err := start()
	if err != nil {
		unavailable(tb, err)
		return s
	}
	b := s.base()
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("%s %s: %s", b.proc.name, b.Addr, logTail(b.LogFile, 15))
		}
		if err := b.Stop(); err != nil {
			tb.Errorf("testenv: %v", err)
		}
	})
	return s
}
