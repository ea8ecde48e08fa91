package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// An idempotency key is reserved while its job's row lives: against toc
// serve, a key reused with other content is a 409 while the cancelled job
// is kept, and once the topic's retention has retired the row (counted
// from its due time, 3 s after the cancel), the same key makes a new job.
// The stats show the row, then none.
func TestIdempotencyKeyAfterRetirement(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("rk%d:", time.Now().UnixNano()))
	r := newReceiver(t, e2eSecret)
	job := func(delay int) map[string]any {
		return map[string]any{"topic": "keys", "key": "order-42", "delay_ms": delay, "callback_url": r.srv.URL}
	}
	first := postJob(t, p, job(3_000))
	if status, body := p.call(t, "DELETE", "/v1/jobs/"+first, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	if status, body := p.call(t, "POST", "/v1/jobs", job(7_200_000)); status != http.StatusConflict {
		t.Fatalf("the key reused while its job is kept: %d %v, want 409", status, body)
	}
	stats := func() map[string]any {
		t.Helper()
		status, body := p.call(t, "GET", "/v1/topics/keys/stats", nil)
		if status != http.StatusOK {
			t.Fatalf("stats: %d %v", status, body)
		}
		return body["storage"].(map[string]any)["cancelled"].(map[string]any)
	}
	if c := stats(); c["rows"] != 1.0 {
		t.Errorf("cancelled storage %v, want one row", c)
	}

	// A second's retention: the retirer's first pass a second after the
	// job's due time (every 10 s) deletes the row.
	if status, body := p.call(t, "PATCH", "/v1/topics/keys", map[string]any{"retention": map[string]any{"cancelled_ms": 1000}}); status != http.StatusOK {
		t.Fatalf("set retention: %d %v", status, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		status, _ := p.call(t, "GET", "/v1/jobs/"+first, nil)
		if status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still there (%d) 30 s after its retention of 1 s began", first, status)
		}
	}
	if c := stats(); c["rows"] != 0.0 || c["oldest_ended_at"] != "" || c["past_retention"] != 0.0 {
		t.Errorf("cancelled storage after retirement %v, want none", c)
	}
	status, body := p.call(t, "POST", "/v1/jobs", job(7_200_000))
	if status != http.StatusCreated || body["id"] == first || body["status"] != "pending" {
		t.Fatalf("the key after its job retired: %d %v, want a new pending job (201)", status, body)
	}
}
