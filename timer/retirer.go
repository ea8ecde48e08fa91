package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

// Defaults of the retirer.
const (
	// DefaultRetireBatch is the most rows one DELETE removes.
	DefaultRetireBatch = 1000
	// DefaultRetireInterval is the wait between passes once a pass found
	// nothing left past its retention.
	DefaultRetireInterval = 10 * time.Second
	// DefaultRetireDuty is the share of its time the retirer spends in
	// the task store while it has a backlog: after a batch that took d it
	// waits d*(1-duty)/duty, so that the fire path's statements find the
	// database free most of the time.
	DefaultRetireDuty = 0.25
	// DefaultRetireYield is the fire path's lateness above which the
	// retirer waits before its next batch (RetirerConfig.YieldAbove).
	DefaultRetireYield = 5 * time.Millisecond
	// retireMaxYield bounds one wait for the fire path: a retirer that
	// always yielded would never work off a backlog under a steady load
	// that is a little late.
	retireMaxYield = time.Second
	// retireYieldStep is how often a yielding retirer looks again.
	retireYieldStep = 50 * time.Millisecond
	// retireYieldBatches is the backlog, in batches, above which the
	// retirer does not yield: one that yielded whenever the fire path was
	// a little late, on a machine where it always is, fell behind a
	// steady load and let the store grow (the soak at 1,000 jobs/s: 975
	// rows deleted a second). While it is behind it works at its duty
	// only; once it has caught up it yields again.
	retireYieldBatches = 10
	// retireCountMax bounds the rows past retention a survey counts per
	// topic, status and shard; beyond it the count is the database's
	// estimate.
	retireCountMax = 1_000
)

// retireLook is how often a pass that started with ten batches or
// more past retention looks whether it keeps up: whether the sweep's
// front (the end time of the oldest job it has yet to delete) moved as
// far as the clock. Not as far, and the retirer is losing ground, so it
// works twice the share of its time (at most all of it); more than twice
// as far, half (at least Duty). A load its deletes cannot follow at Duty
// (a slow or busy database: the soak at 1,000 jobs/s beside CI's other
// tests deleted about 540 a second at 0.25) would otherwise make the
// store grow without bound; the duty settles about where the deletes
// keep up, and a backlog that shrinks (retention turned on over an aged
// store) is worked off at Duty. The pass goes on from where it is: one
// that started again from the oldest row to count afresh walked, on an
// aged store, over the rows it had just deleted, which the database had
// not yet purged, and made the fire path late.
const retireLook = 10 * time.Second

// RetireStore is a task store (or one shard of it) whose ended jobs can
// be deleted once past their retention. Every method reads or deletes
// only ended rows: never a pending or firing one.
type RetireStore interface {
	// EndedClasses returns, for each topic and status of the ended jobs
	// the store holds, when the retention of the first of them to go
	// started: its end, or its due time if later (a cancel before it).
	EndedClasses(ctx context.Context) ([]EndedClass, error)
	// EndedJobs returns up to limit jobs of topic that ended in status st
	// before before, after the cursor (zero: from the oldest), in the
	// order they ended. It reads an index, not the rows of live jobs;
	// for jobs but the dead it may read by due time instead, asking for
	// both before before, and then goes in that order: a done, expired or
	// purged job ends at or after its due time, so the orders differ by an
	// attempt's length, and a job cancelled before it was due is kept
	// until its due time too is past retention. A job that ends after the
	// cursor has passed it (one read within an attempt's length of the
	// window's end) is found by the next pass.
	EndedJobs(ctx context.Context, topic string, st Status, before time.Time, after EndedJob, limit int) ([]EndedJob, error)
	// DeleteEnded deletes the jobs of ids that are still ended, at or
	// before until, with their attempts (AttemptLog), and returns how
	// many jobs it deleted. A job replayed since it was read has no end,
	// or a later one once it ends again, and is kept.
	DeleteEnded(ctx context.Context, ids []JobID, until time.Time) (int, error)
	// CountEnded counts the jobs of topic that ended in st before before:
	// exactly up to limit, beyond it the database's estimate (exact is
	// false then).
	CountEnded(ctx context.Context, topic string, st Status, before time.Time, limit int64) (n int64, exact bool, err error)
}

