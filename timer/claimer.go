package timer

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"time"
)

// The claimer is the head of the worker's pipeline. It knows which slots
// the worker owns and when each next needs serving, hears wake-ups, runs
// the claim and sweep scripts of the slots whose time has come (in the
// order and amounts the limiter allows), and hands the leases of one pass
// to the loader (see loader.go).
//
// Only slots with something in Redis have a state: a slot is known from a
// wake-up, a claim's reply or a peek of its heads, and forgotten when it
// is empty. Slots wait in a queue ordered by when they next need serving;
// a slot whose time has come moves to its topic's due slots in the
// limiter. A pass therefore visits only what is due, however many topics
// and slots are owned. Lost wake-ups (a pub/sub message published while
// the subscription was down) are caught by a rescan that peeks every
// owned slot's heads in pipelines, spread over WorkerConfig.Rescan.

// slotState is what the claimer knows of one owned slot.
type slotState struct {
	slot   Slot
	topic  *topicState
	due    time.Time // earliest due time in its due sets; zero: none
	expiry time.Time // earliest lease expiry in Prepare; zero: none
	index  int       // in claimer.waiting or its topic's due slots; -1 in neither
	isDue  bool      // in its topic's due slots
	ahead  time.Duration
	// reclaim: the next sweep takes every lease back, ended or not (its
	// holder died).
	reclaim bool
	// claimed is when the slot's last claim was answered.
	claimed time.Time
	// lastClaim is the slot's last claim that was answered: its tokens.
	lastClaim claimKey
}

// claimKey is what a claim's lease tokens hold (their end, its now plus
// its lease): two claims of a slot with the same key cannot be told apart
// in Prepare.
type claimKey struct {
	ms    int64 // the claim's now, in Unix ms
	lease time.Duration
}

// lostClaim is a claim that failed after it may have run, whose leases
// the claimer takes back (unclaimLost).
type lostClaim struct {
	slot  Slot
	key   claimKey
	now   time.Time // the claim's now
	retry time.Time // not tried again before then
}

// maxLost bounds the lost claims remembered; past it the oldest are left
// to wait out their leases.
const maxLost = 4096

func (s *slotState) heapIndex() *int { return &s.index }

// at is when the slot next needs serving; zero when it is empty. With the
// look-ahead A (WorkerConfig.ClaimAhead) that is A before its next due
// time, or A after its next lease expiry. The claimer wakes at the
// earliest at and serves every slot whose at is within A of now, so it
// claims a slot whose job is due within 2A and sweeps one whose lease has
// expired.
func (s *slotState) at() time.Time {
	due, exp := s.due, s.expiry
	if !due.IsZero() {
		due = due.Add(-s.ahead)
	}
	if !exp.IsZero() {
		exp = exp.Add(s.ahead)
	}
	switch {
	case due.IsZero():
		return exp
	case exp.IsZero() || due.Before(exp):
		return due
	}
	return exp
}

// errorBackoff is how long a slot rests after Redis failed it.
const errorBackoff = 250 * time.Millisecond

// claimerConfig is what the claimer takes from the worker's config.
type claimerConfig struct {
	batch  int
	ahead  time.Duration
	now    func() time.Time
	obs    Observer
	logf   func(msg string, args ...any)
	reader HeadReader // nil: learn slots by claiming from them
	// learn configures a topic the limiter has not seen configured.
	learn func(context.Context, *topicState)
}

type claimer struct {
	cfg    claimerConfig
	leaser Leaser
	lim    *limiter
	own    *ownership

	slots   map[Slot]*slotState
	waiting queue[*slotState]
	// pass gathers the leases of one pass, for one row load; buried the
	// leases a sweep moved to Dead, whose rows are to be marked dead.
	pass, buried []Lease
	// passAt is when the last pass began: when its leases were claimed.
	passAt time.Time
	// early is when a pass may next serve slots before their at: half a
	// look-ahead after the last pass that claimed (see servable).
	early time.Time
	// lost are the failed claims whose leases are still to take back.
	lost []lostClaim
}

