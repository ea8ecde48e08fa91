package main

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// The inout scenario (issue 35): single-job POSTs at a steady rate from
// inoutConns connections, each job due inoutLead after the moment it was
// to be sent, over inoutPending far-future jobs, so that toc takes jobs in
// and fires them out at the same rate.
const (
	inoutLead    = 1500 * time.Millisecond
	inoutConns   = 64
	inoutPending = 200000
	// inoutBound is the p99, of lateness and of the schedule call, that
	// the highest rate found keeps.
	inoutBound = 10.0
	// inoutStep is the step of the search for the highest rate.
	inoutStep = 1000
)

// inout preloads the pending jobs (--pending, default inoutPending), runs
// in-and-out at each --rates, then, with --inout-search, steps the rate
// up from inoutStep until either p99 passes inoutBound ms, and reports
// the highest rate that kept both.
func (b *bench) inout(ctx context.Context) ([]result, error) {
	pending := inoutPending
	if b.cfg.pending >= 0 {
		pending = b.cfg.pending
	}
	if pending > 0 {
		far := time.Now().Add(48 * time.Hour)
		if _, err := b.load(ctx, b.topic("far"), pending, func(i int) time.Time { return far.Add(time.Duration(i) * time.Millisecond) }, 4); err != nil {
			return nil, fmt.Errorf("preload %d pending jobs: %w", pending, err)
		}
	}
	var res []result
	for _, rate := range b.cfg.rates {
		res = append(res, b.inoutRun(ctx, rate, pending))
	}
	if !b.cfg.inoutSearch {
		return res, nil
	}
	best, tried := 0, []string{}
	for rate := inoutStep; ctx.Err() == nil; rate += inoutStep {
		r := b.inoutRun(ctx, rate, pending)
		res = append(res, r)
		ok := inoutWithin(r)
		tried = append(tried, fmt.Sprintf("%d/s %v", rate, ok))
		if !ok {
			break
		}
		best = rate
	}
	res = append(res, result{Scenario: "inout", Name: fmt.Sprintf("inout highest rate with both p99s within %.0f ms", inoutBound),
		Rate: float64(best), Extra: map[string]any{"step": inoutStep, "tried": tried}})
	return res, nil
}

// inoutWithin says whether a run kept every job and both p99s within
// inoutBound.
func inoutWithin(r result) bool {
	sched, _ := r.Extra["schedule_p99_ms"].(float64)
	return r.Latency != nil && r.Errors == 0 && r.Lost != nil && *r.Lost == 0 && r.Latency.P99 <= inoutBound && sched <= inoutBound
}

// inoutRun sends rate single-job POSTs a second of a fresh topic for the
// run's duration, from inoutConns connections, each job due inoutLead
// after the moment it was to be sent, and waits for them to fire. A
// call's latency runs from that moment, so that calls queued behind a
// slow toc count their wait. The CPU per job covers its schedule and its
// fire.
func (b *bench) inoutRun(ctx context.Context, rate, pending int) result {
	topic := b.topic("inout")
	var (
		mu    sync.Mutex
		ids   []string
		calls []time.Duration
		errs  int
		wg    sync.WaitGroup
	)
	send := make(chan time.Time, rate)
	for range inoutConns {
		wg.Go(func() {
			var buf bytes.Buffer
			for at := range send {
				buf.Reset()
				b.jobJSON(&buf, topic, at.Add(inoutLead))
				var out struct {
					ID string `json:"id"`
				}
				_, err := b.post(ctx, "/v1/jobs", buf.Bytes(), &out)
				took := time.Since(at)
				mu.Lock()
				if err != nil || out.ID == "" {
					errs++
				} else {
					ids, calls = append(ids, out.ID), append(calls, took)
				}
				mu.Unlock()
			}
		})
	}
	cpu := b.cpuMark(ctx)
	d := b.cfg.duration
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	sent := 0
	for now := start; now.Sub(start) < d && ctx.Err() == nil; now = <-tick.C {
		for want := int(float64(rate) * now.Sub(start).Seconds()); sent < want; sent++ {
			at := start.Add(time.Duration(float64(sent) * float64(time.Second) / float64(rate)))
			select {
			case send <- at:
			case <-ctx.Done():
			}
		}
	}
	tick.Stop()
	close(send)
	wg.Wait()
	b.recv.waitArrived(ctx, ids, time.Now().Add(inoutLead+30*time.Second))
	lat, lost, dups, early, _ := b.recv.outcome(ids)
	extra := b.cpuPerJob(ctx, cpu, len(lat))
	extra["pending"] = pending
	if c := distOf(calls); c != nil {
		extra["schedule_p50_ms"], extra["schedule_p99_ms"], extra["schedule_max_ms"] = c.P50, c.P99, c.Max
	}
	if p99, at, ok := b.recv.worstSecond(ids); ok {
		extra["max_1s_p99_ms"], extra["max_1s_p99_at_s"] = p99, at
	}
	r := result{Scenario: "inout", Name: fmt.Sprintf("inout %d/s", rate), Count: sent, Errors: errs, Seconds: d.Seconds(),
		Rate: float64(len(lat)) / d.Seconds(), Latency: distOf(lat), Lost: intp(lost), Dups: intp(dups), Early: intp(early), Extra: extra}
	fmt.Fprintf(b.log, "inout: %d/s: lateness p99 %.2f ms, schedule p99 %v ms, %d errors, %d lost\n", rate, latP99(r), extra["schedule_p99_ms"], errs, lost)
	return r
}

// latP99 is r's lateness p99, 0 without one.
func latP99(r result) float64 {
	if r.Latency == nil {
		return 0
	}
	return r.Latency.P99
}