// EndedClass is the ended jobs of one topic and status in a store.
type EndedClass struct {
	Topic  string
	Status Status
	// Oldest is when the retention of the first of them to go started:
	// its end, or its due time if later (a cancel before it).
	Oldest time.Time
}

// EndedJob is a job EndedJobs found: when it ended and the group it is a
// member of ("" for none).
type EndedJob struct {
	ID      JobID
	EndedAt time.Time
	// DueAt is the job's due time: the cursor of a store that reads done
	// jobs by due time.
	DueAt time.Time
	Group string
}

// RetireSharded is implemented by a sharded store: the RetireStore of
// each shard, so that a shard that does not answer holds up only its own
// retirement, and each member of a cluster retires the shards it owns.
type RetireSharded interface {
	Shards() int
	RetireShard(shard int) RetireStore
}

// GroupRetirer is implemented by a store that keeps groups: their rows
// retire once complete, past the done retention, and without members.
type GroupRetirer interface {
	// FinishedGroups returns up to limit ids of the groups whose
	// completion ended (the on_complete job made, or none to make)
	// before before, oldest first, after the group with id after
	// completed at afterAt.
	FinishedGroups(ctx context.Context, before time.Time, afterAt time.Time, after string, limit int) ([]FinishedGroup, error)
	// GroupsWithMembers returns which of ids still have a member row.
	GroupsWithMembers(ctx context.Context, ids []string) (map[string]bool, error)
	// DeleteGroups deletes the rows of the groups of ids that are still
	// finished, completed before before and without members.
	DeleteGroups(ctx context.Context, ids []string, before time.Time) (int, error)
}

// FinishedGroup is a group FinishedGroups found.
type FinishedGroup struct {
	ID          string
	CompletedAt time.Time
}

// AuditPruner is implemented by a store whose audit log is pruned by age.
type AuditPruner interface {
	// PruneAudit deletes up to limit audit entries recorded before before,
	// oldest first, and returns how many it deleted.
	PruneAudit(ctx context.Context, before time.Time, limit int) (int, error)
}

// RetireObserver is implemented by an Observer that counts what the
// retirer deletes.
type RetireObserver interface {
	// Retired: n jobs of topic that ended in st were deleted.
	Retired(topic string, st Status, n int)
}

// RetirerConfig configures a Retirer.
type RetirerConfig struct {
	// Retention is the global retention; a topic's own settings override
	// it field by field (Topic.Retention). Its zero fields keep forever.
	Retention Retention
	// AuditRetention is how long audit entries are kept; 0 keeps them
	// forever.
	AuditRetention time.Duration
	// Batch is the most rows one DELETE removes (at most
	// DefaultRetireBatch, the default).
	Batch int
	// Interval is the wait between passes once nothing is left past its
	// retention.
	Interval time.Duration
	// Duty is the share of its time the retirer works while it has a
	// backlog, in (0, 1]; default DefaultRetireDuty. While a pass that
	// started ten batches or more behind falls further behind, the
	// retirer works twice the share, up to all its time, and half once it
	// is far ahead (retireLook), so that the store cannot outgrow it.
	Duty float64
	// Lateness, when set, returns the fire path's largest lateness of
	// the last moment (Worker.RecentLateness; the Engine sets it). While
	// it is over YieldAbove the retirer waits before its next batch, up
	// to a second, so that its deletes do not add to a tail the fire
	// path already has; but only while it is keeping up: with ten
	// batches or more past their retention it does not wait, so that a
	// fire path always a little late cannot make the store grow.
	Lateness func() time.Duration
	// YieldAbove is that lateness: default DefaultRetireYield; negative:
	// the retirer never yields.
	YieldAbove time.Duration
	// Owner, when set, says which shards this process retires (in a
	// cluster, one member per shard); nil: every shard. Groups and the
	// audit log, in shard 0, are retired by shard 0's owner.
	Owner ShardOwner
	// Topics, when set, is where a pass finds a topic's retention, for
	// the topics it meets: the Engine sets its Catalog, which holds them
	// in memory. nil: each pass lists every topic from the store first,
	// which with 100,000 topics was most of an idle process's CPU.
	Topics   TopicLookup
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer
}

