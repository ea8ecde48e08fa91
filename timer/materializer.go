package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of the Materializer.
const (
	// DefaultLookahead is how far ahead occurrences become jobs: far
	// enough that a job due every second is in Redis before it is due,
	// whatever a pass or a commit costs.
	DefaultLookahead = 3 * time.Second
	// DefaultMaterializeInterval is how often the materializer looks for
	// due schedules when nothing wakes it.
	DefaultMaterializeInterval = 500 * time.Millisecond
	// DefaultLate is how late an occurrence may be found and still be
	// fired as usual; later, it was missed and the catch-up policy
	// decides.
	DefaultLate = 2 * time.Second
	// DefaultMaterializeBatch is how many schedules one pass reads.
	DefaultMaterializeBatch = 100
	// SkipLogInterval is the least time between two log lines about the
	// skipped occurrences of one schedule; those skipped between are
	// counted in the next.
	SkipLogInterval = time.Minute
)

// JobScheduler commits one job; *Scheduler implements it.
type JobScheduler interface {
	// Schedule commits r; a repeated idempotency key returns the
	// existing job (Created false), or an error IsKeyMismatch reports.
	Schedule(ctx context.Context, r Request) (Result, error)
}

// MaterializerConfig configures a Materializer. The zero value is usable
// but for Cron, without which cron schedules are skipped.
type MaterializerConfig struct {
	// Lookahead: occurrences due within it become jobs (default
	// DefaultLookahead).
	Lookahead time.Duration
	// Interval between passes (default DefaultMaterializeInterval).
	Interval time.Duration
	// Late: an occurrence found later than this after its time was missed
	// (default DefaultLate).
	Late time.Duration
	// BatchSize: schedules read per pass (default DefaultMaterializeBatch).
	BatchSize int
	// Cron reads cron expressions (package timer/cron).
	Cron CronParser
	// Admit, when set, is asked before each occurrence's job is made,
	// whether the schedule's owner (Schedule.Owner) may have one more
	// pending job. An error IsQuota reports skips the occurrence: the
	// cursor moves past it as past a job made, and the schedule counts
	// it (Schedule.Skipped, the Observer's OccurrencesSkipped). Skipped,
	// not held: occurrences held while the quota is full would all come
	// at once when it frees. Any other error leaves the cursor for the
	// next pass to try again.
	Admit func(ctx context.Context, s *Schedule) error
	// Observer counts the occurrences skipped (default NopObserver).
	Observer Observer
	Now      func() time.Time
	Logger   *slog.Logger
}

// Validate reports the first field of c that is out of range.
func (c MaterializerConfig) Validate() error {
	switch {
	case c.Lookahead < 0:
		return invalid("Lookahead", "must not be negative")
	case c.Interval < 0:
		return invalid("Interval", "must not be negative")
	case c.Late < 0:
		return invalid("Late", "must not be negative")
	case c.BatchSize < 0:
		return invalid("BatchSize", "must not be negative")
	}
	return nil
}

func (c MaterializerConfig) withDefaults() MaterializerConfig {
	c.Lookahead = cmp.Or(c.Lookahead, DefaultLookahead)
	c.Interval = cmp.Or(c.Interval, DefaultMaterializeInterval)
	c.Late = cmp.Or(c.Late, DefaultLate)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultMaterializeBatch)
	fillCommon(&c.Now, &c.Logger, &c.Observer)
	return c
}

// Materializer turns the occurrences of schedules into ordinary jobs,
// Lookahead before they are due, through the scheduling path; the worker
// fires them like any other job.
//
// Each occurrence's job has the idempotency key ScheduleKey, and the
// schedule's cursor moves past it only after the job is committed, by a
// compare-and-set on the old cursor (ScheduleWriter.AdvanceSchedule). So
// a materializer that dies between the two leaves the cursor where it
// was, and the next pass (its own after a restart, or another member's)
// makes the same jobs again, which the keys turn into the existing ones:
// no occurrence is skipped or doubled. That makes it safe for every
// member of a cluster to run one, which is what toc does: no leader to
// lose, at the cost of each member reading the due schedules each pass.
type Materializer struct {
	store ScheduleStore
	jobs  JobScheduler
	cfg   MaterializerConfig
	wake  chan struct{}
	skips skipLog
}

