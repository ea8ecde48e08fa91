package timer

import (
	"context"
	"time"
)

// Index is the Redis timer index as the scheduling path and the backstop
// see it. Each slot of a topic has a Store set (timers by due time), a
// Prepare set (leases) and a Dead set (exhausted jobs).
type Index interface {
	// Add puts timers in their slots' Store sets, replacing the due time
	// and attempt of one already there. It returns a Wake for each slot
	// whose earliest due time moved earlier.
	Add(ctx context.Context, timers []Timer) ([]Wake, error)
	// Restore adds the timers that are in none of their slot's Store,
	// Prepare and Dead sets, and returns how many it added and the Wakes.
	Restore(ctx context.Context, timers []Timer) (int, []Wake, error)
	// Remove takes timers out of their slots' Store sets and returns how
	// many were there. A leased job (in Prepare) is left alone: it is being
	// fired, and the worker checks the row before it dispatches.
	Remove(ctx context.Context, timers []Timer) (int, error)
	// Revive moves a job from its slot's Dead set to Store at t.DueAt with
	// attempt 0, reporting whether it was in Dead, and a Wake when that
	// moved the slot's earliest due time earlier.
	Revive(ctx context.Context, t Timer) (bool, []Wake, error)
}

// NewIndexer is an Index with a cheaper Restore for the timers of jobs
// just committed, which the Scheduler uses when its index has it.
type NewIndexer interface {
	// IndexNew is Restore for timers whose jobs were just committed: one
	// can be in its slot's sets only if the backstop restored it in the
	// instant between, so the index may look for it in fewer places than
	// Restore does, where a copy left elsewhere is one the worker's
	// check of the row answers for (see prepare.Index.IndexNew).
	IndexNew(ctx context.Context, timers []Timer) (int, []Wake, error)
}

// Wake says that slot has a job due at DueAt, sooner than it had before.
type Wake struct {
	Slot  Slot
	DueAt time.Time
}

// Leaser is the worker's side of the index: two-phase, at-least-once
// consumption of one slot at a time.
type Leaser interface {
	// Claim moves up to limit jobs of slot due at or before now into its
	// Prepare set, each leased until now+lease, and returns them with the
	// slot's next due time and next lease expiry.
	Claim(ctx context.Context, slot Slot, now time.Time, limit int, lease time.Duration) (Claim, error)
	// Ack removes leases that are still held (same Token) and returns how
	// many it removed.
	Ack(ctx context.Context, leases []Lease) (int, error)
	// Retry ends a held lease after a failed attempt: the job goes back to
	// Store due at at with one more attempt, or to Dead when that makes
	// maxAttempts attempts.
	Retry(ctx context.Context, l Lease, at time.Time, maxAttempts int, now time.Time) (RetryOutcome, error)
	// Defer ends a held lease of a job that was not sent (its callback
	// host's circuit breaker is open): the job goes back to Store due at
	// at with its attempt count unchanged. It reports false, changing
	// nothing, when the lease was no longer held.
	Defer(ctx context.Context, l Lease, at time.Time) (bool, error)
	// Sweep returns up to limit leases of slot that expired at or before
	// now to Store, due at once with one more attempt (or to Dead when the
	// attempt count reaches MaxAttemptsLimit; a lower max_attempts of the
	// job is enforced by the worker when it next claims it).
	Sweep(ctx context.Context, slot Slot, now time.Time, limit int) (Sweep, error)
	// Forget removes job id, of any priority, from slot's Dead set, and
	// reports whether it was there. A Retry or a Sweep moves a job whose
	// attempts ran out there; the worker forgets it once its row says
	// dead, so Redis keeps nothing of a dead job (the task store is the
	// dead-letter record).
	Forget(ctx context.Context, slot Slot, id JobID) (bool, error)
}

// Claim is the result of Leaser.Claim.
type Claim struct {
	Leases []Lease
	// NextDue is the earliest due time left in the slot's Store; zero when
	// the Store is empty.
	NextDue time.Time
	// NextExpiry is the earliest lease deadline in the slot's Prepare set;
	// zero when nothing is leased.
	NextExpiry time.Time
}

// ClaimCall is one slot's claim in BatchClaimer.ClaimEach: Leaser.Claim's
// arguments but ctx and now, which the calls of a batch share.
type ClaimCall struct {
	Slot  Slot
	Limit int
	Lease time.Duration
}

// BatchClaimer is implemented by a Leaser that can run the claims of many
// slots in one round trip. The worker claims every slot due in a pass
// this way: with thousands of topics nearly every due job sits alone in
// its slot, and a round trip a slot would bound the jobs a pass can take.
type BatchClaimer interface {
	// ClaimEach is Leaser.Claim of each call at now. claims[i] and errs[i]
	// answer calls[i]. A failed call's leases, if its reply was lost after
	// it ran, come back when they expire, as after a failed Claim; the
	// other calls stand whatever became of it.
	ClaimEach(ctx context.Context, now time.Time, calls []ClaimCall) (claims []Claim, errs []error)
}

