package http_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
)

// The edges of a job request: each refused with a 400 naming the field,
// never a 500, never stored as another value.
func TestInputEdges(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	job := func(fields string) string { return `{"topic": "edge", ` + fields + `, ` + cb + `}` }
	tests := []struct {
		name, body, field string
	}{
		{"fire_at year 1", job(`"fire_at": "0001-01-01T00:00:00Z"`), "fire_at"},
		{"fire_at 1969", job(`"fire_at": "1969-12-31T23:59:59Z"`), "fire_at"},
		{"fire_at the epoch", job(`"fire_at": "1970-01-01T00:00:00Z"`), "fire_at"},
		{"fire_at year 9999", job(`"fire_at": "9999-12-31T23:59:59Z"`), "fire_at"},
		{"fire_at past the exact scores", job(`"fire_at": "4199-11-25T00:00:00Z"`), "fire_at"},
		{"fire_at 4199", job(`"fire_at": "4199-01-01T00:00:00Z"`), "fire_at"},
		{"delay_ms negative", job(`"delay_ms": -1`), "delay_ms"},
		{"delay_ms beyond", job(`"delay_ms": 9223372036854775807`), "delay_ms"},
		{"delay_ms fraction", job(`"delay_ms": 1.5`), "delay_ms"},
		{"NUL in key", job(`"delay_ms": 1, "key": "a\u0000b"`), "key"},
		{"raw control byte in key", job("\"delay_ms\": 1, \"key\": \"a\x01b\""), ""}, // not even JSON
		{"escaped control in key", job(`"delay_ms": 1, "key": "line\nbreak"`), "key"},
		{"DEL in key", job(`"delay_ms": 1, "key": "a` + "\x7f" + `"`), "key"},
		{"NUL in topic", `{"topic": "a\u0000", "delay_ms": 1, ` + cb + `}`, "topic"},
		{"tab in topic", `{"topic": "a\tb", "delay_ms": 1, ` + cb + `}`, "topic"},
		{"max_attempts 0", job(`"delay_ms": 1, "max_attempts": 0`), "max_attempts"},
		{"max_attempts negative", job(`"delay_ms": 1, "max_attempts": -3`), "max_attempts"},
		{"max_attempts huge", job(`"delay_ms": 1, "max_attempts": 4294967297`), "max_attempts"},
		{"priority empty", job(`"delay_ms": 1, "priority": ""`), "priority"},
		{"priority unknown", job(`"delay_ms": 1, "priority": "urgent"`), "priority"},
		{"window_ms negative", job(`"delay_ms": 1, "window_ms": -1`), "window_ms"},
		{"window_ms beyond a day", job(`"delay_ms": 1, "window_ms": 86400001`), "window_ms"},
		{"window_ms fraction", job(`"delay_ms": 1, "window_ms": 1.5`), "window_ms"},
		{"window_ms string", job(`"delay_ms": 1, "window_ms": "60000"`), "window_ms"},
		{"payload too large", job(`"delay_ms": 1, "payload": "` + strings.Repeat("x", 70<<10) + `"`), "payload"},
		{"duplicate topic", `{"topic": "edge", "topic": "other", "delay_ms": 1, ` + cb + `}`, "topic"},
		{"duplicate topic, escaped", `{"topic": "edge", "\u0074opic": "other", "delay_ms": 1, ` + cb + `}`, "topic"},
		{"topic in another case", `{"topic": "edge", "Topic": "other", "delay_ms": 1, ` + cb + `}`, "Topic"},
		{"field in another case alone", `{"TOPIC": "edge", "delay_ms": 1, ` + cb + `}`, "TOPIC"},
		{"duplicate key in the payload", job(`"delay_ms": 1, "payload": {"a": 1, "b": {"c": 1, "c": 2}}`), "payload.b.c"},
		{"invalid UTF-8", job(`"delay_ms": 1, "key": "` + "\xff" + `"`), ""},
		{"concurrency_key too long", job(`"delay_ms": 1, "concurrency_key": "` + strings.Repeat("k", 129) + `"`), "concurrency_key"},
		{"NUL in concurrency_key", job(`"delay_ms": 1, "concurrency_key": "a\u0000b"`), "concurrency_key"},
		{"concurrency_key not a string", job(`"delay_ms": 1, "concurrency_key": 7`), "concurrency_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.call(t, "POST", "/v1/jobs", tt.body).wantError(t, http.StatusBadRequest, tochttp.CodeInvalid, tt.field)
		})
	}
	if n := e.rows(t, "edge") + e.rows(t, "other"); n != 0 {
		t.Errorf("refused requests stored %d rows", n)
	}
	// The edges that are accepted.
	for _, body := range []string{
		job(`"fire_at": "1970-01-01T00:00:00.001Z"`),
		job(`"fire_at": "4198-12-31T23:59:59.999Z"`),
		job(`"delay_ms": 1, "key": "ключ ✓", "payload": {"a": 1, "A": 2}`),
		job(`"delay_ms": 1, "concurrency_key": "` + strings.Repeat("k", 128) + `"`),
	} {
		if a := e.call(t, "POST", "/v1/jobs", body); a.status != http.StatusCreated {
			t.Errorf("%s: %d %s", body, a.status, a.raw)
		}
	}
}

