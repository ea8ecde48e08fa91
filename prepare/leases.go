// The timer.Leaser side of Index: claim due timers as leases, then ack,
// retry or defer them, and sweep the leases that expired.

package prepare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/timer"
)

// aging is timer.PriorityAging in milliseconds, as the claim script takes
// it: timer stays the one source of the offsets.
var aging = lua.Aging{
	High:   timer.PriorityAging(timer.PriorityHigh).Milliseconds(),
	Normal: timer.PriorityAging(timer.PriorityNormal).Milliseconds(),
	Low:    timer.PriorityAging(timer.PriorityLow).Milliseconds(),
}

// SweepAttemptCap is the attempt count at which Sweep buries an expired
// lease instead of returning it: timer.MaxAttemptsLimit, as timer.Leaser
// documents. A job's own max attempts is enforced by Retry.
const SweepAttemptCap = timer.MaxAttemptsLimit

// Claim implements timer.Leaser. It takes due timers of all priorities in
// the order of due time plus timer.PriorityAging (ties: high, normal,
// low), and returns the leases in that order. limit must be positive;
// above lua.MaxBatch it is lowered to that, so that one call never blocks
// Redis for long (the claim then returns fewer than limit leases with
// NextDue not after now). lease must be at least a millisecond and is
// truncated to milliseconds.
func (q *Index) Claim(ctx context.Context, slot timer.Slot, now time.Time, limit int, lease time.Duration) (timer.Claim, error) {
	cs, errs := q.ClaimEach(ctx, now, []timer.ClaimCall{{Slot: slot, Limit: limit, Lease: lease}})
	return cs[0], errs[0]
}

// ClaimEach implements timer.BatchClaimer: Claim of each call, in one
// pipeline (on a Redis Cluster, one a node).
func (q *Index) ClaimEach(ctx context.Context, now time.Time, calls []timer.ClaimCall) ([]timer.Claim, []error) {
	out, errs := make([]timer.Claim, len(calls)), make([]error, len(calls))
	runs := make([]lua.ClaimCall, 0, len(calls))
	at := make([]int, 0, len(calls)) // the call each run is
	var nowMs int64
	for i, cc := range calls {
		ms, limit, err := checkPass("claim", cc.Slot, now, cc.Limit)
		if err == nil && cc.Lease < time.Millisecond {
			err = fmt.Errorf("claim slot %s: lease %v: %w (at least 1ms)", cc.Slot, cc.Lease, timer.ErrInvalid)
		}
		if err != nil {
			errs[i] = err
			continue
		}
		nowMs = ms
		runs = append(runs, lua.ClaimCall{Keys: q.Keys(cc.Slot), Limit: limit, LeaseMs: cc.Lease.Milliseconds()})
		at = append(at, i)
	}
	if len(runs) == 0 {
		return out, errs
	}
	rs, runErrs := lua.ClaimEach(ctx, q.client, nowMs, aging, runs...)
	for j, i := range at {
		slot := calls[i].Slot
		if err := runErrs[j]; err != nil {
			errs[i] = fmt.Errorf("claim slot %s: %w", slot, invalid(err))
			continue
		}
		out[i], errs[i] = claimOf(slot, rs[j])
	}
	return out, errs
}

// claimOf is the timer.Claim of a claim script's reply in slot.
func claimOf(slot timer.Slot, r lua.ClaimResult) (timer.Claim, error) {
	c := timer.Claim{
		Leases:     make([]timer.Lease, 0, len(r.Leased)),
		NextDue:    timeOf(r.DueHead),
		NextExpiry: timeOf(r.PrepareHead),
	}
	var bad error
	for _, l := range r.Leased {
		lease, err := leaseOf(slot, l.Member, l.Attempt, l.Token)
		if err != nil {
			// Not one of ours. Leave it leased: it is swept back, and the
			// error is reported, but the other leases are still returned.
			bad = errors.Join(bad, err)
			continue
		}
		c.Leases = append(c.Leases, lease)
	}
	if bad != nil {
		return c, fmt.Errorf("claim slot %s: bad members in the due sets: %w", slot, bad)
	}
	return c, nil
}

// Ack implements timer.Leaser.
func (q *Index) Ack(ctx context.Context, leases []timer.Lease) (int, error) {
	n, _, err := q.AckHeads(ctx, leases)
	return n, err
}

var _ timer.HeadAcker = (*Index)(nil)

