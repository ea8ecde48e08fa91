package timer

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

// The loader reads the rows of the leases a claim pass took, in one query
// for the pass, and routes each lease by what its row says: to the
// executor at the job's due time, or straight to the completer when the
// row says not to fire (done, cancelled, dead, rescheduled later, out
// of attempts, or past its deadline).

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
	retries int    // tries of a row load before the leases are given up
	tracer  Tracer // nil: no claim spans
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

// claimed is the leases of a claim pass, or of passes coalesced, and
// when the (first) pass began: the start of their claim spans.
type claimed struct {
	leases []Lease
	at     time.Time
}

// load is the step of the loader: it moves the rows of leases that are
// due to firing (the conditional update a cancel races against), reads
// them, and routes each lease. The rows of each task store shard are
// loaded on their own, at once, so that a shard that does not answer
// puts back only its own jobs.
func (l *loader) load(ctx context.Context, c claimed) {
	groups := byShard(c.leases, func(ls Lease) JobID { return ls.ID })
	if len(groups) == 1 {
		l.loadShard(ctx, c.leases, c.at)
		return
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() { l.loadShard(ctx, g, c.at) })
	}
	wg.Wait()
}

// loadShard is load of leases whose rows are in one shard.
func (l *loader) loadShard(ctx context.Context, leases []Lease, claimedAt time.Time) {
	now := l.cfg.now()
	jobs, err := l.fireAndGet(ctx, leases, now)
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
	until := l.until(now)
	for _, ls := range leases {
		j := jobs[ls.ID]
		r := routeOf(ls, j, now, until)
		if l.cfg.tracer != nil && j != nil && j.TraceParent != "" {
			l.traceClaim(ctx, ls, j, r, claimedAt)
		}
		l.route(ctx, ls, j, r)
	}
}

