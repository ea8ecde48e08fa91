package timer

import (
	"context"
	"time"
)

// The attempt history: one record per delivery the handler made, kept by
// a Store that implements AttemptLog. The executor hands the record of a
// failed attempt to the worker's attempt recorder, which writes them in
// batches off the firing path; a success's goes with its completion
// (Completion.Attempt), which the store records with the done mark, or
// to the recorder if that fails. GET /v1/jobs/{id}/attempts reads them
// back.

// MaxExcerptBytes is how much of a receiver's response body an attempt
// keeps.
const MaxExcerptBytes = 1024

// Defaults of the attempt history.
const (
	// DefaultAttemptRetention is how long cmd/toc keeps attempts by
	// default; a WorkerConfig's zero AttemptRetention keeps them forever.
	DefaultAttemptRetention = 7 * 24 * time.Hour
	// attemptFlushWindow and attemptBatch bound how long and how many
	// attempts the recorder gathers before one write.
	attemptFlushWindow = 100 * time.Millisecond
	attemptBatch       = 500
	// attemptBuffer is how many attempts wait for the recorder; beyond
	// it, attempts are dropped rather than slow the executor.
	attemptBuffer = 8192
	// pruneEvery and pruneBatch pace the deletion of old attempts.
	pruneEvery = time.Minute
	pruneBatch = 10_000
)

// Attempt is one delivery of a job: its attempt number, when it started
// and how long it took, and what came of it.
type Attempt struct {
	Job       JobID
	Attempt   int
	StartedAt time.Time
	Duration  time.Duration
	// StatusCode is the HTTP status the receiver answered, 0 when there
	// was no answer.
	StatusCode int
	// Error is why the attempt failed ("" on success).
	Error string
	// Excerpt is the start of the response body, at most
	// MaxExcerptBytes.
	Excerpt []byte
}

// Stored returns a as a store keeps it: times in whole milliseconds, the
// error cut as TruncateError cuts it, the excerpt to MaxExcerptBytes.
func (a Attempt) Stored() Attempt {
	a.StartedAt = TimeOf(a.StartedAt.UnixMilli())
	a.Duration = a.Duration.Truncate(time.Millisecond)
	a.Error = TruncateError(a.Error)
	if len(a.Excerpt) > MaxExcerptBytes {
		a.Excerpt = a.Excerpt[:MaxExcerptBytes]
	}
	return a
}

// Response is what a handler learnt of the receiver's answer. The worker
// sets Delivery.Response when it keeps attempt history; a handler fills
// it, when it is not nil, on success as well as on failure.
type Response struct {
	// StatusCode is the HTTP status answered (0: no answer).
	StatusCode int
	// Excerpt is the start of the body, at most MaxExcerptBytes.
	Excerpt []byte
}

// AttemptLog keeps the history of attempts. A Store may implement it;
// the worker then records every attempt made, and the Scheduler lists
// them. The history is best effort: the job's own row is the truth.
type AttemptLog interface {
	// RecordAttempts writes attempts in one statement (per shard); an
	// error cut to MaxLastErrorBytes, an excerpt to MaxExcerptBytes. An
	// attempt already recorded (same job, number and start) is skipped.
	RecordAttempts(ctx context.Context, attempts []Attempt) error
	// ListAttempts returns the attempts recorded for id, ordered by
	// attempt number and start; none for an unknown job.
	ListAttempts(ctx context.Context, id JobID) ([]Attempt, error)
	// PruneAttempts deletes up to limit attempts that started before
	// before and returns how many it deleted.
	PruneAttempts(ctx context.Context, before time.Time, limit int) (int, error)
}

// Attempts returns the attempts recorded for job id, or an error
// wrapping ErrNotFound for an unknown job; none when the store keeps no
// history.
func (s *Scheduler) Attempts(ctx context.Context, id JobID) ([]Attempt, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return nil, err
	}
	log, ok := s.store.(AttemptLog)
	if !ok {
		return []Attempt{}, nil
	}
	return log.ListAttempts(ctx, id)
}

// attemptRecorder gathers the attempts the executor reports and writes
// them in batches: one RecordAttempts per attemptFlushWindow or
// attemptBatch attempts, from one goroutine. A failed write is logged and
// its attempts dropped, and so are attempts that find the buffer full:
// recording never holds up firing.
type attemptRecorder struct {
	log       AttemptLog
	retention time.Duration
	now       func() time.Time
	logf      func(msg string, args ...any)

	ch chan Attempt
}

func newAttemptRecorder(log AttemptLog, retention time.Duration, now func() time.Time, logf func(string, ...any)) *attemptRecorder {
	return &attemptRecorder{log: log, retention: retention, now: now, logf: logf, ch: make(chan Attempt, attemptBuffer)}
}

// add queues a for the next write; it never blocks. It must not be
// called after close.
func (r *attemptRecorder) add(a Attempt) {
	select {
	case r.ch <- a:
	default:
		r.logf("attempt history buffer full; dropping an attempt", "dep", "task_store", "job", a.Job.String())
	}
}

// close ends run once the queued attempts are written: after the last
// executor has returned.
func (r *attemptRecorder) close() { close(r.ch) }

// run writes what add queues until close, under ctx, which outlives the
// worker's so that the last batch is written at shutdown.
func (r *attemptRecorder) run(ctx context.Context) {
	for a := range r.ch {
		r.write(ctx, gather(a, r.ch, attemptBatch, attemptFlushWindow))
	}
}

// write records one batch: the recorder's step.
func (r *attemptRecorder) write(ctx context.Context, batch []Attempt) {
	if err := r.log.RecordAttempts(ctx, batch); err != nil {
		r.logf("record attempt history failed; dropping it", "dep", "task_store", "attempts", len(batch), "err", err)
	}
}

// flush writes the attempts queued now, for tests that step the worker.
func (r *attemptRecorder) flush(ctx context.Context) int {
	var batch []Attempt
	for {
		select {
		case a := <-r.ch:
			batch = append(batch, a)
			continue
		default:
		}
		break
	}
	if len(batch) > 0 {
		r.write(ctx, batch)
	}
	return len(batch)
}

// pruneLoop deletes attempts older than the retention every pruneEvery
// until ctx is done; a zero retention keeps them forever.
func (r *attemptRecorder) pruneLoop(ctx context.Context) {
	if r.retention <= 0 {
		return
	}
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		if _, err := r.prune(ctx); err != nil && ctx.Err() == nil {
			r.logf("prune attempt history failed", "dep", "task_store", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune deletes the attempts past the retention, pruneBatch at a time
// while batches come back full, and returns how many it deleted.
func (r *attemptRecorder) prune(ctx context.Context) (int, error) {
	before := r.now().Add(-r.retention)
	total := 0
	for {
		n, err := r.log.PruneAttempts(ctx, before, pruneBatch)
		total += n
		if err != nil || n < pruneBatch || ctx.Err() != nil {
			return total, err
		}
	}
}

// attemptOf is the record of delivery d, made at start, that took took
// and returned err, with what the handler put in d.Response.
func attemptOf(d Delivery, start time.Time, took time.Duration, err error) Attempt {
	a := Attempt{Job: d.Job.ID, Attempt: d.Attempt, StartedAt: start, Duration: took}
	if d.Response != nil {
		a.StatusCode, a.Excerpt = d.Response.StatusCode, d.Response.Excerpt
	}
	if err != nil {
		a.Error = err.Error()
		if a.StatusCode == 0 {
			a.StatusCode = statusOf(err)
		}
	}
	return a
}