// Unclaimer is implemented by a Leaser that can take back the leases of
// a claim whose reply was lost (the claim ran; its answer never came).
// The worker never saw those leases, so no attempt was made; without
// this they wait out their lease, and come back with an attempt counted.
type Unclaimer interface {
	// UnclaimEach puts the leases that each call's claim made, if it
	// ran, back in their due sets, due at at with their attempt counts
	// unchanged, in one round trip where it can. ns[i] (how many) and
	// errs[i] answer calls[i]. The caller must hold no lease of another
	// claim of a call's slot at the same now and lease: their tokens are
	// the same.
	UnclaimEach(ctx context.Context, at time.Time, calls []UnclaimCall) (ns []int, errs []error)
}

// UnclaimCall is a claim whose reply was lost, in Unclaimer.UnclaimEach:
// the slot, now and lease it was made with.
type UnclaimCall struct {
	Slot  Slot
	Now   time.Time
	Lease time.Duration
}

// SweepCall is one slot's sweep in BatchSweeper.SweepEach: Leaser.Sweep's
// arguments but ctx and now, or Reclaimer.Reclaim's with All.
type SweepCall struct {
	Slot  Slot
	Limit int
	All   bool // every lease, whatever its end (Reclaimer.Reclaim)
}

// BatchSweeper is implemented by a Leaser that can run the sweeps of many
// slots in one round trip. Every slot that held leases needs a sweep when
// its last lease would have ended, most often to find its leases acked
// long since; after a burst over thousands of topics those sweeps come
// due by the thousand, and a round trip each would hold up the claims
// of every other topic.
type BatchSweeper interface {
	// SweepEach is Leaser.Sweep (Reclaimer.Reclaim for a call with All)
	// of each call at now. sweeps[i] and errs[i] answer calls[i]; a call
	// that failed leaves the others standing.
	SweepEach(ctx context.Context, now time.Time, calls []SweepCall) (sweeps []Sweep, errs []error)
}

// HeadAcker is implemented by a Leaser whose Ack also tells, for each
// slot it acked in, the next lease end left there. The worker then need
// not sweep a slot whose leases were all acked: without it, every slot
// that held a lease is swept when that lease would have ended.
type HeadAcker interface {
	// AckHeads is Leaser.Ack, and each slot's earliest lease end in its
	// Prepare set after the ack (zero: none left).
	AckHeads(ctx context.Context, leases []Lease) (int, []SlotExpiry, error)
}

// SlotExpiry is a slot's next lease end as an ack saw it; zero when it
// holds no lease.
type SlotExpiry struct {
	Slot       Slot
	NextExpiry time.Time
}

// Reclaimer is implemented by a Leaser that can take leases back before
// they end: those of a holder known to be dead (see Handover), whose
// jobs would otherwise wait out the lease.
type Reclaimer interface {
	// Reclaim is Sweep of every lease of slot, whatever its end: each
	// goes back to its due set, due now, with one more attempt (or to
	// Dead at the cap), and its holder's token no longer holds.
	Reclaim(ctx context.Context, slot Slot, now time.Time, limit int) (Sweep, error)
}

// Sweep is the result of Leaser.Sweep.
type Sweep struct {
	// Returned counts the leases put back in Store.
	Returned int
	// Dead lists the jobs moved to Dead, with their attempt counts.
	Dead []Lease
	// NextExpiry is as in Claim, after the sweep.
	NextExpiry time.Time
}

// RetryOutcome says what Leaser.Retry did.
type RetryOutcome int

// Outcomes of Leaser.Retry.
const (
	// Retried: the job is back in Store with one more attempt.
	Retried RetryOutcome = iota
	// Buried: the attempts are exhausted and the job is in Dead.
	Buried
	// Lost: the lease was no longer held (it expired and was swept or
	// taken over); nothing changed.
	Lost
)

// Waker delivers wake-ups published by other processes: a slot whose
// earliest due time moved earlier.
type Waker interface {
	// Wakes calls fn for each wake-up until ctx is done, and with a zero
	// Wake after it re-established a lost subscription: wake-ups published
	// meanwhile were lost, and the worker rescans its slots.
	Wakes(ctx context.Context, fn func(Wake)) error
}

// LossDetector is implemented by an Index that can tell when Redis lost
// its data (a restart without persistence, a failover to an empty replica,
// FLUSHALL), so that the backstop restores it at once instead of at its
// next periodic full scan.
type LossDetector interface {
	// Mark records in the index that it is complete up to now.
	Mark(ctx context.Context) error
	// Lost reports whether the last Mark is gone.
	Lost(ctx context.Context) (bool, error)
}

// HeadReader reads the heads of slots without changing them: how a
// worker learns the state of slots it has heard no wake-up for (newly
// owned, or rescanned in case a wake-up was lost). Optional: a worker
// whose index lacks it claims from such slots instead.
type HeadReader interface {
	// Heads returns the heads of slots, in their order.
	Heads(ctx context.Context, slots []Slot) ([]SlotHeads, error)
}

// SlotHeads is what a slot holds next.
type SlotHeads struct {
	// NextDue is the earliest due time in the slot's due sets; zero when
	// they are empty.
	NextDue time.Time
	// NextExpiry is the earliest lease deadline in its Prepare set; zero
	// when nothing is leased.
	NextExpiry time.Time
}
