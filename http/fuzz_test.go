package http_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
)

// FuzzCreateJob sends arbitrary bodies to POST /v1/jobs and
// /v1/jobs/batch over a real engine: never a panic, never a 5xx, always a
// JSON answer, and a 201 only with a job id.
func FuzzCreateJob(f *testing.F) {
	for _, seed := range []string{
		`{"topic": "orders", "delay_ms": 1000, "callback_url": "http://127.0.0.1:9/x", "payload": {"a": [1, 2, {"b": null}]}}`,
		`{"topic": "o", "fire_at": "2030-01-01T00:00:00.123456789+05:30", "callback_url": "https://example.com/h", "key": "k", "biz_id": 1, "biz_type": 2, "max_attempts": 64}`,
		`{"topic": "o", "fire_at": "1970-01-01T00:00:00Z", "callback_url": "http://[::1]:1/"}`,
		`{"topic": "o", "delay_ms": 9007199254740993, "callback_url": "http://a/"}`,
		`{"topic": "o", "delay_ms": 1e3, "callback_url": "http://a/"}`,
		`{"topic": "o", "delay_ms": 1, "callback_url": "http://a/", "payload": "\ud800"}`,
		`{"jobs": [{"topic": "o", "delay_ms": 1, "callback_url": "http://a/"}, 5, null, "x"]}`,
		`{"topic": null, "key": null, "payload": null}`,
		`[]`, `null`, `"x"`, `{}`, `{"topic": "o"}{"topic": "o"}`, "\x00", `{"topic": "` + strings.Repeat("a", 70) + `"}`,
	} {
		f.Add(seed)
	}
	e := newAPIEnv(f, tochttp.APIConfig{MaxBodyBytes: 128 << 10}, nil)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/jobs", "/v1/jobs/batch"} {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			e.api.ServeHTTP(rec, req)
			if rec.Code >= 500 {
				t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body)
			}
			var answer map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
				t.Fatalf("%s %q: answer is not JSON: %s", path, body, rec.Body)
			}
			switch {
			case rec.Code == http.StatusCreated:
				if id, _ := answer["id"].(string); id == "" {
					t.Fatalf("%s %q: 201 without an id: %s", path, body, rec.Body)
				}
			case rec.Code >= 400:
				if e, _ := answer["error"].(map[string]any); e == nil || e["code"] == "" {
					t.Fatalf("%s %q: %d without an error body: %s", path, body, rec.Code, rec.Body)
				}
			}
		}
	})
}
