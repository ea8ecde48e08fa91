package http_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// A topic's delivery (issue 36): set, shown, validated against the
// server's brokers, kept by a PATCH of another field, and handed to the
// handler with each delivery; a job of a bus topic takes no callback URL
// and a webhook topic's job needs one, alone or in a batch.
func TestTopicDelivery(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]timer.Destination{}
	)
	handler := timer.HandlerFunc(func(_ context.Context, d timer.Delivery) error {
		mu.Lock()
		seen[d.Job.Topic] = d.Destination
		mu.Unlock()
		return nil
	})
	e := newAPIEnv(t, tochttp.APIConfig{Brokers: map[timer.Way][]string{timer.WayNATS: {"main"}, timer.WayAMQP: {"rabbit"}}}, handler)
	e.run(t)

	a := ok(t, e.call(t, "PUT", "/v1/topics/bus", `{"delivery": "nats", "nats": {"broker": "main", "subject": "due.{topic}.{job_id}"}}`), 201)
	if a.body["delivery"] != "nats" || a.body["nats"].(map[string]any)["subject"] != "due.{topic}.{job_id}" || a.body["amqp"] != nil {
		t.Fatalf("PUT nats topic answered %s", a.raw)
	}
	// A PATCH of another field keeps the way and its settings.
	a = ok(t, e.call(t, "PATCH", "/v1/topics/bus", `{"weight": 2}`), 200)
	if a.body["delivery"] != "nats" || a.body["nats"].(map[string]any)["broker"] != "main" {
		t.Fatalf("PATCH weight answered %s", a.raw)
	}
	a = ok(t, e.call(t, "PUT", "/v1/topics/rabbit", `{"delivery": "amqp", "amqp": {"broker": "rabbit", "exchange": "toc", "routing_key": "{topic}", "persistent": false}}`), 201)
	if am := a.body["amqp"].(map[string]any); am["exchange"] != "toc" || am["persistent"] != false {
		t.Fatalf("PUT amqp topic answered %s", a.raw)
	}

	for _, c := range []struct{ body, field string }{
		{`{"delivery": "carrier-pigeon"}`, "delivery"},
		{`{"delivery": "nats"}`, "nats.broker"},
		{`{"delivery": "nats", "nats": {"broker": "other", "subject": "a"}}`, "nats.broker"},
		{`{"delivery": "nats", "nats": {"broker": "main"}}`, "nats.subject"},
		{`{"delivery": "nats", "nats": {"broker": "main", "subject": "a.*"}}`, "nats.subject"},
		{`{"delivery": "nats", "nats": {"broker": "main", "subject": "a.{colour}"}}`, "nats.subject"},
		{`{"delivery": "nats", "nats": {"broker": "main", "subject": "a", "colour": 1}}`, "nats.colour"},
		{`{"delivery": "amqp", "amqp": {"broker": "main"}}`, "amqp.broker"},
		{`{"amqp": {"broker": "rabbit"}}`, "amqp"},
		{`{"delivery": "amqp", "nats": {"broker": "main", "subject": "a"}}`, "nats"},
	} {
		e.call(t, "PUT", "/v1/topics/bad", c.body).wantError(t, http.StatusBadRequest, "invalid_argument", c.field)
	}

	// The callback URL follows the topic's way.
	e.call(t, "POST", "/v1/jobs", `{"topic": "bus", "delay_ms": 10, `+cb+`}`).wantError(t, http.StatusBadRequest, "invalid_argument", "callback_url")
	e.call(t, "POST", "/v1/jobs", `{"topic": "plain", "delay_ms": 10}`).wantError(t, http.StatusBadRequest, "invalid_argument", "callback_url")
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "bus", "delay_ms": 10}, {"topic": "bus", "delay_ms": 10, `+cb+`}, {"topic": "plain", "delay_ms": 10}]}`).
		wantItems(t, http.StatusBadRequest, "invalid_argument", itemWant{1, "invalid_argument", "callback_url"}, itemWant{2, "invalid_argument", "callback_url"})
	e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, "job": {"topic": "bus", `+cb+`}}`).wantError(t, http.StatusBadRequest, "invalid_argument", "job.callback_url")

	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "bus", "delay_ms": 10}`), 201)
	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "rabbit", "delay_ms": 10}`), 201)
	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "plain", "delay_ms": 10, `+cb+`}`), 201)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		got := map[string]timer.Destination{}
		for k, v := range seen {
			got[k] = v
		}
		mu.Unlock()
		if n == 3 {
			want := map[string]timer.Destination{
				"bus":    {Way: timer.WayNATS, Broker: "main", Subject: "due.{topic}.{job_id}"},
				"rabbit": {Way: timer.WayAMQP, Broker: "rabbit", Exchange: "toc", RoutingKey: "{topic}", Transient: true},
				"plain":  {},
			}
			for topic, d := range want {
				if got[topic] != d {
					t.Errorf("a job of %s was delivered with destination %+v, want %+v", topic, got[topic], d)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the handler saw %d of 3 topics: %v", n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Back to webhook: the settings go with the way.
	a = ok(t, e.call(t, "PATCH", "/v1/topics/bus", `{"delivery": "webhook"}`), 200)
	if a.body["delivery"] != "webhook" || a.body["nats"] != nil {
		t.Fatalf("PATCH back to webhook answered %s", a.raw)
	}
}
