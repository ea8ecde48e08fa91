// Workers of pull topics: lease due jobs, ack, nack and extend them, and
// Work, the loop that does all of it around a handler.

package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"
	"unicode/utf8"
)

// Defaults and bounds of leasing and of Work.
const (
	// DefaultLease is how long a worker holds a job before toc offers it
	// again, unless extended: toc's own default.
	DefaultLease = 30 * time.Second
	// DefaultLeaseWait is how long a Lease call waits for a job to fall
	// due: toc's own default.
	DefaultLeaseWait = 20 * time.Second
	// MaxLeaseJobs is the most jobs one Lease call hands over.
	MaxLeaseJobs = 1000
	// DefaultWorkConcurrency is how many handlers Work runs at once.
	DefaultWorkConcurrency = 1
	// DefaultWorkPollers is how many Lease calls Work keeps waiting at
	// once (fewer when it runs fewer handlers): a job that falls due
	// while one call's answer is on its way goes to another waiting.
	DefaultWorkPollers = 2
	// DefaultWorkGrace is how long Work lets running handlers finish once
	// its context is done.
	DefaultWorkGrace = 30 * time.Second
	// maxNackError is the most bytes of a nack's error toc keeps.
	maxNackError = 1024
	// maxNackDelay is the longest retry delay a nack may ask for.
	maxNackDelay = 24 * time.Hour
	// leaseWaitMargin is kept between a Lease call's wait and the HTTP
	// client's timeout, so that toc's empty answer arrives first.
	leaseWaitMargin = 5 * time.Second
)

// workBackoff is the wait of Work between Lease calls that failed for a
// while (toc unreachable, 5xx): 100 ms doubled up to 5 s, with jitter.
var workBackoff = RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}

// ErrLeaseLost is the cause of the context Work gives a handler once the
// handler's lease has ended or could not be extended before it expired:
// the job may already be with another worker.
var ErrLeaseLost = errors.New("lease lost")

// Lease is a due job of a pull topic handed to a worker until ExpiresAt
// (POST /v1/topics/{topic}/leases): Ack it when done, Nack it to retry
// it, Extend it to hold it longer. Past ExpiresAt the attempt counts as
// failed and the job is offered again.
type Lease struct {
	// Token names the lease in Ack, Nack and Extend.
	Token     string
	ExpiresAt time.Time
	Job       LeasedJob
}

// LeasedJob is the job of a Lease as a webhook carries it: its
// MarshalJSON writes the webhook's body.
type LeasedJob struct {
	ID      uint64
	Topic   string
	Key     string // the idempotency key, "" for none
	BizID   uint64 // 0 for none
	BizType uint64 // 0 for none
	// FireAt is the due time of this attempt.
	FireAt time.Time
	// Attempt is 1 on the first attempt.
	Attempt int
	// Payload is the job's payload, nil for none.
	Payload json.RawMessage
}

type leaseJSON struct {
	Token     string    `json:"token"`
	ExpiresAt stamp     `json:"expires_at"`
	Job       LeasedJob `json:"job"`
}

