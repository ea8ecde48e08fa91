package client

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Coalescing.
const (
	DefaultCoalesceMaxJobs  = 500
	DefaultCoalesceMaxBytes = 4 << 20
	// DefaultCoalesceMaxInFlight is one request under way: the calls made
	// meanwhile wait for it and go together in the next, so batches are
	// larger. Against 2, alternated twice with 64 callers (BENCHMARKS.md),
	// it cost the machine 70-71 µs a job instead of 84-92, at 15,200-
	// 15,400 jobs/s instead of 15,700-16,700, call p99 8.3-9.3 ms.
	DefaultCoalesceMaxInFlight = 1
	// DefaultCoalesceRegroup bounds how long, once a request ends, the
	// next batch waits for the callers just answered to call again.
	DefaultCoalesceRegroup = 500 * time.Microsecond
)

// Coalescing says how Schedule calls made at the same time share one
// request (WithCoalescing).
//
// A call is sent at once when fewer than MaxInFlight requests are under
// way; otherwise it waits with the others that come meanwhile, and they
// go together in one POST /v1/jobs/batch when a request ends. So a lone
// caller's call is its own POST /v1/jobs, as without coalescing, and many
// callers at once make few requests of many jobs each: toc spends its
// per-request work (HTTP, the gate, a commit) once a batch.
//
// Each caller gets what its own call would have answered: its job in
// full and whether it was created, or its error. A batch is all or
// nothing; when toc refuses one (a job invalid, a key reused with other
// content, a topic the token may not use), nothing of it was stored, and
// each of its calls is sent again alone, so that only the callers at
// fault see an error, the very error their own call gets. An answer that
// refuses the whole request (401, 429, 5xx, no answer) is every caller's
// error, as it would have been for each. A job's Delay counts from when
// toc takes the batch, at most Linger (or Regroup) plus one request's
// time after the call.
type Coalescing struct {
	// Linger is how long the first call of a batch waits for others
	// before the batch is sent, even with a request free (default 0:
	// none). It trades a lone caller's latency for larger batches.
	Linger time.Duration
	// MaxJobs and MaxBytes bound a batch: its jobs (at most 1,000, toc's
	// own bound; default DefaultCoalesceMaxJobs) and their JSON (default
	// DefaultCoalesceMaxBytes, under toc's 32 MiB default).
	MaxJobs  int
	MaxBytes int
	// MaxInFlight bounds the coalesced requests under way at once
	// (default DefaultCoalesceMaxInFlight).
	MaxInFlight int
	// Regroup is how long, at most, the next batch waits after a request
	// ends for the callers it answered to call again (default
	// DefaultCoalesceRegroup; negative: no wait). It is sent as soon as
	// they all have, or the batch is full. Without it, callers that call
	// again at once split into two halves that take turns, each waiting
	// for the other's request, in batches of half the size: larger
	// batches cost toc, Redis and the database less a job.
	Regroup time.Duration
}

// WithCoalescing makes concurrent Schedule calls share requests, as k
// says (see Coalescing). A Client without it sends each call alone.
func WithCoalescing(k Coalescing) Option {
	return func(c *Client) {
		k.MaxJobs = min(cmp.Or(max(k.MaxJobs, 0), DefaultCoalesceMaxJobs), 1000)
		k.MaxBytes = cmp.Or(max(k.MaxBytes, 0), DefaultCoalesceMaxBytes)
		k.MaxInFlight = cmp.Or(max(k.MaxInFlight, 0), DefaultCoalesceMaxInFlight)
		if k.Regroup == 0 {
			k.Regroup = DefaultCoalesceRegroup
		}
		k.Linger = max(k.Linger, 0)
		c.coalescer = &coalescer{c: c, cfg: k}
	}
}

// coalescer queues Schedule calls and sends them in batches.
type coalescer struct {
	c   *Client
	cfg Coalescing

	mu       sync.Mutex
	queue    []*queued
	inFlight int
	// lingering is set while a timer is to end the queue's linger, or
	// its regrouping.
	lingering bool
	// Once a request ends, the next waits until the queue holds regroup
	// calls (those waiting then and those the request answered), or
	// until regroupEnd.
	regroup    int
	regroupEnd time.Time
}

// queued is one Schedule call waiting for its batch's answer.
type queued struct {
	ctx  context.Context
	req  JobRequest
	body []byte // req's JSON
	at   time.Time
	// taken is set (under mu) once the call is in a batch sent.
	taken bool
	done  chan struct{}
	// Set before done closes: the answer, or alone when the call must be
	// sent on its own.
	job     *Job
	created bool
	err     error
	alone   bool
}

