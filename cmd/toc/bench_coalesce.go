package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/http/client"
)

// coalesce measures package client's Schedule from conc goroutines, one
// job a call, through a client that coalesces (client.WithCoalescing)
// and one that does not, then from one caller alone both ways: what
// coalescing gives many callers and what it costs a lone one.
func (b *bench) coalesce(ctx context.Context) ([]result, error) {
	var res []result
	for _, run := range []struct {
		conc     int
		coalesce bool
	}{{64, true}, {64, false}, {1, true}, {1, false}} {
		r, err := b.clientSchedule(ctx, run.conc, run.coalesce)
		if err != nil {
			return res, err
		}
		res = append(res, r)
	}
	return res, nil
}

// clientSchedule runs conc goroutines, each calling Schedule for one job
// of a fresh topic at a time (due 30 minutes on, as the schedule
// scenario's), for the run's duration.
func (b *bench) clientSchedule(ctx context.Context, conc int, coalesce bool) (result, error) {
	count := &countingTransport{base: &http.Transport{MaxIdleConnsPerHost: conc + 8}}
	opts := []client.Option{
		client.WithHTTPClient(&http.Client{Transport: count, Timeout: time.Minute}),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 1}),
	}
	if b.token != "" {
		opts = append(opts, client.WithToken(b.token))
	}
	name := fmt.Sprintf("client schedule c=%d", conc)
	if coalesce {
		opts = append(opts, client.WithCoalescing(b.cfg.coalesce))
		name += " coalescing"
		if k := b.cfg.coalesce; k.MaxInFlight > 0 || k.Linger > 0 {
			name += fmt.Sprintf(" in-flight=%d linger=%v", k.MaxInFlight, k.Linger)
		}
	}
	c, err := client.New(b.url, opts...)
	if err != nil {
		return result{}, err
	}
	topic, due := b.topic("client"), scheduleDue()
	payload := json.RawMessage(`{"bench":true}`)
	cpu := b.cpuMark(ctx)
	lat, n, errs, took := hammer(ctx, conc, b.cfg.duration, func(ctx context.Context, i int) error {
		_, _, err := c.Schedule(ctx, client.JobRequest{Topic: topic, FireAt: due(i), CallbackURL: b.recv.url, Payload: payload})
		return err
	})
	r := result{Scenario: "coalesce", Name: name, Count: n, Errors: errs, Seconds: took.Seconds(),
		Rate: float64(n-errs) / took.Seconds(), Latency: distOf(lat), Extra: b.cpuPerJob(ctx, cpu, n-errs)}
	r.Extra["requests_single"], r.Extra["requests_batch"] = count.single.Load(), count.batch.Load()
	return r, nil
}

// countingTransport counts the schedule requests of each kind.
type countingTransport struct {
	base          http.RoundTripper
	single, batch atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.URL.Path {
	case "/v1/jobs":
		c.single.Add(1)
	case "/v1/jobs/batch":
		c.batch.Add(1)
	}
	return c.base.RoundTrip(r)
}
