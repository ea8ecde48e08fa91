package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

const tenantsFile = `{"tokens": [
  {"name": "ops", "token": "ops-token-0123456789", "role": "admin"},
  {"name": "orders", "token": "orders-token-0123456789", "role": "write", "topics": ["orders", "orders-*"], "max_topics": 3},
  {"name": "billing", "token": "billing-token-0123456789", "role": "write", "topics": ["billing"]},
  {"name": "viewer", "token": "viewer-token-0123456789", "role": "read", "topics": ["orders-*"]},
  {"name": "slow", "token": "slow-token-0123456789", "role": "write", "topics": ["slow"], "rate": 2},
  {"name": "small", "token": "small-token-0123456789", "role": "write", "topics": ["small"], "max_pending": 3}
]}`

func tenantsEnv(t *testing.T) *apiEnv {
	t.Helper()
	set, err := auth.Parse([]byte(tenantsFile))
	if err != nil {
		t.Fatal(err)
	}
	return newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }, Metrics: metricsByTopic}, nil)
}

// metricsByTopic answers /metrics with series of several topics.
var metricsByTopic = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, "# TYPE toc_jobs_fired_total counter\n"+
		`toc_jobs_fired_total{topic="orders-eu"} 3`+"\n"+
		`toc_jobs_fired_total{topic="billing"} 5`+"\n"+
		`toc_jobs_fired_total{topic="_other"} 7`+"\n"+
		"# TYPE toc_up gauge\ntoc_up 1\n")
})

func bearerOf(name string) []string {
	return []string{"Authorization", "Bearer " + name + "-token-0123456789"}
}

func job(topic string) string {
	return `{"topic": "` + topic + `", "delay_ms": 600000, "callback_url": "http://127.0.0.1:9/hook"}`
}

