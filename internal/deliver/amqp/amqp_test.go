package amqp_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/toc-project/toc/internal/deliver/amqp"
	"github.com/toc-project/toc/internal/deliver/delivertest"
	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The topology each test declares on its vhost: a direct exchange with
// one queue bound to it by bound.
const (
	exchange = "toc.jobs"
	queue    = "jobs"
	bound    = "orders.3"
)

// newPublisher returns a Publisher of one broker, "main", at url.
func newPublisher(t *testing.T, s delivertest.Signer, url string, channels int) *amqp.Publisher {
	t.Helper()
	p, err := amqp.New(amqp.Config{
		Brokers:    map[string]string{"main": url},
		Sign:       s.Client.Message,
		Now:        func() time.Time { return delivertest.Now },
		Channels:   channels,
		RedialWait: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// declare connects to v and declares the exchange and the queue bound to
// it; it returns a channel on that connection, for consuming.
func declare(t *testing.T, v *testenv.RabbitVHost) *amqp091.Channel {
	t.Helper()
	conn, err := amqp091.Dial(v.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare(exchange, amqp091.ExchangeDirect, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind(queue, bound, exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	return ch
}

// drain takes every message in the queue.
func drain(t *testing.T, ch *amqp091.Channel) []amqp091.Delivery {
	t.Helper()
	var all []amqp091.Delivery
	for {
		m, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return all
		}
		all = append(all, m)
	}
}

func delivery(id timer.JobID, attempt int) timer.Delivery {
	return delivertest.Delivery(id, attempt, timer.Destination{
		Way: timer.WayAMQP, Broker: "main", Exchange: exchange, RoutingKey: "{topic}.{biz_type}",
	})
}

func withTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestPublisher shares one vhost between its subtests, which do not run
// in parallel: each takes what it published from the queue.
func TestPublisher(t *testing.T) {
	t.Parallel()
	v := testenv.RabbitMQ(t)
	ch := declare(t, v)
	s := delivertest.NewSigner(t)

	t.Run("signed persistent message", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 0)
		for _, transient := range []bool{false, true} {
			d := delivery(101, 2)
			d.Destination.Transient = transient
			if err := p.Fire(withTimeout(t, 5*time.Second), d); err != nil {
				t.Fatalf("Fire: %v", err)
			}
			got := drain(t, ch)
			if len(got) != 1 {
				t.Fatalf("%d messages in the queue, want 1", len(got))
			}
			m := got[0]
			wantMode := uint8(amqp091.Persistent)
			if transient {
				wantMode = amqp091.Transient
			}
			if m.DeliveryMode != wantMode || m.MessageId != "101" || m.ContentType != "application/json" ||
				!m.Timestamp.Equal(delivertest.Now) || m.RoutingKey != bound || m.Exchange != exchange {
				t.Errorf("transient %v: delivery mode %d, message id %q, content type %q, timestamp %v, routed %s/%s",
					transient, m.DeliveryMode, m.MessageId, m.ContentType, m.Timestamp, m.Exchange, m.RoutingKey)
			}
			want := s.Message(t, d)
			if string(m.Body) != string(want.Body) {
				t.Errorf("body = %s\nwant %s", m.Body, want.Body)
			}
			for _, h := range want.Headers {
				if got := m.Headers[h.Key]; got != h.Value {
					t.Errorf("header %s = %v, want %q", h.Key, got, h.Value)
				}
			}
			if m.Headers["webhook-id"] != "101" || m.Headers["toc-attempt"] != "2" || m.Headers["traceparent"] != delivertest.TraceParent {
				t.Errorf("headers %v", m.Headers)
			}
			id, _ := m.Headers["webhook-id"].(string)
			ts, _ := m.Headers["webhook-timestamp"].(string)
			sigs, _ := m.Headers["webhook-signature"].(string)
			if err := s.Verify(id, ts, sigs, m.Body); err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("unroutable then routable", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 1) // one channel: the same serves both
		d := delivery(201, 1)
		d.Destination.RoutingKey = "nobody.{job_id}"
		err := p.Fire(withTimeout(t, 5*time.Second), d)
		if err == nil || !strings.Contains(err.Error(), "unroutable") || !strings.Contains(err.Error(), "NO_ROUTE") {
			t.Fatalf("Fire of an unroutable message: %v, want an unroutable error", err)
		}
		if string(d.Response.Excerpt) != "312 NO_ROUTE" {
			t.Errorf("Response.Excerpt = %q, want 312 NO_ROUTE", d.Response.Excerpt)
		}
		if err := p.Fire(withTimeout(t, 5*time.Second), delivery(202, 1)); err != nil {
			t.Fatalf("Fire after an unroutable one: %v", err)
		}
		if got := drain(t, ch); len(got) != 1 || got[0].MessageId != "202" {
			t.Errorf("queue holds %d messages, want 202 alone", len(got))
		}
	})

	t.Run("no such exchange, then one that is", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 1)
		d := delivery(301, 1)
		d.Destination.Exchange = "no.such.exchange"
		err := p.Fire(withTimeout(t, 5*time.Second), d)
		if err == nil || !strings.Contains(err.Error(), "404") {
			t.Fatalf("Fire to a missing exchange: %v, want the channel closed with 404", err)
		}
		if err := p.Fire(withTimeout(t, 5*time.Second), delivery(302, 1)); err != nil {
			t.Fatalf("Fire after the channel closed: %v", err)
		}
		if got := drain(t, ch); len(got) != 1 || got[0].MessageId != "302" {
			t.Errorf("queue holds %d messages, want 302 alone", len(got))
		}
	})

	t.Run("nacked, then confirmed", func(t *testing.T) {
		// A queue that holds nothing and rejects what overflows it makes
		// the broker nack every message routed to it.
		if _, err := ch.QueueDeclare("full", true, false, false, false, amqp091.Table{
			"x-max-length": int32(0), "x-overflow": "reject-publish",
		}); err != nil {
			t.Fatal(err)
		}
		if err := ch.QueueBind("full", "full", exchange, false, nil); err != nil {
			t.Fatal(err)
		}
		p := newPublisher(t, s, v.URL, 1)
		d := delivery(351, 1)
		d.Destination.RoutingKey = "full"
		if err := p.Fire(withTimeout(t, 5*time.Second), d); err == nil || !strings.Contains(err.Error(), "nacked") {
			t.Fatalf("Fire to a queue that rejects it: %v, want nacked", err)
		}
		if err := p.Fire(withTimeout(t, 5*time.Second), delivery(352, 1)); err != nil {
			t.Fatalf("Fire after a nack: %v", err)
		}
		if got := drain(t, ch); len(got) != 1 || got[0].MessageId != "352" {
			t.Errorf("queue holds %d messages, want 352 alone", len(got))
		}
	})

	t.Run("default exchange routes by queue name", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 1)
		d := delivery(401, 1)
		d.Destination.Exchange, d.Destination.RoutingKey = "", queue
		if err := p.Fire(withTimeout(t, 5*time.Second), d); err != nil {
			t.Fatalf("Fire: %v", err)
		}
		if got := drain(t, ch); len(got) != 1 || got[0].MessageId != "401" {
			t.Errorf("queue holds %d messages, want 401 alone", len(got))
		}
	})

	t.Run("100 at once", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 0)
		const n = 100
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = p.Fire(withTimeout(t, 10*time.Second), delivery(timer.JobID(1000+i), 1))
			})
		}
		close(start)
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("Fire: %v", err)
		}
		seen := map[string]int{}
		for _, m := range drain(t, ch) {
			seen[m.MessageId]++
		}
		for i := range n {
			if id := strconv.Itoa(1000 + i); seen[id] != 1 {
				t.Errorf("job %s is in the queue %d times, want once", id, seen[id])
			}
		}
		if len(seen) != n {
			t.Errorf("%d distinct jobs in the queue, want %d", len(seen), n)
		}
	})

	t.Run("ready", func(t *testing.T) {
		p := newPublisher(t, s, v.URL, 0)
		if err := p.Ready(withTimeout(t, 5*time.Second)); err != nil {
			t.Errorf("Ready: %v", err)
		}
		p.Close()
		if err := p.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Ready after Close: %v, want closed", err)
		}
		if err := p.Fire(t.Context(), delivery(501, 1)); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("Fire after Close: %v, want closed", err)
		}
	})
}

