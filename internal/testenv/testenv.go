package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// RequireEnv is the environment variable that turns a missing binary or a
// failed start into a test failure instead of a skip.
const RequireEnv = "TOC_REQUIRE_INTEGRATION"

const (
	// readyTimeout bounds every wait for a server to answer.
	readyTimeout = 30 * time.Second
	// killTimeout bounds the wait for a SIGKILLed process to be reaped.
	killTimeout = 10 * time.Second
	// ownerFile in a temp dir names the pid of the test binary that made it;
	// Main deletes dirs whose owner is gone (left behind by a crash).
	ownerFile = ".testenv-owner"
	dirPrefix = "toc-"
)

var (
	mainActive atomic.Bool

	sharedMu    sync.Mutex
	sharedStops []func() error
)

// Main runs m and then stops every shared server this test binary started.
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
//
// Servers left running because the binary crashed are killed by their
// parent-death signal (Linux); their temp dirs are removed by the next Main.
func Main(m *testing.M) (code int) {
	mainActive.Store(true)
	removeStaleDirs()
	defer func() { // deferred, so a panic out of m.Run stops them too
		if err := stopShared(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: stopping shared servers: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}()
	return m.Run()
}

// Required reports whether TOC_REQUIRE_INTEGRATION is set to a true value
// ("1", "true"): then a missing binary or a server that fails to start fails
// the test (tb.Fatalf) instead of skipping it (tb.Skipf).
func Required() bool {
	v, _ := strconv.ParseBool(os.Getenv(RequireEnv))
	return v
}

// unavailable skips the test, or fails it under Required.
func unavailable(tb testing.TB, err error) {
	tb.Helper()
	if Required() {
		tb.Fatalf("testenv: %v", err)
		return
	}
	tb.Skipf("testenv (skipped; %s=1 makes this a failure): %v", RequireEnv, err)
}

// requireMain fails the test when the package's TestMain does not call Main:
// without it the shared servers and their temp dirs would outlive the tests.
func requireMain(tb testing.TB, fn string) {
	tb.Helper()
	if !mainActive.Load() {
		tb.Fatalf("testenv.%s: shared servers need testenv.Main; add to the package's tests:\n"+
			"\tfunc TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }", fn)
	}
}

// addShared registers stop to be run by Main after the tests.
func addShared(stop func() error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	sharedStops = append(sharedStops, stop)
}

func stopShared() error {
	sharedMu.Lock()
	stops := sharedStops
	sharedStops = nil
	sharedMu.Unlock()
	var errs []error
	for _, stop := range stops {
		errs = append(errs, stop())
	}
	return errors.Join(errs...)
}

// missingError reports a binary or file that is not installed.
type missingError struct {
	what string // "redis-server not found on PATH"
	hint string // how to install it
}

func (e *missingError) Error() string {
	return fmt.Sprintf("%s (%s)", e.what, e.hint)
}

// sbinDirs are searched after PATH: Debian installs mariadbd in /usr/sbin,
// which is not on a normal user's PATH.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// lookPath finds the named binaries on PATH or in sbinDirs, in order.
func lookPath(hint string, names ...string) ([]string, error) {
	paths := make([]string, len(names))
	for i, name := range names {
		p, err := exec.LookPath(name)
		for _, dir := range sbinDirs {
			if err == nil {
				break
			}
			p, err = exec.LookPath(filepath.Join(dir, name))
		}
		if err != nil {
			return nil, &missingError{what: name + " not found on PATH", hint: hint}
		}
		paths[i] = p
	}
	return paths, nil
}

// freePort returns a loopback port that was free a moment ago. It is
// drawn below Linux's ephemeral range (32768 and up), where the kernel
// picks the local ports of outgoing connections and ":0" listeners: a
// server killed by a test keeps its port free for its restart, and a proxy
// cut by a test can listen on its address again. (CI once failed when an
// ephemeral port was taken between a cut and a restore.)
func freePort() (int, error) {
	var err error
	for range 50 {
		var l net.Listener
		if l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))); err == nil {
			defer l.Close()
			return l.Addr().(*net.TCPAddr).Port, nil
		}
	}
	return 0, fmt.Errorf("find a free port from 20000 to 32000 in 50 tries: %w", err)
}

// FreeAddr returns a loopback address that was free a moment ago, on a
// port as freePort chooses it.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// withFreePort calls start with a free port, and again with another one
// (up to 3 tries) when the server could not bind it: between freePort and the
// server's bind, another process may take the port.
func withFreePort(start func(port int) error) (int, error) {
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			return 0, err
		}
		if err = start(port); err == nil {
			return port, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") {
			return 0, err
		}
	}
	return 0, err
}

// tempRoot is where server dirs go: os.TempDir() unless it is too long for
// unix socket paths, then /tmp.
func tempRoot() string {
	d := os.TempDir()
	if len(d) > 40 {
		d = "/tmp"
	}
	return d
}

// makeDir creates a server's temp dir, e.g. /tmp/toc-redis-123456, and
// marks it with the pid of this process.
func makeDir(kind string) (string, error) {
	dir, err := os.MkdirTemp(tempRoot(), dirPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("create temp dir: %w", err)
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), pid, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("create temp dir: %w", err)
	}
	return dir, nil
}

// removeStaleDirs deletes server dirs whose owning test binary has exited.
func removeStaleDirs() {
	owners, _ := filepath.Glob(filepath.Join(tempRoot(), dirPrefix+"*", ownerFile))
	for _, owner := range owners {
		b, err := os.ReadFile(owner)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Dir(owner))
		}
	}
}

// logTail returns the last lines of a log file, for error messages.
func logTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const tailBytes = 8 << 10
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	off := max(fi.Size()-tailBytes, 0)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	buf = bytes.TrimRight(buf[:n], "\n")
	all := strings.Split(string(buf), "\n")
	if off > 0 && len(all) > 1 {
		all = all[1:] // first line is probably cut
	}
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	if len(all) == 0 || (len(all) == 1 && all[0] == "") {
		return "(log " + path + " is empty)"
	}
	return "last lines of " + path + ":\n\t" + strings.Join(all, "\n\t")
}