func newClaimer(leaser Leaser, lim *limiter, own *ownership, cfg claimerConfig) *claimer {
	return &claimer{
		cfg:     cfg,
		leaser:  leaser,
		lim:     lim,
		own:     own,
		slots:   make(map[Slot]*slotState),
		waiting: queue[*slotState]{less: func(a, b *slotState) bool { return a.at().Before(b.at()) }},
	}
}

// state returns the state of slot s, creating it.
func (c *claimer) state(s Slot) *slotState {
	st, ok := c.slots[s]
	if !ok {
		st = &slotState{slot: s, topic: c.lim.topic(s.Topic), index: -1, ahead: c.cfg.ahead}
		c.slots[s] = st
	}
	return st
}

// place puts st where its times say: among its topic's due slots when a
// pass at now serves it (servable), else in the waiting queue, else
// (empty) nowhere, and forgotten.
func (c *claimer) place(st *slotState, now time.Time) {
	at := st.at()
	switch {
	case at.IsZero():
		c.unplace(st)
		delete(c.slots, st.slot)
	case c.servable(at, now):
		if !st.isDue {
			c.waiting.remove(st)
			st.isDue = true
		}
		c.lim.slotDue(st)
	default:
		if st.isDue {
			c.lim.slotGone(st)
			st.isDue = false
		}
		c.waiting.fix(st)
	}
}

// unplace takes st out of whichever queue holds it.
func (c *claimer) unplace(st *slotState) {
	if st.isDue {
		c.lim.slotGone(st)
		st.isDue = false
	} else {
		c.waiting.remove(st)
	}
}

// servable reports whether a pass at now serves a slot whose at is at:
// when at has come, or comes within the look-ahead A, so that one pass
// serves every slot due within A of the earliest and claims each one's
// jobs due within 2A. Within A/2 of a pass that claimed, a slot waits
// for its at instead. Passes run whenever anything wakes the worker (a
// job scheduled, a lease freed), hundreds of times a second under load,
// and without the wait each would claim the few jobs that came within 2A
// since the last, one small batch of rows to mark firing after another;
// with it, the passes that claim early come at most every A/2 and take
// every slot's jobs of that time in one batch, and a job is still
// claimed at least A before it is due.
func (c *claimer) servable(at, now time.Time) bool {
	switch {
	case !at.After(now):
		return true
	case at.After(now.Add(c.cfg.ahead)):
		return false
	}
	return !now.Before(c.early)
}

// claimUntil is the latest due time a claim at now takes: twice the
// look-ahead (see slotState.at).
func (c *claimer) claimUntil(now time.Time) time.Time { return now.Add(2 * c.cfg.ahead) }

// wake records that slot s has a job due at at, if the worker owns s.
func (c *claimer) wake(s Slot, at time.Time, now time.Time) {
	if !c.own.has(s) {
		return
	}
	st := c.state(s)
	if st.due.IsZero() || at.Before(st.due) {
		st.due = at
		c.place(st, now)
	}
}

// acked records the next lease end of slot s, next, as an ack that began
// at at saw it (zero: none), so that a slot whose leases were all acked
// is not swept. It is only taken when no claim of the slot was answered
// after at: the ack's script then ran after every claim of the slot, and
// saw their leases. A later claim may have leased after the ack looked,
// and its own reply keeps the slot's expiry.
func (c *claimer) acked(s Slot, next, at, now time.Time) {
	st, ok := c.slots[s]
	if !ok || st.expiry.IsZero() || st.reclaim || st.claimed.After(at) {
		return
	}
	st.expiry = next
	c.place(st, now)
}

// reclaim makes the next pass take back every lease of slot s, ended or
// not: its holder died (see Handover).
func (c *claimer) reclaim(s Slot, now time.Time) {
	if !c.own.has(s) {
		return
	}
	st := c.state(s)
	st.reclaim, st.expiry = true, now
	c.place(st, now)
}

