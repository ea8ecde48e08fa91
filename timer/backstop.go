package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

// Defaults of the backstop.
const (
	DefaultBackstopInterval = 5 * time.Second
	DefaultFullScanInterval = time.Minute
	DefaultScanPage         = 2000
	DefaultLossCheck        = time.Second
	// scanOverlap re-reads this much due time below the last incremental
	// scan's end, so that clocks a little apart across processes cannot
	// make a job fall between two scans.
	scanOverlap = time.Minute
	// scanSoon: a full scan first restores the jobs due within this
	// long, every topic's, then the rest of the horizon.
	scanSoon = 30 * time.Second
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
	Page int
	// LossCheck is how often the backstop asks a LossDetector index
	// whether Redis lost its data.
	LossCheck time.Duration
	// Owner, when set, says which task store shards this backstop scans
	// (in a cluster, one member per shard); nil: every shard. A repair
	// (see Backstop.Repair) scans every shard all the same: the jobs whose
	// index write failed here may be in any.
	Owner    ShardOwner
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer
}

// Validate reports the first field of c that is out of range.
func (c BackstopConfig) Validate() error {
	switch {
	case c.Horizon < 0:
		return invalid("Horizon", "must not be negative")
	case c.Interval < 0:
		return invalid("Interval", "must not be negative")
	case c.FullInterval < 0:
		return invalid("FullInterval", "must not be negative")
	case c.Page < 0:
		return invalid("Page", "must not be negative")
	case c.LossCheck < 0:
		return invalid("LossCheck", "must not be negative")
	}
	return nil
}

