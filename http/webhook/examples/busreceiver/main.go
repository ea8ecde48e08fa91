// Command busreceiver is an example consumer of the due jobs toc publishes
// to RabbitMQ or NATS JetStream, in Go with the Standard Webhooks library.
//
// It does what every consumer of a bus topic should do:
//
//   - verify each message's signature (the webhook's headers travel as
//     message headers), accepting any of several secrets so that a
//     secret can be rotated; a message that fails it is dropped;
//   - de-duplicate on webhook-id, the job's id: toc publishes a job again
//     only when it did not hear the broker's confirmation, and then with
//     the same id;
//   - acknowledge a message only once its work is done.
//
// It declares what it consumes from, so it can be started before toc
// publishes: with RabbitMQ a durable queue (bound to a topic exchange
// when one is named), with NATS a JetStream stream on the subject and a
// durable consumer of it. It prints one line per job on stdout.
//
// Usage:
//
//	WEBHOOK_SECRETS=whsec_... busreceiver [--max N] amqp://guest:guest@localhost:5672/ QUEUE [EXCHANGE BINDING]
//	WEBHOOK_SECRETS=whsec_... busreceiver [--max N] nats://localhost:4222 STREAM SUBJECT
//
// --max N stops after N jobs (0, the default: at SIGINT or SIGTERM).
// Build it from a checkout: go build -o busreceiver ./http/webhook/examples/busreceiver
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// maxSeen bounds the job ids remembered for de-duplication; a consumer
// with more than one process keeps them in its database instead.
const maxSeen = 100_000

func main() {
	limit := flag.Int("max", 0, "stop after this many jobs (0: at SIGINT or SIGTERM)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: busreceiver [--max N] amqp://... QUEUE [EXCHANGE BINDING]")
		fmt.Fprintln(os.Stderr, "       busreceiver [--max N] nats://... STREAM SUBJECT")
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, flag.Args(), *limit)
	if errors.Is(err, errUsage) {
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "busreceiver:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, limit int) error {
	hooks, err := parseSecrets(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return err
	}
	c := &consumer{hooks: hooks, seen: make(map[string]bool), left: limit, done: make(chan struct{})}
	switch {
	case len(args) >= 2 && strings.HasPrefix(args[0], "amqp"):
		if len(args) != 2 && len(args) != 4 {
			return errors.New("amqp: give QUEUE, or QUEUE EXCHANGE BINDING")
		}
		return c.amqp(ctx, args[0], args[1:])
	case len(args) == 3 && strings.HasPrefix(args[0], "nats"):
		return c.nats(ctx, args[0], args[1], args[2])
	}
	return errUsage
}

// parseSecrets reads whsec_ secrets separated by commas or spaces, the
// form of toc's TOC_WEBHOOK_SECRET. Its errors never quote a secret.
func parseSecrets(list string) ([]*standardwebhooks.Webhook, error) {
	var hooks []*standardwebhooks.Webhook
	for i, s := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil || !strings.HasPrefix(s, "whsec_") {
			return nil, fmt.Errorf("WEBHOOK_SECRETS: secret %d does not have the form whsec_<base64>", i+1)
		}
		hooks = append(hooks, wh)
	}
	if len(hooks) == 0 {
		return nil, errors.New("WEBHOOK_SECRETS is empty: give the secrets toc signs with")
	}
	return hooks, nil
}

type consumer struct {
	hooks []*standardwebhooks.Webhook
	seen  map[string]bool // job ids handled; messages come one at a time
	order []string        // the ids of seen, oldest first
	left  int             // jobs before stopping; 0: no limit
	done  chan struct{}   // closed when left reaches 0
}

