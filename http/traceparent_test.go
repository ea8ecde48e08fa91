package http_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// A scheduling request's W3C traceparent is kept with its jobs, each job
// of a batch included; a malformed or repeated one is ignored, never a
// 400, as the Trace Context specification says.
func TestTraceParentKept(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name   string
		header []string
		want   string
	}{
		{"valid", []string{tp}, tp},
		{"later version", []string{"01" + tp[2:] + "-more"}, "01" + tp[2:] + "-more"},
		{"none", nil, ""},
		{"upper case", []string{strings.ToUpper(tp)}, ""},
		{"version 00 too long", []string{tp + "-more"}, ""},
		{"zero trace id", []string{"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, ""},
		{"garbage", []string{"hello"}, ""},
		{"twice", []string{tp, tp}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/v1/jobs", "/v1/jobs/batch"} {
				body := `{"topic": "orders", "delay_ms": 60000, ` + cb + `}`
				if path == "/v1/jobs/batch" {
					body = `{"jobs": [` + body + `, {"topic": "orders", "delay_ms": 60000, "biz_id": "9", ` + cb + `}]}`
				}
				req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				for _, h := range tc.header {
					req.Header.Add("traceparent", h)
				}
				resp, err := e.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				a := answer{status: resp.StatusCode}
				err = json.NewDecoder(resp.Body).Decode(&a.body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				switch path {
				case "/v1/jobs":
					if a.status != http.StatusCreated {
						t.Fatalf("%s: status %d: %v", path, a.status, a.body)
					}
					ids = append(ids, a.body["id"].(string))
				default:
					if a.status != http.StatusOK {
						t.Fatalf("%s: status %d: %v", path, a.status, a.body)
					}
					for _, r := range a.body["results"].([]any) {
						ids = append(ids, r.(map[string]any)["id"].(string))
					}
				}
				for _, s := range ids {
					id, err := timer.ParseJobID(s)
					if err != nil {
						t.Fatal(err)
					}
					j, err := e.store.Get(t.Context(), id)
					if err != nil {
						t.Fatal(err)
					}
					if j.TraceParent != tc.want {
						t.Errorf("%s: job %s keeps traceparent %q, want %q", path, s, j.TraceParent, tc.want)
					}
				}
			}
		})
	}
}
