package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// openAPIOp is the part of an operation of openapi.json these tests read.
type openAPIOp struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	// Security is nil when the operation takes the document's.
	Security  *[]map[string][]string     `json:"security"`
	Responses map[string]json.RawMessage `json:"responses"`
}

// open reports whether the operation needs no token: its security is
// empty or allows no scheme ({}).
func (o openAPIOp) open() bool {
	if o.Security == nil {
		return false
	}
	return len(*o.Security) == 0 || slices.ContainsFunc(*o.Security, func(s map[string][]string) bool { return len(s) == 0 })
}

// documents reports whether the operation lists status.
func (o openAPIOp) documents(status int) bool {
	s := strconv.Itoa(status)
	_, ok := o.Responses[s]
	_, class := o.Responses[s[:1]+"XX"]
	return ok || class
}

// openAPIOps reads the operations of the embedded document, by "METHOD
// /path" as the router names its routes.
func openAPIOps(t *testing.T) map[string]openAPIOp {
	t.Helper()
	var doc struct {
		OpenAPI  string                                `json:"openapi"`
		Security []map[string][]string                 `json:"security"`
		Paths    map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(tochttp.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Fatalf("openapi %q, security %v: want 3.1.0 with bearer by default", doc.OpenAPI, doc.Security)
	}
	ops := map[string]openAPIOp{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op openAPIOp
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			ops[strings.ToUpper(method)+" "+path] = op
		}
	}
	return ops
}

// metricsStandIn answers /metrics as the Prometheus handler does.
var metricsStandIn = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte("# TYPE toc_up gauge\ntoc_up 1\n"))
})

// Every operation is named and summed up, and lists the errors every
// call of its kind can meet: 401 without a token where one is needed,
// and 503 under /v1 (a dependency down, or toc starting).
func TestOpenAPIOperations(t *testing.T) {
	api := newAPIEnv(t, tochttp.APIConfig{}, nil).api
	ids := map[string]string{}
	for name, op := range openAPIOps(t) {
		if op.OperationID == "" || op.Summary == "" {
			t.Errorf("%s: operationId %q, summary %q", name, op.OperationID, op.Summary)
		}
		if other, ok := ids[op.OperationID]; ok {
			t.Errorf("%s and %s share the operationId %s", name, other, op.OperationID)
		}
		ids[op.OperationID] = name
		if !op.open() && !op.documents(http.StatusUnauthorized) {
			t.Errorf("%s needs a token and does not list 401", name)
		}
		if _, path, _ := strings.Cut(name, " "); strings.HasPrefix(path, "/v1/") && !op.documents(http.StatusServiceUnavailable) {
			t.Errorf("%s does not list 503", name)
		}
		// A token's role refuses every change it may not make (403), and a
		// token's rate and max_pending refuse scheduling, and max_pending
		// replays (429).
		if _, path, _ := strings.Cut(name, " "); strings.HasPrefix(path, "/v1/") && !op.open() {
			if role, ok := api.RouteRole(name); (!ok || role != auth.Read) && !op.documents(http.StatusForbidden) {
				t.Errorf("%s needs a write or admin token and does not list 403", name)
			}
			schedules := name == "POST /v1/jobs" || name == "POST /v1/jobs/batch" || name == "POST /v1/schedules" ||
				name == "POST /v1/deadletters/replay" || name == "POST /v1/deadletters/{id}/replay"
			if schedules != op.documents(http.StatusTooManyRequests) {
				t.Errorf("%s: lists 429 %v, schedules jobs %v", name, op.documents(http.StatusTooManyRequests), schedules)
			}
		}
	}
}

// Each operation needs a token exactly when the document says so.
func TestOpenAPISecurityMatchesAuth(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{Tokens: []string{"s3cret"}, Metrics: metricsStandIn}, nil)
	for name, op := range openAPIOps(t) {
		method, path, _ := strings.Cut(name, " ")
		path = strings.NewReplacer("{id}", "1", "{topic}", "orders").Replace(path)
		a := e.call(t, method, path, "")
		switch {
		case op.open() && a.status == http.StatusUnauthorized:
			t.Errorf("%s is documented open, and answers 401 without a token", name)
		case !op.open() && a.status != http.StatusUnauthorized:
			t.Errorf("%s is documented to need a token, and answers %d without one", name, a.status)
		}
	}
}

