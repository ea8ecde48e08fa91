package timer

import (
	"context"
	"time"
)

// The loader reads the rows of the leases a claim pass took, in one query
// for the pass, and routes each lease by what its row says: to the
// executor at the job's due time, or straight to the completer when the
// row says not to fire (done, cancelled, dead, rescheduled later, or out
// of attempts).

// loaderCount is the number of goroutines loading claimed rows; each
// coalesces what is waiting into one query.
const loaderCount = 4

// storeRetry is how long claimed jobs whose rows could not be read wait
// in Redis before they are claimed again.
const storeRetry = time.Second

type loaderConfig struct {
	now     func() time.Time
	logf    func(msg string, args ...any)
	ahead   time.Duration
	retries int // tries of a row load before the leases are given up
}

// rowStore is what the loader does with rows: move them to firing, then
// read them.
type rowStore interface {
	Fire(ctx context.Context, ids []JobID, until, now time.Time) (int, error)
	GetMany(ctx context.Context, ids []JobID) ([]*Job, error)
}

type loader struct {
	cfg      loaderConfig
	store    rowStore
	lim      *limiter
	dispatch func(task)    // to the executor, at the job's due time
	finish   func(outcome) // to the completer's batches
	record   func(context.Context, outcome)
}

// task is a leased job to fire.
type task struct {
	lease Lease
	job   *Job
}

// load is the step of the loader: it moves the rows of leases that are
// due to firing (the conditional update a cancel races against), reads
// them, and routes each lease.
func (l *loader) load(ctx context.Context, leases []Lease) {
	jobs, err := l.fireAndGet(ctx, leases, l.cfg.now())
	if err != nil {
		if ctx.Err() != nil {
			l.giveBack(leases)
			return
		}
		// The task store is away: put the jobs back in Redis shortly, so
		// that they fire within a second or so of its return, not a lease
		// later.
		l.cfg.logf("load claimed jobs failed; putting them back to try again", "dep", "task_store", "jobs", len(leases), "err", err)
		until := l.cfg.now().Add(storeRetry)
		for _, ls := range leases {
			l.lim.refund(ls.Slot.Topic)
			l.record(ctx, outcome{kind: outPutBack, lease: ls, until: until, token: true})
		}
		return
	}
	for _, ls := range leases {
		l.route(ctx, ls, jobs[ls.ID])
	}
}

// until is the latest due time a load at now fires: the claim horizon
// (twice the look-ahead), which every claimed job is due by.
func (l *loader) until(now time.Time) time.Time { return now.Add(2 * l.cfg.ahead) }

// giveBack releases leases claimed but not sent, and their rate tokens:
// they expire in Redis and come back.
func (l *loader) giveBack(leases []Lease) {
	for _, ls := range leases {
		l.lim.refund(ls.Slot.Topic)
		l.lim.release(ls.Slot.Topic, 1)
	}
}

// fireAndGet moves the rows of leases due by the claim's horizon to
// firing and loads them by id, trying a few times: a database blip should
// not cost a lease period.
func (l *loader) fireAndGet(ctx context.Context, leases []Lease, now time.Time) (map[JobID]*Job, error) {
	ids := make([]JobID, len(leases))
	for i, ls := range leases {
		ids[i] = ls.ID
	}
	var err error
	for try := range max(1, l.cfg.retries) {
		var jobs []*Job
		if _, err = l.store.Fire(ctx, ids, l.until(now), now); err != nil {
			if sleep(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
				break
			}
			continue
		}
		if jobs, err = l.store.GetMany(ctx, ids); err == nil {
			byID := make(map[JobID]*Job, len(jobs))
			for _, j := range jobs {
				byID[j.ID] = j
			}
			return byID, nil
		}
		if sleep(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
			break
		}
	}
	return nil, err
}

// route sends one lease on by its row, as Fire left it.
func (l *loader) route(ctx context.Context, ls Lease, j *Job) {
	topic := ls.Slot.Topic
	switch {
	case j == nil || j.Status == StatusDone || j.Status == StatusCancelled || j.Status == StatusPurged:
		l.lim.refund(topic)
		l.finish(outcome{kind: outAck, lease: ls, job: j, token: true})
	case j.Status == StatusDead:
		// Dead in the row but leased in Redis: keep the index in step so
		// the dead-letter list shows it.
		l.lim.refund(topic)
		l.record(ctx, outcome{kind: outBury, lease: ls, job: j, token: true})
	case j.Status == StatusPending:
		// Rescheduled later since this timer was written, so Fire left it
		// pending: the timer goes back at the row's time.
		l.lim.refund(topic)
		l.record(ctx, outcome{kind: outMoved, lease: ls, job: j, token: true})
	case ls.Attempt >= j.MaxAttempts:
		// Its last attempt's lease expired (its worker died mid-call).
		l.lim.refund(topic)
		l.record(ctx, outcome{kind: outBury, lease: ls, job: j, token: true})
	default: // firing
		l.dispatch(task{lease: ls, job: j})
	}
}

// run loads what arrives on in, coalescing waiting passes into one query,
// until in is closed. After ctx is done it gives leases back unloaded.
func (l *loader) run(ctx context.Context, in <-chan []Lease) {
	for batch := range in {
		leases := coalesce(batch, in, maxBatch)
		if ctx.Err() != nil {
			l.giveBack(leases) // shutdown over: the leases expire and come back
			continue
		}
		l.load(ctx, leases)
	}
}

func coalesce[T any](first []T, ch <-chan []T, limit int) []T {
	out := first
	for len(out) < limit {
		select {
		case more, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, more...)
		default:
			return out
		}
	}
	return out
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
