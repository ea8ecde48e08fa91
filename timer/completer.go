package timer

import (
	"context"
	"time"
)

// The completer is the tail of the worker's pipeline: it records the
// outcome of every lease, in the task store first (the truth) and then in
// Redis, and gives the lease back to the limiter. Successes and plain
// acks are batched (one UPDATE and one ack call for many jobs, gathered
// over finishWindow); other outcomes are recorded one by one by the
// goroutine that produced them.

// outcomeKind is what became of a lease.
type outcomeKind uint8

const (
	// outAck: nothing to fire (the row is done, cancelled or gone); ack.
	outAck outcomeKind = iota
	// outDone: the handler succeeded; mark the row done, then ack.
	outDone
	// outFailed: the attempt failed; record it, then retry or bury.
	outFailed
	// outDiscard: the receiver asked to stop (ErrDiscard); cancel, ack.
	outDiscard
	// outNotSent: not delivered (NotSentError); back to the due set at
	// until, no attempt counted.
	outNotSent
	// outBury: the row is dead, or the last attempt's lease expired; mark
	// it dead (unless it is) and move the lease to Dead.
	outBury
	// outMoved: the row was rescheduled later than the timer; put the
	// timer at the row's time, then ack.
	outMoved
	// outDeadRow: a sweep moved the lease to Dead; mark the row dead.
	outDeadRow
	// outAbandoned: the attempt was cut short by shutdown; nothing is
	// recorded, and the lease expires.
	outAbandoned
	// outPutBack: the rows could not be read (the task store is down);
	// back to the due set at until, no attempt counted, nothing written to
	// the store.
	outPutBack
	// outExpire: no attempt may start, the job's deadline has passed;
	// mark the row expired, then ack.
	outExpire
)

// outcome is one lease's fate, for the completer to record.
type outcome struct {
	kind    outcomeKind
	lease   Lease
	job     *Job     // nil for outAck of a missing row and for outDeadRow
	attempt int      // the attempt made (outDone, outFailed)
	status  int      // the HTTP status the receiver answered (outDone), 0 for none
	record  *Attempt // the attempt's history record (outDone), nil when none is kept
	err     error
	until   time.Time // outNotSent
	// token: the lease still counts against the worker's leases, and the
	// completer releases it once recorded. A successful dispatch gave its
	// token back when the handler returned, so that slow done-updates do
	// not hold up claiming.
	token bool
}

// finishWindow is how long the completer gathers outcomes before it marks
// them done. A done-update is a commit (a log flush in MariaDB) off the
// firing path: at 5,000 jobs/s, taking only what was waiting made about
// 630 UPDATEs a second; gathering for 5 ms makes about 130.
const finishWindow = 5 * time.Millisecond

// maxBatch caps the leases one row load or one completion writes.
const maxBatch = 500

type completerConfig struct {
	now     func() time.Time
	obs     Observer
	logf    func(msg string, args ...any)
	horizon time.Duration
	tracer  Tracer // nil: no completion spans
	// acked hears, when the leaser is a HeadAcker, each acked slot's next
	// lease end as the ack that began at at saw it.
	acked func(at time.Time, next []SlotExpiry)
}

type completer struct {
	cfg    completerConfig
	store  JobWriter
	index  Index
	leaser Leaser
	lim    *limiter
	cat    *Catalog
	wake   func(Wake)
	// ended, when set, hears of the group of each member this completer
	// ended (done, dead, cancelled by its receiver): the GroupCompleter's
	// cue. A dead row the sweep of leases found has no job at hand; the
	// group sweep finds those.
	ended func(group string)
	// history records the successes' attempts whose done mark failed
	// (Complete records the others); nil when the store keeps none.
	history *attemptRecorder
}

// groupEnded tells ended of j's group, if any.
func (c *completer) groupEnded(j *Job) {
	if c.ended != nil && j != nil && j.GroupID != "" {
		c.ended(j.GroupID)
	}
}

