package main

import (
	"maps"
	"net/http"
	"slices"
	"testing"
)

// The dead letters of every topic a token may see, on toc serve with
// MariaDB, redis-server and a tokens file: each tenant lists its own
// topics' (in the order they died, each with died_at), never another's;
// the admin lists all of them.
func TestDeadLettersOfEveryTopicEndToEnd(t *testing.T) {
	p, rcv, _ := startTenants(t)
	orders, billing, viewer := p.as("orders"), p.as("billing"), p.as("viewer")
	dying := func(q *proc, topic string) string {
		t.Helper()
		status, body := q.call(t, "POST", "/v1/jobs", map[string]any{"topic": topic, "delay_ms": 0, "max_attempts": 1,
			"callback_url": rcv.srv.URL + "/hook?fail=1"})
		if status != http.StatusCreated {
			t.Fatalf("schedule in %s: %d %v", topic, status, body)
		}
		return body["id"].(string)
	}
	eu, us, bill := dying(orders, "orders-eu"), dying(orders, "orders-us"), dying(billing, "billing")
	for _, id := range []string{eu, us, bill} {
		waitJob(t, p, id, "dead")
	}
	for _, c := range []struct {
		name string
		q    *proc
		want []string
	}{
		{"ops", p, []string{eu, us, bill}},
		{"orders", orders, []string{eu, us}},
		{"viewer", viewer, []string{eu, us}},
		{"billing", billing, []string{bill}},
	} {
		listed := map[string]string{}
		var died []string
		for cursor := ""; ; {
			status, page := c.q.call(t, "GET", "/v1/deadletters?limit=2&cursor="+cursor, nil)
			if status != http.StatusOK {
				t.Fatalf("%s lists dead letters: %d %v", c.name, status, page)
			}
			for _, it := range page["jobs"].([]any) {
				j := it.(map[string]any)
				listed[j["id"].(string)] = j["topic"].(string)
				died = append(died, j["died_at"].(string))
			}
			if cursor = page["next_cursor"].(string); cursor == "" {
				break
			}
		}
		if got := slices.Sorted(maps.Keys(listed)); !slices.Equal(got, slices.Sorted(slices.Values(c.want))) || !slices.IsSorted(died) {
			t.Errorf("%s lists %v dead at %v; want %v, in the order they died", c.name, listed, died, c.want)
		}
	}
	if status, body := billing.call(t, "GET", "/v1/deadletters?topic=orders-eu", nil); status != http.StatusForbidden {
		t.Errorf("billing names orders-eu: %d %v", status, body)
	}
}
