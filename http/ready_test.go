package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
)

// /readyz names the failing dependency to anyone, and its error text, which
// may hold an address, only to a caller with a token.
func TestReadyTwoShapes(t *testing.T) {
	raw := errors.New("dial tcp 10.1.2.3:6379: connect: connection refused")
	cfg := tochttp.APIConfig{
		Tokens: []string{"s3cret"},
		Ready: map[string]func(context.Context) error{
			"task_store": func(context.Context) error { return nil },
			"redis":      func(context.Context) error { return raw },
		},
	}
	e := newAPIEnv(t, cfg, nil)
	starting := httptest.NewServer(tochttp.Starting(cfg))
	t.Cleanup(starting.Close)
	for name, get := range map[string]func(header ...string) answer{
		"api": func(h ...string) answer { return e.call(t, "GET", "/readyz", "", h...) },
		"starting": func(h ...string) answer {
			return (&apiEnv{srv: starting}).call(t, "GET", "/readyz", "", h...)
		},
	} {
		for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}} {
			a := get(h...)
			checks, _ := a.body["checks"].(map[string]any)
			if a.status != 503 || checks["redis"] != "failing" || checks["task_store"] != "ok" {
				t.Errorf("%s, %q: %d %s", name, h, a.status, a.raw)
			}
			if _, ok := a.body["errors"]; ok || strings.Contains(string(a.raw), "10.1.2.3") {
				t.Errorf("%s, %q: an open /readyz says too much: %s", name, h, a.raw)
			}
		}
		a := get("Authorization", "Bearer s3cret")
		errs, _ := a.body["errors"].(map[string]any)
		if a.status != 503 || errs["redis"] != raw.Error() || len(errs) != 1 {
			t.Errorf("%s with a token: %d %s", name, a.status, a.raw)
		}
	}
}

// A check that says it is degraded (one task store shard down of two)
// keeps /readyz at 200, status degraded, unless another fails.
func TestReadyDegraded(t *testing.T) {
	degraded := fmt.Errorf("%w: shard 1: connection refused", tochttp.ErrDegraded)
	redis := error(nil)
	e := newAPIEnv(t, tochttp.APIConfig{Ready: map[string]func(context.Context) error{
		"task_store": func(context.Context) error { return degraded },
		"redis":      func(context.Context) error { return redis },
	}}, nil)
	a := e.call(t, "GET", "/readyz", "")
	checks, _ := a.body["checks"].(map[string]any)
	errs, _ := a.body["errors"].(map[string]any)
	if a.status != 200 || a.body["status"] != "degraded" || checks["task_store"] != "degraded" || checks["redis"] != "ok" ||
		!strings.Contains(fmt.Sprint(errs["task_store"]), "shard 1") {
		t.Errorf("one shard down: %d %s", a.status, a.raw)
	}
	redis = errors.New("down")
	if a := e.call(t, "GET", "/readyz", ""); a.status != 503 || a.body["status"] != "unavailable" {
		t.Errorf("one shard down and Redis failing: %d %s", a.status, a.raw)
	}
}

// While the service starts, its address answers /healthz, /readyz and
// /metrics, and 503 unavailable to the API.
func TestStarting(t *testing.T) {
	h := tochttp.Starting(tochttp.APIConfig{
		Ready:   map[string]func(context.Context) error{"task_store": func(context.Context) error { return errors.New("down") }},
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("m 1\n")) }),
	})
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 200, "/v1/jobs": 503, "/v1/jobs/1": 503} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d, want %d: %s", path, rec.Code, want, rec.Body)
		}
		if strings.HasPrefix(path, "/v1") {
			var body struct{ Error struct{ Code string } }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != tochttp.CodeUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Errorf("GET %s: %v %s", path, err, rec.Body)
			}
		}
	}
}
