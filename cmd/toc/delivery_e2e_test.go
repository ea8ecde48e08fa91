package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

// busArrival is one message a consumer got from a broker.
type busArrival struct {
	id     string // webhook-id: the job id
	msgID  string // the broker's de-duplication id (NATS) or message id (AMQP)
	at     time.Time
	fireAt time.Time // the body's fire_at: the due time
}

// busLog gathers what a consumer got, checking each message's Standard
// Webhooks signature as a consumer would.
type busLog struct {
	t   *testing.T
	key []byte

	mu  sync.Mutex
	got []busArrival
	bad []string
}

func newBusLog(t *testing.T) *busLog {
	key, err := webhook.ParseSecret(e2eSecret)
	if err != nil {
		t.Fatal(err)
	}
	return &busLog{t: t, key: key}
}

// add checks one message by its header getter and body.
func (l *busLog) add(header func(string) string, msgID string, body []byte) {
	now := time.Now()
	var b struct {
		ID     string `json:"id"`
		FireAt string `json:"fire_at"`
	}
	err := json.Unmarshal(body, &b)
	id := header("webhook-id")
	ts, _ := strconv.ParseInt(header("webhook-timestamp"), 10, 64)
	fireAt, _ := time.Parse(time.RFC3339Nano, b.FireAt)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch want := webhook.Sign(l.key, id, ts, body); {
	case err != nil || b.ID != id:
		l.bad = append(l.bad, fmt.Sprintf("body %s does not match webhook-id %s", body, id))
	case !slices.Contains(strings.Fields(header("webhook-signature")), want):
		l.bad = append(l.bad, fmt.Sprintf("job %s: signature %q lacks %s", id, header("webhook-signature"), want))
	case header("toc-attempt") == "":
		l.bad = append(l.bad, fmt.Sprintf("job %s: no toc-attempt header", id))
	}
	l.got = append(l.got, busArrival{id: id, msgID: msgID, at: now, fireAt: fireAt})
}

// distinct returns the arrivals by job id.
func (l *busLog) distinct() map[string][]busArrival {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string][]busArrival{}
	for _, a := range l.got {
		m[a.id] = append(m[a.id], a)
	}
	return m
}

// busJobs schedules n jobs of topic due over the next spread, without a
// callback URL, and returns their ids.
func busJobs(t *testing.T, p *proc, topic string, n int, spread time.Duration) []string {
	t.Helper()
	// One batch, so that the jobs are due when their test expects them
	// however slowly a busy machine answers: n single POSTs took longer
	// than the spread in CI, and the jobs were all delivered before the
	// outage that was to catch some of them.
	start := time.Now().Add(500 * time.Millisecond)
	jobs := make([]map[string]any, n)
	for i := range jobs {
		due := start.Add(spread * time.Duration(i) / time.Duration(n))
		jobs[i] = map[string]any{"topic": topic, "fire_at": due.UTC().Format(time.RFC3339Nano), "payload": map[string]int{"n": i}}
	}
	status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
	if status != http.StatusOK {
		t.Fatalf("POST a batch of %d jobs: %d %v", n, status, body)
	}
	var ids []string
	for _, r := range body["results"].([]any) {
		id, ok := r.(map[string]any)["id"].(string)
		if !ok {
			t.Fatalf("batch item: %v", r)
		}
		ids = append(ids, id)
	}
	if len(ids) != n {
		t.Fatalf("a batch of %d jobs answered %d ids", n, len(ids))
	}
	return ids
}