// TestReconnect closes the vhost's connections while deliveries run:
// those the broker confirmed are all in the queue, and the same Publisher
// delivers again on a new connection.
func TestReconnect(t *testing.T) {
	t.Parallel()
	v := testenv.RabbitMQ(t)
	declare(t, v)
	p := newPublisher(t, delivertest.NewSigner(t), v.URL, 4)
	if err := p.Fire(withTimeout(t, 5*time.Second), delivery(1, 1)); err != nil {
		t.Fatalf("Fire before: %v", err)
	}

	var (
		mu     sync.Mutex
		acked  []string
		failed []error
		next   atomic.Int64
	)
	next.Store(100)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id := timer.JobID(next.Add(1))
				err := p.Fire(withTimeout(t, 5*time.Second), delivery(id, 1))
				mu.Lock()
				if err == nil {
					acked = append(acked, id.String())
				} else {
					failed = append(failed, err)
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // a steady flow, not a flood
			}
		})
	}
	v.CloseConnections(t)
	// The next delivery reconnects; the ones under way may fail.
	err := p.Fire(withTimeout(t, 5*time.Second), delivery(2, 1))
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Fire after the connections were closed: %v", err)
	}
	t.Logf("%d deliveries confirmed while the connections were closed, %d failed: %v", len(acked), len(failed), errors.Join(failed...))
	if n := v.Connections(t); n != 1 {
		t.Errorf("%d connections to the vhost, want 1 (the publisher's new one)", n)
	}

	ch := declare(t, v) // the first consumer's connection was closed too
	inQueue := map[string]bool{}
	for _, m := range drain(t, ch) {
		inQueue[m.MessageId] = true
	}
	for _, id := range append(acked, "1", "2") {
		if !inQueue[id] {
			t.Errorf("job %s was confirmed but is not in the queue", id)
		}
	}
}