// job is the part of the message body this consumer reads: the webhook's.
type job struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	Attempt int             `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
}

// handle verifies and processes one message; it reports whether the
// message should be acknowledged (false: dropped, not redelivered).
func (c *consumer) handle(body []byte, h http.Header) bool {
	if !c.verify(body, h) {
		fmt.Fprintf(os.Stderr, "busreceiver: message %q: bad signature, dropped\n", h.Get("webhook-id"))
		return false
	}
	var j job
	if err := json.Unmarshal(body, &j); err != nil {
		fmt.Fprintf(os.Stderr, "busreceiver: message %q: %v, dropped\n", h.Get("webhook-id"), err)
		return false
	}
	if c.seen[j.ID] {
		fmt.Printf("job %s of %s: a duplicate, already done\n", j.ID, j.Topic)
		return true
	}
	// The job's work goes here, before the id is remembered.
	fmt.Printf("job %s of %s, attempt %d, signed: %s\n", j.ID, j.Topic, j.Attempt, j.Payload)
	c.remember(j.ID)
	if c.left > 0 {
		if c.left--; c.left == 0 {
			close(c.done)
		}
	}
	return true
}

func (c *consumer) verify(body []byte, h http.Header) bool {
	for _, wh := range c.hooks {
		if wh.Verify(body, h) == nil {
			return true
		}
	}
	return false
}

func (c *consumer) remember(id string) {
	c.seen[id] = true
	c.order = append(c.order, id)
	if len(c.order) > maxSeen {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
}

// amqp consumes from a durable queue, bound to a topic exchange by the
// binding when one is named (args: QUEUE [EXCHANGE BINDING]).
func (c *consumer) amqp(ctx context.Context, url string, args []string) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	queue := args[0]
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %s: %w", queue, err)
	}
	if len(args) == 3 {
		if err := ch.ExchangeDeclare(args[1], "topic", true, false, false, false, nil); err != nil {
			return fmt.Errorf("declare exchange %s: %w", args[1], err)
		}
		if err := ch.QueueBind(queue, args[2], args[1], false, nil); err != nil {
			return fmt.Errorf("bind queue %s: %w", queue, err)
		}
	}
	deliveries, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "busreceiver: consuming queue %s\n", queue)
	msgs := make(chan message)
	go func() {
		defer close(msgs)
		for m := range deliveries {
			h := make(http.Header)
			for k, v := range m.Headers {
				if s, ok := v.(string); ok {
					h.Set(k, s)
				}
			}
			select {
			case msgs <- message{body: m.Body, header: h,
				ack: func() error { return m.Ack(false) }, drop: func() error { return m.Reject(false) }}:
			case <-ctx.Done():
				return
			case <-c.done:
				return
			}
		}
	}()
	return c.consume(ctx, msgs)
}

// nats consumes the subject through a durable consumer of a stream that
// captures it, made if missing, with a duplicate window for toc's
// Nats-Msg-Id.
func (c *consumer) nats(ctx context.Context, url, stream, subject string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{subject}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream, err)
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "busreceiver", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		return fmt.Errorf("consumer of %s: %w", stream, err)
	}
	fmt.Fprintf(os.Stderr, "busreceiver: consuming stream %s (%s)\n", stream, subject)
	msgs := make(chan message)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := make(http.Header)
		for k, v := range m.Headers() {
			h[http.CanonicalHeaderKey(k)] = v
		}
		select {
		case msgs <- message{body: m.Data(), header: h,
			ack: func() error { return m.DoubleAck(ctx) }, drop: m.Term}:
		case <-ctx.Done():
		case <-c.done:
		}
	})
	if err != nil {
		return err
	}
	defer cc.Stop()
	return c.consume(ctx, msgs)
}

// message is a message of either broker.
type message struct {
	body      []byte
	header    http.Header
	ack, drop func() error
}

// consume handles messages one at a time until the context ends, the
// last job wanted came, or the broker closes msgs.
func (c *consumer) consume(ctx context.Context, msgs <-chan message) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.done:
			return nil
		case m, ok := <-msgs:
			if !ok {
				return errors.New("the broker closed the channel")
			}
			settle := m.drop
			if c.handle(m.body, m.header) {
				settle = m.ack
			}
			if err := settle(); err != nil {
				return err
			}
		}
	}
}