// drop forgets slot s, no longer owned: no claim or sweep of it from now.
func (c *claimer) drop(s Slot) {
	if st, ok := c.slots[s]; ok {
		c.unplace(st)
		delete(c.slots, s)
	}
}

// dropTopics forgets every slot of topics, no longer owned.
func (c *claimer) dropTopics(topics []string) {
	if len(topics) == 0 {
		return
	}
	gone := make(map[string]bool, len(topics))
	for _, t := range topics {
		gone[t] = true
	}
	for s := range c.slots {
		if gone[s.Topic] {
			c.drop(s)
		}
	}
}

// promote moves the waiting slots whose time has come to their topics'
// due slots. They wait in the order of their at, so the first that may
// not be served yet ends it.
func (c *claimer) promote(now time.Time) {
	for {
		st, ok := c.waiting.peek()
		if !ok || !c.servable(st.at(), now) {
			return
		}
		c.waiting.pop()
		st.isDue = true
		c.lim.slotDue(st)
	}
}

// claimPipeline caps the claims one round trip to Redis carries (see
// BatchClaimer).
const claimPipeline = 128

// slotClaim is a claim planned for a slot: limit jobs, charged to its
// topic in advance (limiter.took) and settled when the reply comes.
type slotClaim struct {
	st    *slotState
	limit int
}

// runOnce is one pass: it serves every due slot the limiter lets it, in
// the limiter's order. It returns the leases claimed (the caller loads
// their rows), those a sweep buried (the caller marks their rows dead),
// and whether it stopped because the worker holds as many leases as it
// may.
//
// The pass plans the claims of up to claimPipeline slots, charging each
// to its topic as if it took all it asked for, sends them in one round
// trip, and settles each topic's charge by what its claim took; then it
// plans again, until no topic may claim.
func (c *claimer) runOnce(ctx context.Context) (leases, buried []Lease, blocked bool) {
	c.pass, c.buried = nil, nil
	now := c.cfg.now()
	c.passAt = now
	c.promote(now)
	c.unclaimLost(ctx, now)
	c.lim.unpark()
	for ctx.Err() == nil {
		claims, sweeps, full := c.plan(ctx, now)
		c.sweepAll(ctx, sweeps, now)
		switch {
		case len(claims) > 0:
			c.claimAll(ctx, claims, now)
		case len(sweeps) == 0:
			c.claimedAt(now)
			return c.pass, c.buried, full
		}
		// A swept slot whose leases came back is due: the next plan
		// claims from it.
	}
	c.claimedAt(now)
	return c.pass, c.buried, false
}

// claimedAt ends a pass that began at now: if it claimed, the next passes
// serve no slot before its at for half a look-ahead.
func (c *claimer) claimedAt(now time.Time) {
	if len(c.pass) > 0 {
		c.early = now.Add(c.cfg.ahead / 2)
	}
}

// plan picks the slots to claim from next, in the limiter's order, up to
// claimPipeline of them, and the slots to sweep first. A slot planned
// leaves its topic's due slots until its claim or sweep is settled; a
// slot with nothing to claim is placed again. full reports that planning
// stopped because the worker may hold no more leases.
//
// Each claim is charged in advance for what it asks, and the charges are
// bounded by the leases the worker may still hold. A claim asks for twice
// what its topic's claims have been taking of late (topicState.perClaim,
// at most a batch), so that with thousands of topics, where a claim takes
// a job or two, a plan holds many claims, not the two or three batches
// the worker has room for. A claim that takes all it asked for leaves its
// slot due, and the next plan claims from it again; it counts twice in
// perClaim, which so climbs to a batch within ten claims of a busy topic.
//
// A slot whose leases may have ended is swept before it is claimed from,
// in a round trip of sweeps ahead of the claims (sweepAll); its claim
// waits for the next plan.
func (c *claimer) plan(ctx context.Context, now time.Time) (claims []slotClaim, sweeps []*slotState, full bool) {
	for len(claims)+len(sweeps) < claimPipeline && ctx.Err() == nil {
		tp := c.lim.pick(now)
		if tp == nil {
			break
		}
		if !tp.known && c.cfg.learn != nil {
			c.cfg.learn(ctx, tp)
		}
		st, _ := tp.slots.peek()
		if !st.expiry.IsZero() && !st.expiry.After(now) {
			c.unplace(st)
			sweeps = append(sweeps, st)
			c.lim.requeue(tp)
			continue
		}
		ask := min(c.cfg.batch, max(1, int(math.Ceil(2*tp.perClaim))))
		limit, ok := c.claimable(st, now, ask)
		if limit > 0 {
			c.lim.took(tp, limit)
			c.unplace(st)
			claims = append(claims, slotClaim{st: st, limit: limit})
		} else {
			c.place(st, now)
		}
		c.lim.requeue(tp)
		if !ok {
			return claims, sweeps, true
		}
	}
	return claims, sweeps, false
}

