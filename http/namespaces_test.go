package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
)

const namespacesTokens = `{"tokens": [
  {"name": "ops", "token": "ops-token-0123456789", "role": "admin"},
  {"name": "orders", "token": "orders-token-0123456789", "role": "write", "topics": ["orders*"]},
  {"name": "sb-ops", "token": "sb-ops-token-0123456789", "role": "admin", "namespace": "sandbox"},
  {"name": "sb-orders", "token": "sb-orders-token-0123456789", "role": "write", "topics": ["orders*"], "namespace": "sandbox"}
]}`

// sandboxMetrics answers /metrics with a series of a topic of each
// namespace.
var sandboxMetrics = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, "# TYPE toc_jobs_fired_total counter\n"+
		`toc_jobs_fired_total{topic="orders"} 3`+"\n"+
		`toc_jobs_fired_total{topic="sandbox.orders"} 5`+"\n")
})

func TestNamespacesInTheAPI(t *testing.T) {
	set, err := auth.ParseIn([]byte(namespacesTokens), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	e := newAPIEnv(t, tochttp.APIConfig{
		TokenSet:   func() *auth.Set { return set },
		Metrics:    sandboxMetrics,
		Namespaces: map[string]tochttp.Namespace{"sandbox": {CallbackHosts: []string{"127.0.0.1", "*.sandbox.test"}}},
	}, nil)
	ops, orders, sbOps, sbOrders := bearerOf("ops"), bearerOf("orders"), bearerOf("sb-ops"), bearerOf("sb-orders")

	// The same name in two namespaces is two topics, each shown by its name.
	online := e.call(t, "POST", "/v1/jobs", job("orders"), orders...)
	sandbox := e.call(t, "POST", "/v1/jobs", job("orders"), sbOrders...)
	if online.status != 201 || sandbox.status != 201 || online.body["topic"] != "orders" || sandbox.body["topic"] != "orders" {
		t.Fatalf("schedule orders in each namespace: %d %s; %d %s", online.status, online.raw, sandbox.status, sandbox.raw)
	}
	if e.rows(t, "orders") != 1 || e.rows(t, "sandbox.orders") != 1 {
		t.Errorf("rows: orders %d, sandbox.orders %d; want one each", e.rows(t, "orders"), e.rows(t, "sandbox.orders"))
	}
	onlineID, sandboxID := online.body["id"].(string), sandbox.body["id"].(string)
	for _, c := range []struct {
		tok  []string
		mine string
		not  string
	}{{orders, onlineID, sandboxID}, {ops, onlineID, sandboxID}, {sbOrders, sandboxID, onlineID}, {sbOps, sandboxID, onlineID}} {
		if a := e.call(t, "GET", "/v1/jobs/"+c.mine, "", c.tok...); a.status != 200 || a.body["topic"] != "orders" {
			t.Errorf("%s reads its own job: %d %s", c.tok[1], a.status, a.raw)
		}
		e.call(t, "GET", "/v1/jobs/"+c.not, "", c.tok...).wantError(t, 404, tochttp.CodeNotFound, "")
		e.call(t, "DELETE", "/v1/jobs/"+c.not, "", c.tok...).wantError(t, 404, tochttp.CodeNotFound, "")
		a := e.call(t, "GET", "/v1/jobs?topic=orders", "", c.tok...)
		if jobs, _ := a.body["jobs"].([]any); a.status != 200 || len(jobs) != 1 || jobs[0].(map[string]any)["id"] != c.mine {
			t.Errorf("%s lists topic orders: %d %s; want its own job only", c.tok[1], a.status, a.raw)
		}
		a = e.call(t, "GET", "/v1/topics", "", c.tok...)
		if items, _ := a.body["topics"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "orders" {
			t.Errorf("%s lists topics: %s; want its orders only", c.tok[1], a.raw)
		}
		// Search and bulk calls: its own job by its topic's name, the other
		// namespace's not found, even to an admin.
		a = e.call(t, "GET", "/v1/jobs/search?q="+c.mine, "", c.tok...)
		if jobs, _ := a.body["jobs"].([]any); a.status != 200 || len(jobs) != 1 || jobs[0].(map[string]any)["topic"] != "orders" {
			t.Errorf("%s finds its own job: %d %s", c.tok[1], a.status, a.raw)
		}
		if a = e.call(t, "GET", "/v1/jobs/search?q="+c.not, "", c.tok...); a.status != 200 || len(a.body["jobs"].([]any)) != 0 {
			t.Errorf("%s finds another namespace's job: %d %s", c.tok[1], a.status, a.raw)
		}
		n, failed := selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "fire_now", "ids": `+ids(c.not)+`}`, c.tok...))
		if n != 0 || failed[c.not] != tochttp.CodeNotFound {
			t.Errorf("%s fires another namespace's job now: changed %d, failed %v", c.tok[1], n, failed)
		}
	}

	// A client's topic name never holds the namespace: no way into another's.
	for _, tok := range [][]string{ops, orders} {
		e.call(t, "POST", "/v1/jobs", job("sandbox.orders"), tok...).wantError(t, 400, tochttp.CodeInvalid, "topic")
		e.call(t, "GET", "/v1/topics/sandbox.orders", "", tok...).wantError(t, 400, tochttp.CodeInvalid, "topic")
		e.call(t, "GET", "/v1/jobs?topic=sandbox.orders", "", tok...).wantError(t, 400, tochttp.CodeInvalid, "topic")
	}
	long := strings.Repeat("o", 60)
	if a := e.call(t, "POST", "/v1/jobs", job(long), ops...); a.status != 201 {
		t.Errorf("a 60-byte name in the default namespace: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/jobs", job(long), sbOps...).wantError(t, 400, tochttp.CodeInvalid, "topic")

	// Errors name a topic as the token knows it.
	a := e.call(t, "GET", "/v1/topics/nothing", "", sbOps...)
	a.wantError(t, 404, tochttp.CodeNotFound, "")
	if msg := string(a.raw); strings.Contains(msg, "sandbox") || !strings.Contains(msg, `\"nothing\"`) {
		t.Errorf("a missing topic, to the sandbox's admin: %s", msg)
	}

	// The sandbox calls back only its hosts.
	e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "delay_ms": 1000, "callback_url": "http://localhost:9/hook"}`, sbOrders...).
		wantError(t, 400, tochttp.CodeInvalid, "callback_url")
	if a := e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "delay_ms": 1000, "callback_url": "http://localhost:9/hook"}`, orders...); a.status != 201 {
		t.Errorf("the default namespace has no host list: %d %s", a.status, a.raw)
	}
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("orders")+`, {"topic": "orders", "delay_ms": 1000, "callback_url": "http://localhost:9/hook"}]}`, sbOrders...)
	b.wantError(t, 400, tochttp.CodeInvalid, "jobs")
	if !strings.Contains(string(b.raw), `"index":1`) || strings.Contains(string(b.raw), `"index":0`) {
		t.Errorf("a batch with one job of a host outside the list: %s; want item 1 refused", b.raw)
	}
	e.call(t, "POST", "/v1/groups", `{"id": "g1"}`, sbOrders...).wantError(t, 400, tochttp.CodeInvalid, "on_complete")

	// Metrics: a namespace's tokens see their series, by the topic's name.
	for _, c := range []struct {
		tok       []string
		want, not string
	}{{sbOrders, `topic="orders"} 5`, `} 3`}, {orders, `topic="orders"} 3`, `} 5`}, {ops, `topic="orders"} 3`, `sandbox`}} {
		a := e.call(t, "GET", "/metrics", "", c.tok...)
		if text := string(a.raw); a.status != 200 || !strings.Contains(text, c.want) || strings.Contains(text, c.not) {
			t.Errorf("/metrics for %s: %d\n%s\nwant %q and not %q", c.tok[1], a.status, text, c.want, c.not)
		}
	}
}
