package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// auditEntries reads GET /v1/audit with query, as the caller of token.
func (e *apiEnv) auditEntries(t *testing.T, query, token string) []map[string]any {
	t.Helper()
	a := e.call(t, "GET", "/v1/audit?"+query, "", "Authorization", "Bearer "+token)
	if a.status != http.StatusOK {
		t.Fatalf("GET /v1/audit?%s: %d %s", query, a.status, a.raw)
	}
	var out []map[string]any
	for _, x := range a.body["entries"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// Topic changes and bulk cancels are recorded with the caller's token
// number, the topic, the target and the jobs changed, newest first; a
// refused delete is recorded as failed, a 400 not at all; the filters and
// pages of GET /v1/audit select what they say.
func TestAuditRecordsActions(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{Tokens: []string{"first-secret", "second-secret"}}, nil)
	as := func(token, method, path, body string, want int) answer {
		t.Helper()
		a := e.call(t, method, path, body, "Authorization", "Bearer "+token)
		if a.status != want {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, a.status, want, a.raw)
		}
		if a.header.Get(tochttp.AuditHeader) != "" {
			t.Errorf("%s %s: %s: %s on a recorded action", method, path, tochttp.AuditHeader, a.header.Get(tochttp.AuditHeader))
		}
		return a
	}
	const one, two = "first-secret", "second-secret"
	as(two, "PUT", "/v1/topics/orders", `{"max_attempts": 5}`, http.StatusCreated)
	as(one, "PATCH", "/v1/topics/orders", `{"rate_limit": 50}`, http.StatusOK)
	as(one, "PATCH", "/v1/topics/orders", `{"rate_limit": -1}`, http.StatusBadRequest) // refused: not recorded
	as(one, "POST", "/v1/topics/orders/pause", "", http.StatusOK)
	as(one, "POST", "/v1/topics/orders/resume", "", http.StatusOK)
	for range 3 {
		as(one, "POST", "/v1/jobs", `{"topic": "orders", "biz_id": 7, "delay_ms": 3600000, `+cb+`}`, http.StatusCreated)
	}
	as(one, "POST", "/v1/jobs", `{"topic": "orders", "biz_id": 8, "delay_ms": 3600000, `+cb+`}`, http.StatusCreated)
	as(one, "PATCH", "/v1/jobs?topic=orders&biz_id=8", `{"delay_ms": 7200000}`, http.StatusOK)
	as(one, "DELETE", "/v1/jobs?topic=orders&biz_id=7", "", http.StatusOK)
	as(two, "DELETE", "/v1/topics/orders", "", http.StatusConflict) // one job still pending

	type want struct {
		who, action, topic, target, result string
		jobs                               float64
	}
	wants := []want{
		{"api-token-2", "topic.delete", "orders", "", "failed", 0},
		{"api-token", "jobs.cancel_bulk", "orders", "biz_id=7", "ok", 3},
		{"api-token", "jobs.reschedule_bulk", "orders", "biz_id=8", "ok", 1},
		{"api-token", "topic.resume", "orders", "", "ok", 0},
		{"api-token", "topic.pause", "orders", "", "ok", 0},
		{"api-token", "topic.patch", "orders", "", "ok", 0},
		{"api-token-2", "topic.put", "orders", "", "ok", 0},
	}
	got := e.auditEntries(t, "", one)
	if len(got) != len(wants) {
		t.Fatalf("%d entries, want %d: %v", len(got), len(wants), got)
	}
	for i, w := range wants {
		g := got[i]
		target, _ := g["target"].(string)
		if g["who"] != w.who || g["action"] != w.action || g["topic"] != w.topic || target != w.target ||
			g["result"] != w.result || g["jobs"] != w.jobs || g["at"] == "" {
			t.Errorf("entry %d = %v\nwant %+v", i, g, w)
		}
	}
	if msg, _ := got[0]["error"].(string); msg == "" {
		t.Errorf("the refused delete has no error: %v", got[0])
	}
	if d, _ := got[6]["details"].(map[string]any); d["created"] != true || d["settings"].(map[string]any)["max_attempts"] != float64(5) {
		t.Errorf("topic.put details %v, want created and the settings", got[6]["details"])
	}
	if d, _ := got[1]["details"].(map[string]any); d["too_late"] != float64(0) {
		t.Errorf("jobs.cancel_bulk details %v, want too_late 0", got[1]["details"])
	}

	// Filters.
	count := func(query string) int { return len(e.auditEntries(t, query, one)) }
	for query, n := range map[string]int{
		"action=topic.pause": 1, "topic=orders": 7, "topic=other": 0, "who=api-token-2": 2,
		"action=topic.delete&who=api-token": 0, "since=2000-01-01T00:00:00Z": 7, "until=2000-01-01T00:00:00Z": 0,
	} {
		if got := count(query); got != n {
			t.Errorf("GET /v1/audit?%s: %d entries, want %d", query, got, n)
		}
	}
	// Pages of three walk all seven once, in order.
	var walked []any
	cursor := ""
	for range 5 {
		a := as(one, "GET", "/v1/audit?limit=3&cursor="+url.QueryEscape(cursor), "", http.StatusOK)
		for _, x := range a.body["entries"].([]any) {
			walked = append(walked, x.(map[string]any)["id"])
		}
		if cursor = a.body["next_cursor"].(string); cursor == "" {
			break
		}
	}
	var all []any
	for _, g := range got {
		all = append(all, g["id"])
	}
	if fmt.Sprint(walked) != fmt.Sprint(all) {
		t.Errorf("pages walked %v, want %v", walked, all)
	}

	// Bad parameters name themselves.
	for query, field := range map[string]string{
		"limit=0": "limit", "limit=1001": "limit", "action=topic.burn": "action", "topic=Not%20A%20Topic": "topic",
		"since=yesterday": "since", "until=x": "until", "cursor=abc": "cursor", "cursor=1.x": "cursor",
		"colour=red": "colour", "limit=1&limit=2": "limit",
		"since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z": "until",
	} {
		e.call(t, "GET", "/v1/audit?"+query, "", "Authorization", "Bearer "+one).wantError(t, 400, tochttp.CodeInvalid, field)
	}
	e.call(t, "GET", "/v1/audit", "").wantError(t, 401, tochttp.CodeUnauthenticated, "")
}

// failingAudit is an audit log whose writes fail.
type failingAudit struct{ timer.AuditLog }

func (failingAudit) AppendAudit(context.Context, *timer.AuditEntry) error {
	return errors.New("task store: connection refused")
}

// An action whose entry cannot be written still succeeds, says so in
// Toc-Audit, and is counted; it is not answered with an error.
func TestAuditWriteFailure(t *testing.T) {
	var failed atomic.Int32
	e := newAPIEnv(t, tochttp.APIConfig{Audit: failingAudit{}, AuditFailed: func() { failed.Add(1) }}, nil)
	a := e.call(t, "PUT", "/v1/topics/orders", `{}`)
	if a.status != http.StatusCreated || a.header.Get(tochttp.AuditHeader) != "unrecorded" {
		t.Fatalf("PUT with the audit log down: %d, %s=%q: %s", a.status, tochttp.AuditHeader, a.header.Get(tochttp.AuditHeader), a.raw)
	}
	if got, err := e.eng.Topic(t.Context(), "orders"); err != nil || got.Name != "orders" {
		t.Errorf("the topic put is %+v, %v", got, err)
	}
	if n := failed.Load(); n != 1 {
		t.Errorf("AuditFailed heard %d failures, want 1", n)
	}
}
