package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/pause"
	"github.com/toc-project/toc/internal/testenv"
)

// The bus scenario (issue 36): each way a topic may deliver by, measured
// as the webhooks are. For each of --bus-ways, a topic delivered by it
// fires --rates' first rate for --duration, each job due --lead after it
// is sent, then drains --drain-jobs due at one instant. A job counts when
// its consumer got it with a good Standard Webhooks signature, at the
// time it got it: the bench's webhook receiver; a JetStream consumer of a
// stream of the bench's own nats-server (file storage); a consumer of a
// queue on the machine's RabbitMQ (127.0.0.1:5672, guest), bound to a
// topic exchange, persistent messages; a pull worker (client.Work, 100
// jobs at a time) that long-polls toc, counting each job when leased.

// busWays are the ways the bus scenario knows, in its default order.
var busWays = []string{"webhook", "pull", "nats", "amqp"}

// pullBenchWorkers is how many jobs the pull way's worker runs at once:
// one client.Work, each job acked as soon as it is recorded.
const pullBenchWorkers = 100

const (
	// rabbitBenchURL is the machine's RabbitMQ, which the bench uses as
	// the tests do, in its default vhost.
	rabbitBenchURL = "amqp://guest:guest@127.0.0.1:5672/"
	busExchange    = "toc-bench"
)

func (b *bench) bus(ctx context.Context) ([]result, error) {
	if len(b.serveArgs) == 0 {
		return nil, errors.New("bus needs --stack real: it restarts toc with its brokers")
	}
	ways := b.cfg.busWays
	brokerArgs := []string{}
	consumers := map[string]func() error{}
	brokerPIDs := map[string]int{}
	defer func() {
		for _, stop := range consumers {
			_ = stop()
		}
	}()
	for _, way := range ways {
		switch way {
		case "webhook", "pull":
		case "nats":
			n, err := testenv.StartNATS()
			if err != nil {
				return nil, fmt.Errorf("start nats-server: %w", err)
			}
			b.closers = append(b.closers, func() { n.Stop() })
			stop, err := b.consumeNATS(ctx, n.URL())
			if err != nil {
				return nil, err
			}
			consumers[way], brokerPIDs[way] = stop, n.PID()
			brokerArgs = append(brokerArgs, "--nats", "bench="+n.URL())
		case "amqp":
			stop, err := b.consumeAMQP(ctx)
			if err != nil {
				return nil, err
			}
			consumers[way], brokerPIDs[way] = stop, rabbitPID()
			brokerArgs = append(brokerArgs, "--amqp", "bench="+rabbitBenchURL)
		default:
			return nil, fmt.Errorf("--bus-ways: %q, want some of webhook, pull, nats, amqp", way)
		}
	}
	if err := b.restartToc(ctx, "toc-bus", brokerArgs...); err != nil {
		return nil, err
	}
	if b.busTopics == nil {
		b.busTopics = map[string]bool{}
	}
	rate := b.cfg.rates[0]
	var res []result
	// Every way's fire phase runs before any drain, so that none follows
	// a drain of 100,000 jobs (measured: a webhook fire after the pull
	// drain had a p99 1.5 times the one before it).
	drains := map[string]string{}
	for _, way := range ways {
		settings := `{}`
		switch way {
		case "pull":
			settings = `{"delivery": "pull"}`
		case "nats":
			settings = `{"delivery": "nats", "nats": {"broker": "bench", "subject": "bench.{topic}"}}`
		case "amqp":
			settings = `{"delivery": "amqp", "amqp": {"broker": "bench", "exchange": "` + busExchange + `", "routing_key": "{topic}"}}`
		}
		fire, drain := b.topic("bus-fire-"+way), b.topic("bus-drain-"+way)
		for _, topic := range []string{fire, drain} {
			if err := b.putTopic(ctx, topic, settings); err != nil {
				return res, err
			}
			b.busTopics[topic] = way != "webhook"
		}
		if way == "pull" {
			stop, err := b.consumePull(ctx, fire, drain)
			if err != nil {
				return res, err
			}
			consumers[way] = stop
		}

		// Each way's fire starts on a machine as quiet as the first
		// way's did, not in the wake of the previous way's drain.
		quietAfter, err := waitQuiet(ctx, busQuietPct, busQuietMax)
		if err != nil {
			return res, err
		}
		ids, errs := b.steadyOver(ctx, []string{fire}, rate, b.cfg.duration, 0, b.cfg.lead)
		b.recv.waitArrived(ctx, ids, time.Now().Add(b.cfg.lead+30*time.Second))
		extra := map[string]any{"way": way, "quiet_after_s": math.Round(quietAfter.Seconds()*10) / 10}
		if p99, at, ok := b.recv.worstSecond(ids); ok {
			extra["max_1s_p99_ms"], extra["max_1s_p99_at_s"] = p99, at
		}
		res = append(res, b.steadyResult("bus", fmt.Sprintf("%s: fire %d/s", way, rate), ids, errs, b.cfg.duration, extra))
		drains[way] = drain
	}
	for _, way := range ways {
		b.brokerPID = brokerPIDs[way] // its CPU a job, in the drain's
		r, err := b.drainTopic(ctx, drains[way], b.cfg.drainJobs)
		b.brokerPID = 0
		if err != nil {
			return res, err
		}
		r.Scenario, r.Name = "bus", fmt.Sprintf("%s: drain %d due at once", way, b.cfg.drainJobs)
		r.Extra["way"] = way
		res = append(res, r)
	}
	return res, nil
}

