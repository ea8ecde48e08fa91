package timer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Defaults of the backstop.
const (
	DefaultBackstopInterval = 5 * time.Second
	DefaultFullScanInterval = time.Minute
	DefaultScanPage         = 1000
	// scanOverlap re-reads this much due time below the last incremental
	// scan's end, so that clocks a little apart across processes cannot
	// make a job fall between two scans.
	scanOverlap = time.Minute
)

// BackstopConfig configures a Backstop. The zero value is usable.
type BackstopConfig struct {
	// Horizon: the backstop indexes pending jobs due before now+Horizon
	// (default DefaultHorizon; use the scheduler's).
	Horizon time.Duration
	// Interval between incremental scans, which load the jobs that came
	// within the horizon since the last scan.
	Interval time.Duration
	// FullInterval between full scans, which re-check every pending job
	// within the horizon against Redis.
	FullInterval time.Duration
	// Page is the rows read per query.
	Page     int
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer
}

func (c BackstopConfig) withDefaults() BackstopConfig {
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.Interval = cmp.Or(c.Interval, DefaultBackstopInterval)
	c.FullInterval = cmp.Or(c.FullInterval, DefaultFullScanInterval)
	c.Page = cmp.Or(c.Page, DefaultScanPage)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	return c
}

// Backstop makes "committed ⇒ fired" hold when Redis loses data or a
// Redis write fails after a commit: it scans the task store for pending
// jobs due within the horizon and restores those missing from every set
// of their slot. The same scan loads far-future jobs into Redis as they
// come within the horizon, so Redis holds only the next Horizon of work.
//
// A full scan runs at start and every FullInterval; between them an
// incremental scan every Interval reads only the due times that entered
// the horizon since the last scan.
type Backstop struct {
	store Scanner
	index Index
	cfg   BackstopConfig
	wake  func(Wake)
	// mark is the end of the due-time range the last scan covered; zero
	// until a full scan succeeds.
	mark time.Time
}

// NewBackstop returns a backstop over store and index; wake (may be nil)
// hears of slots whose earliest job moved earlier.
func NewBackstop(store Scanner, index Index, wake func(Wake), cfg BackstopConfig) *Backstop {
	if wake == nil {
		wake = func(Wake) {}
	}
	return &Backstop{store: store, index: index, cfg: cfg.withDefaults(), wake: wake}
}

// Run scans at once and then on its intervals until ctx is done. When
// the index is a LossDetector, a full scan also runs as soon as the index
// says it lost its data (checked every Interval).
func (b *Backstop) Run(ctx context.Context) error {
	lastFull := time.Time{}
	detector, _ := b.index.(LossDetector)
	for {
		full := lastFull.IsZero() || b.cfg.Now().Sub(lastFull) >= b.cfg.FullInterval
		if !full && detector != nil {
			lost, err := detector.Lost(ctx)
			if err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("backstop: loss check failed", "err", err)
			}
			if lost {
				b.cfg.Logger.Warn("backstop: Redis lost its data; restoring every pending job within the horizon")
				full = true
			}
		}
		if full && detector != nil {
			// Marked before the scan: a loss during the scan removes the
			// mark, and the next check scans again.
			if err := detector.Mark(ctx); err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("backstop: mark failed", "err", err)
			}
		}
		n, err := b.RunOnce(ctx, full)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			b.cfg.Logger.Warn("backstop scan failed", "full", full, "err", err)
		case full:
			lastFull = b.cfg.Now()
			fallthrough
		case n > 0:
			b.cfg.Logger.Debug("backstop scan", "full", full, "restored", n)
		}
		if sleep(ctx, b.cfg.Interval) != nil {
			return nil
		}
	}
}

// RunOnce scans once, fully or from the last mark, and returns how many
// jobs it restored to Redis. Not safe for concurrent use.
func (b *Backstop) RunOnce(ctx context.Context, full bool) (int, error) {
	now := b.cfg.Now()
	end := now.Add(b.cfg.Horizon)
	var cur Cursor // zero: a full scan
	if !full && !b.mark.IsZero() {
		cur = Cursor{DueAt: b.mark.Add(-scanOverlap)}
	}
	restored := 0
	for {
		timers, err := b.store.ScanPending(ctx, cur, end, b.cfg.Page)
		if err != nil {
			return restored, fmt.Errorf("scan pending after %v: %w", cur.DueAt, err)
		}
		if len(timers) == 0 {
			break
		}
		last := timers[len(timers)-1]
		full := len(timers) == b.cfg.Page
		timers = slices.DeleteFunc(timers, func(t Timer) bool {
			if t.Slots == 0 {
				// A row whose topic has no row: the scheduler creates the
				// topic before the job, so only a hand-made row gets here.
				b.cfg.Logger.Warn("backstop: pending job of an unknown topic left alone", "job", t.ID.String(), "topic", t.Topic)
				return true
			}
			return false
		})
		n, wakes, err := 0, []Wake(nil), error(nil)
		if len(timers) > 0 {
			n, wakes, err = b.index.Restore(ctx, timers)
		}
		if err != nil {
			return restored, fmt.Errorf("restore %d timers: %w", len(timers), err)
		}
		restored += n
		for _, w := range wakes {
			b.wake(w)
		}
		cur = Cursor{DueAt: last.DueAt, ID: last.ID}
		if !full {
			break
		}
	}
	if restored > 0 {
		b.cfg.Observer.Repaired(restored)
	}
	b.mark = end
	return restored, nil
}
