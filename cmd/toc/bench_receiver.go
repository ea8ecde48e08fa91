package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/toc-project/toc/http/webhook"
)

// benchReceiver is the webhook endpoint of the bench: it verifies every
// signature and records the first arrival of each job. It is a fasthttp
// server, which costs a call about 11 µs of CPU here against net/http's
// 19 (BENCHMARKS.md, "What net/http costs a webhook"): on a machine that
// toc shares with its receiver, the receiver's CPU is taken from toc's.
type benchReceiver struct {
	srv     *fasthttp.Server
	ln      net.Listener
	url     string
	signers []*webhook.Signer
	closed  chan struct{}

	mu       sync.Mutex
	arrivals map[string]arrival
	bad      int

	// sleeping and mostAsleep count the calls held by ?sleep_ms.
	sleeping, mostAsleep atomic.Int64
}

type arrival struct {
	at    time.Time
	due   time.Time
	count int
}

func newBenchReceiver(addr, secret string) (*benchReceiver, error) {
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("benchReceiver: %w", err)
	}
	r := &benchReceiver{ln: ln, url: "http://" + ln.Addr().String() + "/hook", signers: []*webhook.Signer{webhook.NewSigner(key)},
		arrivals: map[string]arrival{}, closed: make(chan struct{})}
	// Kept-alive connections stay open while idle, as net/http's do.
	r.srv = &fasthttp.Server{Handler: r.serve, ReadTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxRequestBodySize: 1 << 20,
		NoDefaultServerHeader: true, NoDefaultDate: true, NoDefaultContentType: true}
	go r.srv.Serve(ln)
	return r, nil
}

// close stops the receiver: the calls held by ?sleep_ms are answered
// at once, and those still open after a second are cut.
func (r *benchReceiver) close() {
	close(r.closed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r.srv.ShutdownWithContext(ctx) != nil {
		_ = r.ln.Close()
	}
}

// serve verifies the Standard Webhooks signature and records the job.
func (r *benchReceiver) serve(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	if !r.record(time.Now(), func(k string) string { return string(h.Peek(k)) }, ctx.PostBody()) {
		ctx.SetStatusCode(http.StatusUnauthorized)
		return
	}
	if ms, err := strconv.Atoi(string(ctx.QueryArgs().Peek("sleep_ms"))); err == nil && ms > 0 {
		// A slow receiver: answer only after ms.
		n := r.sleeping.Add(1)
		for m := r.mostAsleep.Load(); n > m && !r.mostAsleep.CompareAndSwap(m, n); m = r.mostAsleep.Load() {
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.closed:
		}
		r.sleeping.Add(-1)
	}
	ctx.SetStatusCode(http.StatusNoContent)
}

// record verifies the Standard Webhooks signature of a delivery that
// arrived at now, by webhook or from a message broker, whose headers
// header reads, and records its job; false for a bad one.
func (r *benchReceiver) record(now time.Time, header func(string) string, body []byte) bool {
	id, ts := header("webhook-id"), header("webhook-timestamp")
	due, derr := time.Parse(time.RFC3339, header("toc-due-at"))
	sec, terr := strconv.ParseInt(ts, 10, 64)
	if !(derr == nil && terr == nil && r.verify(id, sec, body, header("webhook-signature"))) {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		return false
	}
	r.arrived(now, id, due)
	return true
}

// arrived records that job id, due at due, arrived at now: a delivery
// already verified (a webhook's signature, a pull worker's lease).
func (r *benchReceiver) arrived(now time.Time, id string, due time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a, seen := r.arrivals[id]
	if !seen {
		a = arrival{at: now, due: due}
	}
	a.count++
	r.arrivals[id] = a
}

// span returns the first and last arrival of ids.
func (r *benchReceiver) span(ids []string) (first, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		a, ok := r.arrivals[id]
		if !ok {
			continue
		}
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	return first, last
}

func (r *benchReceiver) verify(id string, ts int64, body []byte, header string) bool {
	for _, signer := range r.signers {
		want := signer.Sign(id, ts, body)
		for sig := range strings.FieldsSeq(header) {
			if sig == want {
				return true
			}
		}
	}
	return false
}

// outcome reports on the jobs ids: lateness of the first arrival of each,
// and how many never arrived, arrived more than once, or arrived early.
func (r *benchReceiver) outcome(ids []string) (lateness []time.Duration, lost, dups, early int, last time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		a, ok := r.arrivals[id]
		if !ok {
			lost++
			continue
		}
		dups += a.count - 1
		if a.at.Before(a.due) {
			early++
		}
		lateness = append(lateness, a.at.Sub(a.due))
		if a.at.After(last) {
			last = a.at
		}
	}
	return lateness, lost, dups, early, last
}

// waitArrived waits until every id arrived or until deadline.
func (r *benchReceiver) waitArrived(ctx context.Context, ids []string, deadline time.Time) {
	for i := 0; ; {
		r.mu.Lock()
		for i < len(ids) {
			if _, ok := r.arrivals[ids[i]]; !ok {
				break
			}
			i++
		}
		r.mu.Unlock()
		if i == len(ids) || time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