// The machine is quiet for the bus scenario's fire phases when at most
// busQuietPct of its cores were busy over the last busQuietWindow; a
// phase waits at most busQuietMax for that.
const (
	busQuietPct    = 20
	busQuietWindow = 500 * time.Millisecond
	busQuietMax    = 30 * time.Second
)

// waitQuiet waits until at most pct of the machine's cores were busy over
// a busQuietWindow, or for limit at most, and says how long it waited.
func waitQuiet(ctx context.Context, pct float64, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		m0 := readMachineCPU()
		if err := pause.For(ctx, busQuietWindow); err != nil {
			return 0, err
		}
		if busy, _, ok := readMachineCPU().since(m0); !ok || busy <= pct {
			break
		}
	}
	return time.Since(start), nil
}

// consumePull runs a worker (client.Work) on each of topics that records
// each job as it is leased and acks it; stop ends them.
func (b *bench) consumePull(ctx context.Context, topics ...string) (stop func() error, err error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 2 * pullBenchWorkers}
	c, err := client.New(b.url, client.WithToken(b.token), client.WithHTTPClient(&http.Client{Transport: transport, Timeout: time.Minute}))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, topic := range topics {
		wg.Go(func() {
			err := c.Work(ctx, topic, func(_ context.Context, l client.Lease) error {
				b.recv.arrived(time.Now(), strconv.FormatUint(l.Job.ID, 10), l.Job.FireAt)
				return nil
			}, client.WorkOptions{Concurrency: pullBenchWorkers, Grace: time.Second})
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(b.log, "pull worker of %s: %v\n", topic, err)
			}
		})
	}
	return func() error { cancel(); wg.Wait(); transport.CloseIdleConnections(); return nil }, nil
}

// rabbitPID is the process of the machine's RabbitMQ, the Erlang VM
// (beam.smp); 0 when pgrep finds none.
func rabbitPID() int {
	out, err := exec.Command("pgrep", "-o", "-f", "beam.smp.*rabbit").Output()
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return pid
}

// consumeNATS makes the stream BENCH over bench.> on the nats-server at
// url and hands each message to the receiver as it comes; stop ends it.
func (b *bench) consumeNATS(ctx context.Context, url string) (stop func() error, err error) {
	nc, err := natsgo.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err == nil {
		var s jetstream.Stream
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage, Duplicates: time.Minute})
		if err == nil {
			var cons jetstream.Consumer
			if cons, err = s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{}); err == nil {
				var cc jetstream.ConsumeContext
				cc, err = cons.Consume(func(m jetstream.Msg) { b.recv.record(time.Now(), m.Headers().Get, m.Data()) })
				if err == nil {
					return func() error { cc.Stop(); nc.Close(); return nil }, nil
				}
			}
		}
	}
	nc.Close()
	return nil, fmt.Errorf("nats stream: %w", err)
}

// consumeAMQP declares the bench's exchange and a queue of its own on the
// machine's RabbitMQ, and hands each message to the receiver as it comes.
func (b *bench) consumeAMQP(ctx context.Context) (stop func() error, err error) {
	conn, err := amqp091.Dial(rabbitBenchURL)
	if err != nil {
		return nil, fmt.Errorf("RabbitMQ at %s (rabbitmq-server -detached starts it): %w", rabbitBenchURL, err)
	}
	fail := func(err error) (func() error, error) {
		conn.Close()
		return nil, fmt.Errorf("RabbitMQ: %w", err)
	}
	ch, err := conn.Channel()
	if err != nil {
		return fail(err)
	}
	queue := "toc-bench-" + strconv.Itoa(b.tocPID)
	if err := ch.ExchangeDeclare(busExchange, amqp091.ExchangeTopic, true, false, false, false, nil); err != nil {
		return fail(err)
	}
	if _, err := ch.QueueDeclare(queue, true, true, false, false, nil); err != nil {
		return fail(err)
	}
	if err := ch.QueueBind(queue, "#", busExchange, false, nil); err != nil {
		return fail(err)
	}
	if err := ch.Qos(1000, 0, false); err != nil {
		return fail(err)
	}
	msgs, err := ch.ConsumeWithContext(ctx, queue, "", true, true, false, false, nil)
	if err != nil {
		return fail(err)
	}
	go func() {
		for m := range msgs {
			b.recv.record(time.Now(), func(k string) string { s, _ := m.Headers[k].(string); return s }, m.Body)
		}
	}()
	return conn.Close, nil
}