func TestTenantRolesAndScope(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing, viewer, ops := bearerOf("orders"), bearerOf("billing"), bearerOf("viewer"), bearerOf("ops")

	// Scheduling: in the token's topics, not outside; a batch refused whole.
	a := e.call(t, "POST", "/v1/jobs", job("orders-eu"), orders...)
	if a.status != http.StatusCreated {
		t.Fatalf("schedule in scope: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	e.call(t, "POST", "/v1/jobs", job("billing"), orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("orders")+`, `+job("billing")+`, `+job("payroll")+`]}`, orders...)
	b.wantError(t, 403, tochttp.CodeForbidden, "jobs")
	items := b.body["error"].(map[string]any)["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["index"].(float64) != 1 || items[1].(map[string]any)["index"].(float64) != 2 {
		t.Errorf("batch items: %s", b.raw)
	}
	if n := e.rows(t, "orders"); n != 0 {
		t.Errorf("a refused batch stored %d jobs", n)
	}
	e.call(t, "POST", "/v1/jobs", job("orders-eu"), viewer...).wantError(t, 403, tochttp.CodeForbidden, "")

	// Another tenant's job is a missing job, word for word.
	missing := e.call(t, "GET", "/v1/jobs/4611686018427387904", "", billing...)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/jobs/" + id, ""},
		{"GET", "/v1/jobs/" + id + "/attempts", ""},
		{"DELETE", "/v1/jobs/" + id, ""},
		{"PATCH", "/v1/jobs/" + id, `{"delay_ms": 1000}`},
		{"POST", "/v1/deadletters/" + id + "/replay", ""},
		{"DELETE", "/v1/deadletters/" + id, ""},
	} {
		a := e.call(t, c.method, c.path, c.body, billing...)
		a.wantError(t, 404, tochttp.CodeNotFound, "")
		if got, want := a.body["error"].(map[string]any)["message"], strings.Replace(missing.body["error"].(map[string]any)["message"].(string), "4611686018427387904", id, 1); got != want {
			t.Errorf("%s %s by another tenant: %q, a missing job: %q", c.method, c.path, got, want)
		}
	}
	if a := e.call(t, "GET", "/v1/jobs/"+id, "", viewer...); a.status != 200 {
		t.Errorf("read token in scope: %d %s", a.status, a.raw)
	}
	e.call(t, "DELETE", "/v1/jobs/"+id, "", viewer...).wantError(t, 403, tochttp.CodeForbidden, "")

	// Per-topic views outside the patterns: 403, whether the topic exists or not.
	for _, path := range []string{"/v1/jobs?topic=orders-eu", "/v1/deadletters?topic=orders-eu", "/v1/deadletters/summary?topic=orders-eu",
		"/v1/topics/orders-eu", "/v1/topics/orders-eu/stats", "/v1/topics/orders-eu/forecast", "/v1/topics/nothing-here"} {
		e.call(t, "GET", path, "", billing...).wantError(t, 403, tochttp.CodeForbidden, "")
	}
	e.call(t, "DELETE", "/v1/jobs?topic=orders-eu&key=k", "", billing...).wantError(t, 403, tochttp.CodeForbidden, "")
	e.call(t, "POST", "/v1/deadletters/purge", `{"topic": "orders-eu"}`, billing...).wantError(t, 403, tochttp.CodeForbidden, "")
	if a := e.call(t, "GET", "/v1/jobs?topic=orders-eu", "", viewer...); a.status != 200 || len(a.body["jobs"].([]any)) != 1 {
		t.Errorf("viewer's search: %d %s", a.status, a.raw)
	}

	// The topic list shows only the token's topics.
	if a := e.call(t, "POST", "/v1/jobs", job("billing"), billing...); a.status != 201 {
		t.Fatalf("billing: %d %s", a.status, a.raw)
	}
	names := func(tok []string) string {
		a := e.call(t, "GET", "/v1/topics", "", tok...)
		var n []string
		for _, it := range a.body["topics"].([]any) {
			n = append(n, it.(map[string]any)["name"].(string))
		}
		return strings.Join(n, ",")
	}
	if got := names(billing); got != "billing" {
		t.Errorf("billing's topics: %s", got)
	}
	if got := names(viewer); got != "orders-eu" {
		t.Errorf("viewer's topics: %s", got)
	}
	if got := names(ops); got != "billing,orders-eu" {
		t.Errorf("admin's topics: %s", got)
	}

	// Topic settings and the cluster view are the admin's.
	e.call(t, "PUT", "/v1/topics/orders-eu", `{}`, orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	e.call(t, "POST", "/v1/topics/orders-eu/pause", "", orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	e.call(t, "GET", "/v1/cluster", "", orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	if a := e.call(t, "GET", "/v1/cluster", "", ops...); a.status != 200 {
		t.Errorf("admin's cluster: %d", a.status)
	}

	// Metrics: none without a token, a tenant's topics only for a tenant.
	if a := e.call(t, "GET", "/metrics", ""); a.status != 401 {
		t.Errorf("/metrics without a token: %d", a.status)
	}
	m := string(e.call(t, "GET", "/metrics", "", viewer...).raw)
	if !strings.Contains(m, `topic="orders-eu"`) || strings.Contains(m, "billing") || strings.Contains(m, "_other") || strings.Contains(m, "toc_up 1") {
		t.Errorf("viewer's metrics:\n%s", m)
	}
	if m := string(e.call(t, "GET", "/metrics", "", ops...).raw); !strings.Contains(m, "billing") {
		t.Errorf("admin's metrics:\n%s", m)
	}
}

func TestTenantSchedules(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing := bearerOf("orders"), bearerOf("billing")
	sched := func(topic string) string {
		return `{"every_ms": 60000, "job": {"topic": "` + topic + `", "callback_url": "http://127.0.0.1:9/hook"}}`
	}
	e.call(t, "POST", "/v1/schedules", sched("billing"), orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	a := e.call(t, "POST", "/v1/schedules", sched("orders"), orders...)
	if a.status != 201 {
		t.Fatalf("schedule: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	for _, c := range []struct{ method, path string }{{"GET", "/v1/schedules/" + id}, {"POST", "/v1/schedules/" + id + "/pause"}, {"DELETE", "/v1/schedules/" + id}} {
		e.call(t, c.method, c.path, "", billing...).wantError(t, 404, tochttp.CodeNotFound, "")
	}
	if a := e.call(t, "GET", "/v1/schedules", "", billing...); len(a.body["schedules"].([]any)) != 0 {
		t.Errorf("billing lists orders' schedule: %s", a.raw)
	}
	if a := e.call(t, "GET", "/v1/schedules", "", orders...); len(a.body["schedules"].([]any)) != 1 {
		t.Errorf("orders' schedules: %s", a.raw)
	}
}

func TestTenantQuotas(t *testing.T) {
	e := tenantsEnv(t)
	orders := bearerOf("orders")
	// max_topics 3: the fourth topic is a 409 topic_quota, by a job or a batch.
	for _, topic := range []string{"orders", "orders-a", "orders-b"} {
		if a := e.call(t, "POST", "/v1/jobs", job(topic), orders...); a.status != 201 {
			t.Fatalf("%s: %d %s", topic, a.status, a.raw)
		}
	}
	e.call(t, "POST", "/v1/jobs", job("orders-c"), orders...).wantError(t, 409, tochttp.CodeTopicQuota, "topic")
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("orders")+`, `+job("orders-d")+`]}`, orders...).wantError(t, 409, tochttp.CodeTopicQuota, "topic")
	if n := e.rows(t, "orders"); n != 1 {
		t.Errorf("orders holds %d jobs after a refused batch, want 1", n)
	}
	if a := e.call(t, "POST", "/v1/jobs", job("orders-a"), orders...); a.status != 201 {
		t.Errorf("an existing topic at the quota: %d %s", a.status, a.raw)
	}

	// rate 2: the bucket holds two; the third is a 429 with Retry-After.
	slow := bearerOf("slow")
	for range 2 {
		if a := e.call(t, "POST", "/v1/jobs", job("slow"), slow...); a.status != 201 {
			t.Fatalf("slow: %d %s", a.status, a.raw)
		}
	}
	a := e.call(t, "POST", "/v1/jobs", job("slow"), slow...)
	a.wantError(t, 429, tochttp.CodeRateLimited, "")
	if ra := a.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q", ra)
	}

	// max_pending 3.
	small := bearerOf("small")
	if a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("small")+`, `+job("small")+`]}`, small...); a.status != 200 {
		t.Fatalf("small: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("small")+`, `+job("small")+`]}`, small...).wantError(t, 429, tochttp.CodePendingQuota, "")
	if a := e.call(t, "POST", "/v1/jobs", job("small"), small...); a.status != 201 {
		t.Fatalf("the third: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/jobs", job("small"), small...).wantError(t, 429, tochttp.CodePendingQuota, "")
}

// Every /v1 route has its role in the one table.
func TestRouteRoles(t *testing.T) {
	e := tenantsEnv(t)
	err := chi.Walk(e.api.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		route = strings.ReplaceAll(route, "/*/", "/")
		if strings.HasPrefix(route, "/v1/") && route != "/v1/openapi.json" && !routeListed(e, method+" "+route) {
			t.Errorf("%s %s is served by no op of the gate", method, route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A group belongs to its completion job's topic: a token outside it may
// not create one there, and another tenant's group is a missing one.
func TestTenantGroups(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing := bearerOf("orders"), bearerOf("billing")
	group := func(id, topic string) string {
		return `{"id": "` + id + `", "on_complete": {"callback_url": "http://127.0.0.1:9/done", "topic": "` + topic + `"}}`
	}
	e.call(t, "POST", "/v1/groups", group("g-billing", "billing"), orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	if a := e.call(t, "POST", "/v1/groups", group("g1", "orders"), orders...); a.status != http.StatusCreated {
		t.Fatalf("create a group in scope: %d %s", a.status, a.raw)
	}
	missing := e.call(t, "GET", "/v1/groups/no-such-group", "", orders...)
	for _, c := range []struct{ method, path string }{{"GET", "/v1/groups/g1"}, {"POST", "/v1/groups/g1/seal"}} {
		a := e.call(t, c.method, c.path, "", billing...)
		a.wantError(t, 404, tochttp.CodeNotFound, "")
		if strings.ReplaceAll(string(a.raw), "g1", "no-such-group") != string(missing.raw) {
			t.Errorf("%s %s by another tenant = %s, want the body of a missing group %s", c.method, c.path, a.raw, missing.raw)
		}
	}
	if a := e.call(t, "GET", "/v1/groups/g1", "", orders...); a.status != 200 || a.body["sealed"] != false {
		t.Errorf("the owner reads its group: %d %s", a.status, a.raw)
	}
}

// A replayed dead letter is pending again: a replay, by id or by filter,
// stops at the token's max_pending and says how far it got.
func TestReplayWithinMaxPending(t *testing.T) {
	set, err := auth.Parse([]byte(`{"tokens": [{"name": "replayer", "token": "replayer-token-0123456789", "role": "write", "topics": ["replay"], "max_pending": 4}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// Each job fails its first call and succeeds after: a replayed job ends done.
	var called sync.Map
	failFirst := timer.HandlerFunc(func(_ context.Context, d timer.Delivery) error {
		if _, again := called.LoadOrStore(d.Job.ID, true); again {
			return nil
		}
		return errors.New("nope")
	})
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }}, failFirst)
	e.run(t)
	tok := bearerOf("replayer")
	var ids []string
	for range 2 {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "replay", "delay_ms": 0, "max_attempts": 1, `+cb+`}`, tok...)
		if a.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
		ids = append(ids, a.body["id"].(string))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if l := e.call(t, "GET", "/v1/deadletters?topic=replay", "", tok...); len(l.body["jobs"].([]any)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the two jobs never died")
		}
	}
	// The token's view of its topics and of their pending jobs is read
	// again after 2 s: the fake stats answer 3 for the topic, so one more
	// fits.
	time.Sleep(2100 * time.Millisecond)
	a := e.call(t, "POST", "/v1/deadletters/replay", `{"topic": "replay"}`, tok...)
	a.wantError(t, 429, tochttp.CodePendingQuota, "")
	if msg := a.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "1 jobs were replayed before it, and no more") {
		t.Errorf("a bulk replay past max_pending: %q", msg)
	}
	var dead []string
	for _, id := range ids {
		if j := e.call(t, "GET", "/v1/jobs/"+id, "", tok...); j.body["status"] == "dead" {
			dead = append(dead, id)
		}
	}
	if len(dead) != 1 {
		t.Fatalf("dead after the replay: %v of %v, want one left", dead, ids)
	}
	e.call(t, "POST", "/v1/deadletters/"+dead[0]+"/replay", "", tok...).wantError(t, 429, tochttp.CodePendingQuota, "")
	if j := e.call(t, "GET", "/v1/jobs/"+dead[0], "", tok...); j.body["status"] != "dead" {
		t.Errorf("a replay by id refused by max_pending changed the job: %v", j.body)
	}
}

// routeListed reports whether an op of the API serves "METHOD pattern".
func routeListed(e *apiEnv, route string) bool {
	_, ok := e.api.RouteRole(route)
	return ok
}
