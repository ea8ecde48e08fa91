package client_test

import (
	"encoding/json"
	"testing"

	"github.com/toc-project/toc/http/client"
)

// A topic's delivery goes out as the API reads it and comes back as the
// API writes it.
func TestTopicDeliveryJSON(t *testing.T) {
	for _, c := range []struct {
		d    client.Delivery
		want string
	}{
		{client.Delivery{}, `{"delivery":"webhook"}`},
		{client.Delivery{Way: "nats", Broker: "main", Subject: "due.{topic}"}, `{"delivery":"nats","nats":{"broker":"main","subject":"due.{topic}"}}`},
		{client.Delivery{Way: "amqp", Broker: "r", Exchange: "x", RoutingKey: "k", Transient: true}, `{"amqp":{"broker":"r","exchange":"x","routing_key":"k","persistent":false},"delivery":"amqp"}`},
	} {
		b, err := json.Marshal(client.TopicPatch{Delivery: &c.d})
		if err != nil || string(b) != c.want {
			t.Errorf("TopicPatch{Delivery: %+v} = %s, %v; want %s", c.d, b, err, c.want)
		}
		var back client.Topic
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		want := c.d
		if want.Way == "" {
			want.Way = "webhook"
		}
		if back.Delivery != want {
			t.Errorf("Topic from %s has delivery %+v, want %+v", b, back.Delivery, want)
		}
	}
}