// traceClaim records the claim span of a lease: from the claim to the
// load of its row, which decided its route.
func (l *loader) traceClaim(ctx context.Context, ls Lease, j *Job, r routing, claimedAt time.Time) {
	now := l.cfg.now()
	if claimedAt.IsZero() || claimedAt.After(now) {
		claimedAt = now
	}
	span := l.cfg.tracer.Start(ctx, SpanClaim, j.TraceParent, claimedAt)
	span.End(now, SpanAttrs{Job: j.ID, Topic: j.Topic, Attempt: ls.Attempt + 1, Outcome: r.String()}, nil)
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
//
// The jobs the store remembers from their insert (NewFirer) are moved
// first, without reading their rows; the rest as any other.
func (l *loader) fireAndGet(ctx context.Context, leases []Lease, now time.Time) (map[JobID]*Job, error) {
	ids := make([]JobID, len(leases))
	for i, ls := range leases {
		ids[i] = ls.ID
	}
	byID := make(map[JobID]*Job, len(ids))
	if nf, ok := l.store.(NewFirer); ok {
		if fired, rest, err := nf.FireNew(ctx, ids, l.until(now), now); err == nil {
			for _, j := range fired {
				byID[j.ID] = j
			}
			ids = rest
		}
		if len(ids) == 0 {
			return byID, nil
		}
	}
	var err error
	for try := range max(1, l.cfg.retries) {
		var jobs []*Job
		if _, err = l.store.Fire(ctx, ids, l.until(now), now); err != nil {
			if pause.For(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
				break
			}
			continue
		}
		if jobs, err = l.store.GetMany(ctx, ids); err == nil {
			for _, j := range jobs {
				byID[j.ID] = j
			}
			return byID, nil
		}
		if pause.For(ctx, time.Duration(try+1)*50*time.Millisecond) != nil {
			break
		}
	}
	return nil, err
}

// routing is where the loader sends a lease, by its row.
type routing uint8

const (
	// routeAck: the row is gone, done, cancelled, purged or expired; ack.
	routeAck routing = iota
	// routeBury: the row is dead, or out of attempts; bury.
	routeBury
	// routeMoved: the row was rescheduled later; put the timer back.
	routeMoved
	// routeFire: the row is firing; to the executor.
	routeFire
	// routeExpire: the row's deadline passed before Fire, which left it
	// as it was; end it expired, never call it.
	routeExpire
	// routeBusy: the row is due but another job of its concurrency key
	// holds the key, so Fire left it pending; back to its due set
	// shortly, no attempt counted.
	routeBusy
)

// String is the route's name in a claim span's outcome.
func (r routing) String() string {
	switch r {
	case routeAck:
		return "ack"
	case routeBury:
		return "dead"
	case routeMoved:
		return "moved"
	case routeExpire:
		return "expired"
	case routeBusy:
		return "busy"
	}
	return "fire"
}

// routeOf is where a lease goes by its row, as Fire at now, with until
// as its horizon, left it.
func routeOf(ls Lease, j *Job, now, until time.Time) routing {
	switch {
	case j == nil || j.Status == StatusDone || j.Status == StatusCancelled || j.Status == StatusPurged || j.Status == StatusExpired:
		return routeAck
	case j.Status == StatusDead:
		// Dead in the row but leased in Redis: keep the index in step so
		// the dead-letter list shows it.
		return routeBury
	case j.Expired(now):
		// Past its deadline at now, so Fire left it as it was (pending, or
		// firing when its last attempt's worker died).
		return routeExpire
	case j.Status == StatusPending && j.ConcurrencyKey != "" && !j.DueAt.After(until):
		// Due, yet Fire left it pending: another job of its key holds
		// the key (HoldsKey).
		return routeBusy
	case j.Status == StatusPending:
		// Rescheduled later since this timer was written, so Fire left it
		// pending: the timer goes back at the row's time.
		return routeMoved
	case ls.Attempt >= j.MaxAttempts:
		// Its last attempt's lease expired (its worker died mid-call).
		return routeBury
	}
	return routeFire // firing
}

// route sends one lease on by its row, where routeOf said.
func (l *loader) route(ctx context.Context, ls Lease, j *Job, r routing) {
	if r == routeFire {
		l.dispatch(task{lease: ls, job: j})
		return
	}
	l.lim.refund(ls.Slot.Topic)
	switch r {
	case routeAck:
		l.finish(outcome{kind: outAck, lease: ls, job: j, token: true})
	case routeBury:
		l.record(ctx, outcome{kind: outBury, lease: ls, job: j, token: true})
	case routeMoved:
		l.record(ctx, outcome{kind: outMoved, lease: ls, job: j, token: true})
	case routeExpire:
		l.record(ctx, outcome{kind: outExpire, lease: ls, job: j, token: true})
	case routeBusy:
		now := l.cfg.now()
		l.record(ctx, outcome{kind: outPutBack, lease: ls, job: j, until: now.Add(busyDelay(now.Sub(j.DueAt))), token: true})
	}
}

// Bounds of how long a job whose concurrency key is busy waits in Redis
// before it is claimed again.
const (
	busyMinDelay = 20 * time.Millisecond
	busyMaxDelay = time.Second
)

// busyDelay is how long a due job whose concurrency key another job
// holds goes back to its due set for, having waited waited past its due
// time: an eighth of that wait, within busyMinDelay..busyMaxDelay, plus
// up to a half more at random, so that a key's waiters do not come back
// in step. A job that just came due asks again soon; one behind a long
// holder (a slow call, or a failed attempt waiting for its retry) asks
// about once a second, so waiters cost a claim each a second at most,
// and take no slot of the topic's in-flight cap while they wait.
func busyDelay(waited time.Duration) time.Duration {
	d := min(max(waited/8, busyMinDelay), busyMaxDelay)
	return d + rand.N(d/2+1)
}

// run loads what arrives on in, coalescing waiting passes into one query,
// until in is closed. After ctx is done it gives leases back unloaded.
func (l *loader) run(ctx context.Context, in <-chan claimed) {
	for c := range in {
		c = coalesce(c, in, maxBatch)
		if ctx.Err() != nil {
			l.giveBack(c.leases) // shutdown over: the leases expire and come back
			continue
		}
		l.load(ctx, c)
	}
}

// coalesce adds to first the passes waiting on ch, up to limit leases.
// Passes arrive in order, so the first began first.
func coalesce(first claimed, ch <-chan claimed, limit int) claimed {
	out := first
	for len(out.leases) < limit {
		select {
		case more, ok := <-ch:
			if !ok {
				return out
			}
			out.leases = append(out.leases, more.leases...)
		default:
			return out
		}
	}
	return out
}
