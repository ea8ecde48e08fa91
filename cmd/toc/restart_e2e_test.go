package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 34, item 5: a standalone toc SIGKILLed while its webhook calls
// are in flight, and started again under the same --member-id, takes back
// the leases its previous run held at once: those jobs arrive within
// seconds of the restart, not after their 30 s lease.
func TestRestartTakesBackItsLeases(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	r := newReceiver(t, e2eSecret)
	var (
		released atomic.Bool
		held     atomic.Int32
		stop     = make(chan struct{})
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if released.Load() {
			r.serve(w, req)
			return
		}
		held.Add(1)
		// The first run's calls hang until it dies. The body is read
		// first, so that the server sees the connection close.
		io.Copy(io.Discard, req.Body)
		select {
		case <-req.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() {
		close(stop)
		hook.Close()
	})
	args := []string{"serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--redis-prefix", "rs" + strings.ReplaceAll(t.Name(), "/", "") + ":",
		"--api-token", "t", "--webhook-secret", e2eSecret, "--allow-private-callbacks", "--member-id", "orders-1"}
	p := startToc(t, "t", args...)
	var ids []string
	for range 3 {
		status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "orders", "delay_ms": 0, "callback_url": hook.URL + "/hook"})
		if status != http.StatusCreated {
			t.Fatalf("schedule: %d %v", status, body)
		}
		ids = append(ids, body["id"].(string))
	}
	for deadline := time.Now().Add(10 * time.Second); held.Load() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 calls in flight after 10 s", held.Load())
		}
	}
	p.kill(t)
	released.Store(true)
	restarted := time.Now()
	q := startToc(t, "t", args...)
	r.wait(t, r.expect(ids), 45*time.Second)
	r.check(t)
	r.mu.Lock()
	var worst time.Duration
	for _, id := range ids {
		worst = max(worst, r.arrived[id][0].Sub(restarted))
	}
	r.mu.Unlock()
	t.Logf("the jobs in flight when toc died arrived within %v of its restart", worst.Round(time.Millisecond))
	if worst > 10*time.Second {
		t.Errorf("the jobs in flight when toc died arrived %v after its restart: their 30 s lease was waited out", worst)
	}
	if !strings.Contains(q.stderr.String(), "taking back the leases") {
		t.Errorf("the restarted toc does not say it took the leases back:\n%s", tail(q.stderr.String(), 20))
	}
}
