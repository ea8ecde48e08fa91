package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
)

// Issue 19's audit trail on the real stack (MariaDB on two shards,
// redis-server): a topic's settings put and patched, paused, resumed and
// deleted; a business id's jobs cancelled by filter; dead letters
// replayed and purged one by one and by filter. Each appears in GET
// /v1/audit, newest first, with who, what, when and how many jobs it
// changed; the Go client and toc audit read the same.
func TestServeAuditTrail(t *testing.T) {
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
	}))
	t.Cleanup(failing.Close)
	p := serveShards(t, fmt.Sprintf("au%d:", time.Now().UnixNano()), testenv2DSNs(t)...)
	start := time.Now().Add(-time.Second)
	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		status, resp := p.call(t, method, path, body)
		if status != want {
			t.Fatalf("%s %s: %d, want %d: %v", method, path, status, want, resp)
		}
		return resp
	}

	must("PUT", "/v1/topics/audited", map[string]any{"max_attempts": 3}, http.StatusCreated)
	must("PATCH", "/v1/topics/audited", map[string]any{"rate_limit": 100}, http.StatusOK)
	must("POST", "/v1/topics/audited/pause", nil, http.StatusOK)
	must("POST", "/v1/topics/audited/resume", nil, http.StatusOK)
	for range 3 {
		must("POST", "/v1/jobs", map[string]any{"topic": "audited", "biz_id": 5, "delay_ms": 3_600_000, "callback_url": failing.URL + "/h"}, http.StatusCreated)
	}
	if resp := must("DELETE", "/v1/jobs?topic=audited&biz_id=5", nil, http.StatusOK); resp["cancelled"] != float64(3) {
		t.Fatalf("cancel by filter: %v", resp)
	}

	// Five jobs die at once; one is replayed and one purged by id, two
	// replayed and the last purged by filter.
	for i := range 5 {
		must("POST", "/v1/jobs", map[string]any{"topic": "auditdead", "biz_id": 100 + i, "delay_ms": 0, "max_attempts": 1,
			"callback_url": failing.URL + "/h"}, http.StatusCreated)
	}
	var dead []any
	for deadline := time.Now().Add(30 * time.Second); len(dead) < 5; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("5 jobs never died: %v", dead)
		}
		dead, _ = must("GET", "/v1/deadletters?topic=auditdead", nil, http.StatusOK)["jobs"].([]any)
	}
	replayed, purged := dead[0].(map[string]any)["id"].(string), dead[1].(map[string]any)["id"].(string)
	must("POST", "/v1/deadletters/"+replayed+"/replay", map[string]any{"delay_ms": 3_600_000}, http.StatusOK)
	must("DELETE", "/v1/deadletters/"+purged, nil, http.StatusOK)
	if resp := must("POST", "/v1/deadletters/replay", map[string]any{"topic": "auditdead", "limit": 2, "delay_ms": 3_600_000}, http.StatusOK); resp["replayed"] != float64(2) {
		t.Fatalf("bulk replay: %v", resp)
	}
	if resp := must("POST", "/v1/deadletters/purge", map[string]any{"topic": "auditdead", "signature": "HTTP 400"}, http.StatusOK); resp["purged"] != float64(1) {
		t.Fatalf("bulk purge: %v", resp)
	}
	// The cancelled jobs do not keep the topic.
	must("DELETE", "/v1/topics/audited", nil, http.StatusNoContent)
	end := time.Now().Add(time.Second)

	type want struct {
		action, topic, target string
		jobs                  float64
	}
	wants := []want{
		{"topic.delete", "audited", "", 0},
		{"deadletter.purge_bulk", "auditdead", "signature=HTTP+400", 1},
		{"deadletter.replay_bulk", "auditdead", "", 2},
		{"deadletter.purge", "auditdead", "job " + purged, 1},
		{"deadletter.replay", "auditdead", "job " + replayed, 1},
		{"jobs.cancel_bulk", "audited", "biz_id=5", 3},
		{"topic.resume", "audited", "", 0},
		{"topic.pause", "audited", "", 0},
		{"topic.patch", "audited", "", 0},
		{"topic.put", "audited", "", 0},
	}
	entries, _ := must("GET", "/v1/audit", nil, http.StatusOK)["entries"].([]any)
	if len(entries) != len(wants) {
		t.Fatalf("%d entries, want %d: %v", len(entries), len(wants), entries)
	}
	for i, w := range wants {
		e := entries[i].(map[string]any)
		target, _ := e["target"].(string)
		topic, _ := e["topic"].(string)
		at, err := time.Parse(time.RFC3339Nano, e["at"].(string))
		if err != nil || at.Before(start) || at.After(end) {
			t.Errorf("entry %d at %v, want within [%v, %v]", i, e["at"], start, end)
		}
		if e["who"] != "api-token" || e["action"] != w.action || topic != w.topic || target != w.target || e["jobs"] != w.jobs || e["result"] != "ok" {
			t.Errorf("entry %d = %v\nwant %+v, by api-token", i, e, w)
		}
	}

	// The Go client and the CLI read the log with its filters.
	c, err := client.New(p.url, client.WithToken(p.token), client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	got, next, err := c.Audit(t.Context(), client.AuditQuery{Topic: "auditdead", Limit: 3})
	if err != nil || len(got) != 3 || next == "" || got[0].Action != "deadletter.purge_bulk" || got[2].Action != "deadletter.purge" || got[0].Jobs != 1 || got[0].At.Before(start) {
		t.Fatalf("client Audit(topic auditdead, limit 3) = %+v, %q, %v", got, next, err)
	}
	rest, next, err := c.Audit(t.Context(), client.AuditQuery{Topic: "auditdead", Limit: 3, Cursor: next})
	if err != nil || len(rest) != 1 || next != "" || rest[0].Action != "deadletter.replay" {
		t.Fatalf("client Audit, second page = %+v, %q, %v", rest, next, err)
	}
	r := cli(t, nil, "audit", "--action", "jobs.cancel_bulk", "--since", start.Format(time.RFC3339), "--server", p.url, "--token", p.token)
	if r.code != 0 || !strings.Contains(r.stdout, "jobs.cancel_bulk") || !strings.Contains(r.stdout, "biz_id=5") ||
		!strings.Contains(r.stdout, "api-token") || strings.Contains(r.stdout, "topic.pause") {
		t.Errorf("toc audit --action jobs.cancel_bulk: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, nil, "audit", "--action", "nope", "--server", p.url, "--token", p.token); r.code != 1 || !strings.Contains(r.stderr, "action") {
		t.Errorf("toc audit --action nope: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