func (c BackstopConfig) withDefaults() BackstopConfig {
	c.Horizon = cmp.Or(c.Horizon, DefaultHorizon)
	c.Interval = cmp.Or(c.Interval, DefaultBackstopInterval)
	c.FullInterval = cmp.Or(c.FullInterval, DefaultFullScanInterval)
	c.Page = cmp.Or(c.Page, DefaultScanPage)
	c.LossCheck = cmp.Or(c.LossCheck, DefaultLossCheck)
	fillCommon(&c.Now, &c.Logger, &c.Observer)
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
//
// Each pass also ends the jobs whose deadline passed while they waited
// unclaimed, when the store can find them (OverdueScanner): a paused
// topic's jobs expire within about Interval of their deadline, not when
// the topic is resumed.
//
// Over a Sharded store each shard is scanned on its own: a shard that
// does not answer fails its own scan, which is tried again (in full, if
// it was a full one) at the next check, and the others go on.
type Backstop struct {
	shards []shardScan
	index  Index
	cfg    BackstopConfig
	wake   func(Wake)
	// ended, when set, hears of the group of each member the backstop
	// ended expired (see OnEnded).
	ended func(group string)
	// repair asks for a full scan at once (see Repair).
	repair atomic.Bool
	// adopt, when set, creates anew the topics of pending jobs whose
	// topic has no row (see OnOrphans).
	adopt func(ctx context.Context, topics []string) (map[string]Topic, error)
}

// OnOrphans registers fn to create anew the topics that pending jobs name
// but the store no longer holds (deleted while a job was scheduled into
// it: Scheduler.DeleteTopic), so that those jobs fire; without it they
// are left alone, with a warning. Call it before Run.
func (b *Backstop) OnOrphans(fn func(ctx context.Context, topics []string) (map[string]Topic, error)) {
	b.adopt = fn
}

// ShardOwner tells a Backstop which shards are its own to scan.
type ShardOwner interface {
	OwnsShard(shard int) bool
}

// shardScan is the backstop's state of one shard.
type shardScan struct {
	store Scanner
	// mark is the end of the due-time range the last scan covered; zero
	// until a full scan succeeds.
	mark time.Time
	// owesFull: the last full scan of this shard failed.
	owesFull bool
}

// OnEnded registers fn to hear of the group of each member the backstop
// ends expired: the GroupCompleter's cue. Call it before Run.
func (b *Backstop) OnEnded(fn func(group string)) { b.ended = fn }

// Repair asks for a full scan as soon as possible: an index write after a
// commit failed or was skipped. The scan is tried every LossCheck until
// one succeeds. Safe for any goroutine; it never blocks.
func (b *Backstop) Repair() { b.repair.Store(true) }

// NewBackstop returns a backstop over store and index; wake (may be nil)
// hears of slots whose earliest job moved earlier.
func NewBackstop(store Scanner, index Index, wake func(Wake), cfg BackstopConfig) *Backstop {
	if wake == nil {
		wake = func(Wake) {}
	}
	b := &Backstop{index: index, cfg: cfg.withDefaults(), wake: wake}
	if sh, ok := store.(Sharded); ok && sh.Shards() > 1 {
		for i := range sh.Shards() {
			b.shards = append(b.shards, shardScan{store: sh.Scanner(i)})
		}
	} else {
		b.shards = []shardScan{{store: store}}
	}
	return b
}

// Run scans at once and then on its intervals until ctx is done. When
// the index is a LossDetector, a full scan also runs as soon as the index
// says it lost its data (checked every LossCheck).
func (b *Backstop) Run(ctx context.Context) error {
	detector, _ := b.index.(LossDetector)
	var lastFull, lastScan time.Time
	for {
		now := b.cfg.Now()
		repair := b.repair.Swap(false)
		full := lastFull.IsZero() || now.Sub(lastFull) >= b.cfg.FullInterval || repair
		if !full && detector != nil {
			lost, err := detector.Lost(ctx)
			if err != nil && ctx.Err() == nil {
				b.cfg.Logger.Warn("backstop: loss check failed", "dep", "redis", "err", err)
			}
			if lost {
				b.cfg.Logger.Warn("backstop: Redis lost its data; restoring every pending job within the horizon")
				full = true
			}
		}
		if full || now.Sub(lastScan) >= b.cfg.Interval {
			if full && detector != nil {
				// Marked before the scan: a loss during the scan removes the
				// mark, and the next check scans again.
				if err := detector.Mark(ctx); err != nil && ctx.Err() == nil {
					b.cfg.Logger.Warn("backstop: mark failed", "dep", "redis", "err", err)
				}
			}
			n, err := b.runOnce(ctx, full, repair)
			switch {
			case ctx.Err() != nil:
				return nil
			case err != nil:
				// A shard whose full scan failed scans in full at the next
				// try (shardScan.owesFull), which comes at the next check:
				// lastScan stays as it was.
				b.cfg.Logger.Warn("backstop scan failed", "dep", "task_store or redis", "full", full, "err", err)
			default:
				lastScan = b.cfg.Now()
				if full {
					lastFull = lastScan
				}
				if n > 0 || full {
					b.cfg.Logger.Debug("backstop scan", "full", full, "restored", n)
				}
			}
		}
		wait := min(b.cfg.Interval, b.cfg.LossCheck)
		if pause.For(ctx, wait) != nil {
			return nil
		}
	}
}

// RunOnce scans every shard once, fully or from its last mark (fully, a
// shard whose last full scan failed), and returns how many jobs it
// restored to Redis. Not safe for concurrent use.
//
// With an Owner it scans only the shards it owns, and forgets what it
// knew of the others, so that a shard it comes to own is scanned in full.
func (b *Backstop) RunOnce(ctx context.Context, full bool) (int, error) {
	return b.runOnce(ctx, full, false)
}

// runOnce is RunOnce, of every shard when all is set.
func (b *Backstop) runOnce(ctx context.Context, full, all bool) (int, error) {
	var scan []int
	for i := range b.shards {
		if all || b.cfg.Owner == nil || b.cfg.Owner.OwnsShard(i) {
			scan = append(scan, i)
		} else {
			b.shards[i] = shardScan{store: b.shards[i].store}
		}
	}
	if len(scan) == 1 {
		return b.runShard(ctx, &b.shards[scan[0]], full)
	}
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		errs  = make([]error, len(b.shards))
	)
	for _, i := range scan {
		wg.Go(func() {
			n, err := b.runShard(ctx, &b.shards[i], full)
			total.Add(int64(n))
			if err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	return int(total.Load()), errors.Join(errs...)
}

// runShard scans one shard, fully or from its mark, then ends the jobs
// of the shard whose deadline passed while they waited unclaimed (see
// OverdueScanner). Reading the next page overlaps restoring the last one.
func (b *Backstop) runShard(ctx context.Context, sh *shardScan, full bool) (int, error) {
	full = full || sh.owesFull
	n, err := b.scanShard(ctx, sh, full)
	sh.owesFull = err != nil && full
	expired, expErr := b.expireOverdue(ctx, sh.store)
	if expired > 0 {
		b.cfg.Logger.Debug("backstop: jobs past their deadline ended expired", "jobs", expired)
	}
	return n, errors.Join(err, expErr)
}

func (b *Backstop) scanShard(ctx context.Context, sh *shardScan, full bool) (int, error) {
	now := b.cfg.Now()
	end := now.Add(b.cfg.Horizon)
	// A full scan restores what is due soon first: the scan goes topic by
	// topic, and after a loss of Redis a job due in a second must not
	// wait behind a later topic's hour of jobs. An incremental scan reads
	// only the due times that entered the horizon since the last.
	soon := now.Add(scanSoon)
	if soon.After(end) {
		soon = end
	}
	ranges := []ScanQuery{{Before: soon}, {Since: soon, Before: end}}
	if !full && !sh.mark.IsZero() {
		ranges = []ScanQuery{{Since: sh.mark.Add(-scanOverlap), Before: end}}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan []Timer, 2)
	scanErr := make(chan error, 1)
	go func() {
		defer close(pages)
		for _, q := range ranges {
			if err := b.scanPages(ctx, sh.store, q, pages); err != nil {
				scanErr <- fmt.Errorf("scan pending: %w", err)
				return
			}
		}
	}()
	// Two restorers: Redis runs one script at a time, but their round
	// trips overlap.
	var (
		restored atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for range restorers {
		wg.Go(func() {
			for timers := range pages {
				n, err := b.restore(ctx, timers)
				restored.Add(int64(n))
				if err != nil {
					errMu.Lock()
					firstErr = cmp.Or(firstErr, err)
					errMu.Unlock()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return int(restored.Load()), firstErr
	}
	select {
	case err := <-scanErr:
		return int(restored.Load()), err
	default:
	}
	n := int(restored.Load())
	if n > 0 {
		b.cfg.Observer.Repaired(n)
	}
	sh.mark = end
	return n, nil
}

// scanPages sends the pages of q's due times to pages.
func (b *Backstop) scanPages(ctx context.Context, store Scanner, q ScanQuery, pages chan<- []Timer) error {
	q.Limit = b.cfg.Page
	for {
		timers, err := store.ScanPending(ctx, q)
		if err != nil {
			return fmt.Errorf("after %q %v: %w", q.After.Topic, q.After.DueAt, err)
		}
		if len(timers) == 0 {
			return nil
		}
		q.After = ScanCursorOf(timers[len(timers)-1])
		select {
		case pages <- timers:
		case <-ctx.Done():
			return nil
		}
		if len(timers) < b.cfg.Page {
			return nil
		}
	}
}

// restorers is the number of pages restored at once.
const restorers = 2

// restore puts one page's timers back where they are missing.
func (b *Backstop) restore(ctx context.Context, timers []Timer) (int, error) {
	timers = b.adoptOrphans(ctx, timers)
	if len(timers) == 0 {
		return 0, nil
	}
	n, wakes, err := b.index.Restore(ctx, timers)
	if err != nil {
		return 0, fmt.Errorf("restore %d timers: %w", len(timers), err)
	}
	for _, w := range wakes {
		b.wake(w)
	}
	return n, nil
}

// adoptOrphans gives the timers whose topic has no row (Slots 0) their
// topic back, created anew by the OnOrphans hook, and drops those whose
// topic it cannot create.
func (b *Backstop) adoptOrphans(ctx context.Context, timers []Timer) []Timer {
	var orphans []string
	for _, t := range timers {
		if t.Slots == 0 && !slices.Contains(orphans, t.Topic) {
			orphans = append(orphans, t.Topic)
		}
	}
	if len(orphans) == 0 {
		return timers
	}
	var adopted map[string]Topic
	if b.adopt != nil {
		var err error
		if adopted, err = b.adopt(ctx, orphans); err != nil {
			b.cfg.Logger.Warn("backstop: could not create the topics of pending jobs again", "topics", orphans, "err", err)
		}
	}
	for _, name := range orphans {
		if _, ok := adopted[name]; ok {
			b.cfg.Logger.Warn("backstop: pending jobs named a deleted topic; it is created again with the defaults", "topic", name)
		} else {
			b.cfg.Logger.Warn("backstop: pending jobs of an unknown topic left alone", "topic", name)
		}
	}
	for i := range timers {
		if timers[i].Slots == 0 {
			timers[i].Slots = adopted[timers[i].Topic].Slots
		}
	}
	return slices.DeleteFunc(timers, func(t Timer) bool { return t.Slots == 0 })
}