// Validate reports the first field of c that is out of range.
func (c RetirerConfig) Validate() error {
	switch {
	case c.Batch < 0 || c.Batch > DefaultRetireBatch:
		return invalid("Batch", "must be between 0 and %d", DefaultRetireBatch)
	case c.Interval < 0:
		return invalid("Interval", "must not be negative")
	case c.Duty < 0 || c.Duty > 1 || c.Duty != c.Duty:
		return invalid("Duty", "must be between 0 and 1")
	case c.AuditRetention < 0:
		return invalid("AuditRetention", "must not be negative")
	}
	return c.Retention.Validate("Retention")
}

func (c RetirerConfig) withDefaults() RetirerConfig {
	c.Batch = cmp.Or(c.Batch, DefaultRetireBatch)
	c.Interval = cmp.Or(c.Interval, DefaultRetireInterval)
	c.Duty = cmp.Or(c.Duty, DefaultRetireDuty)
	c.YieldAbove = cmp.Or(c.YieldAbove, DefaultRetireYield)
	fillCommon(&c.Now, &c.Logger, &c.Observer)
	return c
}

// Retirer deletes the jobs that ended longer ago than their retention,
// the groups that completed and lost their members so, and old audit
// entries, so that the task store holds a bounded window of history. It
// never touches a pending or firing job, nor a member of a group that
// has not completed.
//
// Each pass walks, per shard, the topics and statuses of ended jobs by
// their end time (an index of end times holds only ended rows, so the
// walk never reads a live one), all of them together a window of end
// times at a time (sweep), and deletes a batch at a time, pacing itself
// (Duty; more while losing ground) while it has a backlog and yielding
// to a late fire path (Lateness) while it is keeping up (fewer than
// retireYieldBatches batches past retention). It keeps no state but the
// duty of each shard's last pass: after a restart, or a shard's outage,
// the next pass starts again from the oldest row past its retention, at
// Duty.
type Retirer struct {
	shards []retireShard
	topics TopicLister
	groups GroupReader
	cfg    RetirerConfig
	obs    RetireObserver

	// The pass loop's alone: by shard, the duty the last pass ended at;
	// again when a pass left a shard behind, so the next goes at once.
	duties map[int]float64
	again  bool
	look   time.Duration // retireLook

	mu     sync.Mutex
	survey map[int][]RetireStat // by shard, of the last pass
}

type retireShard struct {
	store RetireStore
	index int
}

// TopicLister lists the topics with their settings: the retirer reads
// their retention at each pass.
type TopicLister interface {
	Topics(ctx context.Context) ([]Topic, error)
}

// TopicLookup finds one topic by name, with an error wrapping
// ErrNotFound for one that has no row: a Catalog.
type TopicLookup interface {
	Lookup(ctx context.Context, name string) (Topic, error)
}

// GroupReader reads a group's row: the retirer keeps the members of a
// group that has not completed.
type GroupReader interface {
	GetGroup(ctx context.Context, id string) (*Group, error)
}

// RetireStat is what the last pass saw of one topic and status in the
// shards this process retires.
type RetireStat struct {
	Topic  string
	Status Status
	// Oldest is when the oldest job still held ended.
	Oldest time.Time
	// Backlog counts the jobs past their retention still held (the
	// database's estimate beyond a few thousand a shard: Estimated).
	Backlog   int64
	Estimated bool
}

