package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// A batch with a group creates it, its members fire (one dies), and the
// group completes: GET shows the counts, and the completion job fires
// once with them. Then the errors: an unknown group, a sealed one, a bad
// id, an unknown group's page.
func TestGroupsAPI(t *testing.T) {
	var mu sync.Mutex
	var completions [][]byte
	handler := timer.HandlerFunc(func(_ context.Context, d timer.Delivery) error {
		if d.Job.Topic == timer.DefaultGroupTopic {
			mu.Lock()
			completions = append(completions, d.Job.Payload)
			mu.Unlock()
			return nil
		}
		if string(d.Job.Payload) == `"fail"` {
			return errors.New("receiver answered 500")
		}
		return nil
	})
	e := newAPIEnv(t, tochttp.APIConfig{}, handler)
	e.run(t)

	a := e.call(t, "POST", "/v1/jobs/batch", `{"group": {"id": "export-42", "on_complete": {"callback_url": "http://127.0.0.1:9/done", "payload": {"export": 42}}},
		"jobs": [{"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p"},
		         {"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p", "group_id": "export-42"},
		         {"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p", "payload": "fail", "max_attempts": 1}]}`)
	if a.status != http.StatusOK {
		t.Fatalf("batch: %d %s", a.status, a.raw)
	}
	if g, _ := a.body["group"].(map[string]any); g["id"] != "export-42" || g["sealed"] != true {
		t.Errorf("batch's group = %v", a.body["group"])
	}
	first := a.body["results"].([]any)[0].(map[string]any)["id"].(string)
	if j := e.call(t, "GET", "/v1/jobs/"+first, ""); j.body["group_id"] != "export-42" {
		t.Errorf("job's group_id = %v", j.body["group_id"])
	}
	g := waitFor(t, func() (answer, bool) {
		a := e.call(t, "GET", "/v1/groups/export-42", "")
		return a, a.body["completion_job_id"] != nil
	})
	counts := g.body["completed_counts"].(map[string]any)
	if g.body["completed"] != true || counts["done"] != 2.0 || counts["dead"] != 1.0 || g.body["total"] != 3.0 {
		t.Errorf("group = %s", g.raw)
	}
	waitFor(t, func() (answer, bool) {
		mu.Lock()
		defer mu.Unlock()
		return answer{}, len(completions) == 1
	})
	var body struct {
		Counts  map[string]int64 `json:"counts"`
		Total   int64            `json:"total"`
		Payload map[string]int   `json:"payload"`
	}
	mu.Lock()
	err := json.Unmarshal(completions[0], &body)
	mu.Unlock()
	if err != nil || body.Counts["done"] != 2 || body.Counts["dead"] != 1 || body.Total != 3 || body.Payload["export"] != 42 {
		t.Errorf("completion payload: %+v, %v", body, err)
	}

	e.call(t, "POST", "/v1/jobs", `{"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p", "group_id": "nope"}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "group_id")
	e.call(t, "POST", "/v1/jobs", `{"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p", "group_id": "export-42"}`).
		wantError(t, http.StatusConflict, "conflict", "")
	e.call(t, "POST", "/v1/jobs", `{"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p", "group_id": ""}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "group_id")
	e.call(t, "GET", "/v1/groups/nope", "").wantError(t, http.StatusNotFound, "not_found", "")
	e.call(t, "POST", "/v1/groups/nope/seal", "").wantError(t, http.StatusNotFound, "not_found", "")
	e.call(t, "POST", "/v1/groups", `{"id": "g2", "on_complete": {"callback_url": "ftp://x"}}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "on_complete.callback_url")
	e.call(t, "POST", "/v1/jobs/batch", `{"group": {"id": "g3", "on_complete": {"topic": "Bad!", "callback_url": "http://127.0.0.1:9/d"}}, "jobs": [{"topic": "parts", "delay_ms": 0, "callback_url": "http://127.0.0.1:9/p"}]}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "group.on_complete.topic")

	// Open, one member at a time, then sealed: it completes once the
	// member ends.
	if a := e.call(t, "POST", "/v1/groups", `{"id": "g2"}`); a.status != http.StatusCreated || a.body["sealed"] != false {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/groups", `{"id": "g2"}`); a.status != http.StatusOK {
		t.Errorf("create again: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/groups", `{"id": "g2", "on_complete": {"callback_url": "http://127.0.0.1:9/d"}}`).wantError(t, http.StatusConflict, "conflict", "")
	j := e.call(t, "POST", "/v1/jobs", `{"topic": "parts", "delay_ms": 60000, "callback_url": "http://127.0.0.1:9/p", "group_id": "g2"}`)
	if j.status != http.StatusCreated {
		t.Fatalf("join: %d %s", j.status, j.raw)
	}
	s := e.call(t, "POST", "/v1/groups/g2/seal", "")
	if s.status != http.StatusOK || s.body["sealed"] != true || s.body["completed"] != false || s.body["counts"].(map[string]any)["pending"] != 1.0 {
		t.Fatalf("seal: %d %s", s.status, s.raw)
	}
	if a := e.call(t, "DELETE", "/v1/jobs/"+j.body["id"].(string), ""); a.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", a.status, a.raw)
	}
	g = waitFor(t, func() (answer, bool) {
		a := e.call(t, "GET", "/v1/groups/g2", "")
		return a, a.body["completed"] == true
	})
	if g.body["completed_counts"].(map[string]any)["cancelled"] != 1.0 || g.body["on_complete"] != nil || g.body["completion_job_id"] != nil {
		t.Errorf("group g2 = %s", g.raw)
	}
}