// record records a batch of outcomes: the step of the completer.
func (c *completer) record(ctx context.Context, batch []outcome) {
	now := c.cfg.now()
	var (
		done  []Completion
		acks  []Lease
		spans []doneSpan // the successes' completion spans, when tracing
	)
	for _, o := range batch {
		switch o.kind {
		case outDone:
			done = append(done, Completion{ID: o.lease.ID, Attempts: o.attempt, Status: o.status, Attempt: o.record})
			if c.cfg.tracer != nil && o.job.TraceParent != "" {
				spans = append(spans, doneSpan{c.cfg.tracer.Start(ctx, SpanComplete, o.job.TraceParent, now), o})
			}
		case outAck:
			acks = append(acks, o.lease)
		default:
			c.recordOne(ctx, o, now)
		}
	}
	var doneErr error
	if len(done) > 0 {
		if _, err := c.store.Complete(ctx, done, now); err != nil {
			// Unacked, they come back when their leases expire, find
			// their rows still pending, and fire again: at least once.
			c.cfg.logf("mark done failed; the jobs will fire again", "dep", "task_store", "jobs", len(done), "err", err)
			doneErr = err
			// The attempts were made all the same: the history keeps them.
			for _, d := range done {
				if d.Attempt != nil && c.history != nil {
					c.history.add(*d.Attempt)
				}
			}
		} else {
			for _, o := range batch {
				if o.kind == outDone {
					acks = append(acks, o.lease)
					c.groupEnded(o.job)
				}
			}
		}
	}
	if len(acks) > 0 {
		if err := c.ackAll(ctx, acks); err != nil {
			c.cfg.logf("ack failed; the leases will expire and be skipped", "dep", "redis", "jobs", len(acks), "err", err)
			if doneErr == nil && len(done) > 0 {
				doneErr = err
			}
		}
	}
	for _, o := range batch {
		if o.token && (o.kind == outDone || o.kind == outAck) {
			c.lim.release(o.lease.Slot.Topic, 1)
		}
	}
	if len(spans) > 0 {
		end := c.cfg.now()
		for _, s := range spans {
			s.span.End(end, attrsOf(s.o, "done"), doneErr)
		}
	}
}

// ackAll acks leases, and tells cfg.acked what the ack saw of their
// slots when the leaser can say.
func (c *completer) ackAll(ctx context.Context, leases []Lease) error {
	h, ok := c.leaser.(HeadAcker)
	if !ok || c.cfg.acked == nil {
		_, err := c.leaser.Ack(ctx, leases)
		return err
	}
	at := c.cfg.now()
	_, next, err := h.AckHeads(ctx, leases)
	if err == nil {
		c.cfg.acked(at, next)
	}
	return err
}

// doneSpan is the completion span of a success.
type doneSpan struct {
	span Span
	o    outcome
}

// attrsOf is what a completion span records of o.
func attrsOf(o outcome, result string) SpanAttrs {
	return SpanAttrs{Job: o.lease.ID, Topic: o.lease.Slot.Topic, Attempt: o.attempt, Status: statusOf(o.err), Outcome: result}
}

// recordOne records an outcome other than a success or a plain ack, and
// releases its token. The outcomes of an attempt (failed, discarded, not
// sent) have a completion span when the worker traces.
func (c *completer) recordOne(ctx context.Context, o outcome, now time.Time) {
	if c.cfg.tracer == nil || o.job == nil || o.job.TraceParent == "" ||
		(o.kind != outFailed && o.kind != outDiscard && o.kind != outNotSent) {
		c.recordOutcome(ctx, o, now)
		return
	}
	span := c.cfg.tracer.Start(ctx, SpanComplete, o.job.TraceParent, now)
	result, err := c.recordOutcome(ctx, o, now)
	span.End(c.cfg.now(), attrsOf(o, result), err)
}

