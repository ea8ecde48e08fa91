package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// --shutdown-delay: on SIGTERM /readyz fails at once, naming the
// shutdown, while the API still takes jobs (a load balancer's time to
// stop sending to the member); after the delay toc stops, and exits 0.
// A negative delay stops toc at start, naming the flag.
func TestShutdownDelay(t *testing.T) {
	const delay = 2 * time.Second
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("sd%d:", time.Now().UnixNano()),
		"--shutdown-delay", delay.String())
	r := newReceiver(t, e2eSecret)
	readyz := func() (int, string) {
		t.Helper()
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _ := readyz(); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			code, body := readyz()
			t.Fatalf("/readyz never ready: %d %s", code, body)
		}
	}

	sent := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(delay / 2); ; time.Sleep(10 * time.Millisecond) {
		code, body := readyz()
		if code == http.StatusServiceUnavailable && strings.Contains(body, `"shutdown":"failing"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %v after SIGTERM: %d %s; want 503 naming the shutdown", time.Since(sent).Round(time.Millisecond), code, body)
		}
	}
	if status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "draining", "delay_ms": 60_000, "callback_url": r.srv.URL}); status != http.StatusCreated {
		t.Errorf("a job sent within the delay: %d %v, want 201", status, body)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("toc did not stop after its shutdown delay")
	}
	if took := time.Since(sent); took < delay {
		t.Errorf("toc stopped %v after SIGTERM, before its %v delay", took.Round(time.Millisecond), delay)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("toc exited %d\n%s", code, tail(p.stderr.String(), 20))
	}

	if out, err := runTocCmd(t, "dev", "--addr", "127.0.0.1:0", "--shutdown-delay", "-1s"); err == nil || !strings.Contains(out, "--shutdown-delay: -1s") {
		t.Errorf("toc dev --shutdown-delay -1s = %v\n%s\nwant an error naming the flag", err, out)
	}
}
