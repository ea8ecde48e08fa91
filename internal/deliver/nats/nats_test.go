package nats_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toc-project/toc/internal/deliver/delivertest"
	"github.com/toc-project/toc/internal/deliver/nats"
	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// newPublisher returns a Publisher of one broker, "main", at url.
func newPublisher(t *testing.T, s delivertest.Signer, url string) *nats.Publisher {
	t.Helper()
	p, err := nats.New(nats.Config{
		Brokers:       map[string]string{"main": url},
		Sign:          s.Client.Message,
		Now:           func() time.Time { return delivertest.Now },
		ReconnectWait: 50 * time.Millisecond,
		RedialWait:    50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newStream connects to url and makes stream name over subjects, with a
// duplicate window of a minute.
func newStream(t *testing.T, url, name string, subjects ...string) jetstream.Stream {
	t.Helper()
	nc, err := natsgo.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(t.Context(), jetstream.StreamConfig{
		Name: name, Subjects: subjects, Duplicates: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func msgCount(t *testing.T, s jetstream.Stream) uint64 {
	t.Helper()
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func delivery(id timer.JobID, attempt int, subject string) timer.Delivery {
	return delivertest.Delivery(id, attempt, timer.Destination{Way: timer.WayNATS, Broker: "main", Subject: subject})
}

func TestFirePublishesSignedMessage(t *testing.T) {
	t.Parallel()
	srv := testenv.NATS(t)
	stream := newStream(t, srv.URL(), "SIGNED", "signed.>")
	s := delivertest.NewSigner(t)
	p := newPublisher(t, s, srv.URL())

	d := delivery(101, 2, "signed.{topic}.{biz_type}.{job_id}")
	if err := p.Fire(t.Context(), d); err != nil {
		t.Fatalf("Fire: %v", err)
	}
	var ack struct {
		Stream string `json:"stream"`
		Seq    uint64 `json:"seq"`
	}
	if err := json.Unmarshal(d.Response.Excerpt, &ack); err != nil || ack.Stream != "SIGNED" || ack.Seq != 1 {
		t.Errorf("Response.Excerpt = %s (%v), want the ack of SIGNED seq 1", d.Response.Excerpt, err)
	}

	got, err := stream.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "signed.orders.3.101" {
		t.Errorf("subject = %q, want signed.orders.3.101", got.Subject)
	}
	want := s.Message(t, d)
	if string(got.Data) != string(want.Body) {
		t.Errorf("body = %s\nwant %s", got.Data, want.Body)
	}
	for _, h := range want.Headers {
		if v := got.Header.Get(h.Key); v != h.Value {
			t.Errorf("header %s = %q, want %q", h.Key, v, h.Value)
		}
	}
	for key, value := range map[string]string{
		"Nats-Msg-Id":  "101-2",
		"webhook-id":   "101",
		"toc-attempt":  "2",
		"Content-Type": "application/json",
		"traceparent":  delivertest.TraceParent,
	} {
		if v := got.Header.Get(key); v != value {
			t.Errorf("header %s = %q, want %q", key, v, value)
		}
	}
	h := got.Header
	if err := s.Verify(h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), got.Data); err != nil {
		t.Error(err)
	}
}

func TestFireDeduplicatesAnAttempt(t *testing.T) {
	t.Parallel()
	srv := testenv.NATS(t)
	stream := newStream(t, srv.URL(), "DEDUP", "dedup.>")
	p := newPublisher(t, delivertest.NewSigner(t), srv.URL())

	for i, c := range []struct {
		attempt   int
		msgs      uint64
		duplicate bool
	}{
		{attempt: 1, msgs: 1},
		{attempt: 1, msgs: 1, duplicate: true}, // the same attempt sent again
		{attempt: 2, msgs: 2},
	} {
		d := delivery(202, c.attempt, "dedup.{key}")
		if err := p.Fire(t.Context(), d); err != nil {
			t.Fatalf("Fire %d: %v", i, err)
		}
		if n := msgCount(t, stream); n != c.msgs {
			t.Errorf("after Fire %d (attempt %d): %d messages in the stream, want %d", i, c.attempt, n, c.msgs)
		}
		if dup := strings.Contains(string(d.Response.Excerpt), `"duplicate":true`); dup != c.duplicate {
			t.Errorf("Fire %d: ack %s, want duplicate %v", i, d.Response.Excerpt, c.duplicate)
		}
	}
}

func TestFireFails(t *testing.T) {
	t.Parallel()
	srv := testenv.NATS(t)
	newStream(t, srv.URL(), "FAILS", "fails.>")
	p := newPublisher(t, delivertest.NewSigner(t), srv.URL())

	for _, c := range []struct {
		name    string
		mutate  func(*timer.Delivery)
		wantErr string
	}{
		{"no stream on the subject", func(d *timer.Delivery) { d.Destination.Subject = "nostream.{topic}" }, "no stream takes the subject"},
		{"unknown broker", func(d *timer.Delivery) { d.Destination.Broker = "other" }, `no nats broker "other"`},
		{"key with a space", func(d *timer.Delivery) { d.Job.Key = "a b" }, "white space"},
		{"key with a dot", func(d *timer.Delivery) { d.Job.Key = "a..b" }, "empty token"},
		{"key is a wildcard", func(d *timer.Delivery) { d.Job.Key = ">" }, "wildcard"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := delivery(303, 1, "fails.{key}")
			c.mutate(&d)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := p.Fire(ctx, d)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Fire: %v, want an error with %q", err, c.wantErr)
			}
			if ctx.Err() != nil {
				t.Errorf("Fire took the whole ctx: %v", err)
			}
		})
	}
}

// TestFireThroughAnOutage kills the broker: a delivery fails within its
// ctx, and once the broker is back the same Publisher delivers again.
func TestFireThroughAnOutage(t *testing.T) {
	t.Parallel()
	srv := testenv.NewNATS(t)
	stream := newStream(t, srv.URL(), "OUTAGE", "outage.>")
	p := newPublisher(t, delivertest.NewSigner(t), srv.URL())
	if err := p.Fire(t.Context(), delivery(401, 1, "outage.a")); err != nil {
		t.Fatalf("Fire before the outage: %v", err)
	}

	srv.Kill(t)
	const attemptTimeout = 2 * time.Second
	for i := range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), attemptTimeout)
		start := time.Now()
		err := p.Fire(ctx, delivery(402, 1+i, "outage.b"))
		took := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("Fire %d during the outage succeeded", i)
		}
		if took > attemptTimeout+500*time.Millisecond {
			t.Errorf("Fire %d during the outage took %v, beyond its ctx of %v", i, took, attemptTimeout)
		}
		t.Logf("Fire %d during the outage: %v after %v", i, err, took.Round(time.Millisecond))
	}
	if err := p.Ready(t.Context()); err == nil {
		t.Error("Ready during the outage: nil, want an error")
	}

	srv.Start(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), attemptTimeout)
		err := p.Fire(ctx, delivery(403, 1, "outage.c"))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Fire after the broker came back: still %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Ready(t.Context()); err != nil {
		t.Errorf("Ready after the outage: %v", err)
	}
	if n := msgCount(t, stream); n != 2 {
		t.Errorf("%d messages in the stream, want 2: one before the outage, one after", n)
	}
}