// recordOutcome is recordOne's work. It returns, for the completion
// span, what became of the job and the error that kept it from being
// recorded (which it has logged).
func (c *completer) recordOutcome(ctx context.Context, o outcome, now time.Time) (result string, err error) {
	topic := o.lease.Slot.Topic
	if o.token {
		defer c.lim.release(topic, 1)
	}
	switch o.kind {
	case outDeadRow:
		c.markDead(ctx, o.lease, expiredOnLast(o.lease), now, "mark dead failed")
		// Forgotten either way: a row that could not be marked dead is
		// still pending, and the backstop restores a job in no set.
		c.forget(ctx, o.lease)
	case outPutBack:
		if _, err := c.leaser.Defer(ctx, o.lease, o.until); err != nil {
			c.cfg.logf("put back a claimed job failed; the lease will expire", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "", err
		}
		c.wake(Wake{Slot: o.lease.Slot, DueAt: o.until})
	case outNotSent:
		c.lim.refund(topic)
		until := laterOf(o.until, now)
		// Not sent: pending again, so that a cancel meanwhile is definite.
		if _, err := c.store.Transition(ctx, o.lease.ID, StatusFiring, StatusPending, now); err != nil {
			c.cfg.logf("put back job not sent failed; the lease will expire", "dep", "task_store", "job", o.lease.ID.String(), "err", err)
			return "deferred", err
		}
		if _, err := c.leaser.Defer(ctx, o.lease, until); err != nil {
			c.cfg.logf("defer failed; the lease will expire", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "deferred", err
		}
		c.cfg.obs.Deferred(topic)
		c.wake(Wake{Slot: o.lease.Slot, DueAt: until})
		return "deferred", nil
	case outDiscard:
		// Cancelled, with the attempt that was stopped and its answer on
		// the row, as a failed attempt's are.
		f := Failure{Attempts: o.attempt, Error: o.err.Error(), Status: statusOf(o.err), Stopped: true}
		if _, err := c.store.Fail(ctx, o.lease.ID, f, now); err != nil {
			c.cfg.logf("discard job failed; the lease will expire", "dep", "task_store", "job", o.lease.ID.String(), "err", err)
			return "cancelled", err
		}
		c.groupEnded(o.job)
		if _, err := c.leaser.Ack(ctx, []Lease{o.lease}); err != nil {
			c.cfg.logf("ack failed; the lease will expire and be skipped", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "cancelled", err
		}
		return "cancelled", nil
	case outFailed:
		dead := o.attempt >= o.job.MaxAttempts
		policy := c.lim.topic(topic).conf.Load().retry
		at := now.Add(policy.delayAfter(o.attempt, o.err))
		f := Failure{Attempts: o.attempt, Error: o.err.Error(), Status: statusOf(o.err), Dead: dead, RetryAt: at}
		result = "retry"
		switch {
		case dead:
			result = "dead"
		case o.job.Expired(at):
			// Its retry would start past its deadline: it ends now.
			result, f.Expired = "expired", true
			j := *o.job
			j.Attempts, j.LastError = o.attempt, f.Error
			f.Error = ExpireReason(&j, "its next attempt, at "+at.UTC().Format(reasonLayout)+", would start after it")
		}
		ok, err := c.store.Fail(ctx, o.lease.ID, f, now)
		if err != nil {
			c.cfg.logf("record failed attempt failed; the lease will expire", "dep", "task_store", "job", o.lease.ID.String(), "err", err)
			return result, err
		}
		if dead {
			c.groupEnded(o.job)
			if ok {
				c.cfg.obs.Buried(topic)
			}
		}
		if f.Expired {
			c.groupEnded(o.job)
			c.cfg.obs.Expired(topic)
			return result, c.ack(ctx, o.lease)
		}
		return result, c.retry(ctx, o.lease, at, o.job.MaxAttempts, now)
	case outExpire:
		return c.expire(ctx, o, now)
	case outBury:
		// A row already dead was counted when it died: this lease is a
		// stale timer of it (a late add, a restore), not a second death.
		if o.job.Status != StatusDead {
			if err := c.markDead(ctx, o.lease, expiredOnLast(o.lease), now, "mark dead failed; the lease will expire"); err != nil {
				return "dead", err
			}
			c.groupEnded(o.job)
		}
		// A Retry with one attempt allowed moves the lease to Dead, which
		// keeps the dead-letter index in step with the row.
		return "dead", c.retry(ctx, o.lease, now, 1, now)
	case outMoved:
		if err := c.readd(ctx, o.job, o.lease.Attempt, now); err != nil {
			c.cfg.logf("re-add rescheduled job failed; the lease will expire", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "moved", err
		}
		if _, err := c.leaser.Ack(ctx, []Lease{o.lease}); err != nil {
			c.cfg.logf("ack failed; the lease will expire and be skipped", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "moved", err
		}
		return "moved", nil
	}
	return "", nil
}

// expire ends the job of o expired: no attempt could start by its
// deadline, and none will. A row that changed since it was read (a cancel
// or a reschedule won) is left as it is, and its lease goes back to be
// claimed again and routed by what the row now says.
func (c *completer) expire(ctx context.Context, o outcome, now time.Time) (string, error) {
	ok, err := c.store.Expire(ctx, o.lease.ID, ExpireReason(o.job, "no attempt could start by it"), now)
	if err != nil {
		c.cfg.logf("mark expired failed; the lease will expire", "dep", "task_store", "job", o.lease.ID.String(), "err", err)
		return "expired", err
	}
	if !ok {
		if _, err := c.leaser.Defer(ctx, o.lease, now); err != nil {
			c.cfg.logf("put back a changed job failed; the lease will expire", "dep", "redis", "job", o.lease.ID.String(), "err", err)
			return "moved", err
		}
		c.wake(Wake{Slot: o.lease.Slot, DueAt: now})
		return "moved", nil
	}
	c.groupEnded(o.job)
	c.cfg.obs.Expired(o.lease.Slot.Topic)
	return "expired", c.ack(ctx, o.lease)
}

// ack acks one lease whose row is final, logging a failure: the lease
// then expires, comes back, and is acked by its row.
func (c *completer) ack(ctx context.Context, l Lease) error {
	if _, err := c.leaser.Ack(ctx, []Lease{l}); err != nil {
		c.cfg.logf("ack failed; the lease will expire and be skipped", "dep", "redis", "job", l.ID.String(), "err", err)
		return err
	}
	return nil
}

// expiredOnLast is the failure of a job whose last attempt's lease
// expired: its worker died mid-call.
func expiredOnLast(l Lease) Failure {
	return Failure{Attempts: l.Attempt, Error: "lease expired on the last attempt", Dead: true}
}

// retry hands a lease back to Redis: due again at at, or to Dead when
// maxAttempts is reached.
// It returns the error it logged, for the completion span.
func (c *completer) retry(ctx context.Context, l Lease, at time.Time, maxAttempts int, now time.Time) error {
	outcome, err := c.leaser.Retry(ctx, l, at, maxAttempts, now)
	switch {
	case err != nil:
		c.cfg.logf("retry failed; the lease will expire", "dep", "redis", "job", l.ID.String(), "err", err)
		return err
	case outcome == Retried:
		c.cfg.obs.Retried(l.Slot.Topic)
		c.wake(Wake{Slot: l.Slot, DueAt: at})
	case outcome == Buried:
		// Counted where its row turned dead, not here: a stale lease of
		// a dead row is buried again without dying again.
		c.forget(ctx, l)
	}
	return nil
}

// markDead marks the row of l dead with f, and counts the death when
// this call is the one that made it: the UPDATE is conditional on the
// row being live, so a job is counted once however many of its leases
// are buried. It returns the error it logged with msg, which says what
// becomes of the lease.
func (c *completer) markDead(ctx context.Context, l Lease, f Failure, now time.Time, msg string) error {
	ok, err := c.store.Fail(ctx, l.ID, f, now)
	if err != nil {
		c.cfg.logf(msg, "dep", "task_store", "job", l.ID.String(), "err", err)
		return err
	}
	if ok {
		c.cfg.obs.Buried(l.Slot.Topic)
	}
	return nil
}

// forget clears a buried job from its slot's Dead set: its row, marked
// dead before, is the dead-letter record, and Redis keeps nothing of it.
// A failure leaves a stale member that nothing reads.
func (c *completer) forget(ctx context.Context, l Lease) {
	if _, err := c.leaser.Forget(ctx, l.Slot, l.ID); err != nil {
		c.cfg.logf("forget a dead job in Redis failed; its member stays in the Dead set, unread", "dep", "redis", "job", l.ID.String(), "err", err)
	}
}

// readd puts the timer of a rescheduled job back in Redis at the row's
// due time (unless that is beyond the horizon: the backstop loads it),
// before the stale lease is acked.
func (c *completer) readd(ctx context.Context, j *Job, attempt int, now time.Time) error {
	if !j.DueAt.Before(now.Add(c.cfg.horizon)) {
		return nil
	}
	topic, err := c.cat.Lookup(ctx, j.Topic)
	if err != nil {
		return err
	}
	t := Timer{ID: j.ID, Topic: j.Topic, Slots: topic.Slots, Basis: j.SlotBasis(), DueAt: j.DueAt, Attempt: attempt, Priority: j.Priority, Window: timerWindow(j, attempt)}
	wakes, err := c.index.Add(ctx, []Timer{t})
	for _, w := range wakes {
		c.wake(w)
	}
	return err
}

// run records what arrives on in, gathering successes and acks for
// finishWindow, until in is closed.
func (c *completer) run(ctx context.Context, in <-chan outcome) {
	for o := range in {
		c.record(ctx, gather(o, in, maxBatch, finishWindow))
	}
}

// gather returns first and what else arrives on ch within window, at
// most limit in all, or until ch is closed.
func gather[T any](first T, ch <-chan T, limit int, window time.Duration) []T {
	out := []T{first}
	t := time.NewTimer(window)
	defer t.Stop()
	for len(out) < limit {
		select {
		case more, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, more)
		case <-t.C:
			return out
		}
	}
	return out
}
