package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// pullTopic is a fake toc with one pull topic, orders, holding jobs 1 to
// n due: it leases them in order and records their acks and nacks.
type pullTopic struct {
	mu    sync.Mutex
	next  int // the next job to lease
	jobs  int
	acked []string
	nacks map[string]string // token: the nack's body
	// hold, when set, is how long the first lease call waits before it
	// answers, and short what a lease lasts at most, as a topic's
	// callback timeout bounds it.
	hold, short time.Duration
	calls       int
}

func newPullTopic(t *testing.T, jobs int) (*pullTopic, string) {
	t.Helper()
	p := &pullTopic{next: 1, jobs: jobs, nacks: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/topics/orders/leases", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Max     int `json:"max"`
			LeaseMS int `json:"lease_ms"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		p.mu.Lock()
		p.calls++
		if p.calls == 1 && p.hold > 0 {
			p.mu.Unlock()
			time.Sleep(p.hold)
			p.mu.Lock()
		}
		defer p.mu.Unlock()
		lease := time.Duration(req.LeaseMS) * time.Millisecond
		if p.short > 0 {
			lease = min(lease, p.short)
		}
		var leases []string
		for ; len(leases) < req.Max && p.next <= p.jobs; p.next++ {
			leases = append(leases, fmt.Sprintf(`{"token":"orders.%032x","expires_at":%q,"job":{"id":"%d","topic":"orders","key":"order-%d","fire_at":"2026-11-25T03:35:21.359Z","attempt":2,"payload":{"order":%d,"note":"<&>"}}}`,
				p.next, time.Now().Add(lease).UTC().Format(time.RFC3339Nano), p.next, p.next, p.next))
		}
		fmt.Fprintf(w, `{"leases":[%s]}`, strings.Join(leases, ","))
	})
	mux.HandleFunc("POST /v1/leases/{token}/{action}", func(w http.ResponseWriter, r *http.Request) {
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		p.mu.Lock()
		defer p.mu.Unlock()
		token := r.PathValue("token")
		switch r.PathValue("action") {
		case "ack":
			p.acked = append(p.acked, token)
		case "nack":
			p.nacks[token] = body.String()
		}
		fmt.Fprintf(w, `{"token":%q,"state":"%sed"}`, token, r.PathValue("action"))
	})
	mux.HandleFunc("POST /v1/topics/webhooks/leases", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":{"code":"invalid_argument","message":"topic webhooks delivers by webhook, not pull"}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// toc work runs its command once per job, the job's JSON on its stdin
// and its id, topic, attempt and lease token in its environment; exit 0
// acks the job, another exit nacks it with the end of its stderr; with
// --max-jobs it stops after that many.
func TestWorkCommand(t *testing.T) {
	p, url := newPullTopic(t, 5)
	dir := t.TempDir()
	script := `cat > "$OUT/$TOC_JOB_ID.json"
printf '%s %s %s\n' "$TOC_TOPIC" "$TOC_ATTEMPT" "$TOC_LEASE_TOKEN" > "$OUT/$TOC_JOB_ID.env"
if [ "$TOC_JOB_ID" = 2 ]; then echo "out of stock" >&2; exit 3; fi
echo "closed $TOC_JOB_ID"`
	t.Setenv("OUT", dir)
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"work", "orders", "--server", url, "--concurrency", "2", "--max-jobs", "3", "--", "sh", "-c", script}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("toc work: %v\n%s", err, stderr.String())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	token := func(id int) string { return fmt.Sprintf("orders.%032x", id) }
	if len(p.acked) != 2 || !strings.Contains(strings.Join(p.acked, " "), token(1)) || !strings.Contains(strings.Join(p.acked, " "), token(3)) {
		t.Errorf("acked %v, want jobs 1 and 3", p.acked)
	}
	var nack struct {
		Error   string `json:"error"`
		DelayMS *int   `json:"delay_ms"`
	}
	if err := json.Unmarshal([]byte(p.nacks[token(2)]), &nack); err != nil || len(p.nacks) != 1 ||
		!strings.Contains(nack.Error, "exit status 3") || !strings.HasSuffix(nack.Error, "out of stock") || nack.DelayMS != nil {
		t.Errorf("nacks %v (%v), want job 2's with its exit status and stderr, and the topic's backoff", p.nacks, err)
	}
	if p.next != 4 {
		t.Errorf("leased jobs 1 to %d, want 1 to 3: --max-jobs 3", p.next-1)
	}
	for id := 1; id <= 3; id++ {
		job, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(id)+".json"))
		want := fmt.Sprintf(`{"id":"%d","topic":"orders","key":"order-%d","fire_at":"2026-11-25T03:35:21.359Z","attempt":2,"payload":{"order":%d,"note":"<&>"}}`+"\n", id, id, id)
		if err != nil || string(job) != want {
			t.Errorf("job %d's stdin = %q, %v; want %q", id, job, err, want)
		}
		env, err := os.ReadFile(filepath.Join(dir, fmt.Sprint(id)+".env"))
		if want := "orders 2 " + token(id) + "\n"; err != nil || string(env) != want {
			t.Errorf("job %d's environment = %q, %v; want %q", id, env, err, want)
		}
	}
	if !strings.Contains(stdout.String(), "closed 1\n") || !strings.Contains(stderr.String(), "out of stock") {
		t.Errorf("the commands' output did not pass through: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "3 job(s) run: 2 succeeded, 1 failed") {
		t.Errorf("stderr does not sum the jobs up:\n%s", stderr.String())
	}
}

// A topic that does not deliver by pull is the API's error, exit 1; a
// command line without a topic, a command, or with a flag out of range
// is a usage error, exit 2.
func TestWorkCommandErrors(t *testing.T) {
	_, url := newPullTopic(t, 0)
	for _, c := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"webhooks", "--", "true"}, 1, "400 invalid_argument: topic webhooks delivers by webhook, not pull"},
		{[]string{"orders"}, 2, "give the command to run after --"},
		{[]string{"--", "true"}, 2, "want TOPIC, got 0 arguments"},
		{[]string{"orders", "extra", "--", "true"}, 2, "want TOPIC, got 2 arguments"},
		{[]string{"orders", "--concurrency", "0", "--", "true"}, 2, "--concurrency 0: want 1..1000"},
		{[]string{"orders", "--lease", "500ms", "--", "true"}, 2, "--lease 500ms: want 1s..1h0m0s"},
		{[]string{"orders", "--wait", "2m", "--", "true"}, 2, "--wait 2m0s"},
		{[]string{"orders", "--nope", "--", "true"}, 2, "flag provided but not defined: -nope"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), append([]string{"work", "--server", url}, c.args...), &stdout, &stderr)
		if !errors.Is(err, exitError{c.code}) || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("toc work %q: %v, stderr:\n%s\nwant exit %d saying %q", c.args, err, stderr.String(), c.code, c.stderr)
		}
	}
}