func TestBrokerDown(t *testing.T) {
	t.Parallel()
	// A broker that is down: its port takes connections and drops them at
	// once, as a crashing broker's does. (A port freed for the test could
	// be taken meanwhile by another test's server: CI once saw a reset
	// where the test wanted a refusal.)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	p := newPublisher(t, delivertest.NewSigner(t), fmt.Sprintf("amqp://guest:guest@%s/", l.Addr()), 2)
	for i := range 3 {
		ctx := withTimeout(t, 2*time.Second)
		err := p.Fire(ctx, delivery(1, 1+i))
		if err == nil || !strings.Contains(err.Error(), "on amqp broker main") {
			t.Errorf("Fire %d to a broker that is down: %v, want its connection's error naming broker main", i, err)
		}
		if ctx.Err() != nil {
			t.Errorf("Fire %d took its whole ctx", i)
		}
	}
	if err := p.Ready(withTimeout(t, 2*time.Second)); err == nil || !strings.Contains(err.Error(), "amqp broker main:") {
		t.Errorf("Ready: %v, want an error naming broker main", err)
	}
	d := delivery(2, 1)
	d.Destination.Broker = "other"
	if err := p.Fire(t.Context(), d); err == nil || !strings.Contains(err.Error(), `no amqp broker "other"`) {
		t.Errorf("Fire to an unknown broker: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	sign := delivertest.Sign
	for _, c := range []struct {
		cfg   amqp.Config
		field string
	}{
		{amqp.Config{Brokers: map[string]string{"a": "amqp://127.0.0.1"}}, "Sign"},
		{amqp.Config{Sign: sign, Brokers: map[string]string{"a": "http://u:secret@127.0.0.1"}}, "Brokers[a]"},
		{amqp.Config{Sign: sign, Brokers: map[string]string{"": "amqp://127.0.0.1"}}, "Brokers"},
		{amqp.Config{Sign: sign, Channels: -1}, "Channels"},
		{amqp.Config{Sign: sign, Timeout: -time.Second}, "Timeout"},
	} {
		delivertest.CheckField(t, c.cfg.Validate(), c.field)
	}
	ok := amqp.Config{Sign: sign, Brokers: map[string]string{"a": "amqp://u:p@127.0.0.1:5672/v"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
