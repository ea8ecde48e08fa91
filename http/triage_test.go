package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// Dead letters grouped by why they died; a group replayed, another
// purged, each answering its count; bad input names the field.
func TestDeadLetterTriage(t *testing.T) {
	// Jobs of business id 1 die of a 503, the others of a refused dial to
	// ports that differ: two signatures.
	fail := timer.HandlerFunc(func(_ context.Context, d timer.Delivery) error {
		if d.Job.BizID == 1 {
			return &timer.StatusError{Code: 503, Err: errors.New("receiver answered 503")}
		}
		return fmt.Errorf("dial tcp 127.0.0.1:%d: connection refused", 9000+d.Job.ID%100)
	})
	e := newAPIEnv(t, tochttp.APIConfig{}, fail)
	e.run(t)
	for i := range 7 {
		a := e.call(t, "POST", "/v1/jobs", fmt.Sprintf(`{"topic": "d", "biz_id": %d, "delay_ms": 0, "max_attempts": 1, %s}`, i%2+1, cb))
		if a.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
	}
	var groups []any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a := e.call(t, "GET", "/v1/deadletters/summary?topic=d", "")
		if a.status != http.StatusOK {
			t.Fatalf("summary: %d %s", a.status, a.raw)
		}
		groups = a.body["groups"].([]any)
		total := 0
		for _, g := range groups {
			total += int(g.(map[string]any)["count"].(float64))
		}
		if total == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("summary never counted 7: %s", a.raw)
		}
	}
	if len(groups) != 2 {
		t.Fatalf("groups %v, want 2", groups)
	}
	first, second := groups[0].(map[string]any), groups[1].(map[string]any)
	if first["signature"] != "HTTP 503" || first["count"] != float64(4) || first["example_id"] == "" ||
		!strings.HasPrefix(second["signature"].(string), "dial tcp N.N.N.N:N") || second["count"] != float64(3) {
		t.Fatalf("groups %v", groups)
	}

	// Replay two of the 503s, then the rest of them; purge the dials.
	a := e.call(t, "POST", "/v1/deadletters/replay", `{"topic": "d", "signature": "HTTP 503", "limit": 2, "delay_ms": 3600000}`)
	if a.status != http.StatusOK || a.body["replayed"] != float64(2) || a.body["more"] != true {
		t.Fatalf("replay 2: %d %s", a.status, a.raw)
	}
	a = e.call(t, "POST", "/v1/deadletters/replay", `{"topic": "d", "signature": "HTTP 503", "delay_ms": 3600000, "rate": 100}`)
	if a.status != http.StatusOK || a.body["replayed"] != float64(2) || a.body["more"] != false {
		t.Fatalf("replay the rest: %d %s", a.status, a.raw)
	}
	a = e.call(t, "POST", "/v1/deadletters/purge", fmt.Sprintf(`{"topic": "d", "signature": %q}`, second["signature"]))
	if a.status != http.StatusOK || a.body["purged"] != float64(3) {
		t.Fatalf("purge: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "GET", "/v1/deadletters/summary?topic=d", ""); len(a.body["groups"].([]any)) != 0 {
		t.Errorf("summary after replay and purge: %s", a.raw)
	}
	if a := e.call(t, "GET", "/v1/jobs?topic=d&status=pending", ""); len(a.body["jobs"].([]any)) != 4 {
		t.Errorf("replayed jobs pending: %s", a.raw)
	}

	e.call(t, "GET", "/v1/deadletters/summary", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "GET", "/v1/deadletters/summary?topic=d&from=x", "").wantError(t, 400, tochttp.CodeInvalid, "from")
	e.call(t, "GET", "/v1/deadletters/summary?topic=d&topic=e", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "GET", "/v1/deadletters/summary?topic=d&signature=x", "").wantError(t, 400, tochttp.CodeInvalid, "signature")
	e.call(t, "POST", "/v1/deadletters/replay", `{"topic": "d", "limit": 0}`).wantError(t, 400, tochttp.CodeInvalid, "limit")
	e.call(t, "POST", "/v1/deadletters/replay", `{"topic": "d", "rate": 100000}`).wantError(t, 400, tochttp.CodeInvalid, "rate")
	e.call(t, "POST", "/v1/deadletters/purge", `{"topic": "d", "delay_ms": 5}`).wantError(t, 400, tochttp.CodeInvalid, "delay_ms")
	e.call(t, "POST", "/v1/deadletters/purge", `{"signature": "x"}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "POST", "/v1/deadletters/purge", `{"topic": "d", "colour": "red"}`).wantError(t, 400, tochttp.CodeInvalid, "colour")
}
