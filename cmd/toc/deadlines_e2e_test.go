package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Deadlines (issue 18) on the real stack (MariaDB, redis-server): a job
// held back past its deadline by its topic's pause never reaches its
// receiver and ends expired with the reason, while a job beside it
// without a deadline fires once resumed; a job whose receiver keeps
// failing ends expired, not dead, with no attempt started after its
// deadline; both are listed by status and counted in the metrics.
func TestServeDeadlines(t *testing.T) {
	var (
		mu   sync.Mutex
		hits = map[string]int{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	hitsOf := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return hits[path]
	}
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("dl%d:", time.Now().UnixNano()))

	for _, c := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/topics/held", map[string]any{}},
		{"/v1/topics/flaky", map[string]any{"retry": map[string]any{"base_ms": 1000, "max_ms": 1000}, "expire_after_ms": 2500}},
	} {
		if status, resp := p.call(t, "PUT", c.path, c.body); status/100 != 2 {
			t.Fatalf("PUT %s: %d %v", c.path, status, resp)
		}
	}
	if status, resp := p.call(t, "POST", "/v1/topics/held/pause", nil); status != http.StatusOK {
		t.Fatalf("pause: %d %v", status, resp)
	}
	schedule := func(body map[string]any) map[string]any {
		t.Helper()
		status, resp := p.call(t, "POST", "/v1/jobs", body)
		if status != http.StatusCreated {
			t.Fatalf("schedule %v: %d %v", body, status, resp)
		}
		return resp
	}
	late := schedule(map[string]any{"topic": "held", "delay_ms": 100, "expire_after_ms": 500, "callback_url": srv.URL + "/late"})
	plain := schedule(map[string]any{"topic": "held", "delay_ms": 100, "callback_url": srv.URL + "/plain"})
	flaky := schedule(map[string]any{"topic": "flaky", "delay_ms": 0, "callback_url": srv.URL + "/fail"}) // the topic's 2.5 s
	optOut := schedule(map[string]any{"topic": "flaky", "delay_ms": 3_600_000, "expire_after_ms": -1, "callback_url": srv.URL + "/never"})
	if late["expire_after_ms"] != float64(500) || late["expire_at"] == nil || plain["expire_at"] != nil {
		t.Fatalf("deadlines as scheduled: late %v / %v, plain %v", late["expire_after_ms"], late["expire_at"], plain["expire_at"])
	}
	if flaky["expire_after_ms"] != float64(2500) || optOut["expire_after_ms"] != nil {
		t.Fatalf("the topic's deadline: flaky %v, opted out %v", flaky["expire_after_ms"], optOut["expire_after_ms"])
	}

	time.Sleep(time.Second) // past late's deadline (due +100 ms, +500 ms), the topic still paused
	if status, resp := p.call(t, "POST", "/v1/topics/held/resume", nil); status != http.StatusOK {
		t.Fatalf("resume: %d %v", status, resp)
	}
	wait := func(id, want string) map[string]any {
		t.Helper()
		var resp map[string]any
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			_, resp = p.call(t, "GET", "/v1/jobs/"+id, nil)
			if resp["status"] == want {
				return resp
			}
		}
		t.Fatalf("job %s: %v, want %s", id, resp, want)
		return nil
	}
	got := wait(late["id"].(string), "expired")
	if n := hitsOf("/late"); n != 0 {
		t.Errorf("the job past its deadline reached its receiver %d times", n)
	}
	if reason, _ := got["last_error"].(string); !strings.Contains(reason, "deadline passed") || got["attempts"] != float64(0) {
		t.Errorf("expired job: %v attempts, last_error %q; want 0 and the reason", got["attempts"], reason)
	}
	wait(plain["id"].(string), "done")
	if n := hitsOf("/plain"); n != 1 {
		t.Errorf("the job without a deadline reached its receiver %d times, want 1", n)
	}

	got = wait(flaky["id"].(string), "expired")
	calls := hitsOf("/fail")
	if reason, _ := got["last_error"].(string); got["attempts"] != float64(calls) || calls < 1 || !strings.Contains(reason, "deadline passed") {
		t.Errorf("failing job: %v attempts, %d calls, last_error %q", got["attempts"], calls, reason)
	}
	expireAt, err := time.Parse(time.RFC3339, got["expire_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	_, attempts := p.call(t, "GET", "/v1/jobs/"+flaky["id"].(string)+"/attempts", nil)
	for _, a := range attempts["attempts"].([]any) {
		started, _ := time.Parse(time.RFC3339, a.(map[string]any)["started_at"].(string))
		if started.After(expireAt) {
			t.Errorf("an attempt started at %v, past the deadline %v", started, expireAt)
		}
	}
	time.Sleep(1500 * time.Millisecond) // a retry past the deadline would come by now
	if n := hitsOf("/fail"); n != calls {
		t.Errorf("the expired job was called again: %d calls, then %d", calls, n)
	}

	for topic, id := range map[string]string{"held": late["id"].(string), "flaky": flaky["id"].(string)} {
		status, resp := p.call(t, "GET", "/v1/jobs?topic="+topic+"&status=expired", nil)
		jobs, _ := resp["jobs"].([]any)
		if status != http.StatusOK || len(jobs) != 1 || jobs[0].(map[string]any)["id"] != id {
			t.Errorf("expired jobs of %s: %d %v, want job %s", topic, status, resp, id)
		}
	}
	if status, resp := p.call(t, "DELETE", "/v1/jobs/"+late["id"].(string), nil); status != http.StatusConflict {
		t.Errorf("cancel of an expired job: %d %v, want 409", status, resp)
	}
	if status, resp := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "held", "delay_ms": 1, "expire_after_ms": -2, "callback_url": srv.URL + "/x"}); status != http.StatusBadRequest {
		t.Errorf("expire_after_ms -2: %d %v, want 400", status, resp)
	}
	for topic, want := range map[string]string{"held": "1", "flaky": "1"} {
		if got := metricOf(t, p, `toc_jobs_expired_total{topic="`+topic+`"}`); got != want {
			t.Errorf("toc_jobs_expired_total of %s = %q, want %s", topic, got, want)
		}
	}
}

// metricOf reads one sample of the member's /metrics ("" when absent).
func metricOf(t *testing.T, p *proc, series string) string {
	t.Helper()
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return v
		}
	}
	return ""
}
