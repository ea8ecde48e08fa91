package timer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Timers is the whole Redis timer index: the scheduling side (Index) and
// the worker's (Leaser).
type Timers interface {
	Index
	Leaser
}

// Config configures an Engine. Horizon, Now, Logger and Observer, when
// set, apply to every part that leaves its own unset.
type Config struct {
	Horizon  time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
	Observer Observer

	Scheduler SchedulerConfig
	Worker    WorkerConfig
	Backstop  BackstopConfig
	Groups    GroupCompleterConfig
	// Retention configures the retirer; its zero value keeps every job
	// and audit entry forever (and only surveys them).
	Retention RetirerConfig
	// Assignment gives the worker its slots (default: AllSlots over the
	// store, the standalone mode).
	Assignment Assignment
}

// Engine is the timeout service as a library: the scheduling path, one
// worker and the backstop, over one task store and one Redis queue.
type Engine struct {
	*Scheduler
	Worker   *Worker
	Backstop *Backstop
	// Catalog is the topic list the scheduler and the worker share.
	Catalog *Catalog
	// Groups completes the groups of the store (nil when the store keeps
	// none): Run runs it, and the scheduler and worker tell it of every
	// member they end.
	Groups *GroupCompleter
	// Retirer deletes the jobs past their retention (nil when the store
	// cannot: it implements neither RetireStore nor RetireSharded).
	Retirer *Retirer
	waker   Waker
	log     *slog.Logger
}

// Validate reports the first field of c, or of one of its parts' configs,
// that is out of range.
func (c Config) Validate() error {
	if c.Horizon < 0 {
		return invalid("Horizon", "must not be negative")
	}
	if err := c.Scheduler.Validate(); err != nil {
		return fmt.Errorf("scheduler config: %w", err)
	}
	if err := c.Worker.Validate(); err != nil {
		return fmt.Errorf("worker config: %w", err)
	}
	if err := c.Backstop.Validate(); err != nil {
		return fmt.Errorf("backstop config: %w", err)
	}
	if err := c.Retention.Validate(); err != nil {
		return fmt.Errorf("retention config: %w", err)
	}
	return nil
}

// New wires an Engine. When timers also implements Waker, the worker hears
// of jobs scheduled by other processes as well as by this one.
func New(store Store, timers Timers, handler Handler, cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Horizon = cmp.Or(cfg.Horizon, DefaultHorizon)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	sc, wc, bc := cfg.Scheduler, cfg.Worker, cfg.Backstop
	sc.Horizon, wc.Horizon, bc.Horizon = cmp.Or(sc.Horizon, cfg.Horizon), cmp.Or(wc.Horizon, cfg.Horizon), cmp.Or(bc.Horizon, cfg.Horizon)
	for _, now := range []*func() time.Time{&sc.Now, &wc.Now, &bc.Now} {
		if *now == nil {
			*now = cfg.Now
		}
	}
	for _, l := range []**slog.Logger{&sc.Logger, &wc.Logger, &bc.Logger} {
		if *l == nil {
			*l = cfg.Logger
		}
	}
	for _, o := range []*Observer{&sc.Observer, &wc.Observer, &bc.Observer} {
		if *o == nil {
			*o = cfg.Observer
		}
	}
	catalog := NewCatalog(store, wc.TopicRefresh, cfg.Now)
	sc.Catalog = catalog
	owner := cfg.Assignment
	if owner == nil {
		owner = &AllSlots{Catalog: catalog}
	}
	sched, err := NewScheduler(store, timers, sc)
	if err != nil {
		return nil, err
	}
	worker, err := NewWorker(store, timers, timers, handler, owner, catalog, wc)
	if err != nil {
		return nil, err
	}
	sched.OnWake(worker.Wake)
	e := &Engine{
		Scheduler: sched,
		Catalog:   catalog,
		Worker:    worker,
		Backstop:  NewBackstop(store, timers, worker.Wake, bc),
		log:       cfg.Logger,
	}
	sched.OnRepair(e.Backstop.Repair)
	e.Backstop.OnOrphans(sched.AdoptTopics)
	if gs, ok := store.(GroupStore); ok {
		gc := cfg.Groups
		if gc.Logger == nil {
			gc.Logger = cfg.Logger
		}
		if gc.Now == nil {
			gc.Now = cfg.Now
		}
		e.Groups = NewGroupCompleter(gs, sched, gc)
		sched.OnEnded(e.Groups.Notify)
		worker.OnEnded(e.Groups.Notify)
		e.Backstop.OnEnded(e.Groups.Notify)
	}
	_, one := store.(RetireStore)
	_, sharded := store.(RetireSharded)
	if one || sharded {
		rc := cfg.Retention
		if rc.Now == nil {
			rc.Now = cfg.Now
		}
		if rc.Logger == nil {
			rc.Logger = cfg.Logger
		}
		if rc.Observer == nil {
			rc.Observer = cfg.Observer
		}
		if rc.Owner == nil {
			rc.Owner = bc.Owner
		}
		if rc.Lateness == nil {
			rc.Lateness = worker.RecentLateness
		}
		if rc.Topics == nil {
			rc.Topics = catalog
		}
		if e.Retirer, err = NewRetirer(store, rc); err != nil {
			return nil, err
		}
	}
	e.waker, _ = timers.(Waker)
	return e, nil
}

// Run runs the worker, the backstop and the wake-up subscription until ctx
// is done, then waits for the worker's graceful stop.
func (e *Engine) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(name string, f func(context.Context) error) {
		wg.Go(func() {
			if err := f(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	run("worker", e.Worker.Run)
	run("catalog", e.Catalog.Run)
	run("backstop", e.Backstop.Run)
	if e.Groups != nil {
		run("groups", e.Groups.Run)
	}
	if e.Retirer != nil {
		run("retirer", e.Retirer.Run)
	}
	if e.waker != nil {
		run("wakes", func(ctx context.Context) error { return e.waker.Wakes(ctx, e.Worker.Wake) })
	}
	wg.Wait()
	close(errs)
	return <-errs
}