// AckHeads implements timer.HeadAcker: Ack, and each slot's next lease
// end after it.
func (q *Index) AckHeads(ctx context.Context, leases []timer.Lease) (int, []timer.SlotExpiry, error) {
	var g grouping[lua.Held]
	for _, l := range leases {
		if err := checkLease(l); err != nil {
			return 0, nil, fmt.Errorf("ack: %w", err)
		}
		g.add(l.Slot, held(l))
	}
	batches := g.batches()
	if len(batches) == 0 {
		return 0, nil, nil
	}
	calls := make([]lua.AckCall, len(batches))
	for i, b := range batches {
		calls[i] = lua.AckCall{Keys: q.Keys(b.slot), Leases: b.items}
	}
	rs, err := lua.AckEach(ctx, q.client, calls...)
	if err != nil {
		return 0, nil, fmt.Errorf("ack %d leases: %w", len(leases), invalid(err))
	}
	n := 0
	next := make([]timer.SlotExpiry, 0, len(rs))
	for i, r := range rs {
		n += r.Removed
		e := timer.SlotExpiry{Slot: batches[i].slot, NextExpiry: timeOf(r.PrepareHead)}
		// A slot of more than lua.MaxBatch leases is acked in several
		// calls in a row; the last one's head is the one after all of them.
		if k := len(next); k > 0 && next[k-1].Slot == e.Slot {
			next[k-1] = e
			continue
		}
		next = append(next, e)
	}
	return n, next, nil
}

// Retry implements timer.Leaser. maxAttempts must be in 1..lua.MaxAttempt.
func (q *Index) Retry(ctx context.Context, l timer.Lease, at time.Time, maxAttempts int, now time.Time) (timer.RetryOutcome, error) {
	if err := checkLease(l); err != nil {
		return 0, fmt.Errorf("retry job %d: %w", l.ID, err)
	}
	atMs, err := millis("retry time", at)
	if err != nil {
		return 0, fmt.Errorf("retry job %d: %w", l.ID, err)
	}
	nowMs, err := millis("now", now)
	if err != nil {
		return 0, fmt.Errorf("retry job %d: %w", l.ID, err)
	}
	if maxAttempts < 1 || maxAttempts > lua.MaxAttempt {
		return 0, fmt.Errorf("retry job %d: max attempts %d: %w (1..%d)", l.ID, maxAttempts, timer.ErrInvalid, lua.MaxAttempt)
	}
	r, err := lua.Retry(ctx, q.client, q.Keys(l.Slot), held(l), atMs, maxAttempts, nowMs)
	if err != nil {
		return 0, fmt.Errorf("retry job %d in slot %s: %w", l.ID, l.Slot, invalid(err))
	}
	switch r {
	case lua.Retried:
		return timer.Retried, nil
	case lua.Buried:
		return timer.Buried, nil
	default:
		return timer.Lost, nil
	}
}

// Defer implements timer.Leaser: the job goes back to the due set of
// its priority due at at, with the attempt count of the lease.
func (q *Index) Defer(ctx context.Context, l timer.Lease, at time.Time) (bool, error) {
	if err := checkLease(l); err != nil {
		return false, fmt.Errorf("defer job %d: %w", l.ID, err)
	}
	atMs, err := millis("defer time", at)
	if err != nil {
		return false, fmt.Errorf("defer job %d: %w", l.ID, err)
	}
	ok, err := lua.Defer(ctx, q.client, q.Keys(l.Slot), held(l), atMs)
	if err != nil {
		return false, fmt.Errorf("defer job %d in slot %s: %w", l.ID, l.Slot, invalid(err))
	}
	return ok, nil
}

// UnclaimEach implements timer.Unclaimer: one unclaim script a call, in
// one pipeline (on a Redis Cluster, one a node).
func (q *Index) UnclaimEach(ctx context.Context, at time.Time, calls []timer.UnclaimCall) ([]int, []error) {
	ns, errs := make([]int, len(calls)), make([]error, len(calls))
	atMs, bad := millis("due time", at)
	runs := make([]lua.UnclaimCall, 0, len(calls))
	idx := make([]int, 0, len(calls)) // the call each run is
	for i, uc := range calls {
		err := bad
		if err == nil {
			err = checkSlot(uc.Slot)
		}
		var nowMs int64
		if err == nil {
			nowMs, err = millis("claim time", uc.Now)
		}
		if err != nil {
			errs[i] = fmt.Errorf("unclaim slot %s: %w", uc.Slot, err)
			continue
		}
		runs = append(runs, lua.UnclaimCall{Keys: q.Keys(uc.Slot), NowMs: nowMs, LeaseMs: uc.Lease.Milliseconds()})
		idx = append(idx, i)
	}
	if len(runs) == 0 {
		return ns, errs
	}
	rns, runErrs := lua.UnclaimEach(ctx, q.client, atMs, runs...)
	for j, i := range idx {
		ns[i] = rns[j]
		if err := runErrs[j]; err != nil {
			errs[i] = fmt.Errorf("unclaim slot %s: %w", calls[i].Slot, invalid(err))
		}
	}
	return ns, errs
}

