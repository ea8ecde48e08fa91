// Package nats delivers due jobs to NATS JetStream: [Publisher] is the
// timer.Handler of the topics whose way is nats.
//
// # Delivery
//
// A delivery is published to the subject of its topic's destination (its
// template filled with the job's fields, see timer.Expand) on the broker
// the destination names, as a webhook's JSON body with the webhook's
// headers as NATS headers, signed alike (Standard Webhooks). The header
// Nats-Msg-Id is the job id and the attempt, "<id>-<attempt>", so that a
// stream's duplicate window stores a re-sent attempt once. The attempt is
// done when the stream acknowledges the message; no stream on the
// subject, a broker that does not answer within the attempt's context, or
// a lost connection fail the attempt, which is retried with the topic's
// backoff.
//
// # Connections
//
// Each broker gets one connection, made on its first delivery (or Ready)
// and kept. nats.go reconnects it by itself after an outage; while it is
// reconnecting a delivery fails at once rather than being buffered (a
// message buffered past its attempt would arrive after the attempt was
// counted failed), and the deliveries waiting for their ack when the
// connection is lost fail then, not at the end of their context. A connection that could not be made is tried again on
// a delivery after [DefaultRedialWait].
package nats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// Defaults of a Config.
const (
	// DefaultTimeout bounds a delivery whose ctx has no deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultConnectTimeout bounds the dial and handshake of a connection.
	DefaultConnectTimeout = 2 * time.Second
	// DefaultReconnectWait is how long nats.go waits between attempts to
	// reconnect to a broker it lost.
	DefaultReconnectWait = time.Second
	// DefaultRedialWait is how long a broker that could not be connected
	// to is left alone: deliveries in that time fail with the dial's error.
	DefaultRedialWait = time.Second
)

// Config configures a Publisher. Sign is required.
type Config struct {
	// Brokers maps a broker's name, as a topic's destination names it, to
	// its URL: nats://host:port, with the credentials in it
	// (nats://user:password@host:port, nats://token@host:port) when the
	// broker wants them; a comma-separated list names a cluster's servers.
	Brokers map[string]string
	// Options are more nats.go options by broker name (a credentials
	// file, TLS), applied after the Publisher's own.
	Options map[string][]nats.Option
	// Sign returns the body and the signed headers of d sent at now:
	// (*webhook.Client).Message.
	Sign func(d timer.Delivery, now time.Time) (webhook.Message, error)
	// Now gives the time a delivery is signed at (default time.Now).
	Now func() time.Time
	// Timeout bounds a delivery whose ctx has no deadline (default
	// DefaultTimeout); the worker's ctx carries the topic's callback
	// timeout, which is honoured as it is.
	Timeout time.Duration
	// ConnectTimeout bounds making a connection (default
	// DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// ReconnectWait spaces the attempts to reconnect to a lost broker
	// (default DefaultReconnectWait).
	ReconnectWait time.Duration
	// RedialWait is how long a broker that could not be connected to is
	// left alone (default DefaultRedialWait).
	RedialWait time.Duration
	// Logger receives the connections' events: lost, reconnected, closed
	// (default: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, DefaultConnectTimeout)
	c.ReconnectWait = cmp.Or(c.ReconnectWait, DefaultReconnectWait)
	c.RedialWait = cmp.Or(c.RedialWait, DefaultRedialWait)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field of c that is wrong, as a
// *timer.FieldError. A broker's URL is never quoted: it may hold a
// password.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Sign == nil:
		return &timer.FieldError{Field: "Sign", Message: "required"}
	case c.Timeout < 0:
		return &timer.FieldError{Field: "Timeout", Message: "must not be negative"}
	case c.ConnectTimeout < 0:
		return &timer.FieldError{Field: "ConnectTimeout", Message: "must not be negative"}
	case c.ReconnectWait < 0:
		return &timer.FieldError{Field: "ReconnectWait", Message: "must not be negative"}
	case c.RedialWait < 0:
		return &timer.FieldError{Field: "RedialWait", Message: "must not be negative"}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Brokers)) {
		field := "Brokers[" + name + "]"
		if name == "" {
			return &timer.FieldError{Field: "Brokers", Message: "a broker's name must not be empty"}
		}
		for s := range strings.SplitSeq(c.Brokers[name], ",") {
			u, err := url.Parse(strings.TrimSpace(s))
			if err != nil || u.Host == "" {
				return &timer.FieldError{Field: field, Message: "want nats://host:port, or a comma-separated list of them"}
			}
			switch u.Scheme {
			case "nats", "tls", "ws", "wss":
			default:
				return &timer.FieldError{Field: field, Message: "the scheme must be nats, tls, ws or wss"}
			}
		}
	}
	for name := range c.Options {
		if _, ok := c.Brokers[name]; !ok {
			return &timer.FieldError{Field: "Options[" + name + "]", Message: "no such broker in Brokers"}
		}
	}
	return nil
}