// PATCH /v1/jobs/{id} and replay refuse the same due times.
func TestRescheduleAndReplayEdges(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	id := e.call(t, "POST", "/v1/jobs", `{"topic": "edge", "delay_ms": 60000, `+cb+`}`).body["id"].(string)
	for _, tt := range []struct{ body, field string }{
		{`{"fire_at": "0001-01-01T00:00:00Z"}`, "fire_at"},
		{`{"fire_at": "1960-01-01T00:00:00Z"}`, "fire_at"},
		{`{"fire_at": "9999-01-01T00:00:00Z"}`, "fire_at"},
		{`{"delay_ms": -1}`, "delay_ms"},
		{`{"delay_ms": 9223372036854775807}`, "delay_ms"},
		{`{"delay_ms": 1, "delay_ms": 2}`, "delay_ms"},
		{`{"Delay_ms": 1}`, "Delay_ms"},
	} {
		for _, path := range []string{"PATCH /v1/jobs/" + id, "POST /v1/deadletters/" + id + "/replay"} {
			method, p, _ := strings.Cut(path, " ")
			e.call(t, method, p, tt.body).wantError(t, http.StatusBadRequest, tochttp.CodeInvalid, tt.field)
		}
	}
	if g := e.call(t, "GET", "/v1/jobs/"+id, ""); g.body["status"] != "pending" {
		t.Errorf("the job changed: %s", g.raw)
	}
}

// A method a path does not serve answers 405 method_not_allowed with the
// methods it serves in Allow.
func TestMethodNotAllowed(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	for _, tt := range []struct {
		method, path string
		allow        []string
	}{
		{"PUT", "/v1/jobs", []string{"POST", "GET", "DELETE", "PATCH"}},
		{"DELETE", "/v1/openapi.json", []string{"GET"}},
		{"POST", "/v1/jobs/123", []string{"GET", "PATCH", "DELETE"}},
		{"POST", "/healthz", []string{"GET"}},
	} {
		a := e.call(t, tt.method, tt.path, "")
		a.wantError(t, http.StatusMethodNotAllowed, tochttp.CodeMethodNotAllowed, "")
		allow := a.header.Values("Allow")
		slices.Sort(allow)
		slices.Sort(tt.allow)
		if !slices.Equal(allow, tt.allow) {
			t.Errorf("%s %s: Allow %v, want %v", tt.method, tt.path, allow, tt.allow)
		}
	}
}

// A job's concurrency key is kept and shown, in a batch too; an
// idempotent repeat with another one is a conflict, as other content is.
func TestConcurrencyKeyRoundTrip(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "ck", "key": "r1", "delay_ms": 60000, "concurrency_key": "account-7", `+cb+`}`)
	if a.status != http.StatusCreated || a.body["concurrency_key"] != "account-7" {
		t.Fatalf("POST: %d %s", a.status, a.raw)
	}
	if g := e.call(t, "GET", "/v1/jobs/"+a.body["id"].(string), ""); g.body["concurrency_key"] != "account-7" {
		t.Errorf("GET: %s", g.raw)
	}
	if r := e.call(t, "POST", "/v1/jobs", `{"topic": "ck", "key": "r1", "delay_ms": 60000, "concurrency_key": "account-7", `+cb+`}`); r.status != http.StatusOK || r.body["id"] != a.body["id"] {
		t.Errorf("repeat: %d %s, want 200 and job %v", r.status, r.raw, a.body["id"])
	}
	e.call(t, "POST", "/v1/jobs", `{"topic": "ck", "key": "r1", "delay_ms": 60000, "concurrency_key": "account-8", `+cb+`}`).
		wantError(t, http.StatusConflict, tochttp.CodeConflict, "")
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "ck", "delay_ms": 1000, "concurrency_key": "a", `+cb+`},
		{"topic": "ck", "delay_ms": 1000, `+cb+`}]}`)
	if b.status != http.StatusOK {
		t.Fatalf("batch: %d %s", b.status, b.raw)
	}
	res := b.body["results"].([]any)
	for i, want := range []string{"a", ""} {
		id := res[i].(map[string]any)["id"].(string)
		if got := e.call(t, "GET", "/v1/jobs/"+id, "").body["concurrency_key"]; got != want {
			t.Errorf("batch item %d: concurrency_key %v, want %q", i, got, want)
		}
	}
}