// Sweep implements timer.Leaser. limit must be positive; above
// lua.MaxBatch it is lowered to that (NextExpiry then says whether more
// leases have expired). The Dead leases it returns carry the attempt count
// recorded in Dead and no token.
func (q *Index) Sweep(ctx context.Context, slot timer.Slot, now time.Time, limit int) (timer.Sweep, error) {
	sws, errs := q.SweepEach(ctx, now, []timer.SweepCall{{Slot: slot, Limit: limit}})
	return sws[0], errs[0]
}

var (
	_ timer.Reclaimer    = (*Index)(nil)
	_ timer.Unclaimer    = (*Index)(nil)
	_ timer.BatchClaimer = (*Index)(nil)
	_ timer.BatchSweeper = (*Index)(nil)
)

// Reclaim implements timer.Reclaimer: Sweep of every lease of slot,
// whatever its end.
func (q *Index) Reclaim(ctx context.Context, slot timer.Slot, now time.Time, limit int) (timer.Sweep, error) {
	sws, errs := q.SweepEach(ctx, now, []timer.SweepCall{{Slot: slot, Limit: limit, All: true}})
	return sws[0], errs[0]
}

// SweepEach implements timer.BatchSweeper: Sweep, or Reclaim for a call
// with All, of each call, in one pipeline (on a Redis Cluster, one a
// node).
func (q *Index) SweepEach(ctx context.Context, now time.Time, calls []timer.SweepCall) ([]timer.Sweep, []error) {
	sws, errs := make([]timer.Sweep, len(calls)), make([]error, len(calls))
	runs := make([]lua.SweepCall, 0, len(calls))
	at := make([]int, 0, len(calls)) // the call each run is
	var nowMs int64
	for i, sc := range calls {
		ms, limit, err := checkPass("sweep", sc.Slot, now, sc.Limit)
		if err != nil {
			errs[i] = err
			continue
		}
		nowMs = ms
		runs = append(runs, lua.SweepCall{Keys: q.Keys(sc.Slot), Limit: limit, All: sc.All})
		at = append(at, i)
	}
	if len(runs) == 0 {
		return sws, errs
	}
	rs, runErrs := lua.SweepEach(ctx, q.client, nowMs, SweepAttemptCap, runs...)
	for j, i := range at {
		slot := calls[i].Slot
		if err := runErrs[j]; err != nil {
			errs[i] = fmt.Errorf("sweep slot %s: %w", slot, err)
			continue
		}
		r := rs[j]
		sw := timer.Sweep{Returned: r.Returned, NextExpiry: timeOf(r.PrepareHead)}
		var bad error
		for _, e := range r.Dead {
			lease, err := leaseOf(slot, e.Member, e.Attempt, 0)
			if err != nil {
				bad = errors.Join(bad, err)
				continue
			}
			sw.Dead = append(sw.Dead, lease)
		}
		sws[i] = sw
		if bad != nil {
			errs[i] = fmt.Errorf("sweep slot %s: bad members in Prepare: %w", slot, bad)
		}
	}
	return sws, errs
}

// checkPass checks the arguments of one pass over slot (op is "claim" or
// "sweep"), and returns now in ms and limit lowered to lua.MaxBatch.
func checkPass(op string, slot timer.Slot, now time.Time, limit int) (nowMs int64, _ int, err error) {
	if err := checkSlot(slot); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", op, err)
	}
	if nowMs, err = millis("now", now); err != nil {
		return 0, 0, fmt.Errorf("%s slot %s: %w", op, slot, err)
	}
	if limit < 1 {
		return 0, 0, fmt.Errorf("%s slot %s: limit %d: %w", op, slot, limit, timer.ErrInvalid)
	}
	return nowMs, min(limit, lua.MaxBatch), nil
}

func checkLease(l timer.Lease) error {
	if err := checkSlot(l.Slot); err != nil {
		return err
	}
	if !l.Priority.Valid() {
		return fmt.Errorf("lease of job %d: priority %d: %w", l.ID, l.Priority, timer.ErrInvalid)
	}
	return nil
}

// leaseOf returns the lease of member in slot, or an error wrapping
// timer.ErrInvalid when member is not a job's (see lua.ParseMember).
func leaseOf(slot timer.Slot, member string, attempt int, token float64) (timer.Lease, error) {
	id, p, ok := lua.ParseMember(member)
	if !ok {
		return timer.Lease{}, fmt.Errorf("member %q: not a job id: %w", member, timer.ErrInvalid)
	}
	return timer.Lease{ID: timer.JobID(id), Slot: slot, Attempt: attempt, Priority: timer.Priority(p), Token: token}, nil
}

// held returns the lease l as the scripts take it.
func held(l timer.Lease) lua.Held { return lua.Held{Member: member(l.ID, l.Priority), Token: l.Token} }