// NewRetirer returns a retirer over store, which must implement
// RetireStore or RetireSharded, and TopicLister; groups and the audit
// log are retired when it implements GroupRetirer and AuditPruner.
func NewRetirer(store any, cfg RetirerConfig) (*Retirer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Retirer{cfg: cfg.withDefaults(), survey: map[int][]RetireStat{}, duties: map[int]float64{}, look: retireLook}
	switch s := store.(type) {
	case RetireSharded:
		for i := range s.Shards() {
			r.shards = append(r.shards, retireShard{store: s.RetireShard(i), index: i})
		}
	case RetireStore:
		r.shards = []retireShard{{store: s}}
	default:
		return nil, fmt.Errorf("retirer: the store (%T) cannot delete ended jobs", store)
	}
	var ok bool
	if r.topics, ok = store.(TopicLister); !ok {
		return nil, fmt.Errorf("retirer: the store (%T) lists no topics", store)
	}
	r.groups, _ = store.(GroupReader)
	r.obs, _ = r.cfg.Observer.(RetireObserver)
	return r, nil
}

// Run retires at once and then after every Interval until ctx is done; a
// pass that has more to do than a batch goes on at once, paced by Duty.
func (r *Retirer) Run(ctx context.Context) error {
	for {
		if _, err := r.runOnce(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("retention: pass failed; the next pass tries again", "dep", "task_store", "err", err)
		}
		if r.again {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		if pause.For(ctx, r.cfg.Interval) != nil {
			return nil
		}
	}
}

// runOnce is one pass over every shard this process owns, then groups
// and the audit log; it returns how many rows it deleted. A shard that
// fails does not stop the others.
func (r *Retirer) runOnce(ctx context.Context) (int, error) {
	of, err := r.retentions(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	var errs []error
	r.again = false
	for _, sh := range r.shards {
		if r.cfg.Owner != nil && !r.cfg.Owner.OwnsShard(sh.index) {
			r.setSurvey(sh.index, nil)
			continue
		}
		n, err := r.retireShard(ctx, sh, of)
		total += n
		if err != nil {
			errs = append(errs, fmt.Errorf("shard %d: %w", sh.index, err))
		}
	}
	if r.cfg.Owner == nil || r.cfg.Owner.OwnsShard(0) {
		n, err := r.retireGroups(ctx)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
		n, err = r.pruneAudit(ctx)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// retentionOf is how long a pass keeps the jobs of a topic.
type retentionOf func(ctx context.Context, topic string) (Retention, error)

// retentions returns how a pass finds a topic's retention: its own
// settings over the global ones, and the global ones for a topic without
// a row. With cfg.Topics it looks each topic up once a pass, when the
// pass meets it among the ended jobs; without, it lists every topic now.
func (r *Retirer) retentions(ctx context.Context) (retentionOf, error) {
	if r.cfg.Topics != nil {
		seen := make(map[string]Retention)
		return func(ctx context.Context, topic string) (Retention, error) {
			if ret, ok := seen[topic]; ok {
				return ret, nil
			}
			t, err := r.cfg.Topics.Lookup(ctx, topic)
			switch {
			case errors.Is(err, ErrNotFound):
				seen[topic] = r.cfg.Retention
			case err != nil:
				return Retention{}, fmt.Errorf("read topic %s: %w", topic, err)
			default:
				seen[topic] = t.Retention.Over(r.cfg.Retention)
			}
			return seen[topic], nil
		}, nil
	}
	topics, err := r.topics.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	listed := make(map[string]Retention, len(topics))
	for _, t := range topics {
		listed[t.Name] = t.Retention.Over(r.cfg.Retention)
	}
	return func(_ context.Context, topic string) (Retention, error) {
		if ret, ok := listed[topic]; ok {
			return ret, nil
		}
		return r.cfg.Retention, nil
	}, nil
}

// retireShard deletes one shard's ended jobs past their retention. It
// surveys the shard before (so that the backlog shows while a long pass
// works it off) and again after; a shard still behind then, after a pass
// that deleted ten batches or more, is retired again at once.
func (r *Retirer) retireShard(ctx context.Context, sh retireShard, of retentionOf) (int, error) {
	classes, backlog, err := r.surveyShard(ctx, sh, of)
	if err != nil {
		return 0, err
	}
	now := r.cfg.Now()
	var due []*sweepClass
	for _, c := range classes {
		ret, err := of(ctx, c.Topic)
		if err != nil {
			return 0, err
		}
		keep := ret.Of(c.Status)
		if before := now.Add(-keep); !Keeps(keep) && c.Oldest.Before(before) {
			due = append(due, &sweepClass{EndedClass: c, before: before, next: c.Oldest})
		}
	}
	pace := r.plan(sh.index, backlog, due)
	total, err := r.sweep(ctx, sh.store, due, backlog, &pace)
	r.duties[sh.index] = pace.duty
	if total > 0 && err == nil {
		_, backlog, err = r.surveyShard(ctx, sh, of)
		// The members of a group not yet complete are kept, and counted
		// in the backlog too: only a pass that deleted ten batches or
		// more goes again at once, or they would keep the retirer going
		// round without a pause.
		if err == nil && r.behind(backlog) && r.behind(int64(total)) {
			r.again = true
		}
	}
	return total, err
}

// surveyShard reads the topics and statuses of a shard's ended jobs, the
// oldest of each and the backlog past retention, keeps them for Survey
// and returns the classes and the backlog's sum.
func (r *Retirer) surveyShard(ctx context.Context, sh retireShard, of retentionOf) ([]EndedClass, int64, error) {
	classes, err := sh.store.EndedClasses(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the ended jobs' topics: %w", err)
	}
	var backlog int64
	now := r.cfg.Now()
	stats := make([]RetireStat, 0, len(classes))
	for _, c := range classes {
		stat := RetireStat{Topic: c.Topic, Status: c.Status, Oldest: c.Oldest}
		ret, err := of(ctx, c.Topic)
		if err != nil {
			return nil, 0, err
		}
		if keep := ret.Of(c.Status); !Keeps(keep) && c.Oldest.Before(now.Add(-keep)) {
			if stat.Backlog, stat.Estimated, err = sh.store.CountEnded(ctx, c.Topic, c.Status, now.Add(-keep), retireCountMax); err != nil {
				return nil, 0, fmt.Errorf("count the %s jobs of %s past retention: %w", c.Status, c.Topic, err)
			}
			backlog += stat.Backlog
		}
		stats = append(stats, stat)
	}
	r.setSurvey(sh.index, stats)
	return classes, backlog, nil
}

// sweepClass is a topic and status with jobs past their retention, as a
// sweep goes through them.
type sweepClass struct {
	EndedClass
	before time.Time // the retention's cutoff: jobs that ended before it go
	after  EndedJob  // the cursor: the last job read
	next   time.Time // none of its jobs left to read ended before this
}

// Sweep windows: a window of end times holds about sweepRows jobs, its
// length doubled or halved after each window, from sweepFirst.
const (
	sweepRows  = 10_000
	sweepFirst = time.Minute
	sweepMin   = time.Second
	sweepMax   = 24 * time.Hour
)

// sweep deletes the jobs of classes that ended before their cutoff, all
// classes together in order of their end: a window of end times at a
// time, each class's jobs in the window read and deleted before the
// window moves on. Jobs that ended at about the same time were mostly
// created at about the same time, and sit in the same pages of the table
// (its ids are time-ordered) and of the indexes that lead with status or
// time; a window reads those pages once for every topic, where a class
// at a time would read them once for each topic, and with many topics
// evict the fire path's pages from the database's cache to do so.
//
// backlog is the survey's count of the rows past retention: the sweep
// yields to a late fire path only while fewer than retireYieldBatches
// batches of them are left. It works pace's duty, which it changes as
// pace says.
func (r *Retirer) sweep(ctx context.Context, store RetireStore, classes []*sweepClass, backlog int64, pace *sweepPace) (int, error) {
	total, step := 0, sweepFirst
	for len(classes) > 0 {
		from := slices.MinFunc(classes, func(a, b *sweepClass) int { return a.next.Compare(b.next) }).next
		until := from.Add(step)
		n, err := r.sweepWindow(ctx, store, classes, until, &backlog, pace)
		total += n
		if err != nil || ctx.Err() != nil {
			return total, err
		}
		classes = slices.DeleteFunc(classes, func(c *sweepClass) bool { return !c.next.Before(c.before) })
		switch {
		case n < sweepRows/2:
			step = min(2*step, sweepMax)
		case n > 2*sweepRows:
			step = max(step/2, sweepMin)
		}
	}
	return total, nil
}

// sweepPace is how a pass works: the share of its time (duty), and,
// when it started behind, when it next looks whether it keeps up (zero:
// it does not), and where its front and the clock were at the last look.
type sweepPace struct {
	duty      float64
	next      time.Time // wall time
	front, at time.Time
}

// plan returns how a pass of shard works, having found backlog rows past
// their retention in the classes due: under retireYieldBatches batches,
// at Duty; otherwise at the duty the shard's last pass ended at (at least
// Duty), looking every retireLook whether it keeps up.
func (r *Retirer) plan(shard int, backlog int64, due []*sweepClass) sweepPace {
	pace := sweepPace{duty: r.cfg.Duty}
	if r.behind(backlog) {
		pace.duty = max(pace.duty, r.duties[shard])
		pace.next, pace.front, pace.at = time.Now().Add(r.look), sweepFront(due), r.cfg.Now()
	}
	return pace
}

// sweepFront is the end time of the oldest job the sweep of classes has
// yet to read: for each class not yet read to its cutoff, its cursor or
// the window it has read up to, whichever is later; the earliest of
// those, or the zero time when every class is read.
func sweepFront(classes []*sweepClass) time.Time {
	var front time.Time
	for _, c := range classes {
		if !c.next.Before(c.before) {
			continue
		}
		at := c.next
		if c.after.EndedAt.After(at) {
			at = c.after.EndedAt
		}
		if front.IsZero() || at.Before(front) {
			front = at
		}
	}
	return front
}

// adjust is a look of a pass that started behind (retireLook), front
// the sweep's front now: the duty becomes nextDuty's.
func (r *Retirer) adjust(pace *sweepPace, front time.Time) {
	pace.next = time.Now().Add(r.look)
	if front.IsZero() {
		return // every class read: the pass ends with this window
	}
	now := r.cfg.Now()
	pace.duty = r.nextDuty(pace.duty, front.Sub(pace.front), now.Sub(pace.at))
	pace.front, pace.at = front, now
}

// nextDuty is the duty after a look, the sweep's front having moved by
// moved while the clock moved by took since the last: twice duty (at
// most 1) if moved is shorter than took (losing ground), half (at least
// Duty) if it is more than twice took, duty otherwise.
func (r *Retirer) nextDuty(duty float64, moved, took time.Duration) float64 {
	switch {
	case moved < took:
		return min(1, 2*duty)
	case moved > 2*took:
		return max(r.cfg.Duty, duty/2)
	}
	return duty
}

// behind says whether backlog rows past retention are retireYieldBatches
// batches or more: the retirer does not yield then, and its pass looks
// whether it keeps up.
func (r *Retirer) behind(backlog int64) bool {
	return backlog >= int64(retireYieldBatches*r.cfg.Batch)
}

// sweepWindow deletes the jobs of classes that ended before until (and
// their cutoff), a batch at a time, each batch gathered over the classes,
// as pace says; it returns how many it deleted.
func (r *Retirer) sweepWindow(ctx context.Context, store RetireStore, classes []*sweepClass, until time.Time, backlog *int64, pace *sweepPace) (int, error) {
	total := 0
	for {
		if !pace.next.IsZero() && time.Now().After(pace.next) {
			r.adjust(pace, sweepFront(classes))
		}
		if !r.behind(*backlog) {
			if err := r.yield(ctx); err != nil {
				return total, nil
			}
		}
		start := time.Now()
		var (
			ids    []JobID
			last   time.Time // the latest end of ids
			counts = map[*sweepClass]int{}
		)
		for _, c := range classes {
			want := r.cfg.Batch - len(ids)
			if want == 0 {
				break
			}
			end := until
			if c.before.Before(end) {
				end = c.before
			}
			if !c.next.Before(end) {
				continue
			}
			page, err := store.EndedJobs(ctx, c.Topic, c.Status, end, c.after, want)
			if err != nil {
				return total, err
			}
			if len(page) < want {
				c.next = end // read up to the window's end
			}
			if len(page) == 0 {
				continue
			}
			c.after = page[len(page)-1]
			for _, j := range page { // the last is the latest only in order of end
				if j.EndedAt.After(last) {
					last = j.EndedAt
				}
			}
			kept, err := r.retirable(ctx, page)
			if err != nil {
				return total, err
			}
			ids = append(ids, kept...)
			counts[c] += len(kept)
		}
		if len(ids) == 0 && len(counts) == 0 {
			return total, nil // every class read to the window's end
		}
		if len(ids) > 0 {
			n, err := store.DeleteEnded(ctx, ids, last)
			total += n
			*backlog -= int64(n)
			if err != nil {
				return total, fmt.Errorf("delete %d ended jobs: %w", len(ids), err)
			}
			r.observe(counts, n, len(ids))
		}
		if err := r.pace(ctx, time.Since(start), pace.duty); err != nil {
			return total, nil
		}
	}
}

// observe counts a batch's deletes by topic and status: n of the wanted
// ids went (fewer when some were replayed meanwhile: those counts are
// then taken from the classes in turn).
func (r *Retirer) observe(counts map[*sweepClass]int, n, wanted int) {
	if r.obs == nil {
		return
	}
	for c, k := range counts {
		if n < wanted {
			k = min(k, n)
			n -= k
		}
		if k > 0 {
			r.obs.Retired(c.Topic, c.Status, k)
		}
	}
}

// retirable returns the ids of page that may go: all but the members of
// groups that have not completed (a group without a row has none to
// wait for).
func (r *Retirer) retirable(ctx context.Context, page []EndedJob) ([]JobID, error) {
	ids := make([]JobID, 0, len(page))
	complete := map[string]bool{}
	for _, j := range page {
		if j.Group != "" && r.groups != nil {
			done, ok := complete[j.Group]
			if !ok {
				g, err := r.groups.GetGroup(ctx, j.Group)
				switch {
				case errors.Is(err, ErrNotFound):
					done = true
				case err != nil:
					return nil, fmt.Errorf("read group %q: %w", GroupName(j.Group), err)
				default:
					done = !g.CompletedAt.IsZero()
				}
				complete[j.Group] = done
			}
			if !done {
				continue
			}
		}
		ids = append(ids, j.ID)
	}
	return ids, nil
}

// retireGroups deletes the rows of groups that completed longer ago than
// the done retention and have no members left.
func (r *Retirer) retireGroups(ctx context.Context) (int, error) {
	store, ok := r.topics.(GroupRetirer)
	keep := r.cfg.Retention.Done
	if !ok || Keeps(keep) {
		return 0, nil
	}
	before := r.cfg.Now().Add(-keep)
	total := 0
	var afterAt time.Time
	after := ""
	for {
		start := time.Now()
		page, err := store.FinishedGroups(ctx, before, afterAt, after, r.cfg.Batch)
		if err != nil || len(page) == 0 {
			if err != nil {
				err = fmt.Errorf("read finished groups: %w", err)
			}
			return total, err
		}
		last := page[len(page)-1]
		afterAt, after = last.CompletedAt, last.ID
		ids := make([]string, len(page))
		for i, g := range page {
			ids[i] = g.ID
		}
		held, err := store.GroupsWithMembers(ctx, ids)
		if err != nil {
			return total, fmt.Errorf("read the members of %d groups: %w", len(ids), err)
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return held[id] })
		if len(ids) > 0 {
			n, err := store.DeleteGroups(ctx, ids, before)
			total += n
			if err != nil {
				return total, fmt.Errorf("delete %d groups: %w", len(ids), err)
			}
		}
		if len(page) < r.cfg.Batch {
			return total, nil
		}
		if err := r.pace(ctx, time.Since(start), r.cfg.Duty); err != nil {
			return total, nil
		}
	}
}

// pruneAudit deletes audit entries older than AuditRetention.
func (r *Retirer) pruneAudit(ctx context.Context) (int, error) {
	store, ok := r.topics.(AuditPruner)
	if !ok || Keeps(r.cfg.AuditRetention) {
		return 0, nil
	}
	before := r.cfg.Now().Add(-r.cfg.AuditRetention)
	total := 0
	for {
		start := time.Now()
		n, err := store.PruneAudit(ctx, before, r.cfg.Batch)
		total += n
		if err != nil {
			return total, fmt.Errorf("prune the audit log: %w", err)
		}
		if n < r.cfg.Batch {
			return total, nil
		}
		if err := r.pace(ctx, time.Since(start), r.cfg.Duty); err != nil {
			return total, nil
		}
	}
}

// pace waits after a batch that took took, so that the retirer works
// duty of its time.
func (r *Retirer) pace(ctx context.Context, took time.Duration, duty float64) error {
	if duty >= 1 {
		return ctx.Err()
	}
	return pause.For(ctx, time.Duration(float64(took)*(1-duty)/duty))
}

// yield waits while the fire path is late (RetirerConfig.Lateness), up
// to retireMaxYield.
func (r *Retirer) yield(ctx context.Context) error {
	if r.cfg.Lateness == nil || r.cfg.YieldAbove < 0 {
		return ctx.Err()
	}
	for waited := time.Duration(0); waited < retireMaxYield && r.cfg.Lateness() > r.cfg.YieldAbove; waited += retireYieldStep {
		if err := pause.For(ctx, retireYieldStep); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func (r *Retirer) setSurvey(shard int, stats []RetireStat) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if stats == nil {
		delete(r.survey, shard)
		return
	}
	r.survey[shard] = stats
}

// Survey returns what the last pass saw of each topic and status over the
// shards this process retires: the oldest ended job held and the backlog
// past retention, summed over shards, by topic then status.
func (r *Retirer) Survey() []RetireStat {
	r.mu.Lock()
	defer r.mu.Unlock()
	type key struct {
		topic string
		st    Status
	}
	sum := map[key]RetireStat{}
	for _, stats := range r.survey {
		for _, s := range stats {
			k := key{s.Topic, s.Status}
			t, ok := sum[k]
			if !ok {
				sum[k] = s
				continue
			}
			t.Backlog += s.Backlog
			t.Estimated = t.Estimated || s.Estimated
			if s.Oldest.Before(t.Oldest) {
				t.Oldest = s.Oldest
			}
			sum[k] = t
		}
	}
	out := make([]RetireStat, 0, len(sum))
	for _, s := range sum {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b RetireStat) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Status, b.Status))
	})
	return out
}
