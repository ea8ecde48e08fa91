package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 15 on the real stack (MariaDB on two shards, redis-server): jobs
// found by business id, key, status and time across both shards and
// paged; a business id's jobs cancelled and another's moved with one
// call each; dead letters grouped by why they died, one group replayed,
// the other purged, each job's one attempt kept with its status.
func TestServeFindActAndTriage(t *testing.T) {
	// The receiver fails business id 1 with a 503 and everything else
	// with a 400: two signatures.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(dead.Close)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	p := serveShards(t, fmt.Sprintf("fa%d:", time.Now().UnixNano()), testenv2DSNs(t)...)

	later := time.Now().Add(time.Hour).UTC()
	byBiz := map[int][]string{}
	for i := range 40 {
		biz := i%10 + 1
		body := map[string]any{"topic": "orders", "biz_id": biz, "callback_url": dead.URL + "/h",
			"fire_at": later.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)}
		if i == 0 {
			body["key"] = "order-1-timeout"
		}
		status, resp := p.call(t, "POST", "/v1/jobs", body)
		if status != http.StatusCreated {
			t.Fatalf("schedule: %d %v", status, resp)
		}
		byBiz[biz] = append(byBiz[biz], resp["id"].(string))
	}
	find := func(q string) []string {
		t.Helper()
		var ids []string
		for cursor := ""; ; {
			status, resp := p.call(t, "GET", "/v1/jobs?"+q+"&limit=3&cursor="+url.QueryEscape(cursor), nil)
			if status != http.StatusOK {
				t.Fatalf("find %s: %d %v", q, status, resp)
			}
			for _, j := range resp["jobs"].([]any) {
				ids = append(ids, j.(map[string]any)["id"].(string))
			}
			if cursor = resp["next_cursor"].(string); cursor == "" {
				return ids
			}
		}
	}
	if got := find("topic=orders&biz_id=3"); fmt.Sprint(got) != fmt.Sprint(byBiz[3]) {
		t.Errorf("business id 3: %v, want %v", got, byBiz[3])
	}
	if got := find("topic=orders&key=order-1-timeout"); len(got) != 1 || got[0] != byBiz[1][0] {
		t.Errorf("by key: %v", got)
	}
	if got := find("topic=orders&status=pending"); len(got) != 40 {
		t.Errorf("pending, paged by 3 over two shards: %d jobs", len(got))
	}
	if got := find("topic=orders&fire_before=" + url.QueryEscape(later.Add(10*time.Second).Format(time.RFC3339))); len(got) != 10 {
		t.Errorf("due in the first 10 s: %d", len(got))
	}

	status, resp := p.call(t, "DELETE", "/v1/jobs?topic=orders&biz_id=3", nil)
	if status != http.StatusOK || resp["cancelled"] != float64(4) {
		t.Fatalf("cancel business id 3: %d %v", status, resp)
	}
	status, resp = p.call(t, "PATCH", "/v1/jobs?topic=orders&biz_id=4", map[string]any{"delay_ms": 7_200_000})
	if status != http.StatusOK || resp["rescheduled"] != float64(4) {
		t.Fatalf("reschedule business id 4: %d %v", status, resp)
	}
	if got := find("topic=orders&status=cancelled"); len(got) != 4 {
		t.Errorf("cancelled: %v", got)
	}

	// Six jobs die: three of business id 1 on the busy receiver, three
	// others on the failing one.
	for i := range 6 {
		hook, biz := dead.URL+"/h", 100+i
		if i < 3 {
			hook, biz = busy.URL+"/h", 1
		}
		status, resp := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "triage", "biz_id": biz, "delay_ms": 0,
			"max_attempts": 1, "callback_url": hook})
		if status != http.StatusCreated {
			t.Fatalf("schedule: %d %v", status, resp)
		}
	}
	var groups []any
	for deadline := time.Now().Add(30 * time.Second); len(groups) < 2 || total(groups) < 6; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dead letters never grouped: %v", groups)
		}
		_, resp := p.call(t, "GET", "/v1/deadletters/summary?topic=triage", nil)
		groups, _ = resp["groups"].([]any)
	}
	sigs := map[string]float64{}
	for _, g := range groups {
		sigs[g.(map[string]any)["signature"].(string)] = g.(map[string]any)["count"].(float64)
	}
	if sigs["HTTP 503"] != 3 || sigs["HTTP 400"] != 3 {
		t.Fatalf("groups %v", sigs)
	}
	// Each group's example shows its one attempt, with the answer's status.
	// The history is written in batches: wait for it.
	for _, g := range groups {
		g := g.(map[string]any)
		var attempts []any
		for deadline := time.Now().Add(10 * time.Second); len(attempts) == 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no attempt of job %s", g["example_id"])
			}
			_, resp := p.call(t, "GET", "/v1/jobs/"+g["example_id"].(string)+"/attempts", nil)
			attempts, _ = resp["attempts"].([]any)
		}
		a := attempts[0].(map[string]any)
		if len(attempts) != 1 || a["attempt"] != float64(1) || "HTTP "+fmt.Sprint(a["status_code"]) != g["signature"] || a["started_at"] == "" {
			t.Errorf("attempts of %s (%s): %v", g["example_id"], g["signature"], attempts)
		}
	}
	status, resp = p.call(t, "POST", "/v1/deadletters/replay", map[string]any{"topic": "triage", "signature": "HTTP 503", "delay_ms": 3_600_000})
	if status != http.StatusOK || resp["replayed"] != float64(3) {
		t.Fatalf("replay: %d %v", status, resp)
	}
	status, resp = p.call(t, "POST", "/v1/deadletters/purge", map[string]any{"topic": "triage", "signature": "HTTP 400"})
	if status != http.StatusOK || resp["purged"] != float64(3) {
		t.Fatalf("purge: %d %v", status, resp)
	}
	if got := find("topic=triage&status=purged"); len(got) != 3 {
		t.Errorf("purged: %v", got)
	}
	if got := find("topic=triage&status=pending&biz_id=1"); len(got) != 3 {
		t.Errorf("replayed: %v", got)
	}
}

// total sums the counts of summary groups.
func total(groups []any) int {
	n := 0
	for _, g := range groups {
		n += int(g.(map[string]any)["count"].(float64))
	}
	return n
}

// testenv2DSNs returns two fresh databases of the package's mariadbd.
func testenv2DSNs(t *testing.T) []string {
	t.Helper()
	return []string{testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)}
}