// NewMaterializer returns a Materializer of store's schedules, making
// jobs with jobs.
func NewMaterializer(store ScheduleStore, jobs JobScheduler, cfg MaterializerConfig) (*Materializer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("materializer config: %w", err)
	}
	return &Materializer{store: store, jobs: jobs, cfg: cfg.withDefaults(), wake: make(chan struct{}, 1)}, nil
}

// Wake makes the next pass start at once: a schedule was created or
// resumed, and its first occurrence may be within the lookahead.
func (m *Materializer) Wake() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run materializes schedules until ctx is done, then returns nil.
func (m *Materializer) Run(ctx context.Context) error {
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-m.wake:
		}
		n, err := m.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			m.cfg.Logger.Warn("schedules not materialized; retrying", "dep", "task_store", "err", err)
		}
		wait := m.cfg.Interval
		if err == nil && n >= m.cfg.BatchSize {
			wait = 0
		}
		tick.Reset(wait)
	}
}

// RunOnce is one pass, as Backstop.RunOnce is one scan: it materializes
// the schedules due within the lookahead and returns how many it read.
// Run calls it; tests that drive the clock call it directly.
func (m *Materializer) RunOnce(ctx context.Context) (int, error) {
	now := m.cfg.Now()
	due, err := m.store.DueSchedules(ctx, now.Add(m.cfg.Lookahead), m.cfg.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("read due schedules: %w", err)
	}
	var refused error
	for _, s := range due {
		err := m.materialize(ctx, s, now)
		if _, ok := errors.AsType[*admitError](err); ok {
			// This schedule's owner could not be checked: it waits for
			// the next pass, the others go on.
			if refused == nil {
				refused = err
			}
			continue
		}
		if err != nil {
			return len(due), err
		}
	}
	return len(due), refused
}

// admitError is an error of MaterializerConfig.Admit that is not a
// quota's.
type admitError struct{ err error }

func (e *admitError) Error() string { return e.err.Error() }
func (e *admitError) Unwrap() error { return e.err }

// materialize makes the jobs of s's occurrences up to now + Lookahead,
// then moves its cursor past them.
func (m *Materializer) materialize(ctx context.Context, s *Schedule, now time.Time) error {
	r, err := s.Recurrence(m.cfg.Cron)
	if err != nil {
		// A row this toc cannot read (another version wrote it): leave it.
		m.cfg.Logger.Error("schedule skipped: its rule does not read", "schedule", s.ID.String(), "err", err)
		return nil
	}
	times, next := plan(r, s, now, m.cfg.Late, m.cfg.Lookahead)
	var skipped int64
	var reason string
	for _, t := range times {
		if m.cfg.Admit != nil {
			if err := m.cfg.Admit(ctx, s); IsQuota(err) {
				skipped, reason = skipped+1, skipReason(err)
				continue
			} else if err != nil {
				return &admitError{fmt.Errorf("schedule %s: occurrence %s: admit: %w", s.ID, t.UTC().Format(time.RFC3339Nano), err)}
			}
		}
		_, err := m.jobs.Schedule(ctx, s.Job.Request(s.ID, t))
		switch {
		case err == nil:
		case IsKeyMismatch(err), errors.Is(err, ErrInvalid), errors.Is(err, ErrNotFound):
			// It can never be made (the key taken by another job, the
			// topic gone or over the cap): a retry would stop the
			// schedule for good, so the occurrence is dropped.
			m.cfg.Logger.Warn("schedule occurrence dropped", "schedule", s.ID.String(), "at", t.UTC().Format(time.RFC3339Nano), "err", err)
		default:
			return fmt.Errorf("schedule %s: occurrence %s: %w", s.ID, t.UTC().Format(time.RFC3339Nano), err)
		}
	}
	if skipped == 0 {
		if _, err := m.store.AdvanceSchedule(ctx, s.ID, s.Next, next, now); err != nil {
			return fmt.Errorf("schedule %s: advance: %w", s.ID, err)
		}
		return nil
	}
	// Not cut short by a shutdown: a statement cancelled after it
	// committed would leave the skips in the row and out of the metric.
	ok, err := m.store.SkipOccurrences(context.WithoutCancel(ctx), s.ID, s.Next, next, skipped, reason, now)
	if err != nil {
		return fmt.Errorf("schedule %s: advance past %d skipped: %w", s.ID, skipped, err)
	}
	if ok {
		// Counted by the member whose cursor move won, once.
		m.cfg.Observer.OccurrencesSkipped(s.Job.Topic, SkipPendingQuota, int(skipped))
		m.skips.note(m.cfg.Logger, s.ID, skipped, reason, m.cfg.Now())
	}
	return nil
}