// The statuses the API answers are the ones the document lists for the
// operation, over calls that meet each documented error; and every
// operation is called, so that a new route cannot go untested here.
func TestOpenAPIStatusesDocumented(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{Metrics: metricsStandIn, Series: &fakeSeries{}}, nil)
	ops := openAPIOps(t)
	called := map[string]bool{}
	// call makes a request to route (the documented "METHOD /path") at
	// path, and checks its answer is documented and the one wanted.
	call := func(route, path, body string, want int, header ...string) answer {
		t.Helper()
		method, _, _ := strings.Cut(route, " ")
		op, ok := ops[route]
		if !ok {
			t.Fatalf("%s is not in openapi.json", route)
		}
		called[route] = true
		a := e.call(t, method, path, body, header...)
		if !op.documents(a.status) {
			t.Errorf("%s %s answered %d, which openapi.json does not list for %s: %s", method, path, a.status, route, a.raw)
		}
		if a.status != want {
			t.Errorf("%s %s: %d, want %d: %s", method, path, a.status, want, a.raw)
		}
		return a
	}
	const job = `{"topic": "orders", "key": "k1", "biz_id": "18446744073709551615", "delay_ms": 3600000, ` + cb + `}`
	a := call("POST /v1/jobs", "/v1/jobs", job, 201)
	id, _ := a.body["id"].(string)
	if a.body["biz_id"] != "18446744073709551615" {
		t.Errorf("biz_id answered as %#v, want the decimal string", a.body["biz_id"])
	}
	call("POST /v1/jobs", "/v1/jobs", job, 200)
	call("POST /v1/jobs", "/v1/jobs", `{"topic": "orders", "key": "k1", "delay_ms": 1, `+cb+`}`, 409)
	call("POST /v1/jobs", "/v1/jobs", `{"topic": "orders", "delay_ms": 1}`, 400)
	call("POST /v1/jobs", "/v1/jobs", `{"topic": "orders", "payload": "`+strings.Repeat("x", tochttp.DefaultMaxBodyBytes)+`"}`, 413)
	call("POST /v1/jobs/batch", "/v1/jobs/batch", `{"jobs": [{"topic": "orders", "biz_id": 7, "delay_ms": 3600000, `+cb+`}]}`, 200)
	call("POST /v1/jobs/batch", "/v1/jobs/batch", `{"jobs": [{"topic": "orders", "delay_ms": 1}]}`, 400)
	call("POST /v1/jobs/batch", "/v1/jobs/batch", `{"jobs": [{"topic": "orders", "key": "k1", "delay_ms": 1, `+cb+`}]}`, 409)
	call("GET /v1/jobs", "/v1/jobs?topic=orders&status=pending,firing&biz_id=7", "", 200)
	call("GET /v1/jobs", "/v1/jobs?topic=orders&colour=red", "", 400)
	call("PATCH /v1/jobs", "/v1/jobs?topic=orders&biz_id=7", `{"delay_ms": 7200000}`, 200)
	call("PATCH /v1/jobs", "/v1/jobs?topic=orders", `{"delay_ms": 7200000}`, 400)
	call("DELETE /v1/jobs", "/v1/jobs?topic=orders&key=nothing", "", 200)
	call("DELETE /v1/jobs", "/v1/jobs?topic=orders", "", 400)
	call("GET /v1/jobs/search", "/v1/jobs/search?q=k1", "", 200)
	call("GET /v1/jobs/search", "/v1/jobs/search?q=", "", 400)
	call("POST /v1/jobs/bulk", "/v1/jobs/bulk", `{"action": "reschedule", "ids": ["1"], "delay_ms": 3600000}`, 200)
	call("POST /v1/jobs/bulk", "/v1/jobs/bulk", `{"action": "cancel", "ids": []}`, 400)
	call("POST /v1/jobs/bulk", "/v1/jobs/bulk", `{"action": "cancel", "ids": ["`+strings.Repeat("1", tochttp.DefaultMaxBodyBytes)+`"]}`, 413)
	call("GET /v1/jobs/{id}", "/v1/jobs/"+id, "", 200)
	call("GET /v1/jobs/{id}", "/v1/jobs/1", "", 404)
	call("GET /v1/jobs/{id}", "/v1/jobs/x", "", 400)
	call("GET /v1/jobs/{id}/attempts", "/v1/jobs/"+id+"/attempts", "", 200)
	call("GET /v1/jobs/{id}/attempts", "/v1/jobs/1/attempts", "", 404)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/"+id, `{"delay_ms": 7200000}`, 200)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/"+id, `{"delay_ms": 1, "fire_at": "2030-01-01T00:00:00Z"}`, 400)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/1", `{"delay_ms": 1}`, 404)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/"+id, `{"delay_ms": 1}`, 412, "If-Match", `"1"`)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/"+id, `{"delay_ms": 1}`, 400, "If-Match", `W/"2"`)
	call("DELETE /v1/jobs/{id}", "/v1/jobs/"+id, "", 412, "If-Match", `"1"`)
	call("DELETE /v1/jobs/{id}", "/v1/jobs/"+id, "", 400, "If-Match", "2")
	call("DELETE /v1/jobs/{id}", "/v1/jobs/"+id, "", 200, "If-Match", `"2"`)
	call("DELETE /v1/jobs/{id}", "/v1/jobs/"+id, "", 409)
	call("PATCH /v1/jobs/{id}", "/v1/jobs/"+id, `{"delay_ms": 1}`, 409)
	call("POST /v1/deadletters/{id}/replay", "/v1/deadletters/"+id+"/replay", "", 409)
	call("POST /v1/deadletters/{id}/replay", "/v1/deadletters/1/replay", `{"delay_ms": 1}`, 404)
	call("DELETE /v1/deadletters/{id}", "/v1/deadletters/"+id, "", 409)
	call("DELETE /v1/deadletters/{id}", "/v1/deadletters/1", "", 404)
	call("GET /v1/deadletters", "/v1/deadletters?topic=orders", "", 200)
	call("GET /v1/deadletters", "/v1/deadletters?topic=ghost", "", 404)
	call("GET /v1/deadletters", "/v1/deadletters", "", 200)
	call("GET /v1/deadletters", "/v1/deadletters?after=", "", 200)
	call("GET /v1/deadletters", "/v1/deadletters?topics=orders", "", 400)
	call("GET /v1/deadletters/summary", "/v1/deadletters/summary?topic=orders", "", 200)
	call("GET /v1/deadletters/summary", "/v1/deadletters/summary?topic=ghost", "", 404)
	call("POST /v1/deadletters/replay", "/v1/deadletters/replay", `{"topic": "orders", "delay_ms": 10}`, 200)
	call("POST /v1/deadletters/replay", "/v1/deadletters/replay", `{"topic": "ghost"}`, 404)
	call("POST /v1/deadletters/purge", "/v1/deadletters/purge", `{"topic": "orders", "limit": 10}`, 200)
	call("POST /v1/deadletters/purge", "/v1/deadletters/purge", `{"topic": "orders", "delay_ms": 10}`, 400)
	call("POST /v1/deadletters/bulk", "/v1/deadletters/bulk", `{"action": "purge", "ids": ["`+id+`"]}`, 200)
	call("POST /v1/deadletters/bulk", "/v1/deadletters/bulk", `{"action": "purge", "ids": ["1"], "delay_ms": 1}`, 400)
	call("POST /v1/deadletters/bulk", "/v1/deadletters/bulk", `{"action": "purge", "ids": ["`+strings.Repeat("1", tochttp.DefaultMaxBodyBytes)+`"]}`, 413)
	call("PUT /v1/topics/{topic}", "/v1/topics/pay", `{"slots": 32, "rate_limit": 10}`, 201)
	call("PUT /v1/topics/{topic}", "/v1/topics/pay", `{"slots": 32}`, 200)
	call("PUT /v1/topics/{topic}", "/v1/topics/pay", `{"slots": 64}`, 409)
	call("PUT /v1/topics/{topic}", "/v1/topics/pay", `{"weight": 0}`, 400)
	call("PATCH /v1/topics/{topic}", "/v1/topics/pay", `{"rate_limit": null}`, 200)
	call("PATCH /v1/topics/{topic}", "/v1/topics/pay", `{"slots": 64}`, 409)
	call("PATCH /v1/topics/{topic}", "/v1/topics/ghost", `{}`, 404)
	call("POST /v1/topics/{topic}/pause", "/v1/topics/pay/pause", "", 200)
	call("POST /v1/topics/{topic}/pause", "/v1/topics/ghost/pause", "", 404)
	call("POST /v1/topics/{topic}/resume", "/v1/topics/pay/resume", "", 200)
	call("POST /v1/topics/{topic}/resume", "/v1/topics/Bad/resume", "", 400)
	call("GET /v1/topics/{topic}", "/v1/topics/pay", "", 200)
	call("GET /v1/topics/{topic}", "/v1/topics/ghost", "", 404)
	call("GET /v1/topics", "/v1/topics", "", 200)
	call("GET /v1/topics/{topic}/stats", "/v1/topics/orders/stats", "", 200)
	call("GET /v1/topics/{topic}/stats", "/v1/topics/unknown/stats", "", 404)
	call("GET /v1/topics/{topic}/forecast", "/v1/topics/orders/forecast?from=2030-01-01T00:00:00Z&to=2030-01-02T00:00:00Z&step=1h", "", 200)
	call("GET /v1/topics/{topic}/forecast", "/v1/topics/orders/forecast?step=1ms", "", 400)
	call("GET /v1/topics/{topic}/forecast", "/v1/topics/ghost/forecast", "", 404)
	call("GET /v1/topics/{topic}/series", "/v1/topics/orders/series?step=1m", "", 200)
	call("GET /v1/topics/{topic}/series", "/v1/topics/orders/series?step=15s", "", 400)
	call("GET /v1/series", "/v1/series", "", 200)
	call("GET /v1/series", "/v1/series?from=2000-01-01T00:00:00Z", "", 400)
	call("DELETE /v1/topics/{topic}", "/v1/topics/pay", "", 204)
	call("DELETE /v1/topics/{topic}", "/v1/topics/orders", "", 409)
	call("DELETE /v1/topics/{topic}", "/v1/topics/pay", "", 404)
	const schedule = `{"cron": "*/10 * * * * *", "time_zone": "Europe/Berlin", "job": {"topic": "orders", ` + cb + `}}`
	sid, _ := call("POST /v1/schedules", "/v1/schedules", schedule, 201).body["id"].(string)
	call("POST /v1/schedules", "/v1/schedules", `{"cron": "*/10 * * * * *"}`, 400)
	call("POST /v1/schedules", "/v1/schedules", `{"job": {"topic": "orders", "payload": "`+strings.Repeat("x", tochttp.DefaultMaxBodyBytes)+`"}}`, 413)
	call("GET /v1/schedules", "/v1/schedules?limit=10", "", 200)
	call("GET /v1/schedules", "/v1/schedules?limit=0", "", 400)
	call("GET /v1/schedules/{id}", "/v1/schedules/"+sid, "", 200)
	call("GET /v1/schedules/{id}", "/v1/schedules/1", "", 404)
	call("GET /v1/schedules/{id}", "/v1/schedules/x", "", 400)
	call("POST /v1/schedules/{id}/pause", "/v1/schedules/"+sid+"/pause", "", 200)
	call("POST /v1/schedules/{id}/pause", "/v1/schedules/1/pause", "", 404)
	call("POST /v1/schedules/{id}/pause", "/v1/schedules/x/pause", "", 400)
	call("POST /v1/schedules/{id}/resume", "/v1/schedules/"+sid+"/resume", "", 200)
	call("POST /v1/schedules/{id}/resume", "/v1/schedules/1/resume", "", 404)
	call("POST /v1/schedules/{id}/resume", "/v1/schedules/x/resume", "", 400)
	call("DELETE /v1/schedules/{id}", "/v1/schedules/"+sid, "", 204)
	call("DELETE /v1/schedules/{id}", "/v1/schedules/"+sid, "", 404)
	call("DELETE /v1/schedules/{id}", "/v1/schedules/x", "", 400)
	call("POST /v1/groups", "/v1/groups", `{"id": "g1", "on_complete": {`+cb+`}}`, 201)
	call("POST /v1/groups", "/v1/groups", `{"id": "g1", "on_complete": {`+cb+`}}`, 200)
	call("POST /v1/groups", "/v1/groups", `{"id": "g1"}`, 409)
	call("POST /v1/groups", "/v1/groups", `{"id": ""}`, 400)
	call("POST /v1/groups", "/v1/groups", `{"id": "`+strings.Repeat("x", tochttp.DefaultMaxBodyBytes)+`"}`, 413)
	call("GET /v1/groups/{id}", "/v1/groups/g1", "", 200)
	call("GET /v1/groups/{id}", "/v1/groups/nope", "", 404)
	call("POST /v1/groups/{id}/seal", "/v1/groups/g1/seal", "", 200)
	call("POST /v1/groups/{id}/seal", "/v1/groups/nope/seal", "", 404)
	call("PUT /v1/topics/{topic}", "/v1/topics/work", `{"delivery": "pull"}`, 201)
	call("POST /v1/topics/{topic}/leases", "/v1/topics/work/leases", `{"wait_ms": 0}`, 200)
	call("POST /v1/topics/{topic}/leases", "/v1/topics/orders/leases", `{"wait_ms": 0}`, 400)
	call("POST /v1/topics/{topic}/leases", "/v1/topics/work/leases", `{"lease_ms": 10}`, 400)
	// A job offered as the worker would: leased, acked, and then ended.
	fired := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fired <- e.pull.Fire(ctx, timer.Delivery{Job: &timer.Job{ID: 42, Topic: "work"}, Attempt: 1})
	}()
	var leased struct {
		Leases []struct {
			Token string `json:"token"`
		} `json:"leases"`
	}
	_ = json.Unmarshal([]byte(call("POST /v1/topics/{topic}/leases", "/v1/topics/work/leases", `{"max": 10, "wait_ms": 5000}`, 200).raw), &leased)
	if len(leased.Leases) != 1 {
		t.Fatalf("leased %d jobs, want the 1 offered", len(leased.Leases))
	}
	token := leased.Leases[0].Token
	call("POST /v1/leases/{token}/extend", "/v1/leases/"+token+"/extend", `{"lease_ms": 5000}`, 200)
	call("POST /v1/leases/{token}/extend", "/v1/leases/"+token+"/extend", `{}`, 400)
	call("POST /v1/leases/{token}/ack", "/v1/leases/"+token+"/ack", "", 200)
	call("POST /v1/leases/{token}/ack", "/v1/leases/"+token+"/ack", "", 200)
	call("POST /v1/leases/ack", "/v1/leases/ack", `{"tokens": ["`+token+`", "work.00000000000000000000000000000000"]}`, 200)
	call("POST /v1/leases/ack", "/v1/leases/ack", `{"tokens": ["work"]}`, 400)
	call("POST /v1/leases/ack", "/v1/leases/ack", `{"tokens": []}`, 400)
	call("POST /v1/leases/{token}/nack", "/v1/leases/"+token+"/nack", `{"delay_ms": 10}`, 409)
	call("POST /v1/leases/{token}/nack", "/v1/leases/"+token+"/nack", `{"delay_ms": -1}`, 400)
	call("POST /v1/leases/{token}/extend", "/v1/leases/"+token+"/extend", `{"lease_ms": 5000}`, 409)
	call("POST /v1/leases/{token}/ack", "/v1/leases/work.00000000000000000000000000000000/ack", "", 404)
	call("POST /v1/leases/{token}/ack", "/v1/leases/work/ack", "", 400)
	if err := <-fired; err != nil {
		t.Errorf("Fire of the acked job: %v, want nil", err)
	}
	call("GET /v1/cluster", "/v1/cluster", "", 200)
	call("GET /v1/audit", "/v1/audit?limit=10&action=topic.pause", "", 200)
	call("GET /v1/audit", "/v1/audit?action=nope", "", 400)
	call("GET /v1/openapi.json", "/v1/openapi.json", "", 200)
	call("GET /healthz", "/healthz", "", 200)
	call("GET /readyz", "/readyz", "", 200)
	call("GET /metrics", "/metrics", "", 200)
	e.stats.err = errors.New("redis: connection refused")
	call("GET /v1/topics/{topic}/stats", "/v1/topics/orders/stats", "", 503)
	for route := range ops {
		if !called[route] {
			t.Errorf("%s is not called here: add it", route)
		}
	}
}