// waitBus waits until every job of ids arrived, then checks that none
// came early, none failed its check, and any duplicate is a redelivery of
// the same job (its webhook-id repeated), as a consumer de-duplicates.
func waitBus(t *testing.T, l *busLog, ids []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := l.distinct()
		missing := 0
		for _, id := range ids {
			if len(got[id]) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs never arrived within %v", missing, len(ids), within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := l.distinct()
	dups := 0
	for _, id := range ids {
		for _, a := range got[id] {
			if a.at.Before(a.fireAt) {
				t.Errorf("job %s arrived %v before its due time", id, a.fireAt.Sub(a.at))
			}
		}
		dups += len(got[id]) - 1
	}
	if len(got) != len(ids) {
		t.Errorf("%d distinct jobs arrived, want %d", len(got), len(ids))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Error(b)
	}
	t.Logf("%d jobs, %d messages (%d redelivered)", len(ids), len(l.got), dups)
}

// NATS JetStream end to end (issue 36): a topic delivered by nats, its
// jobs published with their signature and de-duplication id, the broker
// killed mid-run and started again: every job arrives, none early, a
// duplicate only a redelivery of the same job, and each job ends done.
func TestDeliveryNATS(t *testing.T) {
	n := testenv.NewNATS(t)
	nc, err := natsgo.Connect(n.URL(), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: "DUE", Subjects: []string{"due.>"}, Duplicates: time.Minute, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}

	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("nats%d:", time.Now().UnixNano()), "--nats", "main="+n.URL())
	if status, body := p.call(t, "PUT", "/v1/topics/orders", map[string]any{"retry": map[string]int{"base_ms": 100, "max_ms": 400}, "max_attempts": outageAttempts}); status != http.StatusCreated {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	// The way, set by the CLI; the server refuses a broker it has not.
	r := cli(t, nil, "topics", "set", "orders", "--delivery", "nats", "--broker", "main", "--subject", "due.{topic}.{job_id}", "--server", p.url, "--token", p.token)
	if r.code != 0 || !strings.Contains(r.stdout, "nats") {
		t.Fatalf("toc topics set --delivery nats: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = cli(t, nil, "topics", "set", "orders", "--delivery", "nats", "--broker", "other", "--subject", "due", "--server", p.url, "--token", p.token)
	if r.code != 1 || !strings.Contains(r.stderr, "nats.broker") {
		t.Errorf("toc topics set --broker other: %d\n%s%s, want a refusal naming nats.broker", r.code, r.stdout, r.stderr)
	}
	ids := outage(t, p, "orders", func() { n.Kill(t) }, func() { n.Start(t) })

	// Read the stream once the broker is back: it kept what it acked.
	l := newBusLog(t)
	cons, err := stream.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		l.add(m.Headers().Get, m.Headers().Get("Nats-Msg-Id"), m.Data())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	waitBus(t, l, ids, time.Minute)
	for _, a := range l.distinct()[ids[0]] {
		if !strings.HasPrefix(a.msgID, ids[0]+"-") {
			t.Errorf("Nats-Msg-Id %q, want %s-<attempt>", a.msgID, ids[0])
		}
	}
	waitDone(t, p, ids)
}

// RabbitMQ end to end: a topic delivered by amqp through a topic
// exchange, the broker down for toc mid-run (its vhost refuses
// connections and closes those it has; the broker is the machine's,
// shared with other tests, so it is not stopped): every job arrives
// (persistent, signed, with its job id as message id), none early, and
// each job ends done.
func TestDeliveryAMQP(t *testing.T) {
	v := testenv.RabbitMQ(t)
	conn, err := amqp091.Dial(v.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("toc", amqp091.ExchangeTopic, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("due", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("due", "orders.#", "toc", false, nil); err != nil {
		t.Fatal(err)
	}

	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("amqp%d:", time.Now().UnixNano()), "--amqp", "rabbit="+v.URL)
	if status, body := p.call(t, "PUT", "/v1/topics/orders", map[string]any{"delivery": "amqp", "amqp": map[string]any{"broker": "rabbit", "exchange": "toc", "routing_key": "{topic}.{job_id}"},
		"retry": map[string]int{"base_ms": 100, "max_ms": 400}, "max_attempts": outageAttempts}); status != http.StatusCreated {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	// Down closes toc's connections and the test's own: it reads after.
	ids := outage(t, p, "orders", func() { v.Down(t) }, func() { v.Up(t) })

	conn2, err := amqp091.Dial(v.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn2.Close() })
	ch2, err := conn2.Channel()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := ch2.Consume("due", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := newBusLog(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			if m.DeliveryMode != amqp091.Persistent || m.ContentType != "application/json" {
				l.mu.Lock()
				l.bad = append(l.bad, fmt.Sprintf("message %s: delivery mode %d, content type %q", m.MessageId, m.DeliveryMode, m.ContentType))
				l.mu.Unlock()
			}
			l.add(func(k string) string { s, _ := m.Headers[k].(string); return s }, m.MessageId, m.Body)
		}
	}()
	waitBus(t, l, ids, time.Minute)
	for _, a := range l.distinct()[ids[0]] {
		if a.msgID != ids[0] {
			t.Errorf("message id %q, want the job id %s", a.msgID, ids[0])
		}
	}
	waitDone(t, p, ids)
	conn2.Close()
	<-done
}

// outageAttempts is the max_attempts of the topics that outage takes the
// broker of down: retried every 400 ms at most, a job outlasts an outage
// of about 25 s. At the default 16 it outlasted about 6 s, and on a
// loaded CI machine the broker took longer to come back: 29 of the
// second 60 jobs died and never arrived.
const outageAttempts = timer.MaxAttemptsLimit

// outage schedules 120 jobs of topic and takes their broker down in the
// middle of their deliveries: 60 jobs due over two seconds, the broker
// down once a third of them are done, 60 more due over two seconds from
// then, and the broker up again once one of those has failed an attempt.
// The outage so catches deliveries however long down takes on a busy
// machine (rabbitmqctl took seconds in CI, after every job was
// delivered). It returns the jobs' ids in due order.
func outage(t *testing.T, p *proc, topic string, down, up func()) []string {
	t.Helper()
	ids := busJobs(t, p, topic, 60, 2*time.Second)
	waitJob(t, p, ids[19], "done")
	down()
	more := busJobs(t, p, topic, 60, 2*time.Second)
	waitJobFor(t, p, more[0], "attempted", func(job map[string]any) bool { a, _ := job["attempts"].(float64); return a >= 1 })
	up()
	return append(ids, more...)
}

// waitDone waits until the API says each job of ids is done, and checks
// that the outage cost some of them an attempt: it happened while they
// were being delivered.
func waitDone(t *testing.T, p *proc, ids []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	retried := 0
	for _, id := range ids {
		for {
			status, body := p.call(t, "GET", "/v1/jobs/"+id, nil)
			if status == http.StatusOK && body["status"] == "done" {
				if body["attempts"].(float64) > 1 {
					retried++
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("job %s: %d %v, want done", id, status, body)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if retried == 0 {
		t.Error("no job took a second attempt: the outage missed the deliveries")
	}
	t.Logf("%d of %d jobs took more than one attempt", retried, len(ids))
}
