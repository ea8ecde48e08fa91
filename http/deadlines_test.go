package http_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
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

// A job with a deadline in a paused topic reads expired once its deadline
// has passed (the backstop's next pass ends it), while the topic is still
// paused, with the reason; resumed, the topic fires nothing of it. SQLite.
func TestPausedTopicJobExpires(t *testing.T) {
	var fired atomic.Int32
	e := newAPIEnv(t, tochttp.APIConfig{}, timer.HandlerFunc(func(_ context.Context, d timer.Delivery) error {
		fired.Add(1)
		return nil
	}))
	if a := e.call(t, "PUT", "/v1/topics/held", `{}`); a.status != http.StatusCreated {
		t.Fatalf("PUT topic: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/topics/held/pause", ""); a.status != http.StatusOK {
		t.Fatalf("pause: %d %s", a.status, a.raw)
	}
	e.run(t)
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "held", "delay_ms": 0, "expire_after_ms": 100, `+cb+`}`)
	if a.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	j := waitFor(t, func() (answer, bool) {
		j := e.call(t, "GET", "/v1/jobs/"+id, "")
		return j, j.body["status"] != "pending"
	})
	if j.body["status"] != "expired" || j.body["attempts"] != 0.0 || !strings.Contains(j.body["last_error"].(string), "deadline passed") {
		t.Fatalf("the paused topic's job past its deadline: %s; want expired, no attempt, the reason", j.raw)
	}
	if p := e.call(t, "GET", "/v1/topics/held", ""); p.body["paused"] != true {
		t.Fatalf("topic: %s; want it still paused", p.raw)
	}
	if a := e.call(t, "POST", "/v1/topics/held/resume", ""); a.status != http.StatusOK {
		t.Fatalf("resume: %d %s", a.status, a.raw)
	}
	c := e.call(t, "POST", "/v1/jobs", `{"topic": "held", "delay_ms": 0, `+cb+`}`)
	if c.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", c.status, c.raw)
	}
	waitFor(t, func() (answer, bool) {
		j := e.call(t, "GET", "/v1/jobs/"+c.body["id"].(string), "")
		return j, j.body["status"] == "done"
	})
	if n := fired.Load(); n != 1 {
		t.Errorf("%d calls after the resume, want 1: the job resumed after it, not the expired one", n)
	}
}
