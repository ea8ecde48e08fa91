package timer_test

import (
	"errors"
	"testing"

	"github.com/toc-project/toc/timer"
)

func TestDestinationValidate(t *testing.T) {
	brokers := map[timer.Way][]string{timer.WayAMQP: {"rabbit"}, timer.WayNATS: {"main", "edge"}}
	for _, c := range []struct {
		d     timer.Destination
		field string // "" valid
	}{
		{timer.Destination{}, ""},
		{timer.Destination{Way: timer.WayWebhook}, ""},
		{timer.Destination{Way: timer.WayWebhook, Broker: "main"}, "webhook"},
		{timer.Destination{Way: "smoke"}, "delivery"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due.{topic}.{biz_id}"}, ""},
		{timer.Destination{Way: timer.WayNATS, Subject: "due"}, "nats.broker"},
		{timer.Destination{Way: timer.WayNATS, Broker: "gone", Subject: "due"}, "nats.broker"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main"}, "nats.subject"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due.>"}, "nats.subject"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due..x"}, "nats.subject"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due x"}, "nats.subject"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due.{id}"}, "nats.subject"},
		{timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: "due", Exchange: "x"}, "nats"},
		{timer.Destination{Way: timer.WayAMQP, Broker: "rabbit"}, ""},
		{timer.Destination{Way: timer.WayAMQP, Broker: "rabbit", Exchange: "toc", RoutingKey: "{topic}.{job_id}", Transient: true}, ""},
		{timer.Destination{Way: timer.WayAMQP, Broker: "main"}, "amqp.broker"},
		{timer.Destination{Way: timer.WayAMQP, Broker: "rabbit", Subject: "s"}, "amqp.subject"},
		{timer.Destination{Way: timer.WayAMQP, Broker: "rabbit", RoutingKey: "{key"}, "amqp.routing_key"},
		{timer.Destination{Way: timer.WayAMQP, Broker: "rabbit", Exchange: string(make([]byte, 256))}, "amqp.exchange"},
	} {
		err := c.d.Validate(brokers)
		var fe *timer.FieldError
		switch {
		case c.field == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want nil", c.d, err)
		case c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field):
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.d, err, c.field)
		}
	}
	if err := (timer.Destination{Way: timer.WayAMQP, Broker: "x"}).Validate(nil); err == nil {
		t.Error("an amqp destination on a server without brokers validated")
	}
}

func TestExpand(t *testing.T) {
	j := &timer.Job{ID: 42, Topic: "sandbox.orders", Key: "o-7", BizID: 9}
	if got := timer.Expand("due.{topic}.{job_id}.{key}.{biz_id}.{biz_type}", j); got != "due.orders.42.o-7.9.0" {
		t.Errorf("Expand = %q", got)
	}
	if got := timer.Expand("plain", j); got != "plain" {
		t.Errorf("Expand(plain) = %q", got)
	}
}
