package http_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

const scheduleJob = `"job": {"topic": "reports", "callback_url": "http://127.0.0.1:9/hook", "payload": {"r": 1}, "priority": "high"}`

func TestCreateAndGetSchedule(t *testing.T) {
	e := newAPIEnv(t, tochttpConfig(), nil)
	a := e.call(t, "POST", "/v1/schedules", `{"cron": "0 9 * * MON-FRI", "time_zone": "Europe/Berlin", "catch_up": "all", `+scheduleJob+`}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id, _ := a.body["id"].(string)
	next, _ := a.body["next_fire_times"].([]any)
	if id == "" || len(next) != 5 || a.body["catch_up"] != "all" || a.body["paused"] != false || a.body["key_prefix"] != "schedule:"+id+":" {
		t.Fatalf("create answer: %s", a.raw)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	prev := time.Now()
	for _, s := range next {
		at, err := time.Parse(time.RFC3339, s.(string))
		if err != nil {
			t.Fatal(err)
		}
		local := at.In(berlin)
		if !at.After(prev) || local.Hour() != 9 || local.Minute() != 0 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
			t.Errorf("next fire time %s (%s in Berlin) is not a weekday's 09:00 after %s", s, local, prev)
		}
		prev = at
	}
	job, _ := a.body["job"].(map[string]any)
	if job["topic"] != "reports" || job["priority"] != "high" || job["biz_id"] != "0" {
		t.Errorf("job template: %v", job)
	}
	g := e.call(t, "GET", "/v1/schedules/"+id, "")
	if g.status != http.StatusOK || g.body["id"] != id || g.body["cron"] != "0 9 * * MON-FRI" || g.body["time_zone"] != "Europe/Berlin" {
		t.Fatalf("get: %d %s", g.status, g.raw)
	}
	e.call(t, "GET", "/v1/schedules/1", "").wantError(t, 404, "not_found", "")
	e.call(t, "GET", "/v1/schedules/x", "").wantError(t, 400, "invalid_argument", "id")
}

func tochttpConfig() (c tochttp.APIConfig) { return c }

func TestScheduleRefusals(t *testing.T) {
	e := newAPIEnv(t, tochttpConfig(), nil)
	for _, tt := range []struct {
		name, body, field string
	}{
		{"no job", `{"cron": "* * * * *"}`, "job"},
		{"neither rule", `{` + scheduleJob + `}`, "cron"},
		{"both rules", `{"cron": "* * * * *", "every_ms": 5000, ` + scheduleJob + `}`, "cron"},
		{"bad cron", `{"cron": "70 * * * *", ` + scheduleJob + `}`, "cron"},
		{"unknown zone", `{"cron": "* * * * *", "time_zone": "Nowhere/Land", ` + scheduleJob + `}`, "time_zone"},
		{"every too small", `{"every_ms": 10, ` + scheduleJob + `}`, "every_ms"},
		{"end before start", `{"every_ms": 5000, "start_at": "2030-01-02T00:00:00Z", "end_at": "2030-01-01T00:00:00Z", ` + scheduleJob + `}`, "end_at"},
		{"bad start", `{"every_ms": 5000, "start_at": "tomorrow", ` + scheduleJob + `}`, "start_at"},
		{"bad catch-up", `{"every_ms": 5000, "catch_up": "some", ` + scheduleJob + `}`, "catch_up"},
		{"job topic", `{"every_ms": 5000, "job": {"topic": "Bad Topic", "callback_url": "http://127.0.0.1:9/"}}`, "job.topic"},
		{"job callback", `{"every_ms": 5000, "job": {"topic": "t"}}`, "job.callback_url"},
		{"job callback scheme", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "ftp://127.0.0.1/"}}`, "job.callback_url"},
		{"job fire_at", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "fire_at": "2030-01-01T00:00:00Z"}}`, "job.fire_at"},
		{"job key", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "key": "k"}}`, "job.key"},
		{"job max_attempts", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "max_attempts": 0}}`, "job.max_attempts"},
		{"job payload size", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "payload": "` + strings.Repeat("x", timer.MaxPayloadBytes) + `"}}`, "job.payload"},
		{"job unknown field", `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "colour": 1}}`, "job.colour"},
		{"job not an object", `{"every_ms": 5000, "job": 7}`, "job"},
		{"unknown field", `{"every_ms": 5000, "colour": 1, ` + scheduleJob + `}`, "colour"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.call(t, "POST", "/v1/schedules", tt.body).wantError(t, 400, "invalid_argument", tt.field)
		})
	}
	big := `{"every_ms": 5000, "job": {"topic": "t", "callback_url": "http://127.0.0.1:9/", "payload": "` + strings.Repeat("x", 300<<10) + `"}}`
	if a := e.call(t, "POST", "/v1/schedules", big); a.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d %s", a.status, a.raw)
	}
	if l := e.call(t, "GET", "/v1/schedules", ""); l.status != http.StatusOK || len(l.body["schedules"].([]any)) != 0 {
		t.Errorf("refused schedules were stored: %s", l.raw)
	}
}

