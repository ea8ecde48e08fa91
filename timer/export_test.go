package timer

import (
	"context"
	"time"
)

// Steps drives a worker's parts one step at a time, for the pipeline's
// tests: no goroutine of the worker runs, and time passes only through
// the clock the worker was given. Tasks the loader routes to the
// executor wait in Steps until Fire runs them.
type Steps struct {
	w    *Worker
	held []task
}

// StepsOf takes over w, which must not Run, and reads what it owns.
func StepsOf(ctx context.Context, w *Worker) *Steps {
	s := &Steps{w: w}
	w.load.dispatch = func(t task) { s.held = append(s.held, t) }
	w.refreshOwned(ctx)
	w.applyCatalog(ctx)
	return s
}

// Claim runs one pass of the claim loop (wake-ups, heads of newly owned
// slots, claims and sweeps) and loads the claimed rows, and returns how
// many leases it claimed.
func (s *Steps) Claim(ctx context.Context) int {
	w := s.w
	w.applyCatalog(ctx)
	w.applyWakes()
	for len(w.unknown) > 0 {
		var batch []Slot
		batch, w.unknown = takeSlots(w.unknown, peekChunk)
		if err := w.claim.peek(ctx, batch); err != nil {
			panic(err)
		}
	}
	leases, buried, _ := w.claim.runOnce(ctx)
	if len(leases) > 0 {
		w.load.load(ctx, claimed{leases: leases, at: w.claim.passAt})
	}
	for _, l := range buried {
		w.complete.record(ctx, []outcome{{kind: outDeadRow, lease: l}})
	}
	return len(leases)
}

// Fire runs the executor on every task whose due time has come and
// records the outcomes that are not batched; it returns how many it ran.
func (s *Steps) Fire(ctx context.Context) int {
	w := s.w
	now := w.cfg.Now()
	var keep []task
	n := 0
	for _, t := range s.held {
		if t.job.DueAt.After(now) {
			keep = append(keep, t)
			continue
		}
		n++
		switch o := w.exec.execute(ctx, t); o.kind {
		case outDone:
			w.finishCh <- o
		case outAbandoned:
		default:
			w.complete.record(ctx, []outcome{o})
		}
	}
	s.held = keep
	return n
}

// Complete records the batched outcomes waiting for the completer and
// returns how many there were.
func (s *Steps) Complete(ctx context.Context) int {
	var batch []outcome
	for {
		select {
		case o := <-s.w.finishCh:
			batch = append(batch, o)
			continue
		default:
		}
		break
	}
	if len(batch) > 0 {
		s.w.complete.record(ctx, batch)
	}
	if s.w.history != nil {
		s.w.history.flush(ctx)
	}
	return len(batch)
}

// PruneAttempts runs one pass of the attempt history's pruning.
func (s *Steps) PruneAttempts(ctx context.Context) (int, error) { return s.w.history.prune(ctx) }

// Step runs Claim, Fire and Complete and returns what Claim claimed and
// Fire ran.
func (s *Steps) Step(ctx context.Context) (claimed, fired int) {
	claimed = s.Claim(ctx)
	fired = s.Fire(ctx)
	s.Complete(ctx)
	return claimed, fired
}

// Held is how many leases the worker holds.
func (s *Steps) Held() int { return int(s.w.lim.held.Load()) }

// Waiting is how many claimed tasks wait for their due time.
func (s *Steps) Waiting() int { return len(s.held) }

// Drop forgets the claimed tasks waiting to fire, as a worker that died
// would: their leases stay in the index until they expire.
func (s *Steps) Drop() { s.held = nil }

// ActiveSlots is how many slots the claimer keeps a state for.
func (s *Steps) ActiveSlots() int { return len(s.w.claim.slots) }

// peek reads the heads of slots and places them, as the worker's peeker
// and gotHeads do off the loop; without a HeadReader it
// marks them due now, so that the next pass claims from each.
func (c *claimer) peek(ctx context.Context, batch []Slot) error {
	if c.cfg.reader == nil {
		c.markDue(batch)
		return nil
	}
	heads, err := c.cfg.reader.Heads(ctx, batch)
	if err != nil {
		return err
	}
	c.applyHeads(batch, heads, false)
	return nil
}

// Acked tells the worker what an ack that began at at saw of the slots'
// leases, as its completer does through a HeadAcker.
func (s *Steps) Acked(at time.Time, next []SlotExpiry) { s.w.acks(at, next) }

// RunOnce is one pass of the retirer, for tests that step it.
func (r *Retirer) RunOnce(ctx context.Context) (int, error) { return r.runOnce(ctx) }

// Plan is the duty a pass of shard starts at having found backlog, and
// whether it looks, as it goes, whether it keeps up.
func (r *Retirer) Plan(shard int, backlog int64) (float64, bool) {
	p := r.plan(shard, backlog, nil)
	return p.duty, !p.next.IsZero()
}

// NextDuty is the duty after a look, the sweep's front having moved by
// moved while the clock moved by took (nextDuty).
func (r *Retirer) NextDuty(duty float64, moved, took time.Duration) float64 {
	return r.nextDuty(duty, moved, took)
}

// Duty is the duty shard's last pass ended at.
func (r *Retirer) Duty(shard int) float64 { return r.duties[shard] }

// SetLook has r's passes that start behind look every d (retireLook).
func (r *Retirer) SetLook(d time.Duration) { r.look = d }

func (r *Retirer) Again() bool { return r.again }
