package timer

import (
	"slices"
	"strconv"
	"strings"
)

// Way is how a topic's due jobs reach their owner.
type Way string

// The ways a topic delivers. Webhook, the zero Way's meaning, POSTs each
// job to its callback URL; the others need none.
const (
	WayWebhook Way = "webhook"
	// WayPull hands it to a worker that leases it over the API and acks
	// it (see Demand).
	WayPull Way = "pull"
	// WayAMQP publishes it to a RabbitMQ exchange, done on the broker's
	// confirm.
	WayAMQP Way = "amqp"
	// WayNATS publishes it to a NATS JetStream subject, done on the
	// stream's ack.
	WayNATS Way = "nats"
)

// Ways lists every way, in the order the API documents them.
var Ways = []Way{WayWebhook, WayPull, WayAMQP, WayNATS}

// Bounds of a destination's names.
const (
	// MaxDestinationName bounds a broker name, an exchange, a routing key
	// or a subject (templates included).
	MaxDestinationName = 255
)

// Destination is where a topic's due jobs go: its Way and, for the
// message buses, the broker (a name from the server's list, which holds
// the URL and its credentials, never the topic) and the address on it.
// The zero Destination is a webhook.
type Destination struct {
	Way Way
	// Broker names one of the server's brokers of Way (--amqp, --nats).
	Broker string
	// Exchange is the AMQP exchange published to ("" is the default
	// exchange, which routes by queue name).
	Exchange string
	// RoutingKey is the AMQP routing key, Subject the NATS subject; both
	// may use the job's fields (see Expand).
	RoutingKey string
	Subject    string
	// Transient publishes AMQP messages non-persistent (delivery mode
	// 1); the default is persistent.
	Transient bool
}

// Of returns the way of d, WayWebhook for the zero one.
func (d Destination) Of() Way {
	if d.Way == "" {
		return WayWebhook
	}
	return d.Way
}

// Stored returns d as a store keeps it: a webhook's as the zero
// Destination, whatever else it held.
func (d Destination) Stored() Destination {
	if d.Of() == WayWebhook {
		return Destination{}
	}
	return d
}

// Validate reports the first field of d that is wrong, named as the API
// names it (delivery, amqp.broker, nats.subject, ...). brokers lists the
// server's brokers by way; a broker outside it is refused.
func (d Destination) Validate(brokers map[Way][]string) error {
	switch d.Of() {
	case WayWebhook, WayPull:
		if d.Broker != "" || d.Exchange != "" || d.RoutingKey != "" || d.Subject != "" || d.Transient {
			return invalid(string(d.Of()), "a topic delivered by %s takes no broker settings", d.Of())
		}
		return nil
	case WayAMQP, WayNATS:
	default:
		return invalid("delivery", "must be one of webhook, pull, amqp, nats")
	}
	prefix := string(d.Way) + "."
	names := brokers[d.Way]
	switch {
	case len(names) == 0:
		return invalid(prefix+"broker", "this server has no %s broker (start it with --%s name=url)", d.Way, d.Way)
	case d.Broker == "":
		return invalid(prefix+"broker", "required: one of %s", strings.Join(names, ", "))
	case !slices.Contains(names, d.Broker):
		return invalid(prefix+"broker", "no %s broker %q on this server; it has %s", d.Way, d.Broker, strings.Join(names, ", "))
	}
	for _, f := range []struct{ field, v string }{
		{"exchange", d.Exchange}, {"routing_key", d.RoutingKey}, {"subject", d.Subject},
	} {
		if len(f.v) > MaxDestinationName {
			return invalid(prefix+f.field, "at most %d bytes", MaxDestinationName)
		}
		if strings.ContainsAny(strings.NewReplacer(templateFields...).Replace(f.v), "{}") {
			return invalid(prefix+f.field, "braces may only hold {topic}, {job_id}, {key}, {biz_id} or {biz_type}")
		}
	}
	if d.Way == WayAMQP {
		if d.Subject != "" {
			return invalid("amqp.subject", "an AMQP topic has an exchange and a routing_key, not a subject")
		}
		return nil
	}
	switch {
	case d.Exchange != "" || d.RoutingKey != "" || d.Transient:
		return invalid("nats", "a NATS topic has a subject only")
	case d.Subject == "":
		return invalid("nats.subject", "required")
	case strings.ContainsAny(d.Subject, " \t\r\n") || strings.HasPrefix(d.Subject, ".") || strings.HasSuffix(d.Subject, ".") || strings.Contains(d.Subject, ".."):
		return invalid("nats.subject", "must be dot-separated tokens without white space")
	case strings.ContainsAny(strings.NewReplacer(templateFields...).Replace(d.Subject), "*>"):
		return invalid("nats.subject", "must not hold the wildcards * or >: a job is published to one subject")
	}
	return nil
}

// templateFields are the job fields a routing key or subject may use,
// each with a stand-in value, for the checks of Validate.
var templateFields = []string{"{topic}", "t", "{job_id}", "1", "{key}", "k", "{biz_id}", "0", "{biz_type}", "0"}

// Expand replaces the fields a routing key or subject uses by j's: the
// topic as its namespace knows it, the job id, its key and business id
// and type (decimal, "0" when unset).
func Expand(template string, j *Job) string {
	if !strings.Contains(template, "{") {
		return template
	}
	return strings.NewReplacer(
		"{topic}", TopicName(j.Topic),
		"{job_id}", j.ID.String(),
		"{key}", j.Key,
		"{biz_id}", strconv.FormatUint(j.BizID, 10),
		"{biz_type}", strconv.FormatUint(j.BizType, 10),
	).Replace(template)
}