// schedule makes r's call through the queue.
func (k *coalescer) schedule(ctx context.Context, r JobRequest) (*Job, bool, error) {
	body, err := r.appendJSON(make([]byte, 0, r.jsonSize()))
	if err != nil {
		return nil, false, fmt.Errorf("POST /v1/jobs: encode the body: %w", err)
	}
	q := &queued{ctx: ctx, req: r, body: body, at: time.Now(), done: make(chan struct{})}
	k.mu.Lock()
	k.queue = append(k.queue, q)
	k.send()
	k.mu.Unlock()
	select {
	case <-q.done:
	case <-ctx.Done():
		// Not yet sent, the call is dropped and no job made; sent, the
		// job may be stored, as when a call alone is cancelled under way,
		// and the request goes on for the other callers of its batch.
		k.mu.Lock()
		if !q.taken {
			k.drop(q)
		}
		k.mu.Unlock()
		select {
		case <-q.done: // answered meanwhile: the answer says more
			if !q.alone {
				return q.job, q.created, q.err
			}
		default:
		}
		return nil, false, ctx.Err()
	}
	if q.alone {
		return k.c.scheduleOne(ctx, r)
	}
	return q.job, q.created, q.err
}

// drop takes q out of the queue; under mu.
func (k *coalescer) drop(q *queued) {
	for i, o := range k.queue {
		if o == q {
			k.queue = append(k.queue[:i], k.queue[i+1:]...)
			return
		}
	}
}

// send starts requests for the queue's calls while fewer than
// MaxInFlight are under way and the queue's linger is over; under mu.
func (k *coalescer) send() {
	for k.inFlight < k.cfg.MaxInFlight && len(k.queue) > 0 {
		wait := k.cfg.Linger - time.Since(k.queue[0].at)
		if len(k.queue) < k.regroup {
			wait = max(wait, time.Until(k.regroupEnd))
		}
		if wait > 0 && len(k.queue) < k.cfg.MaxJobs {
			if !k.lingering {
				k.lingering = true
				time.AfterFunc(wait, func() {
					k.mu.Lock()
					k.lingering = false
					k.send()
					k.mu.Unlock()
				})
			}
			return
		}
		n, size := 0, 0
		for n < len(k.queue) && n < k.cfg.MaxJobs && (n == 0 || size+len(k.queue[n].body) <= k.cfg.MaxBytes) {
			size += len(k.queue[n].body) + 1
			n++
		}
		k.regroup = 0
		batch := make([]*queued, n)
		copy(batch, k.queue)
		k.queue = append(k.queue[:0], k.queue[n:]...)
		for _, q := range batch {
			q.taken = true
		}
		k.inFlight++
		go k.request(batch)
	}
}

// request sends batch, one call as POST /v1/jobs, several as a batch,
// and answers each call (or tells it to go alone).
func (k *coalescer) request(batch []*queued) {
	defer func() {
		for _, q := range batch {
			close(q.done)
		}
		k.mu.Lock()
		k.inFlight--
		if k.cfg.Regroup > 0 && len(batch) > 1 {
			k.regroup = min(len(k.queue)+len(batch), k.cfg.MaxJobs)
			k.regroupEnd = time.Now().Add(k.cfg.Regroup)
		}
		k.send()
		k.mu.Unlock()
	}()
	if len(batch) == 1 {
		q := batch[0]
		q.job, q.created, q.err = k.c.scheduleOne(q.ctx, q.req)
		return
	}
	// The request ends when every caller has gone.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	left := int64(len(batch))
	for _, q := range batch {
		stop := context.AfterFunc(q.ctx, func() {
			if atomic.AddInt64(&left, -1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	size := 32
	for _, q := range batch {
		size += len(q.body) + 1
	}
	var body bytes.Buffer
	body.Grow(size)
	body.WriteString(`{"with_jobs":true,"jobs":[`)
	for i, q := range batch {
		if i > 0 {
			body.WriteByte(',')
		}
		body.Write(q.body)
	}
	body.WriteString(`]}`)
	var out batchAnswer
	// Sent once, as a single Schedule without a key is: a batch whose
	// calls all have keys could be repeated, but each call then repeats
	// alone below, which is simpler to reason about.
	_, err := k.c.call(ctx, request{method: http.MethodPost, path: "/v1/jobs/batch", raw: body.Bytes(), safety: once}, &out)
	if err == nil && len(out.Results) != len(batch) {
		err = errors.New("POST /v1/jobs/batch: answered a different number of jobs than sent")
	}
	if e, ok := errors.AsType[*Error](err); ok && refusedAlone(e.Status) {
		// Nothing of the batch was stored: each call goes alone.
		for _, q := range batch {
			q.alone = true
		}
		return
	}
	for i, q := range batch {
		switch {
		case err != nil:
			q.err = err
		case out.Results[i].Job == nil:
			q.alone = true // a toc that does not show jobs in a batch's answer
		default:
			q.job, q.created = new(Job), out.Results[i].Created
			out.Results[i].Job.to(q.job)
		}
	}
}

// refusedAlone says whether a batch refused with status may be refused
// for some of its jobs only: every 4xx but those that refuse any request
// of the caller (401, 429) or came of the request's time (408).
func refusedAlone(status int) bool {
	switch status {
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}