// claimable says how many of st's due jobs to claim now, at most ask: 0
// when none is due, its topic may not claim now, or the worker holds all
// the leases it may, which ok false reports.
func (c *claimer) claimable(st *slotState, now time.Time, ask int) (limit int, ok bool) {
	if st.due.IsZero() || st.due.After(c.claimUntil(now)) {
		return 0, true
	}
	if limit = min(ask, c.lim.room()); limit == 0 {
		return 0, false
	}
	return c.lim.allowance(st.topic, now, limit), true // 0: the topic rests; the slot stays due
}

// sweepAll runs the planned sweeps in one round trip, returning each
// slot's ended leases to its due sets (or to Dead), and places each slot
// again.
func (c *claimer) sweepAll(ctx context.Context, sweeps []*slotState, now time.Time) {
	if len(sweeps) == 0 {
		return
	}
	calls := make([]SweepCall, len(sweeps))
	for i, st := range sweeps {
		calls[i] = SweepCall{Slot: st.slot, Limit: c.cfg.batch, All: st.reclaim}
	}
	results, errs := c.sweepEach(ctx, now, calls)
	for i, st := range sweeps {
		if err := errs[i]; err != nil {
			c.failed(ctx, st, now, "sweep", err)
		} else {
			c.swept(st, results[i], now)
		}
		c.place(st, now)
	}
}

// swept records what a sweep of st did.
func (c *claimer) swept(st *slotState, sw Sweep, now time.Time) {
	st.expiry = sw.NextExpiry
	if sw.Returned+len(sw.Dead) >= c.cfg.batch {
		st.expiry = now // a full batch: there may be more
	} else {
		st.reclaim = false
	}
	if sw.Returned > 0 {
		st.due = now
	}
	c.buried = append(c.buried, sw.Dead...)
}

// sweepEach runs calls in one round trip where the leaser can, else one
// after another.
func (c *claimer) sweepEach(ctx context.Context, now time.Time, calls []SweepCall) ([]Sweep, []error) {
	if b, ok := c.leaser.(BatchSweeper); ok {
		return b.SweepEach(ctx, now, calls)
	}
	sweeps, errs := make([]Sweep, len(calls)), make([]error, len(calls))
	for i, sc := range calls {
		sweep := c.leaser.Sweep
		if r, ok := c.leaser.(Reclaimer); ok && sc.All {
			sweep = r.Reclaim
		}
		sweeps[i], errs[i] = sweep(ctx, sc.Slot, now, sc.Limit)
	}
	return sweeps, errs
}