func TestListPauseResumeDeleteSchedule(t *testing.T) {
	e := newAPIEnv(t, tochttpConfig(), nil)
	var ids []string
	for range 3 {
		a := e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, `+scheduleJob+`}`)
		if a.status != http.StatusCreated {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		ids = append(ids, a.body["id"].(string))
	}
	p1 := e.call(t, "GET", "/v1/schedules?limit=2", "")
	if p1.status != http.StatusOK || len(p1.body["schedules"].([]any)) != 2 || p1.body["next_cursor"] != ids[1] {
		t.Fatalf("first page: %s", p1.raw)
	}
	p2 := e.call(t, "GET", "/v1/schedules?limit=2&cursor="+ids[1], "")
	if s := p2.body["schedules"].([]any); len(s) != 1 || s[0].(map[string]any)["id"] != ids[2] || p2.body["next_cursor"] != "" {
		t.Fatalf("second page: %s", p2.raw)
	}
	e.call(t, "GET", "/v1/schedules?limit=0", "").wantError(t, 400, "invalid_argument", "limit")
	e.call(t, "GET", "/v1/schedules?cursor=x", "").wantError(t, 400, "invalid_argument", "cursor")
	e.call(t, "GET", "/v1/schedules?topic=x", "").wantError(t, 400, "invalid_argument", "topic")

	p := e.call(t, "POST", "/v1/schedules/"+ids[0]+"/pause", "")
	if p.status != http.StatusOK || p.body["paused"] != true {
		t.Fatalf("pause: %d %s", p.status, p.raw)
	}
	// A paused schedule fires nothing: its next fire times are an empty
	// array (not null), on the pause's answer and on a later look-up.
	for _, c := range []answer{p, e.call(t, "GET", "/v1/schedules/"+ids[0], "")} {
		if nft, ok := c.body["next_fire_times"].([]any); !ok || len(nft) != 0 {
			t.Fatalf("paused: next_fire_times %v, want []: %s", c.body["next_fire_times"], c.raw)
		}
	}
	r := e.call(t, "POST", "/v1/schedules/"+ids[0]+"/resume", "")
	if r.status != http.StatusOK || r.body["paused"] != false || len(r.body["next_fire_times"].([]any)) != 5 {
		t.Fatalf("resume: %d %s", r.status, r.raw)
	}
	e.call(t, "POST", "/v1/schedules/1/pause", "").wantError(t, 404, "not_found", "")
	e.call(t, "POST", "/v1/schedules/1/resume", "").wantError(t, 404, "not_found", "")
	if d := e.call(t, "DELETE", "/v1/schedules/"+ids[0], ""); d.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", d.status, d.raw)
	}
	e.call(t, "GET", "/v1/schedules/"+ids[0], "").wantError(t, 404, "not_found", "")
	e.call(t, "DELETE", "/v1/schedules/"+ids[0], "").wantError(t, 404, "not_found", "")
}

// A schedule shows the token that created it and the occurrences its
// quota skipped: skipped always, when and why once there was one, the
// owner when the server has tokens.
func TestScheduleOwnerAndSkips(t *testing.T) {
	e := tenantsEnv(t)
	orders := bearerOf("orders")
	a := e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, "job": {"topic": "orders-eu", "callback_url": "http://127.0.0.1:9/hook"}}`, orders...)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	_, hasLast := a.body["last_skipped_at"]
	_, hasReason := a.body["last_skip_reason"]
	if a.body["owner"] != "orders" || a.body["skipped"] != 0.0 || hasLast || hasReason {
		t.Fatalf("a new schedule: %s; want owner orders, skipped 0, no last skip", a.raw)
	}
	sid, err := timer.ParseScheduleID(id)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.store.GetSchedule(t.Context(), sid)
	if err != nil || sc.Owner != "orders" {
		t.Fatalf("stored: %+v, %v; want owner orders", sc, err)
	}
	at := time.UnixMilli(1_900_000_000_123)
	if ok, err := e.store.SkipOccurrences(t.Context(), sid, sc.Next, sc.Next.Add(2*time.Minute), 2, "token orders holds 30 of its max_pending 30", at); err != nil || !ok {
		t.Fatalf("skip: %v, %v", ok, err)
	}
	want := func(where string, v map[string]any) {
		t.Helper()
		if v["owner"] != "orders" || v["skipped"] != 2.0 || v["last_skipped_at"] != "2030-03-17T17:46:40.123Z" ||
			v["last_skip_reason"] != "token orders holds 30 of its max_pending 30" {
			t.Errorf("%s: %v; want 2 skipped, the last at 2030-03-17T17:46:40.123Z and why", where, v)
		}
	}
	want("get", e.call(t, "GET", "/v1/schedules/"+id, "", orders...).body)
	l := e.call(t, "GET", "/v1/schedules", "", orders...)
	if s, _ := l.body["schedules"].([]any); len(s) != 1 {
		t.Fatalf("list: %s", l.raw)
	} else {
		want("list", s[0].(map[string]any))
	}

	// Without tokens there is no owner to show.
	open := newAPIEnv(t, tochttpConfig(), nil)
	o := open.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, `+scheduleJob+`}`)
	if _, has := o.body["owner"]; o.status != http.StatusCreated || has || o.body["skipped"] != 0.0 {
		t.Errorf("a schedule made without tokens: %d %s; want no owner, skipped 0", o.status, o.raw)
	}
}
