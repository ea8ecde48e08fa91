package http_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"
)

// A job whose receiver fails once and then succeeds: GET /v1/jobs/{id}
// shows when it is retried, and GET /v1/jobs/{id}/attempts both
// deliveries with their status, error and response excerpt.
func TestJobAttempts(t *testing.T) {
	var calls atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "database down \xff")
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(receiver.Close)
	hook, err := webhook.NewClient(webhook.Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.CloseIdleConnections)
	e := newAPIEnv(t, tochttp.APIConfig{}, hook)
	if a := e.call(t, "PUT", "/v1/topics/flaky", `{"slots": 4, "retry": {"base_ms": 400, "max_ms": 400}}`); a.status != http.StatusCreated {
		t.Fatalf("create topic: %d %s", a.status, a.raw)
	}
	e.run(t)
	if a := e.call(t, "GET", "/v1/jobs/123/attempts", ""); a.status != http.StatusNotFound {
		t.Errorf("attempts of an unknown job: %d %s, want 404", a.status, a.raw)
	}
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "flaky", "delay_ms": 0, "callback_url": "`+receiver.URL+`/hook"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	if _, ok := a.body["next_attempt_at"]; ok {
		t.Errorf("a job never attempted shows next_attempt_at: %s", a.raw)
	}

	retrying := waitFor(t, func() (answer, bool) {
		j := e.call(t, "GET", "/v1/jobs/"+id, "")
		return j, j.body["attempts"] == 1.0 || j.body["status"] == "done"
	})
	if retrying.body["status"] != "pending" || retrying.body["next_attempt_at"] != retrying.body["fire_at"] || retrying.body["last_error"] == "" {
		t.Errorf("after a failed attempt: %s; want next_attempt_at = fire_at and last_error", retrying.raw)
	}
	waitFor(t, func() (answer, bool) {
		j := e.call(t, "GET", "/v1/jobs/"+id, "")
		return j, j.body["status"] == "done"
	})
	got := waitFor(t, func() (answer, bool) {
		l := e.call(t, "GET", "/v1/jobs/"+id+"/attempts", "")
		as, _ := l.body["attempts"].([]any)
		return l, len(as) == 2
	})
	as := got.body["attempts"].([]any)
	first, second := as[0].(map[string]any), as[1].(map[string]any)
	if first["attempt"] != 1.0 || first["status_code"] != 500.0 || first["response_excerpt"] != "database down \uFFFD" || first["error"] == "" {
		t.Errorf("first attempt: %v", first)
	}
	if second["attempt"] != 2.0 || second["status_code"] != 200.0 || second["response_excerpt"] != `{"ok":true}` || second["error"] != "" {
		t.Errorf("second attempt: %v", second)
	}
	for _, at := range []map[string]any{first, second} {
		if _, err := time.Parse(time.RFC3339Nano, at["started_at"].(string)); err != nil {
			t.Errorf("started_at: %v", err)
		}
		if _, ok := at["duration_ms"].(float64); !ok {
			t.Errorf("duration_ms: %v", at["duration_ms"])
		}
	}
}

// waitFor polls until ok or 10 seconds, and returns the last answer.
func waitFor(t *testing.T, poll func() (answer, bool)) answer {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a, ok := poll()
		if ok {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %d %s", a.status, a.raw)
		}
	}
}

// A job whose receiver answers 204 shows, done, last_status 204 (the
// dashboard's "Last HTTP status"), as its attempt does: SQLite.
func TestJobLastStatusOfSuccess(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	hook, err := webhook.NewClient(webhook.Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.CloseIdleConnections)
	e := newAPIEnv(t, tochttp.APIConfig{}, hook)
	e.run(t)
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "hooks", "delay_ms": 0, "callback_url": "`+receiver.URL+`/hook"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	j := waitFor(t, func() (answer, bool) {
		j := e.call(t, "GET", "/v1/jobs/"+id, "")
		return j, j.body["status"] == "done"
	})
	if j.body["last_status"] != 204.0 || j.body["attempts"] != 1.0 || j.body["last_error"] != "" {
		t.Errorf("done job: %s; want last_status 204 after 1 attempt, no last_error", j.raw)
	}
}