// claimAll runs the planned claims in one round trip, settles each
// topic's charge by what its claim took, and places each slot again.
func (c *claimer) claimAll(ctx context.Context, claims []slotClaim, now time.Time) {
	claimUntil := c.claimUntil(now)
	calls := make([]ClaimCall, len(claims))
	for i, sc := range claims {
		calls[i] = ClaimCall{Slot: sc.st.slot, Limit: sc.limit, Lease: sc.st.topic.conf.Load().lease}
	}
	results, errs := c.claimEach(ctx, claimUntil, calls)
	answered := c.cfg.now()
	for i, sc := range claims {
		st, tp := sc.st, sc.st.topic
		key := claimKey{claimUntil.UnixMilli(), calls[i].Lease}
		if err := errs[i]; err != nil {
			c.lim.untake(tp, sc.limit)
			c.failed(ctx, st, now, "claim", err)
			c.lose(st, key, claimUntil, err, now)
			c.place(st, now)
			continue
		}
		st.lastClaim = key
		cl := results[i]
		c.lim.untake(tp, sc.limit-len(cl.Leases))
		took := len(cl.Leases)
		if took == sc.limit {
			took = min(c.cfg.batch, 2*took) // full: it might have taken more
		}
		tp.perClaim += (float64(took) - tp.perClaim) / 4
		c.cfg.obs.Claimed(st.slot, len(cl.Leases))
		st.due, st.expiry, st.claimed = cl.NextDue, cl.NextExpiry, answered
		if len(cl.Leases) == sc.limit {
			st.due = now // a full batch: there may be more
		}
		c.pass = append(c.pass, cl.Leases...)
		c.place(st, now)
	}
}

// lose remembers a claim of st with key, at claimNow, that failed with
// err, so that the next passes take its leases back if it ran (a reply
// lost in a failover). It is not remembered when it cannot have run
// (refused as invalid, or its connection was never made), or when the
// slot's last answered claim has the same key: its leases, in flight,
// would be taken back with the lost ones, and fired twice. Those wait out
// their lease instead.
func (c *claimer) lose(st *slotState, key claimKey, claimNow time.Time, err error, now time.Time) {
	if _, ok := c.leaser.(Unclaimer); !ok || errors.Is(err, ErrInvalid) || neverSent(err) || st.lastClaim == key {
		return
	}
	if len(c.lost) == maxLost {
		c.lost = slices.Delete(c.lost, 0, 1)
	}
	c.lost = append(c.lost, lostClaim{slot: st.slot, key: key, now: claimNow, retry: now})
}

// neverSent reports whether err says that a request was never sent: its
// connection could not be made.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// unclaimLost takes back the leases of the lost claims, up to
// claimPipeline of them in one round trip (Unclaimer.UnclaimEach), and
// makes their slots due: their jobs fire now, not a lease from now. A
// claim is forgotten once that succeeds, once its leases have ended (the
// sweep takes them back), or once a claim of its slot with the same key
// has been answered (see lose). One that fails (Redis is still failing
// over) is tried again errorBackoff later.
func (c *claimer) unclaimLost(ctx context.Context, now time.Time) {
	u, ok := c.leaser.(Unclaimer)
	if !ok || len(c.lost) == 0 || ctx.Err() != nil {
		return
	}
	keep := c.lost[:0]
	var calls []UnclaimCall
	var tried []lostClaim
	for _, lc := range c.lost {
		if st, known := c.slots[lc.slot]; (known && st.lastClaim == lc.key) || !now.Before(lc.now.Add(lc.key.lease)) {
			continue
		}
		if now.Before(lc.retry) || len(calls) == claimPipeline {
			keep = append(keep, lc)
			continue
		}
		calls = append(calls, UnclaimCall{Slot: lc.slot, Now: lc.now, Lease: lc.key.lease})
		tried = append(tried, lc)
	}
	if len(calls) > 0 {
		ns, errs := u.UnclaimEach(ctx, now, calls)
		var failed error
		for i, lc := range tried {
			if err := errs[i]; err != nil {
				failed = err
				lc.retry = now.Add(errorBackoff)
				keep = append(keep, lc)
				continue
			}
			if ns[i] > 0 {
				c.cfg.logf("took back the leases of a claim whose reply was lost", "slot", lc.slot.String(), "leases", ns[i])
				c.cfg.obs.Unclaimed(lc.slot, ns[i])
				c.wake(lc.slot, now, now)
			}
		}
		if failed != nil && ctx.Err() == nil {
			c.cfg.logf("taking back the leases of claims whose replies were lost failed; retrying shortly", "dep", "redis", "claims", len(keep), "err", failed)
		}
	}
	clear(c.lost[len(keep):])
	c.lost = keep
}

