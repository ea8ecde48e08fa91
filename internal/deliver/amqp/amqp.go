// Package amqp delivers due jobs to RabbitMQ (AMQP 0-9-1): [Publisher] is
// the timer.Handler of the topics whose way is amqp.
//
// # Delivery
//
// A delivery is published to the exchange of its topic's destination with
// its routing key (the template filled with the job's fields, see
// timer.Expand), on the broker the destination names, as a webhook's JSON
// body with the webhook's headers in the message's header table, signed
// alike (Standard Webhooks); its message id is the job id. It is
// persistent unless the destination is transient, and mandatory: a
// message that no queue takes comes back, and fails the attempt. The
// attempt is done on the broker's publisher confirm; a nack, a returned
// message, a closed channel or connection, or no confirm within the
// attempt's context fail it, and it is retried with the topic's backoff.
//
// # Channels and connections
//
// Each broker has one connection and a fixed pool of Config.Channels
// publishers, each with a channel of its own in confirm mode that
// publishes one message at a time: Fire hands its delivery to a free
// publisher and waits for the outcome or the end of its ctx, whichever
// comes first, so a broker that stops reading cannot hold the caller, and
// no more than Channels goroutines ever wait on a broker. The connection
// is made on first use; amqp091-go does not reconnect, so a connection
// found closed is made again by the next delivery, and one that could not
// be made is not tried again for Config.RedialWait. While the broker
// blocks publishers (a resource alarm) deliveries fail at once.
package amqp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// Defaults of a Config.
const (
	// DefaultTimeout bounds a delivery whose ctx has no deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultChannels is the number of channels, each publishing one
	// message at a time, per broker.
	DefaultChannels = 16
	// DefaultConnectTimeout bounds the dial and handshake of a connection.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultRedialWait is how long a broker that could not be connected
	// to is left alone: deliveries in that time fail with the dial's error.
	DefaultRedialWait = time.Second
	// DefaultHeartbeat is the heartbeat interval asked of the broker, which
	// finds a dead connection after three missed beats.
	DefaultHeartbeat = 10 * time.Second
)

// Config configures a Publisher. Sign is required.
type Config struct {
	// Brokers maps a broker's name, as a topic's destination names it, to
	// its URL: amqp://user:password@host:port/vhost (amqps:// for TLS).
	Brokers map[string]string
	// Sign returns the body and the signed headers of d sent at now:
	// (*webhook.Client).Message.
	Sign func(d timer.Delivery, now time.Time) (webhook.Message, error)
	// Now gives the time a delivery is signed at, and its Timestamp
	// (default time.Now).
	Now func() time.Time
	// Timeout bounds a delivery whose ctx has no deadline (default
	// DefaultTimeout); the worker's ctx carries the topic's callback
	// timeout, which is honoured as it is.
	Timeout time.Duration
	// Channels is the number of channels per broker (default
	// DefaultChannels), and so of the deliveries in flight to it.
	Channels int
	// ConnectTimeout bounds making a connection (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// RedialWait is how long a broker that could not be connected to is
	// left alone (default DefaultRedialWait).
	RedialWait time.Duration
	// Heartbeat is the heartbeat interval (default DefaultHeartbeat).
	Heartbeat time.Duration
	// Logger receives the connections' events: closed, blocked, unblocked
	// (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.Channels = cmp.Or(c.Channels, DefaultChannels)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, DefaultConnectTimeout)
	c.RedialWait = cmp.Or(c.RedialWait, DefaultRedialWait)
	c.Heartbeat = cmp.Or(c.Heartbeat, DefaultHeartbeat)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field of c that is wrong, as a
// *timer.FieldError. A broker's URL is never quoted: it holds a password.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Sign == nil:
		return &timer.FieldError{Field: "Sign", Message: "required"}
	case c.Timeout < 0:
		return &timer.FieldError{Field: "Timeout", Message: "must not be negative"}
	case c.Channels < 0:
		return &timer.FieldError{Field: "Channels", Message: "must not be negative"}
	case c.ConnectTimeout < 0:
		return &timer.FieldError{Field: "ConnectTimeout", Message: "must not be negative"}
	case c.RedialWait < 0:
		return &timer.FieldError{Field: "RedialWait", Message: "must not be negative"}
	case c.Heartbeat < 0:
		return &timer.FieldError{Field: "Heartbeat", Message: "must not be negative"}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Brokers)) {
		if name == "" {
			return &timer.FieldError{Field: "Brokers", Message: "a broker's name must not be empty"}
		}
		if _, err := amqp091.ParseURI(c.Brokers[name]); err != nil {
			return &timer.FieldError{Field: "Brokers[" + name + "]", Message: "want amqp://user:password@host:port/vhost (or amqps://)"}
		}
	}
	return nil
}

