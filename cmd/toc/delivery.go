package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/http/webhook"
	amqpdeliver "github.com/toc-project/toc/internal/deliver/amqp"
	natsdeliver "github.com/toc-project/toc/internal/deliver/nats"
	"github.com/toc-project/toc/timer"
)

// The ways a member delivers (issue 36): webhooks always, and the message
// brokers its --amqp and --nats flags name. A topic names a broker; the
// URL, with its credentials, stays on the server.

// brokerFlag parses the values of --amqp or --nats, name=url each, into
// the brokers by name. flag is the flag's name, for errors, and schemes
// the URL schemes the way takes.
func brokerFlag(flag string, values []string, schemes ...string) (map[string]string, error) {
	brokers := make(map[string]string, len(values))
	for i, v := range values {
		name, raw, ok := strings.Cut(v, "=")
		switch {
		case !ok || !validBrokerName(name):
			// Not quoted: it may hold a password.
			return nil, fmt.Errorf("--%s, value %d of %d: want name=url, the name 1-64 letters, digits, '-' or '_'", flag, i+1, len(values))
		case brokers[name] != "":
			return nil, fmt.Errorf("--%s %s: given twice", flag, name)
		}
		u, err := url.Parse(raw)
		if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" {
			return nil, fmt.Errorf("--%s %s: want a URL %s://host:port", flag, name, strings.Join(schemes, "|"))
		}
		brokers[name] = raw
	}
	return brokers, nil
}

func validBrokerName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// brokerNames lists each way's broker names, sorted, for the API's
// validation of a topic's settings.
func brokerNames(byWay map[timer.Way]map[string]string) map[timer.Way][]string {
	names := make(map[timer.Way][]string, len(byWay))
	for way, brokers := range byWay {
		for name := range brokers {
			names[way] = append(names[way], name)
		}
		slices.Sort(names[way])
	}
	return names
}

// ways is the worker's handler: each delivery goes to the handler of its
// topic's way, and is counted by way (toc_delivery_*) when observe is
// set.
type ways struct {
	webhook timer.Handler
	others  map[timer.Way]timer.Handler
	now     func() time.Time
	observe func(way timer.Way, took time.Duration, err error)
}

// notHere is how long a job of a way this member cannot deliver waits
// before a member tries it again.
const notHere = 5 * time.Second

func (w ways) Fire(ctx context.Context, d timer.Delivery) error {
	way := d.Destination.Of()
	start := w.now()
	err := w.fire(ctx, way, d)
	if w.observe != nil {
		w.observe(way, w.now().Sub(start), err)
	}
	return err
}

func (w ways) fire(ctx context.Context, way timer.Way, d timer.Delivery) error {
	if way == timer.WayWebhook {
		return w.webhook.Fire(ctx, d)
	}
	if h, ok := w.others[way]; ok {
		return h.Fire(ctx, d)
	}
	// A member started without the topic's broker: the job was not
	// delivered, so no attempt is counted; it comes back in a moment, to
	// this member or another that has one.
	return &timer.NotSentError{Until: w.now().Add(notHere), Err: fmt.Errorf("this member has no %s broker (start it with --%s name=url)", way, way)}
}

// openWays starts the publishers of the brokers given, which sign as the
// webhook client does; close closes them.
func openWays(brokers map[timer.Way]map[string]string, sign func(timer.Delivery, time.Time) (webhook.Message, error), now func() time.Time, log *slog.Logger) (map[timer.Way]timer.Handler, func(), error) {
	others := map[timer.Way]timer.Handler{}
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	if b := brokers[timer.WayNATS]; len(b) > 0 {
		p, err := natsdeliver.New(natsdeliver.Config{Brokers: b, Sign: sign, Now: now, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("--nats: %w", err)
		}
		others[timer.WayNATS], closers = p, append(closers, p.Close)
	}
	if b := brokers[timer.WayAMQP]; len(b) > 0 {
		p, err := amqpdeliver.New(amqpdeliver.Config{Brokers: b, Sign: sign, Now: now, Logger: log})
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("--amqp: %w", err)
		}
		others[timer.WayAMQP], closers = p, append(closers, p.Close)
	}
	return others, closeAll, nil
}

// checkWays logs each broker that does not answer at start: its topics'
// deliveries fail (and are retried) until it does.
func checkWays(ctx context.Context, others map[timer.Way]timer.Handler, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for way, h := range others {
		if r, ok := h.(interface{ Ready(context.Context) error }); ok {
			if err := r.Ready(ctx); err != nil {
				log.Warn("a message broker does not answer; its topics' deliveries fail and are retried until it does", "way", string(way), "err", err)
			}
		}
	}
}