// skipLog writes the log lines of skipped occurrences, at most one for a
// schedule each SkipLogInterval.
type skipLog struct {
	mu sync.Mutex
	// last is when each schedule's last line was written; quiet, the
	// occurrences skipped since, not yet written.
	last  map[ScheduleID]time.Time
	quiet map[ScheduleID]int64
	// pruneAt is the size of last at which the schedules not logged for
	// an interval are forgotten: twice what was left after the last
	// pruning, so that pruning costs O(1) a line, amortized.
	pruneAt int
}

// minSkipLogPrune is the least size of skipLog.last that is pruned.
const minSkipLogPrune = 1024

// note counts n more skipped occurrences of schedule id and writes them
// unless a line about it was written less than SkipLogInterval ago.
func (l *skipLog) note(log *slog.Logger, id ScheduleID, n int64, reason string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last, l.quiet = make(map[ScheduleID]time.Time), make(map[ScheduleID]int64)
	}
	n += l.quiet[id]
	if at, ok := l.last[id]; ok && now.Sub(at) < SkipLogInterval {
		l.quiet[id] = n
		return
	}
	delete(l.quiet, id)
	l.last[id] = now
	log.Warn("schedule occurrences skipped: over quota", "schedule", id.String(), "skipped", n,
		"reason", SkipPendingQuota, "err", reason)
	// Forget the schedules logged an interval ago or more, so that the
	// maps hold those skipping now (the count of the occurrences of
	// theirs not yet logged is in Schedule.Skipped and the metric).
	if len(l.last) >= max(l.pruneAt, minSkipLogPrune) {
		for k, at := range l.last {
			if now.Sub(at) >= SkipLogInterval {
				delete(l.last, k)
				delete(l.quiet, k)
			}
		}
		l.pruneAt = 2 * len(l.last)
	}
}

// plan returns the occurrences of s to make into jobs at now, and the
// cursor after them. From the cursor on, occurrences more than late
// before now were missed: the catch-up policy picks which of them fire
// (none, the latest, or all up to MaxCatchUp, the earliest). The rest, up
// to now + lookahead, all fire.
func plan(r Recurrence, s *Schedule, now time.Time, late, lookahead time.Duration) (times []time.Time, next time.Time) {
	missed := now.Add(-late)
	t := s.Next
	if !t.IsZero() && t.Before(missed) {
		switch s.CatchUp {
		case CatchUpAll:
			for ; !t.IsZero() && t.Before(missed) && len(times) < MaxCatchUp; t = r.Next(t) {
				times = append(times, t)
			}
		case CatchUpLast:
			times = append(times, lastBefore(r, t, missed))
		}
		if !t.IsZero() && t.Before(missed) {
			t = r.Next(missed.Add(-time.Nanosecond))
		}
	}
	horizon := now.Add(lookahead)
	for ; !t.IsZero() && !t.After(horizon); t = r.Next(t) {
		times = append(times, t)
	}
	return times, t
}

// lastBefore returns the last occurrence of r before before, from the
// occurrence from (before before) on. It looks back from before over
// windows that double, so that it visits about as many occurrences as lie
// in the last window, not every one since from.
func lastBefore(r Recurrence, from, before time.Time) time.Time {
	for d := time.Second; ; d *= 2 {
		lo := before.Add(-d)
		whole := !lo.After(from)
		if whole {
			lo = from.Add(-time.Nanosecond)
		}
		if t := r.Next(lo); !t.IsZero() && t.Before(before) {
			for n := r.Next(t); !n.IsZero() && n.Before(before); n = r.Next(n) {
				t = n
			}
			return t
		}
		if whole {
			return from
		}
	}
}
