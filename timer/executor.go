package timer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The executor delivers: a fixed pool of Concurrency goroutines, each
// calling the handler for one job at a time under the topic's callback
// timeout, and turning what the handler returned into an outcome for the
// completer.

type executorConfig struct {
	now    func() time.Time
	obs    Observer
	tracer Tracer // nil: no delivery spans
}

type executor struct {
	cfg     executorConfig
	handler Handler
	lim     *limiter
	finish  func(outcome)                  // successes, to the completer's batches
	record  func(context.Context, outcome) // the rest, recorded at once
	history *attemptRecorder               // nil: the store keeps no attempt history
	recent  recentLate                     // the largest lateness of the last moment
	// pulled runs the deliveries of pull topics, each in its own
	// goroutine: a worker holds its lease as long as its job runs, which
	// must not hold one of the pool's. The demand bounds them.
	pulled sync.WaitGroup
}

// execute is the step of the executor: it fires t once and returns what
// became of it. The lease token of a success is released at once; the
// others keep it for the completer.
func (e *executor) execute(ctx context.Context, t task) outcome {
	topic := t.lease.Slot.Topic
	tp := e.lim.topic(topic)
	conf := tp.conf.Load()
	attempt := t.lease.Attempt + 1
	start := e.cfg.now()
	if t.job.Expired(start) {
		// Loaded in time, but its call would start past its deadline (the
		// worker was busy): never made.
		e.lim.refund(topic)
		return outcome{kind: outExpire, lease: t.lease, job: t.job, token: true}
	}
	// The handler fills in the receiver's answer: its status is the job's
	// last status, whatever the history keeps.
	d := Delivery{Job: t.job, Attempt: attempt, At: start, TraceParent: t.job.TraceParent, Destination: conf.dest, Response: new(Response)}
	var span Span
	if e.cfg.tracer != nil && t.job.TraceParent != "" {
		span = e.startDeliver(ctx, &d)
	}
	late := max(start.Sub(latenessBase(t.job, attempt)), 0)
	tp.late.observe(late, start)
	e.recent.observe(late, start)
	if windowMissed(t.job, attempt, start) {
		tp.windowMissed.Add(1)
	}
	tp.dispatched.Add(1)
	tp.inFlight.Add(1)
	err := e.fire(ctx, d, conf.timeout)
	tp.inFlight.Add(-1)
	if span != nil {
		span.End(e.cfg.now(), SpanAttrs{Job: t.job.ID, Topic: topic, Attempt: attempt, Status: deliveredStatus(d, err)}, err)
	}
	if ns, ok := errors.AsType[*NotSentError](err); ok && ctx.Err() == nil {
		tp.dispatched.Add(-1)
		return outcome{kind: outNotSent, lease: t.lease, job: t.job, until: ns.Until, token: true}
	}
	if conf.slo > 0 {
		tp.sloCalls.Add(1)
		if late <= conf.slo {
			tp.withinSLO.Add(1)
		}
	}
	took := e.cfg.now().Sub(start)
	e.cfg.obs.Fired(topic, attempt, late, took, err)
	var record *Attempt
	if e.history != nil && (err == nil || ctx.Err() == nil) {
		a := attemptOf(d, start, took, err)
		if err == nil {
			// A success is recorded with its done mark (Completion.Attempt).
			record = &a
		} else {
			e.history.add(a)
		}
	}
	switch {
	case err == nil:
		e.lim.release(topic, 1)
		return outcome{kind: outDone, lease: t.lease, job: t.job, attempt: attempt, status: d.Response.StatusCode, record: record}
	case ctx.Err() != nil:
		// Cut short by shutdown: not the receiver's fault, so no attempt is
		// recorded, in the row or the history; the lease expires and the
		// job comes back.
		e.lim.release(topic, 1)
		return outcome{kind: outAbandoned, lease: t.lease, job: t.job, attempt: attempt}
	case errors.Is(err, ErrDiscard):
		return outcome{kind: outDiscard, lease: t.lease, job: t.job, attempt: attempt, err: err, token: true}
	}
	return outcome{kind: outFailed, lease: t.lease, job: t.job, attempt: attempt, err: err, token: true}
}

// startDeliver starts d's delivery span, whose traceparent d carries,
// and has the handler fill in the receiver's answer for it.
func (e *executor) startDeliver(ctx context.Context, d *Delivery) Span {
	span := e.cfg.tracer.Start(ctx, SpanDeliver, d.Job.TraceParent, d.At)
	d.TraceParent = span.TraceParent()
	if d.Response == nil {
		d.Response = new(Response)
	}
	return span
}

// deliveredStatus is the HTTP status d's receiver answered, 0 for none.
func deliveredStatus(d Delivery, err error) int {
	if d.Response != nil && d.Response.StatusCode != 0 {
		return d.Response.StatusCode
	}
	return statusOf(err)
}

// latenessBase is the latest an attempt could start and still be on
// time: the due time, or, for a first attempt, the end of the job's
// window (Job.WindowEnd), or the time it was scheduled when that is later
// (a job scheduled already past due could not have fired earlier). A
// call that starts before it is 0 late.
func latenessBase(j *Job, attempt int) time.Time {
	if attempt != 1 {
		return j.DueAt
	}
	end := j.WindowEnd()
	if j.CreatedAt.After(end) {
		return j.CreatedAt
	}
	return end
}

// windowMissed reports whether an attempt that started at start is the
// first of a job with a window and started after the window's end.
func windowMissed(j *Job, attempt int, start time.Time) bool {
	return attempt == 1 && j.Window > 0 && start.After(j.WindowEnd())
}

func (e *executor) fire(ctx context.Context, d Delivery, timeout time.Duration) (err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return e.handler.Fire(ctx, d)
}

// run executes the tasks that arrive on in until it is closed. Handler
// calls run under handlerCtx (cancelled when the shutdown grace period
// ends); outcomes are recorded under recordCtx.
func (e *executor) run(handlerCtx, recordCtx context.Context, in <-chan task) {
	for t := range in {
		if handlerCtx.Err() != nil {
			e.lim.release(t.lease.Slot.Topic, 1) // grace period over: the lease expires and it comes back
			continue
		}
		if e.lim.topic(t.lease.Slot.Topic).conf.Load().pull {
			e.pulled.Go(func() { e.settle(recordCtx, e.execute(handlerCtx, t)) })
			continue
		}
		e.settle(recordCtx, e.execute(handlerCtx, t))
	}
}

// settle hands o to the completer: a success to its batches, the rest
// recorded at once.
func (e *executor) settle(recordCtx context.Context, o outcome) {
	switch {
	case o.kind == outDone:
		e.finish(o)
	case o.kind == outAbandoned:
		// nothing to record: the lease expires and the job comes back
	default:
		e.record(recordCtx, o)
	}
}
