package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// pullWorker long-polls a pull topic over HTTP, as a worker in another
// language would.
type pullWorker struct {
	p     *proc
	topic string
}

type pulledLease struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Job       struct {
		ID      string    `json:"id"`
		FireAt  time.Time `json:"fire_at"`
		Attempt int       `json:"attempt"`
		Payload struct {
			N int `json:"n"`
		} `json:"payload"`
	} `json:"job"`
	got time.Time
}

// post makes one call; it never fails the test, for it runs off the
// test's goroutine.
func (w pullWorker) post(ctx context.Context, path string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", w.p.url+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.p.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

func (w pullWorker) lease(ctx context.Context, maxJobs int, wait, lease time.Duration) ([]pulledLease, error) {
	status, body, err := w.post(ctx, "/v1/topics/"+w.topic+"/leases", map[string]int64{"max": int64(maxJobs), "wait_ms": wait.Milliseconds(), "lease_ms": lease.Milliseconds()})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("lease: %d %s", status, body)
	}
	var out struct {
		Leases []pulledLease `json:"leases"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range out.Leases {
		out.Leases[i].got = now
	}
	return out.Leases, nil
}

// Pull delivery end to end (issue 36) on MariaDB and redis-server: a pull
// topic's jobs go to workers that long-poll; none before its due time;
// an ack ends a job done, a nack retries it after the delay asked, a
// lease left to expire retries it with its attempt counted, and a job
// leased cannot be cancelled (409 in_flight) until its lease ends.
func TestDeliveryPull(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("pull%d:", time.Now().UnixNano()))
	if status, body := p.call(t, "PUT", "/v1/topics/work", map[string]any{"delivery": "pull", "retry": map[string]int{"base_ms": 100, "max_ms": 400}, "callback_timeout_ms": 5000}); status != http.StatusCreated || body["delivery"] != "pull" {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	// A pull topic's job takes no callback; a webhook topic has no leases.
	if status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "work", "delay_ms": 1000, "callback_url": "http://localhost:1/x"}); status != http.StatusBadRequest || errField(body) != "callback_url" {
		t.Errorf("a pull topic's job with a callback_url: %d %v, want 400 naming callback_url", status, body)
	}
	if status, body := p.call(t, "POST", "/v1/topics/hooks/leases", map[string]any{"wait_ms": 0}); status != http.StatusBadRequest || errField(body) != "topic" {
		t.Errorf("leasing a webhook topic: %d %v, want 400 naming topic", status, body)
	}
	if status, body := p.call(t, "POST", "/v1/topics/work/leases", map[string]any{"max": 1001}); status != http.StatusBadRequest || errField(body) != "max" {
		t.Errorf("max 1001: %d %v, want 400 naming max", status, body)
	}

	if status, stats := p.call(t, "GET", "/v1/topics/work/stats", nil); status != http.StatusOK || stats["delivery"] != "pull" || stats["pull"] == nil {
		t.Errorf("stats of a pull topic: %d %v, want its way and its workers", status, stats)
	}

	const n = 60
	ids := busJobs(t, p, "work", n, 2*time.Second)
	const nacked, expired, cancelled = 7, 11, 13

	w := pullWorker{p: p, topic: "work"}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var (
		mu      sync.Mutex
		leases  = map[string][]pulledLease{} // by job id
		done    = map[string]bool{}
		workers sync.WaitGroup
		lateAck string // a lease left to expire, acked too late
	)
	handle := func(l pulledLease) {
		mu.Lock()
		leases[l.Job.ID] = append(leases[l.Job.ID], l)
		mu.Unlock()
		switch {
		case l.Job.Payload.N == nacked && l.Job.Attempt == 1:
			if status, body, err := w.post(ctx, "/v1/leases/"+l.Token+"/nack", map[string]any{"delay_ms": 300, "error": "not yet"}); err != nil || status != http.StatusOK {
				t.Errorf("nack: %d %s %v", status, body, err)
			}
			return
		case l.Job.Payload.N == expired && l.Job.Attempt == 1:
			mu.Lock()
			lateAck = l.Token
			mu.Unlock()
			return // left to expire
		case l.Job.Payload.N == cancelled:
			// Leased: firing. A cancel cannot stop it now.
			req, _ := http.NewRequestWithContext(ctx, "DELETE", p.url+"/v1/jobs/"+l.Job.ID, nil)
			req.Header.Set("Authorization", "Bearer "+p.token)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusConflict || !bytes.Contains(body, []byte(`"in_flight"`)) {
					t.Errorf("DELETE of a leased job: %d %s, want 409 in_flight", resp.StatusCode, body)
				}
			}
		}
		if status, body, err := w.post(ctx, "/v1/leases/"+l.Token+"/ack", nil); err != nil || status != http.StatusOK {
			t.Errorf("ack %s: %d %s %v", l.Token, status, body, err)
			return
		}
		mu.Lock()
		done[l.Job.ID] = true
		mu.Unlock()
	}
	for range 3 {
		workers.Go(func() {
			for ctx.Err() == nil {
				got, err := w.lease(ctx, 5, 2*time.Second, time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("lease: %v", err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				for _, l := range got {
					handle(l)
				}
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		finished := len(done)
		mu.Unlock()
		if finished == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs acked within 30 s", finished, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	workers.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, id := range ids {
		ls := leases[id]
		want := 1
		if i == nacked || i == expired {
			want = 2
		}
		if len(ls) != want {
			t.Errorf("job %d (%s) was leased %d times, want %d", i, id, len(ls), want)
		}
		for _, l := range ls {
			if l.got.Before(l.Job.FireAt) {
				t.Errorf("job %d leased %v before its due time", i, l.Job.FireAt.Sub(l.got))
			}
			if l.ExpiresAt.Before(l.got) {
				t.Errorf("job %d's lease expires at %v, before it was handed over", i, l.ExpiresAt)
			}
		}
		if want == 2 && len(ls) == 2 {
			if ls[1].Job.Attempt != 2 {
				t.Errorf("job %d's second lease is attempt %d, want 2", i, ls[1].Job.Attempt)
			}
			if gap := ls[1].got.Sub(ls[0].got); i == nacked && gap < 300*time.Millisecond {
				t.Errorf("the nacked job came back after %v, before the 300 ms it asked", gap)
			}
			if gap := ls[1].got.Sub(ls[0].got); i == expired && gap < time.Second {
				t.Errorf("the expired job came back after %v, before its 1 s lease ended", gap)
			}
		}
	}
	// The lease that expired cannot be acked now.
	if status, body, _ := w.post(t.Context(), "/v1/leases/"+lateAck+"/ack", nil); status != http.StatusConflict || !bytes.Contains(body, []byte(`"lease_ended"`)) {
		t.Errorf("ack of an expired lease: %d %s, want 409 lease_ended", status, body)
	}
	for i, id := range ids {
		job := waitJob(t, p, id, "done")
		if want := map[int]float64{nacked: 2, expired: 2}[i]; want != 0 && job["attempts"] != want {
			t.Errorf("job %d: %v attempts, want %v", i, job["attempts"], want)
		}
	}
	status, body := p.call(t, "GET", "/v1/jobs/"+ids[nacked]+"/attempts", nil)
	if as, _ := body["attempts"].([]any); status != http.StatusOK || len(as) != 2 || as[0].(map[string]any)["error"] != "nacked by the worker: not yet" {
		t.Errorf("the nacked job's attempts: %d %v", status, body)
	}
}

// errField is the field an error answer names.
func errField(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	f, _ := e["field"].(string)
	return f
}

// Workers as users run them, against toc serve: `toc work` (the Go
// client's Work) SIGKILLed while it holds jobs loses none of them: their
// leases expire, the jobs come back with their attempt counted, and a
// second `toc work` runs every job to done. Then the TypeScript worker
// works the same topic.
func TestPullWorkers(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("pullw%d:", time.Now().UnixNano()))
	if status, body := p.call(t, "PUT", "/v1/topics/work", map[string]any{"delivery": "pull", "retry": map[string]int{"base_ms": 100, "max_ms": 200}, "callback_timeout_ms": 30000}); status != http.StatusCreated {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	const n = 12
	ids := busJobs(t, p, "work", n, time.Second)

	// The first worker takes 4 jobs and hangs on them until killed.
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	first := exec.CommandContext(t.Context(), tocBin, "work", "work", "--server", p.url, "--token", p.token, "--concurrency", "4", "--lease", "2s",
		"--", "sh", "-c", "echo $TOC_JOB_ID >> "+started+"; sleep 5")
	first.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(started)
		if len(strings.Fields(string(b))) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first worker started %q within 20 s, want 4 jobs", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // its leases were extended past their first 2 s
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	b, _ := os.ReadFile(started)
	killed := strings.Fields(string(b))

	// The second runs every job, the 4 held by the dead one among them,
	// then stops (--max-jobs).
	ran := filepath.Join(dir, "ran")
	r := cli(t, nil, "work", "work", "--server", p.url, "--token", p.token, "--concurrency", "4", "--max-jobs", strconv.Itoa(n),
		"--", "sh", "-c", "echo $TOC_JOB_ID $TOC_ATTEMPT >> "+ran)
	if r.code != 0 {
		t.Fatalf("toc work: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, _ = os.ReadFile(ran)
	attempts := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if id, attempt, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			attempts[id] = attempt
		}
	}
	for _, id := range ids {
		want := "1"
		if slices.Contains(killed, id) {
			want = "2" // the dead worker's attempt counted: its lease expired
		}
		if attempts[id] != want {
			t.Errorf("job %s ran as attempt %q, want %s", id, attempts[id], want)
		}
		waitJob(t, p, id, "done")
	}

	// The TypeScript worker.
	contract := needContractTools(t)
	more := busJobs(t, p, "work", 3, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "--no-install", "tsx", "worker.ts")
	cmd.Dir = contract
	cmd.Env = append(os.Environ(), "TOC_URL="+p.url, "TOC_TOKEN="+p.token, "TOC_TOPIC=work", "TOC_MAX_JOBS=3", "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npx tsx worker.ts: %v\n%s", err, out)
	}
	for _, id := range more {
		if !strings.Contains(string(out), "job "+id+" attempt 1:") {
			t.Errorf("worker.ts did not print job %s:\n%s", id, out)
		}
		waitJob(t, p, id, "done")
	}
}