// claimEach runs calls in one round trip where the leaser can, else one
// after another.
func (c *claimer) claimEach(ctx context.Context, now time.Time, calls []ClaimCall) ([]Claim, []error) {
	if b, ok := c.leaser.(BatchClaimer); ok {
		return b.ClaimEach(ctx, now, calls)
	}
	claims, errs := make([]Claim, len(calls)), make([]error, len(calls))
	for i, cc := range calls {
		claims[i], errs[i] = c.leaser.Claim(ctx, cc.Slot, now, cc.Limit, cc.Lease)
	}
	return claims, errs
}

// failed puts off a slot that Redis failed.
func (c *claimer) failed(ctx context.Context, st *slotState, now time.Time, op string, err error) {
	if ctx.Err() == nil {
		c.cfg.logf("slot "+op+" failed; retrying it shortly", "dep", "redis", "slot", st.slot.String(), "err", err)
	}
	retry := now.Add(errorBackoff)
	st.due = laterOf(st.due, retry)
	st.expiry = laterOf(st.expiry, retry)
}

func laterOf(t, floor time.Time) time.Time {
	if t.IsZero() || t.After(floor) {
		return t
	}
	return floor
}

// peekChunk caps the slots whose heads one peek reads.
const peekChunk = 512

// slotRange is slots [from, to) of a topic, waiting to be peeked.
type slotRange struct {
	topic    string
	from, to int
}

// takeSlots takes up to n slots off the front of ranges.
func takeSlots(ranges []slotRange, n int) ([]Slot, []slotRange) {
	var out []Slot
	for len(ranges) > 0 && len(out) < n {
		r := &ranges[0]
		for r.from < r.to && len(out) < n {
			out = append(out, Slot{Topic: r.topic, Index: r.from})
			r.from++
		}
		if r.from == r.to {
			ranges = ranges[1:]
		}
	}
	return out, ranges
}

// markDue makes the owned slots of batch due now, so that the next pass
// claims from each and learns its state from the reply.
func (c *claimer) markDue(batch []Slot) {
	now := c.cfg.now()
	for _, s := range batch {
		if c.own.has(s) {
			st := c.state(s)
			st.due = now
			c.place(st, now)
		}
	}
}

// applyHeads places the owned slots of batch by the heads read of them.
// A read only ever brings times earlier: what the claimer learnt from its
// own claims since is at least as fresh, and a time that is too early
// costs one claim that finds nothing.
//
// With inherit, the leases of a slot this claimer never placed (so never
// claimed from) are a previous run's of this member, which died holding
// them: the next sweep takes them all back at once; it returns how many
// slots it marked so.
func (c *claimer) applyHeads(batch []Slot, heads []SlotHeads, inherit bool) (inherited int) {
	now := c.cfg.now()
	for i, s := range batch {
		if !c.own.has(s) {
			continue
		}
		h := heads[i]
		st, known := c.slots[s]
		if !known {
			if h.NextDue.IsZero() && h.NextExpiry.IsZero() {
				continue
			}
			st = c.state(s)
			if inherit && !h.NextExpiry.IsZero() {
				st.reclaim, st.expiry = true, now
				inherited++
				c.place(st, now)
				continue
			}
		}
		if !h.NextDue.IsZero() && (st.due.IsZero() || h.NextDue.Before(st.due)) {
			st.due = h.NextDue
		}
		if !h.NextExpiry.IsZero() && (st.expiry.IsZero() || h.NextExpiry.Before(st.expiry)) {
			st.expiry = h.NextExpiry
		}
		c.place(st, now)
	}
	return inherited
}

// next is when the claimer next has work: the earliest waiting slot or
// resting topic; zero when there is none.
func (c *claimer) next() time.Time {
	var t time.Time
	if st, ok := c.waiting.peek(); ok {
		t = st.at()
	}
	if r := c.lim.nextRest(); !r.IsZero() && (t.IsZero() || r.Before(t)) {
		t = r
	}
	return t
}
