package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// groupReceiver answers the members of a group and counts the calls of
// its completion: members whose path starts /fail get a 500, the others a
// 204; /done is the completion.
type groupReceiver struct {
	port string

	mu          sync.Mutex
	members     int
	completions [][]byte
	first       chan struct{}
}

func newGroupReceiver(t *testing.T) *groupReceiver {
	t.Helper()
	// On every loopback address: failing members call 127.0.0.2..6, one
	// host each for a few, so that no host's breaker opens (5 failures in
	// a row) and holds the others back.
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	r := &groupReceiver{first: make(chan struct{})}
	_, r.port, _ = net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(r.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *groupReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg struct {
		Payload json.RawMessage `json:"payload"`
	}
	json.Unmarshal(body, &msg)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.URL.Path == "/done":
		r.completions = append(r.completions, msg.Payload)
		if len(r.completions) == 1 {
			close(r.first)
		}
		w.WriteHeader(http.StatusNoContent)
	case strings.HasPrefix(req.URL.Path, "/fail"):
		w.WriteHeader(http.StatusInternalServerError)
	default:
		r.members++
		w.WriteHeader(http.StatusNoContent)
	}
}

// Acceptance of issue 18's groups on the real stack (toc serve, MariaDB,
// redis-server), on one task store shard and on two: a group of 1,000
// jobs, 15 of whose receivers answer 500 until they are dead (max_attempts
// 1 or 2) and 10 of which are cancelled, fires its completion callback
// exactly once, with the counts by status: 975 done, 15 dead, 10
// cancelled. After the first call the test waits 3 s more (the sweep's
// interval is 10 s: a second completion would come from a live check of
// another member's end) and counts again.
func TestGroupOfThousandCompletesOnce(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { testGroupOfThousand(t, shards) })
	}
}

func testGroupOfThousand(t *testing.T, shards int) {
	maria := testenv.MariaDB(t)
	rds := testenv.Redis(t)
	args := []string{"serve", "--redis-addr", rds.Addr, "--redis-prefix", fmt.Sprintf("grp%d:", time.Now().UnixNano()),
		"--api-token", "tok3n", "--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--allow-private-callbacks"}
	for range shards {
		args = append(args, "--mysql-dsn", maria.NewDatabase(t))
	}
	p := startToc(t, "tok3n", args...)
	r := newGroupReceiver(t)
	base := "http://127.0.0.1:" + r.port

	const total, dead, cancelled = 1000, 15, 10
	jobs := make([]map[string]any, 0, total)
	for i := range total {
		j := map[string]any{"topic": "parts", "delay_ms": 500, "callback_url": base + "/part", "payload": map[string]any{"part": i}}
		switch {
		case i < dead:
			// Hosts 127.0.0.2..6, three dead jobs each: four failed calls
			// a host at most.
			j["callback_url"] = fmt.Sprintf("http://127.0.0.%d:%s/fail", 2+i%5, r.port)
			j["max_attempts"] = 1 + i%3/2
		case i < dead+cancelled:
			j["delay_ms"] = 3_600_000
			j["key"] = fmt.Sprintf("cancel-%d", i)
		}
		jobs = append(jobs, j)
	}
	status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{
		"group": map[string]any{"id": "export-42", "on_complete": map[string]any{"callback_url": base + "/done", "payload": map[string]any{"export": 42}}},
		"jobs":  jobs,
	})
	if status != http.StatusOK {
		t.Fatalf("batch: %d %v", status, body)
	}
	results := body["results"].([]any)
	for i := dead; i < dead+cancelled; i++ {
		id := results[i].(map[string]any)["id"].(string)
		if status, body := p.call(t, "DELETE", "/v1/jobs/"+id, nil); status != http.StatusOK {
			t.Fatalf("cancel %s: %d %v", id, status, body)
		}
	}

	select {
	case <-r.first:
	case <-time.After(2 * time.Minute):
		_, g := p.call(t, "GET", "/v1/groups/export-42", nil)
		t.Fatalf("no completion within 2 minutes; group: %v", g)
	}
	time.Sleep(3 * time.Second)
	r.mu.Lock()
	calls, members := len(r.completions), r.members
	var got struct {
		GroupID string           `json:"group_id"`
		Counts  map[string]int64 `json:"counts"`
		Total   int64            `json:"total"`
		Payload map[string]int   `json:"payload"`
	}
	err := json.Unmarshal(r.completions[0], &got)
	r.mu.Unlock()
	if calls != 1 {
		t.Errorf("the completion callback was called %d times, want once", calls)
	}
	if members != total-dead-cancelled {
		t.Errorf("%d members answered, want %d", members, total-dead-cancelled)
	}
	want := map[string]int64{"pending": 0, "firing": 0, "done": total - dead - cancelled, "dead": dead, "cancelled": cancelled, "expired": 0, "purged": 0}
	if err != nil || got.GroupID != "export-42" || got.Total != total || got.Payload["export"] != 42 || fmt.Sprint(got.Counts) != fmt.Sprint(want) {
		t.Errorf("completion payload %+v (%v), want counts %v", got, err, want)
	}
	status, g := p.call(t, "GET", "/v1/groups/export-42", nil)
	if status != http.StatusOK || g["completed"] != true || g["total"] != float64(total) || g["completion_job_id"] == nil {
		t.Errorf("GET group: %d %v", status, g)
	}
	if c, _ := g["counts"].(map[string]any); c["done"] != float64(total-dead-cancelled) || c["dead"] != float64(dead) || c["cancelled"] != float64(cancelled) {
		t.Errorf("GET group counts: %v", g["counts"])
	}
	if status, j := p.call(t, "GET", "/v1/jobs/"+g["completion_job_id"].(string), nil); status != http.StatusOK || j["status"] != "done" || j["key"] != "group:export-42:complete" {
		t.Errorf("completion job: %d %v", status, j)
	}
}
