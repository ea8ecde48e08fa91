package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A receiver that fails until its circuit breaker opens: the topic's
// stats show the breaker open, and the jobs it holds back as overdue
// from their due time, though their timers in Redis wait in the future.
// Once the receiver answers again, a probe closes the breaker and the
// stats show none.
func TestBreakerShownInTopicStats(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	host := mustURL(t, rcv.URL).Host

	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	if status, body := p.call(t, "PUT", "/v1/topics/flaky", map[string]any{"max_attempts": 64}); status/100 != 2 {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	if status, st := p.call(t, "GET", "/v1/topics/flaky/stats", nil); status != 200 || fmt.Sprint(st["breakers"]) != "[]" {
		t.Fatalf("stats of a topic with no calls yet: %d %v, want breakers []", status, st)
	}
	for i := range 20 {
		job := map[string]any{"topic": "flaky", "delay_ms": 0, "callback_url": rcv.URL + fmt.Sprintf("/hook/%d", i)}
		if status, body := p.call(t, "POST", "/v1/jobs", job); status != 201 {
			t.Fatalf("schedule: %d %v", status, body)
		}
	}

	// Wait for the breaker to open and hold jobs back for 2 s past their
	// due time while no timer in Redis is overdue.
	var last map[string]any
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, st := p.call(t, "GET", "/v1/topics/flaky/stats", nil)
		last = st
		breakers, _ := st["breakers"].([]any)
		var b map[string]any
		if len(breakers) == 1 {
			b, _ = breakers[0].(map[string]any)
		}
		overdue, _ := st["oldest_overdue_ms"].(float64)
		next, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(st["next_due_at"]))
		now := time.Now()
		if b != nil && b["host"] == host && b["state"] == "open" && b["oldest_held_due_at"] != "" &&
			overdue >= 2000 && (next.IsZero() || next.After(now)) {
			if f, _ := b["failures"].(float64); f < 5 {
				t.Errorf("an open breaker with %v failures, want at least 5 (the threshold): %v", f, b)
			}
			held, err := time.Parse(time.RFC3339Nano, fmt.Sprint(b["oldest_held_due_at"]))
			if err != nil || now.Sub(held) < time.Duration(overdue)*time.Millisecond {
				t.Errorf("oldest_overdue_ms %v does not count from the oldest held job, due %v (%v)", overdue, b["oldest_held_due_at"], err)
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(b["since"])); err != nil {
				t.Errorf("since %v: %v", b["since"], err)
			}
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(b["open_until"])); err != nil {
				t.Errorf("open_until of an open breaker %v: %v", b["open_until"], err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stats never showed the breaker open with its jobs overdue: %v", last)
		}
	}

	// The receiver answers again: a probe closes the breaker.
	failing.Store(false)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, st := p.call(t, "GET", "/v1/topics/flaky/stats", nil)
		if fmt.Sprint(st["breakers"]) == "[]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the breaker never closed: %v", st)
		}
	}
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
