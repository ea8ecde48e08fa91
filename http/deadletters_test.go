package http_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// GET /v1/deadletters without a topic lists the dead letters of the
// topics the token may see, and only those: all of its namespace's for
// an admin, those of its patterns for a token scoped to some, each topic
// shown by its name; never another tenant's or another namespace's.
func TestDeadLettersOfEveryVisibleTopic(t *testing.T) {
	set, err := auth.ParseIn([]byte(namespacesTokens), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	fail := timer.HandlerFunc(func(context.Context, timer.Delivery) error { return errors.New("nope") })
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }}, fail)
	e.run(t)
	ops, orders, sbOps, sbOrders := bearerOf("ops"), bearerOf("orders"), bearerOf("sb-ops"), bearerOf("sb-orders")
	dying := func(topic string, tok []string) string {
		t.Helper()
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "`+topic+`", "delay_ms": 0, "max_attempts": 1, `+cb+`}`, tok...)
		if a.status != http.StatusCreated {
			t.Fatalf("schedule in %s: %d %s", topic, a.status, a.raw)
		}
		return a.body["id"].(string)
	}
	ordersID := dying("orders", orders)
	billingID := dying("billing", ops)
	sandboxID := dying("orders", sbOrders)
	sandboxBilling := dying("billing", sbOps)
	for _, id := range []string{ordersID, billingID} {
		waitFor(t, func() (answer, bool) {
			a := e.call(t, "GET", "/v1/jobs/"+id, "", ops...)
			return a, a.body["status"] == "dead"
		})
	}
	for _, id := range []string{sandboxID, sandboxBilling} {
		waitFor(t, func() (answer, bool) {
			a := e.call(t, "GET", "/v1/jobs/"+id, "", sbOps...)
			return a, a.body["status"] == "dead"
		})
	}

	for _, c := range []struct {
		name string
		tok  []string
		want map[string]string // id: topic shown
	}{
		{"ops", ops, map[string]string{ordersID: "orders", billingID: "billing"}},
		{"orders", orders, map[string]string{ordersID: "orders"}},
		{"sb-ops", sbOps, map[string]string{sandboxID: "orders", sandboxBilling: "billing"}},
		{"sb-orders", sbOrders, map[string]string{sandboxID: "orders"}},
	} {
		got := map[string]string{}
		var died []string
		for cursor := ""; ; {
			a := e.call(t, "GET", "/v1/deadletters?limit=1&cursor="+cursor, "", c.tok...)
			if a.status != http.StatusOK {
				t.Fatalf("%s lists dead letters: %d %s", c.name, a.status, a.raw)
			}
			for _, it := range a.body["jobs"].([]any) {
				j := it.(map[string]any)
				got[j["id"].(string)] = j["topic"].(string)
				died = append(died, j["died_at"].(string))
			}
			if cursor = a.body["next_cursor"].(string); cursor == "" {
				break
			}
		}
		if len(got) != len(c.want) || !slices.IsSorted(died) {
			t.Errorf("%s lists %v dead at %v; want %v in the order they died", c.name, got, died, c.want)
		}
		for id, topic := range c.want {
			if got[id] != topic {
				t.Errorf("%s lists %v; want %s of topic %s", c.name, got, id, topic)
			}
		}
	}
	// Named, a topic outside the token's patterns is still refused.
	e.call(t, "GET", "/v1/deadletters?topic=billing", "", orders...).wantError(t, 403, tochttp.CodeForbidden, "")
}