// leasedJobJSON is the webhook's body, field for field in its order.
type leasedJobJSON struct {
	ID      decimal         `json:"id"`
	Topic   string          `json:"topic"`
	Key     string          `json:"key,omitempty"`
	BizID   decimal         `json:"biz_id,omitzero"`
	BizType decimal         `json:"biz_type,omitzero"`
	FireAt  stamp           `json:"fire_at"`
	Attempt int             `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
}

// MarshalJSON writes l as the API does.
func (l Lease) MarshalJSON() ([]byte, error) {
	return marshal(leaseJSON{Token: l.Token, ExpiresAt: stamp(l.ExpiresAt), Job: l.Job})
}

// UnmarshalJSON reads the API's JSON of a lease.
func (l *Lease) UnmarshalJSON(data []byte) error {
	var w leaseJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*l = Lease{Token: w.Token, ExpiresAt: time.Time(w.ExpiresAt), Job: w.Job}
	return nil
}

// MarshalJSON writes j as toc's webhook body.
func (j LeasedJob) MarshalJSON() ([]byte, error) {
	return marshal(leasedJobJSON{ID: decimal(j.ID), Topic: j.Topic, Key: j.Key, BizID: decimal(j.BizID), BizType: decimal(j.BizType),
		FireAt: stamp(j.FireAt), Attempt: j.Attempt, Payload: payloadOf(j.Payload)})
}

// UnmarshalJSON reads a webhook's body.
func (j *LeasedJob) UnmarshalJSON(data []byte) error {
	var w leasedJobJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*j = LeasedJob{ID: uint64(w.ID), Topic: w.Topic, Key: w.Key, BizID: uint64(w.BizID), BizType: uint64(w.BizType),
		FireAt: time.Time(w.FireAt), Attempt: w.Attempt, Payload: rawPayload(w.Payload)}
	return nil
}

// LeaseOptions say what a Lease call asks for. A zero field takes toc's
// default.
type LeaseOptions struct {
	// Max is the most jobs handed over, 1 to MaxLeaseJobs (default 1).
	Max int
	// Wait is how long the call waits for a job to fall due, at most
	// 60 s (default DefaultLeaseWait); negative: it answers at once. A
	// Wait longer than the HTTP client's Timeout (WithHTTPClient) less
	// 5 s is shortened to that, so that toc's empty answer arrives before
	// the client gives up.
	Wait time.Duration
	// Lease is how long the worker holds each job, 1 s to 1 h (default
	// DefaultLease), in whole milliseconds rounded up. toc may end it
	// sooner: a lease is bounded by the topic's callback timeout from when
	// the job was handed over, and Lease.ExpiresAt says its end.
	Lease time.Duration
}

type leaseRequestJSON struct {
	Max     int    `json:"max,omitempty"`
	WaitMS  *int64 `json:"wait_ms,omitempty"`
	LeaseMS int64  `json:"lease_ms,omitempty"`
}

func (c *Client) leaseRequest(o LeaseOptions) leaseRequestJSON {
	w := leaseRequestJSON{Max: o.Max, LeaseMS: ms(o.Lease)}
	wait := o.Wait
	if t := c.http.Timeout; t > 0 && cmp.Or(wait, DefaultLeaseWait) > t-leaseWaitMargin {
		wait = max(t-leaseWaitMargin, -1)
	}
	if wait != 0 {
		n := ms(max(wait, 0))
		w.WaitMS = &n
	}
	return w
}

// Lease leases due jobs of the pull topic (POST
// /v1/topics/{topic}/leases): it answers as soon as toc holds at least
// one, earliest due first, or after opts.Wait with none. A topic that
// does not deliver by pull is a 4xx *Error.
//
// It is repeated after a 429 or 503 only: repeated after a transport
// error it could lease other jobs while those of the first call, leased
// to nobody, wait until their leases expire.
func (c *Client) Lease(ctx context.Context, topic string, opts LeaseOptions) ([]Lease, error) {
	var out struct {
		Leases []Lease `json:"leases"`
	}
	r := request{method: http.MethodPost, path: topicPath(topic, "/leases"), body: c.leaseRequest(opts), safety: refused}
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return out.Leases, nil
}

func leasePath(token, action string) string {
	return "/v1/leases/" + url.PathEscape(token) + "/" + action
}

// leaseStateJSON is toc's answer to an ack, nack or extend.
type leaseStateJSON struct {
	Token     string `json:"token"`
	State     string `json:"state"`
	ExpiresAt stamp  `json:"expires_at,omitzero"`
}

// Ack ends the leased job done (POST /v1/leases/{token}/ack). A repeat
// answers as the first did; an Ack after the lease ended is
// ErrLeaseEnded.
func (c *Client) Ack(ctx context.Context, token string) error {
	_, err := c.call(ctx, request{method: http.MethodPost, path: leasePath(token, "ack"), safety: idempotent}, nil)
	return err
}

// AckLeases acks many leases in one call (POST /v1/leases/ack), of one
// topic or several: errs[i] is nil when tokens[i] is acked, else its
// error as Ack would return it (ErrLeaseEnded, ErrNotFound). err is the
// call's own error, and then errs is nil. At most MaxLeaseJobs tokens.
func (c *Client) AckLeases(ctx context.Context, tokens []string) (errs []error, err error) {
	var out struct {
		Leases []struct {
			Token string `json:"token"`
			State string `json:"state"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"leases"`
	}
	r := request{method: http.MethodPost, path: "/v1/leases/ack", body: map[string][]string{"tokens": tokens}, safety: idempotent}
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	if len(out.Leases) != len(tokens) {
		return nil, fmt.Errorf("POST /v1/leases/ack: %d answers to %d tokens", len(out.Leases), len(tokens))
	}
	errs = make([]error, len(tokens))
	for i, l := range out.Leases {
		if l.Error != nil {
			errs[i] = &Error{Method: r.method, Path: leasePath(tokens[i], "ack"), Status: itemStatus(l.Error.Code), Code: l.Error.Code, Message: l.Error.Message}
		}
	}
	return errs, nil
}

// itemStatus is the status a single call answers with code.
func itemStatus(code string) int {
	for _, k := range kinds {
		if k.code == code && k.status != 0 {
			return k.status
		}
	}
	if code == CodeLeaseEnded {
		return http.StatusConflict
	}
	return 0
}

// NackOptions say how a nacked job is retried.
type NackOptions struct {
	// Delay, when positive, retries the job after it (whole milliseconds,
	// rounded up; at most 24 h); 0 leaves it to the topic's backoff.
	Delay time.Duration
	// Error says why, kept in the job's attempt history (its first 1,024
	// bytes).
	Error string
}

type nackJSON struct {
	DelayMS *int64 `json:"delay_ms,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Nack gives the leased job back (POST /v1/leases/{token}/nack): its
// attempt counts as failed, and it is retried, or dead once its attempts
// are spent. A Nack repeated after it took effect is ErrLeaseEnded.
func (c *Client) Nack(ctx context.Context, token string, opts NackOptions) error {
	body := nackJSON{Error: cut(opts.Error, maxNackError)}
	if opts.Delay > 0 {
		n := ms(opts.Delay)
		body.DelayMS = &n
	}
	_, err := c.call(ctx, request{method: http.MethodPost, path: leasePath(token, "nack"), body: body, safety: idempotent}, nil)
	return err
}

// Extend holds the leased job for d from now (POST
// /v1/leases/{token}/extend), at most until the topic's callback timeout
// from when it was handed over, and returns the lease's new end.
func (c *Client) Extend(ctx context.Context, token string, d time.Duration) (time.Time, error) {
	var out leaseStateJSON
	r := request{method: http.MethodPost, path: leasePath(token, "extend"), body: struct {
		LeaseMS int64 `json:"lease_ms"`
	}{ms(d)}, safety: idempotent}
	if _, err := c.call(ctx, r, &out); err != nil {
		return time.Time{}, err
	}
	return time.Time(out.ExpiresAt), nil
}

// cut is s in at most n bytes, cut at a rune.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// RetryAfter is err, of a Work handler, asking for its job to be retried
// after d rather than after the topic's backoff.
func RetryAfter(d time.Duration, err error) error { return &retryError{d, err} }

type retryError struct {
	after time.Duration
	err   error
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// WorkOptions configure Work. A zero field takes its default.
type WorkOptions struct {
	// Concurrency is how many handlers run at once (default
	// DefaultWorkConcurrency).
	Concurrency int
	// Lease is how long each job is leased, and extended by (default
	// DefaultLease).
	Lease time.Duration
	// Wait is how long each Lease call waits for a job (default
	// DefaultLeaseWait).
	Wait time.Duration
	// Pollers is how many Lease calls wait at once, each for its share
	// of the idle handlers (default DefaultWorkPollers, at most
	// Concurrency; 1 with MaxJobs).
	Pollers int
	// Grace is how long running handlers may finish once Work's context
	// is done (default DefaultWorkGrace).
	Grace time.Duration
	// MaxJobs, when positive, is how many jobs Work handles: it leases
	// no more, and returns once their handlers are done.
	MaxJobs int
	// Logger receives what goes wrong on the way and is not Work's
	// error: an ack or nack that failed, a lease lost, a Lease call
	// retried (default slog.Default()).
	Logger *slog.Logger
}

// Work runs handler on the due jobs of the pull topic until ctx is done
// (or opts.MaxJobs are handled), at most opts.Concurrency at once.
//
// It long-polls toc for as many jobs as it has idle handlers, never more,
// in opts.Pollers calls waiting at once, each for its share.
// While a handler runs, its lease is extended by opts.Lease at half of
// the time it has left. A handler that returns nil acks its job; one
// that returns an error, or panics, nacks it with the error (RetryAfter
// asks for the retry's delay). A handler's context is cancelled with the
// cause ErrLeaseLost once its lease ended, or could not be extended
// before it expired: the job may then be running elsewhere.
//
// Delivery is at least once: an ack or a nack that fails, after the
// client's retries (RetryPolicy), is logged, and its job comes back when
// the lease expires; so does a job whose handler outlives its lease. A
// handler must tolerate a job it has already seen (dedupe on its ID).
//
// Once ctx is done, Work stops leasing at once (a long-poll under way is
// abandoned) and lets the running handlers finish and settle their jobs
// for opts.Grace; then their contexts are cancelled, their leases left to
// expire, and Work returns once they have returned. It returns nil when
// stopped by ctx. A Lease call that fails for want of an answer, or with
// a 5xx or 429, is retried after a backoff of 100 ms doubled up to 5 s;
// any other refusal (a 4xx: a topic that is not a pull topic, a token
// that may not use it) stops the leasing, and is Work's error once the
// running handlers are done.
func (c *Client) Work(ctx context.Context, topic string, handler func(context.Context, Lease) error, opts WorkOptions) error {
	w := newWorker(ctx, c, topic, handler, opts)
	acking := make(chan struct{})
	go func() {
		defer close(acking)
		w.acker()
	}()
	err := w.loop(ctx)
	w.stop(ctx)
	close(w.acks) // every handler has returned
	<-acking
	return err
}

// worker is one Work call.
type worker struct {
	c       *Client
	topic   string
	handler func(context.Context, Lease) error
	opts    WorkOptions
	log     *slog.Logger
	// slots holds a token per running handler: its capacity is the
	// concurrency.
	slots chan struct{}
	wg    sync.WaitGroup
	// left is how many more jobs may be leased, -1 for any number.
	left int
	// hard is the context of the handlers, extensions, acks and nacks: it
	// outlives Work's by the grace period.
	hard     context.Context
	hardStop context.CancelFunc
	// acks are the handlers' acks, sent together by acker.
	acks chan ackRequest
}

// ackRequest is a handler's ack, answered on done.
type ackRequest struct {
	token string
	done  chan error
}

func newWorker(ctx context.Context, c *Client, topic string, handler func(context.Context, Lease) error, o WorkOptions) *worker {
	o.Concurrency = min(cmp.Or(max(o.Concurrency, 0), DefaultWorkConcurrency), MaxLeaseJobs)
	o.Lease = cmp.Or(max(o.Lease, 0), DefaultLease)
	o.Wait = cmp.Or(max(o.Wait, 0), DefaultLeaseWait)
	o.Grace = cmp.Or(max(o.Grace, 0), DefaultWorkGrace)
	o.Pollers = min(cmp.Or(max(o.Pollers, 0), DefaultWorkPollers), o.Concurrency)
	if o.MaxJobs > 0 {
		o.Pollers = 1 // so that the jobs left are counted by one
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	w := &worker{c: c, topic: topic, handler: handler, opts: o, log: o.Logger.With("topic", topic),
		slots: make(chan struct{}, o.Concurrency), left: -1, acks: make(chan ackRequest)}
	if o.MaxJobs > 0 {
		w.left = o.MaxJobs
	}
	w.hard, w.hardStop = context.WithCancel(context.WithoutCancel(ctx))
	return w
}

// loop runs the pollers until ctx is done, a Lease call is refused for
// good, or MaxJobs are leased; it returns the first refusal.
func (w *worker) loop(ctx context.Context) error {
	if w.opts.Pollers == 1 {
		return w.poll(ctx, w.opts.Concurrency)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	share := (w.opts.Concurrency + w.opts.Pollers - 1) / w.opts.Pollers
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range w.opts.Pollers {
		wg.Go(func() {
			if err := w.poll(ctx, share); err != nil {
				once.Do(func() { first = err })
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}

// poll leases at most share jobs at a time and starts their handlers
// until ctx is done, a Lease call is refused for good, or MaxJobs are
// leased.
func (w *worker) poll(ctx context.Context, share int) error {
	failures := 0
	for w.left != 0 {
		_, err := w.leaseOnce(ctx, share)
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failures = 0
			continue
		case !transient(err):
			return fmt.Errorf("work %s: %w", w.topic, err)
		}
		failures++
		wait := workBackoff.backoff(failures, 0, w.c.rand())
		if failures&(failures-1) == 0 { // the 1st, 2nd, 4th, 8th... in a row
			w.log.Warn("lease jobs failed; retrying", "err", err, "failures", failures, "retry_in", wait)
		}
		if w.c.sleep(ctx, wait) != nil {
			return nil
		}
	}
	return nil
}

// transient reports whether a Lease call that failed with err may
// succeed later.
func transient(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return !ok || e.Status >= 500 || e.Status == http.StatusTooManyRequests
}

// leaseOnce waits for an idle handler, leases as many jobs as there are
// idle handlers (at most share, and the jobs left to handle), and starts
// a handler on each; it returns how many.
func (w *worker) leaseOnce(ctx context.Context, share int) (int, error) {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	idle := 1
more:
	for idle < share && idle != w.left {
		select {
		case w.slots <- struct{}{}:
			idle++
		default:
			break more
		}
	}
	leases, err := w.c.Lease(ctx, w.topic, LeaseOptions{Max: idle, Wait: w.opts.Wait, Lease: w.opts.Lease})
	// toc leased the jobs as it answered, not when the call was sent: a
	// long-poll may have waited longer than a lease lasts.
	got := time.Now()
	if len(leases) > idle { // more than asked: the extra ones expire
		w.log.Warn("toc handed over more jobs than asked for; leaving the extra ones to expire", "asked", idle, "got", len(leases))
		leases = leases[:idle]
	}
	for range idle - len(leases) {
		<-w.slots
	}
	if w.left > 0 {
		w.left -= len(leases)
	}
	for _, l := range leases {
		w.wg.Go(func() {
			defer func() { <-w.slots }()
			w.run(l, w.localEnd(got, w.opts.Lease, l.ExpiresAt))
		})
	}
	return len(leases), err
}

// localEnd is when a lease of at most d, started by toc no later than
// at, and ending at end by toc's clock ends by ours: end, read on our
// clock, but never after at plus d, in case the clocks differ. For an
// extension at is when it was sent, which errs early by its round trip.
func (w *worker) localEnd(at time.Time, d time.Duration, end time.Time) time.Time {
	return at.Add(min(d, end.Sub(w.c.now())))
}

// stop waits for the running handlers, cancelling them once the grace
// period after ctx is done is over.
func (w *worker) stop(ctx context.Context) {
	defer w.hardStop()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(w.opts.Grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		w.log.Warn("grace period over: cancelling the running handlers; their jobs come back when their leases expire", "grace", w.opts.Grace)
		w.hardStop()
		<-done
	}
}

// run runs the handler on l, extending its lease meanwhile, and settles
// the job as the handler says.
func (w *worker) run(l Lease, end time.Time) {
	log := w.log.With("job_id", l.Job.ID, "token", l.Token)
	ctx, lose := context.WithCancelCause(w.hard)
	defer lose(nil)
	extCtx, stopExtending := context.WithCancel(ctx)
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		w.extend(extCtx, l.Token, end, lose, log)
	}()
	err := w.call(ctx, l)
	stopExtending()
	<-extended
	if w.hard.Err() != nil {
		return // past the grace period: the lease expires
	}
	if err == nil {
		done := make(chan error, 1)
		w.acks <- ackRequest{l.Token, done}
		w.settled(log, "ack", <-done, nil)
		return
	}
	nack := NackOptions{Error: err.Error()}
	if re, ok := errors.AsType[*retryError](err); ok {
		nack.Delay = min(re.after, maxNackDelay)
	}
	w.settled(log, "nack", w.c.Nack(w.hard, l.Token, nack), err)
}

// acker acks the leases of the handlers that are done, all those waiting
// in one call (AckLeases), one call at a time, until acks is closed: a
// lone ack goes at once, and the acks of handlers that end while a call
// is under way go together in the next. Against a toc without that call
// (404 or 405), it acks each on its own.
func (w *worker) acker() {
	single := false
	for first := range w.acks {
		batch := []ackRequest{first}
	more:
		for len(batch) < MaxLeaseJobs {
			select {
			case r, ok := <-w.acks:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		if !single {
			tokens := make([]string, len(batch))
			for i, r := range batch {
				tokens[i] = r.token
			}
			errs, err := w.c.AckLeases(w.hard, tokens)
			single = errors.Is(err, ErrNotFound) || errors.Is(err, ErrMethodNotAllowed)
			if !single {
				for i, r := range batch {
					if err != nil {
						r.done <- err
					} else {
						r.done <- errs[i]
					}
				}
				continue
			}
		}
		for _, r := range batch {
			go func() { r.done <- w.c.Ack(w.hard, r.token) }()
		}
	}
}

// settled logs how an ack or nack that failed with err failed.
func (w *worker) settled(log *slog.Logger, what string, err, handlerErr error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseEnded):
		log.Warn(what+": the lease had ended; the job comes back, or has", "err", err, "handler_err", handlerErr)
	default:
		log.Error(what+" failed; the job comes back when its lease expires", "err", err, "handler_err", handlerErr)
	}
}

// call runs the handler, a panic of it made its error.
func (w *worker) call(ctx context.Context, l Lease) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return w.handler(ctx, l)
}

// extend extends the lease token, which ends at end, at half of the time
// it has left, until ctx is done; it calls lose with ErrLeaseLost when
// the lease ended or expired.
func (w *worker) extend(ctx context.Context, token string, end time.Time, lose context.CancelCauseFunc, log *slog.Logger) {
	t := time.NewTimer(0)
	defer t.Stop()
	capped := false // toc extends it no further
	for {
		left := time.Until(end)
		if left <= 0 {
			log.Warn("lease expired while its handler ran; the job may run again elsewhere")
			lose(ErrLeaseLost)
			return
		}
		wait := left
		if !capped {
			wait = min(max(left/2, 100*time.Millisecond), left)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if capped {
			continue
		}
		sent := time.Now()
		newEnd, err := w.c.Extend(ctx, token, w.opts.Lease)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrLeaseEnded) || errors.Is(err, ErrNotFound):
			log.Warn("lease ended while its handler ran; the job may run again elsewhere", "err", err)
			lose(ErrLeaseLost)
			return
		case err != nil:
			log.Warn("extend lease failed; retrying", "err", err)
		default:
			// toc bounds a lease by the topic's callback timeout: once
			// an extension gains little, it is the last.
			e := w.localEnd(sent, w.opts.Lease, newEnd)
			capped = e.Sub(end) < w.opts.Lease/10
			if e.After(end) {
				end = e
			}
		}
	}
}