// Publisher publishes deliveries to the JetStream of their topic's
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
		b := &broker{name: name, url: u, redialWait: cfg.RedialWait, inflight: make(map[*flight]struct{})}
		b.opts = p.options(b)
		p.brokers[name] = b
	}
	return p, nil
}

// options are the nats.go options of b's connection.
func (p *Publisher) options(b *broker) []nats.Option {
	log := p.cfg.Logger.With(slog.String("broker", b.name))
	opts := []nats.Option{
		nats.Name("toc"),
		nats.Timeout(p.cfg.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(p.cfg.ReconnectWait),
		// No buffering while reconnecting: a publish then fails at once.
		nats.ReconnectBufSize(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			b.lost(err)
			log.Warn("nats broker lost; reconnecting", slog.Any("err", err))
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			log.Info("nats broker reconnected")
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			b.lost(nats.ErrConnectionClosed)
			if err := nc.LastError(); err != nil {
				log.Warn("nats connection closed", slog.Any("err", err))
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("nats broker error", slog.Any("err", err))
		}),
	}
	return append(opts, p.cfg.Options[b.name]...)
}

// Fire publishes d to its destination's subject on its broker and returns
// once the stream has acknowledged it. When d.Response is set it receives
// the acknowledgement, {"stream":...,"seq":...} (with "duplicate":true
// when the stream had the message already).
func (p *Publisher) Fire(ctx context.Context, d timer.Delivery) error {
	dest := d.Destination
	b, ok := p.brokers[dest.Broker]
	if !ok {
		return fmt.Errorf("no nats broker %q on this server", dest.Broker)
	}
	subject := timer.Expand(dest.Subject, d.Job)
	if err := checkSubject(subject); err != nil {
		return fmt.Errorf("nats subject %q: %w", subject, err)
	}
	m, err := p.cfg.Sign(d, p.cfg.Now())
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.Timeout)
		defer cancel()
	}
	js, err := b.jetStream(ctx)
	if err != nil {
		return fmt.Errorf("nats broker %s: %w", b.name, err)
	}
	if s := js.Conn().Status(); s != nats.CONNECTED {
		return fmt.Errorf("publish to %s on nats broker %s: the connection is %s", subject, b.name, strings.ToLower(s.String()))
	}
	msg := &nats.Msg{Subject: subject, Data: m.Body, Header: make(nats.Header, len(m.Headers)+1)}
	for _, h := range m.Headers {
		msg.Header.Set(h.Key, h.Value)
	}
	pubCtx, done := b.track(ctx)
	defer done()
	ack, err := js.PublishMsg(pubCtx, msg, jetstream.WithMsgID(m.ID+"-"+strconv.Itoa(d.Attempt)))
	if err != nil {
		switch {
		case ctx.Err() == nil && pubCtx.Err() != nil:
			err = context.Cause(pubCtx) // the connection was lost under it
		case errors.Is(err, jetstream.ErrNoStreamResponse):
			err = errors.New("no stream takes the subject (or JetStream does not answer)")
		case errors.Is(err, nats.ErrReconnectBufExceeded):
			err = errors.New("the connection is reconnecting")
		}
		return fmt.Errorf("publish to %s on nats broker %s: %w", subject, b.name, err)
	}
	if d.Response != nil {
		d.Response.Excerpt, _ = json.Marshal(ack)
	}
	return nil
}

// Ready reports whether every broker is connected and its JetStream
// answers, connecting to those not yet connected; the error names each
// broker that is not.
func (p *Publisher) Ready(ctx context.Context) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.brokers)) {
		if err := p.brokers[name].ready(ctx); err != nil {
			errs = append(errs, fmt.Errorf("nats broker %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Close closes the brokers' connections. A Fire after Close fails.
func (p *Publisher) Close() error {
	for _, b := range p.brokers {
		b.close()
	}
	return nil
}

// checkSubject reports why s cannot be published to: it must be
// dot-separated tokens without white space or wildcards.
func checkSubject(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return errors.New("holds white space (from a job's key?)")
	}
	for tok := range strings.SplitSeq(s, ".") {
		switch tok {
		case "":
			return errors.New("has an empty token")
		case "*", ">":
			return errors.New("has a wildcard token")
		}
	}
	return nil
}