// TestFireInFlightWhenTheBrokerDies kills the broker while a publish
// waits for its ack: nats.go would leave it waiting until its ctx ends;
// Fire returns as soon as the connection is lost.
func TestFireInFlightWhenTheBrokerDies(t *testing.T) {
	t.Parallel()
	srv := testenv.NewNATS(t)
	// A plain subscriber that never answers stands for a stream whose ack
	// is late.
	nc, err := natsgo.Connect(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got, err := nc.SubscribeSync("hang.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	p := newPublisher(t, delivertest.NewSigner(t), srv.URL())

	const attemptTimeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), attemptTimeout)
	defer cancel()
	fired := make(chan error, 1)
	go func() { fired <- p.Fire(ctx, delivery(601, 1, "hang.x")) }()
	if _, err := got.NextMsg(10 * time.Second); err != nil {
		t.Fatalf("the publish did not arrive: %v", err)
	}
	start := time.Now()
	srv.Kill(t)
	select {
	case err := <-fired:
		if err == nil || !strings.Contains(err.Error(), "connection lost") {
			t.Errorf("Fire: %v, want connection lost", err)
		}
		t.Logf("Fire returned %v after the kill: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(attemptTimeout / 2):
		t.Fatal("Fire still waits for its ack after the broker died")
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	srv := testenv.NATS(t)
	s := delivertest.NewSigner(t)
	if err := newPublisher(t, s, srv.URL()).Ready(t.Context()); err != nil {
		t.Errorf("Ready: %v", err)
	}

	down := testenv.NewNATS(t)
	down.Kill(t)
	p, err := nats.New(nats.Config{
		Brokers: map[string]string{"up": srv.URL(), "down": down.URL()},
		Sign:    s.Client.Message,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = p.Ready(t.Context())
	if err == nil || !strings.Contains(err.Error(), "nats broker down:") || strings.Contains(err.Error(), "broker up") {
		t.Errorf("Ready with one broker down: %v, want an error for it alone", err)
	}
	d := delivery(501, 1, "ready.x")
	d.Destination.Broker = "down"
	if err := p.Fire(t.Context(), d); err == nil {
		t.Error("Fire to a broker that is down: nil")
	}

	p.Close()
	if err := p.Ready(t.Context()); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Ready after Close: %v, want an error", err)
	}
}

func TestConfigValidate(t *testing.T) {
	sign := delivertest.Sign
	for _, c := range []struct {
		cfg   nats.Config
		field string
	}{
		{nats.Config{Brokers: map[string]string{"a": "nats://127.0.0.1:4222"}}, "Sign"},
		{nats.Config{Sign: sign, Brokers: map[string]string{"a": "127.0.0.1:4222"}}, "Brokers[a]"},
		{nats.Config{Sign: sign, Brokers: map[string]string{"a": "http://u:secret@127.0.0.1:4222"}}, "Brokers[a]"},
		{nats.Config{Sign: sign, Brokers: map[string]string{"": "nats://127.0.0.1:4222"}}, "Brokers"},
		{nats.Config{Sign: sign, Options: map[string][]natsgo.Option{"b": nil}}, "Options[b]"},
		{nats.Config{Sign: sign, Timeout: -time.Second}, "Timeout"},
	} {
		delivertest.CheckField(t, c.cfg.Validate(), c.field)
	}
	ok := nats.Config{Sign: sign, Brokers: map[string]string{"a": "nats://u:p@127.0.0.1:4222, nats://127.0.0.1:4223"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