// errClosed is the error of a delivery after Close.
var errClosed = errors.New("publisher closed")

// Publisher publishes deliveries to the exchanges of their topic's
// broker. It is safe for concurrent use.
type Publisher struct {
	cfg     Config
	brokers map[string]*broker
}

var _ timer.Handler = (*Publisher)(nil)

// New returns a Publisher for cfg's brokers; it connects to each on its
// first use.
func New(cfg Config) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	p := &Publisher{cfg: cfg, brokers: make(map[string]*broker, len(cfg.Brokers))}
	for name, u := range cfg.Brokers {
		p.brokers[name] = newBroker(name, u, cfg)
	}
	return p, nil
}

// Fire publishes d to its destination's exchange on its broker and
// returns once the broker has confirmed it. When d.Response is set and
// the message came back unroutable, its Excerpt receives the broker's
// reply, "312 NO_ROUTE".
func (p *Publisher) Fire(ctx context.Context, d timer.Delivery) error {
	dest := d.Destination
	b, ok := p.brokers[dest.Broker]
	if !ok {
		return fmt.Errorf("no amqp broker %q on this server", dest.Broker)
	}
	now := p.cfg.Now()
	m, err := p.cfg.Sign(d, now)
	if err != nil {
		return err
	}
	headers := make(amqp091.Table, len(m.Headers))
	for _, h := range m.Headers {
		headers[h.Key] = h.Value
	}
	mode := amqp091.Persistent
	if dest.Transient {
		mode = amqp091.Transient
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.Timeout)
		defer cancel()
	}
	req := &request{
		ctx:      ctx,
		exchange: dest.Exchange,
		key:      timer.Expand(dest.RoutingKey, d.Job),
		attempt:  strconv.Itoa(d.Attempt),
		msg: amqp091.Publishing{
			Headers:      headers,
			ContentType:  "application/json",
			DeliveryMode: mode,
			MessageId:    m.ID,
			Timestamp:    now,
			AppId:        "toc",
			Body:         m.Body,
		},
		done: make(chan result, 1),
	}
	res := b.do(req)
	if res.returned != nil && d.Response != nil {
		d.Response.Excerpt = []byte(strconv.Itoa(int(res.returned.ReplyCode)) + " " + res.returned.ReplyText)
	}
	if res.err != nil {
		return fmt.Errorf("publish to exchange %q with key %q on amqp broker %s: %w", req.exchange, req.key, b.name, res.err)
	}
	return nil
}

// Ready reports whether every broker is connected and does not block
// publishers, connecting to those not yet connected; the error names
// each broker that is not.
func (p *Publisher) Ready(ctx context.Context) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.brokers)) {
		if err := p.brokers[name].ready(ctx); err != nil {
			errs = append(errs, fmt.Errorf("amqp broker %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops the publishers and closes the connections; a delivery in
// flight fails. A Fire after Close fails.
func (p *Publisher) Close() error {
	var wg sync.WaitGroup
	for _, b := range p.brokers {
		wg.Go(b.close)
	}
	wg.Wait()
	return nil
}
