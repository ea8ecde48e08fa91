package main

import (
	"fmt"
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

// Issue 34, item 5, in a cluster: a member SIGKILLed and started again
// at once under its --member-id deletes the znodes its dead run left and
// takes its slots back, where it used to own nothing, as that run's
// younger duplicate, until ZooKeeper ended the dead session. Three
// members with a 10 s session and a one-minute lease, 6,000 jobs due over
// 12 s across six topics once the members share them, one member killed and restarted halfway: every
// job arrives, none early, and those due from the kill on within 2 s of
// the restart,
// against the 10 s of the session (or the minute of a lease).
func TestClusterRestartTakesBackItsSlots(t *testing.T) {
	const session = 10 * time.Second
	r, members := startClusterWith(t, tocBin, 3, session, time.Minute)
	hook := r.srv.URL + "/hook"
	// The six topics, with their 16 slots each, exist once a job was
	// scheduled on each; the jobs fall due once the members share them.
	var ids []string
	for i := range 6 {
		ids = append(ids, scheduleBatches(t, members[i%3], fmt.Sprintf("comeback%d", i), hook, 1, time.Now(), 0)...)
	}
	waitSettled(t, members, 3, 6*16, 30*time.Second)
	start := time.Now().Add(2 * time.Second)
	for i := range 6 {
		ids = append(ids, scheduleBatches(t, members[i%3], fmt.Sprintf("comeback%d", i), hook, 1000, start, 12*time.Second)...)
	}
	time.Sleep(time.Until(start.Add(6 * time.Second)))
	dead := members[1]
	args := dead.cmd.Args[1 : len(dead.cmd.Args)-2] // without the --addr startTocBin adds
	dead.kill(t)
	killed := time.Now()
	members[1] = startTocBin(t, tocBin, dead.token, args...)
	back := time.Since(killed)
	r.wait(t, r.expect(ids), 90*time.Second)
	r.check(t)

	// The jobs the restart could hold: due from 2 s before the kill (in
	// flight then) on. Those due earlier waited only for their own
	// scheduling, which under load can end after their due time.
	var after []string
	r.mu.Lock()
	for _, id := range ids {
		if !r.due[id].Before(killed.Add(-2 * time.Second)) {
			after = append(after, id)
		}
	}
	r.mu.Unlock()
	late := r.lateness(after)
	worst := late[len(late)-1]
	t.Logf("%d jobs arrived; of the %d due from 2 s before the kill on, lateness p50 %v p99 %v max %v; the member was back %v after its kill (session timeout %v)",
		len(ids), len(after), percentile(late, .5), percentile(late, .99), worst, back.Round(time.Millisecond), session)
	if limit := back + 2*time.Second; worst > limit {
		t.Errorf("a job arrived %v late, more than the restart (%v) plus 2 s", worst, back.Round(time.Millisecond))
	}
	if !strings.Contains(members[1].stderr.String(), "took over from this member's previous run") {
		t.Errorf("the restarted member does not say it took over its previous run's znodes:\n%s", tail(members[1].stderr.String(), 20))
	}
}
