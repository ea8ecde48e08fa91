package http_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// Leases pass the gate as any call naming a topic: a token may not lease
// a topic outside its patterns nor touch a lease of one (403), and a
// token of another namespace finds neither the jobs nor the lease of a
// topic of the same name (its own topic is another).
func TestGateLeasesOfAnotherTenant(t *testing.T) {
	set, err := auth.ParseIn([]byte(namespacesTokens), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set },
		Namespaces: map[string]tochttp.Namespace{"sandbox": {CallbackHosts: []string{"127.0.0.1"}}}}, nil)
	ops, orders, sbOps, sbOrders := bearerOf("ops"), bearerOf("orders"), bearerOf("sb-ops"), bearerOf("sb-orders")
	for _, c := range []struct {
		path string
		tok  []string
	}{{"/v1/topics/orders-work", ops}, {"/v1/topics/work", ops}, {"/v1/topics/orders-work", sbOps}} {
		if a := e.call(t, "PUT", c.path, `{"delivery": "pull"}`, c.tok...); a.status != 201 {
			t.Fatalf("PUT %s: %d %s", c.path, a.status, a.raw)
		}
	}
	// A job of the default namespace's orders-work, offered to its workers.
	fired := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fired <- e.pull.Fire(ctx, timer.Delivery{Job: &timer.Job{ID: 7, Topic: "orders-work"}, Attempt: 1})
	}()

	e.call(t, "POST", "/v1/topics/work/leases", `{"wait_ms": 0}`, orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	if a := e.call(t, "POST", "/v1/topics/orders-work/leases", `{"wait_ms": 300}`, sbOrders...); a.status != 200 || len(a.body["leases"].([]any)) != 0 {
		t.Fatalf("sandbox's orders-work leased %d %s, want none of the other namespace's", a.status, a.raw)
	}
	var got struct {
		Leases []struct {
			Token string `json:"token"`
		} `json:"leases"`
	}
	_ = json.Unmarshal([]byte(e.call(t, "POST", "/v1/topics/orders-work/leases", `{"wait_ms": 5000}`, orders...).raw), &got)
	if len(got.Leases) != 1 {
		t.Fatalf("orders leased %d jobs, want the 1 offered", len(got.Leases))
	}
	token := got.Leases[0].Token
	e.call(t, "POST", "/v1/leases/"+token+"/ack", "", sbOrders...).wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "POST", "/v1/leases/work.00000000000000000000000000000000/ack", "", orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	// Many at once: every token's topic passes the gate, and a token of
	// another namespace finds no lease by that name.
	e.call(t, "POST", "/v1/leases/ack", `{"tokens": ["`+token+`", "work.00000000000000000000000000000000"]}`, orders...).wantError(t, 403, tochttp.CodeForbidden, "")
	if a := e.call(t, "POST", "/v1/leases/ack", `{"tokens": ["`+token+`"]}`, sbOrders...); a.status != 200 ||
		a.body["leases"].([]any)[0].(map[string]any)["error"].(map[string]any)["code"] != tochttp.CodeNotFound {
		t.Errorf("sandbox acking the default namespace's lease: %d %s, want its not_found", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/leases/ack", `{"tokens": ["`+token+`"]}`, orders...); a.status != 200 ||
		a.body["leases"].([]any)[0].(map[string]any)["state"] != "acked" {
		t.Errorf("its own ack after the intrusions: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/leases/"+token+"/ack", "", orders...); a.status != 200 || a.body["state"] != "acked" {
		t.Errorf("its own ack again, alone: %d %s", a.status, a.raw)
	}
	if err := <-fired; err != nil {
		t.Errorf("Fire: %v, want done", err)
	}
}
