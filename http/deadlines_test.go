package http_test

import (
	"net/http"
	"testing"

	tochttp "github.com/toc-project/toc/http"
)

// expire_after_ms on a job, a batch item, a schedule's job and a topic:
// stored and shown, -1 opting out of the topic's, and out-of-range
// values a 400 naming the field with nothing written.
func TestDeadlineFields(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	if a := e.call(t, "PUT", "/v1/topics/otp", `{"expire_after_ms": 5000}`); a.status != http.StatusCreated || a.body["expire_after_ms"] != float64(5000) {
		t.Fatalf("PUT topic: %d %s", a.status, a.raw)
	}
	for _, c := range []struct {
		body       string
		after      any // nil: no deadline
		hasExpires bool
	}{
		{`{"topic": "otp", "delay_ms": 1000, ` + cb + `}`, float64(5000), true},
		{`{"topic": "otp", "delay_ms": 1000, "expire_after_ms": null, ` + cb + `}`, float64(5000), true},
		{`{"topic": "otp", "delay_ms": 1000, "expire_after_ms": 0, ` + cb + `}`, float64(0), true},
		{`{"topic": "otp", "delay_ms": 1000, "expire_after_ms": -1, ` + cb + `}`, nil, false},
		{`{"topic": "plain", "delay_ms": 1000, ` + cb + `}`, nil, false},
	} {
		a := e.call(t, "POST", "/v1/jobs", c.body)
		if a.status != http.StatusCreated || a.body["expire_after_ms"] != c.after || (a.body["expire_at"] != nil) != c.hasExpires {
			t.Errorf("%s: %d, expire_after_ms %v, expire_at %v; want %v", c.body, a.status, a.body["expire_after_ms"], a.body["expire_at"], c.after)
		}
	}
	for _, body := range []string{
		`{"topic": "otp", "delay_ms": 1, "expire_after_ms": -2, ` + cb + `}`,
		`{"topic": "otp", "delay_ms": 1, "expire_after_ms": 31536000001, ` + cb + `}`,
		`{"topic": "otp", "delay_ms": 1, "expire_after_ms": 1.5, ` + cb + `}`,
		`{"topic": "otp", "delay_ms": 1, "expire_after_ms": "5000", ` + cb + `}`,
	} {
		e.call(t, "POST", "/v1/jobs", body).wantError(t, http.StatusBadRequest, "invalid_argument", "expire_after_ms")
	}
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "otp", "delay_ms": 1, `+cb+`}, {"topic": "otp", "delay_ms": 1, "expire_after_ms": -5, `+cb+`}]}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "jobs")
	if n := e.rows(t, "otp"); n != 4 {
		t.Errorf("%d rows of otp, want the 4 accepted jobs", n)
	}
	e.call(t, "PATCH", "/v1/topics/otp", `{"expire_after_ms": -1}`).wantError(t, http.StatusBadRequest, "invalid_argument", "expire_after_ms")
	if a := e.call(t, "PATCH", "/v1/topics/otp", `{"expire_after_ms": null}`); a.status != http.StatusOK || a.body["expire_after_ms"] != nil {
		t.Errorf("PATCH null: %d %s", a.status, a.raw)
	}
	a := e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, "job": {"topic": "otp", "expire_after_ms": -1, `+cb+`}}`)
	if a.status != http.StatusCreated || a.body["job"].(map[string]any)["expire_after_ms"] != float64(-1) {
		t.Errorf("schedule with a job opting out: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, "job": {"topic": "otp", "expire_after_ms": -3, `+cb+`}}`).
		wantError(t, http.StatusBadRequest, "invalid_argument", "job.expire_after_ms")
}
