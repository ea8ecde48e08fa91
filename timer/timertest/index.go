package timertest

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Limits of the Redis index, as package lua defines them (timertest does
// not import lua, which imports go-redis); TestIndex checks that the real
// index and the fake agree on them.
const (
	// MaxBatch is the most timers one script call takes: Claim and Sweep
	// lower a larger limit to it.
	MaxBatch = 1000
	// maxAttempt is the highest attempt count a score holds.
	maxAttempt = 127
	// maxMillis is the highest Unix millisecond a score holds.
	maxMillis = 1<<46 - 1
)

// Index is an in-memory timer.Index and timer.Leaser with the semantics
// of the Lua scripts behind prepare's Redis index. Each slot has a due
// set per priority, a prepare set of leases and a dead set, all keyed by
// (job id, priority) as the Redis members are, with scores packing a time
// in Unix milliseconds and an attempt count (ms*128 + attempt). A lease's
// token is its prepare score. It is safe for concurrent use. Create it
// with NewIndex.
//
// One difference remains: members with equal scores (same millisecond and
// attempt) are ordered by job id here, and bytewise by their base-60
// member in Redis, which agree only for ids below 60.
type Index struct {
	f faults

	mu    sync.Mutex
	slots map[timer.Slot]*slotSets
}

var (
	_ timer.Index  = (*Index)(nil)
	_ timer.Leaser = (*Index)(nil)
)

// member is a job in a slot's sets: its id and priority, as a Redis
// member names both.
type member struct {
	id timer.JobID
	p  timer.Priority
}

// slotSets are one slot's sorted sets, member to score. The due set holds
// the three due sets of Redis: a member's priority names its set.
type slotSets struct {
	due, prepare, dead map[member]int64
	// window holds the window ms of the members of due that have one (in
	// Redis they wait in the slot's window sets instead).
	window map[member]int64
}

// NewIndex returns an empty Index.
func NewIndex() *Index { return &Index{slots: make(map[timer.Slot]*slotSets)} }

// FailNext makes the next n calls of method (a method name of
// timer.Index or timer.Leaser, as "Add" or "Claim") return err and change
// nothing.
func (x *Index) FailNext(method string, err error, n int) { x.f.FailNext(method, err, n) }

// LoseReplyNext makes the next n calls of method do their work and then
// return err: the reply was lost. Only Claim takes them.
func (x *Index) LoseReplyNext(method string, err error, n int) { x.f.LoseReplyNext(method, err, n) }

// Calls returns how many times method was called, failed calls included.
func (x *Index) Calls(method string) int { return x.f.Calls(method) }

// Entry is a member of one of a slot's sets, decoded.
type Entry struct {
	ID       timer.JobID
	Priority timer.Priority
	// At is the due time in a due set, the lease deadline in prepare, the
	// time of death in dead.
	At      time.Time
	Attempt int
}

// Len returns how many timers slot's due sets hold.
func (x *Index) Len(slot timer.Slot) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if s := x.slots[slot]; s != nil {
		return len(s.due)
	}
	return 0
}

// Due returns the timers of slot's due sets in score order.
func (x *Index) Due(slot timer.Slot) []Entry {
	return x.entries(slot, func(s *slotSets) map[member]int64 { return s.due })
}

// Dead returns the jobs of slot's dead set in score order (time of death).
func (x *Index) Dead(slot timer.Slot) []Entry {
	return x.entries(slot, func(s *slotSets) map[member]int64 { return s.dead })
}

// Leased returns the leases of slot's prepare set in deadline order,
// with their tokens.
func (x *Index) Leased(slot timer.Slot) []timer.Lease {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.slots[slot]
	if s == nil {
		return nil
	}
	var ls []timer.Lease
	for _, e := range sorted(s.prepare, nil, math.MaxInt64, 0) {
		ls = append(ls, timer.Lease{ID: e.m.id, Slot: slot, Attempt: attemptOf(e.score), Priority: e.m.p, Token: float64(e.score)})
	}
	return ls
}

func (x *Index) entries(slot timer.Slot, set func(*slotSets) map[member]int64) []Entry {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.slots[slot]
	if s == nil {
		return nil
	}
	var es []Entry
	for _, e := range sorted(set(s), nil, math.MaxInt64, 0) {
		es = append(es, Entry{ID: e.m.id, Priority: e.m.p, At: timer.TimeOf(msOf(e.score)), Attempt: attemptOf(e.score)})
	}
	return es
}

// sets returns slot's sets, made on first use. x.mu is held.
func (x *Index) sets(slot timer.Slot) *slotSets {
	s := x.slots[slot]
	if s == nil {
		s = &slotSets{due: map[member]int64{}, prepare: map[member]int64{}, dead: map[member]int64{}, window: map[member]int64{}}
		x.slots[slot] = s
	}
	return s
}

func score(ms int64, attempt int) int64 { return ms*128 + int64(attempt) }
func msOf(score int64) int64            { return score >> 7 }
func attemptOf(score int64) int         { return int(score & 127) }

type scored struct {
	m     member
	score int64
}

// sorted returns the members of set with priority p (any when p is nil)
// and a score at most max, in score order (ties by id), at most limit of
// them (all when limit is 0).
func sorted(set map[member]int64, p *timer.Priority, max int64, limit int) []scored {
	var out []scored
	for m, sc := range set {
		if (p == nil || m.p == *p) && sc <= max {
			out = append(out, scored{m, sc})
		}
	}
	slices.SortFunc(out, func(a, b scored) int {
		return cmp.Or(cmp.Compare(a.score, b.score), cmp.Compare(a.m.id, b.m.id), cmp.Compare(b.m.p, a.m.p))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// earliest returns the lowest score of set, and false when it is empty.
func earliest(set map[member]int64) (int64, bool) {
	low, ok := int64(0), false
	for _, sc := range set {
		if !ok || sc < low {
			low, ok = sc, true
		}
	}
	return low, ok
}

func timeOf(score int64, ok bool) time.Time {
	if !ok {
		return time.Time{}
	}
	return timer.TimeOf(msOf(score))
}

// slotOf validates t as prepare does and returns its slot.
func slotOf(t timer.Timer) (timer.Slot, error) {
	switch {
	case !t.ID.Valid():
		return timer.Slot{}, fmt.Errorf("timer id %d: %w", t.ID, timer.ErrInvalid)
	case !timer.ValidTopic(t.Topic):
		return timer.Slot{}, fmt.Errorf("timer %d: topic %q: %w", t.ID, t.Topic, timer.ErrInvalid)
	case !slots.Valid(t.Slots):
		return timer.Slot{}, fmt.Errorf("timer %d: slot count %d: %w", t.ID, t.Slots, timer.ErrInvalid)
	case !t.Priority.Valid():
		return timer.Slot{}, fmt.Errorf("timer %d: priority %d: %w", t.ID, t.Priority, timer.ErrInvalid)
	}
	return timer.Slot{Topic: t.Topic, Index: slots.Of(t.Basis, t.Slots)}, nil
}

func checkSlot(s timer.Slot) error {
	if !timer.ValidTopic(s.Topic) || s.Index < 0 || s.Index >= slots.Max {
		return fmt.Errorf("slot %q/%d: %w", s.Topic, s.Index, timer.ErrInvalid)
	}
	return nil
}

// checkLease validates l and returns its token as a score.
func checkLease(l timer.Lease) (int64, error) {
	if err := checkSlot(l.Slot); err != nil {
		return 0, err
	}
	if !l.Priority.Valid() {
		return 0, fmt.Errorf("lease of job %d: priority %d: %w", l.ID, l.Priority, timer.ErrInvalid)
	}
	if !(l.Token >= 0 && l.Token < 1<<53) || l.Token != math.Trunc(l.Token) {
		return 0, fmt.Errorf("lease of job %d: token %v: %w", l.ID, l.Token, timer.ErrInvalid)
	}
	return int64(l.Token), nil
}

// millis converts t to Unix ms, failing with timer.ErrInvalid when it does
// not fit a score.
func millis(what string, t time.Time) (int64, error) {
	ms := timer.MillisOf(t)
	if ms < 0 || ms > maxMillis {
		return 0, fmt.Errorf("%s %v: %w (from 1970 to year 4199)", what, t, timer.ErrInvalid)
	}
	return ms, nil
}

// entry is a validated timer, ready to add.
type entry struct {
	slot   timer.Slot
	m      member
	score  int64
	window int64 // ms
}

func entriesOf(timers []timer.Timer) ([]entry, error) {
	es := make([]entry, 0, len(timers))
	for _, t := range timers {
		slot, err := slotOf(t)
		if err != nil {
			return nil, err
		}
		ms, err := millis("due time", t.DueAt)
		if err != nil {
			return nil, fmt.Errorf("timer %d: %w", t.ID, err)
		}
		if t.Attempt < 0 || t.Attempt > maxAttempt {
			return nil, fmt.Errorf("timer %d: attempt %d: %w", t.ID, t.Attempt, timer.ErrInvalid)
		}
		if !timer.ValidWindow(t.Window) || ms+t.Window.Milliseconds() > maxMillis {
			return nil, fmt.Errorf("timer %d: window %v: %w", t.ID, t.Window, timer.ErrInvalid)
		}
		es = append(es, entry{slot, member{t.ID, t.Priority}, score(ms, t.Attempt), t.Window.Milliseconds()})
	}
	return es, nil
}

// Add implements timer.Index.
func (x *Index) Add(ctx context.Context, timers []timer.Timer) ([]timer.Wake, error) {
	if err := x.f.call("Add"); err != nil {
		return nil, err
	}
	es, err := entriesOf(timers)
	if err != nil {
		return nil, fmt.Errorf("add timers: %w", err)
	}
	_, wakes := x.add(es, false)
	return wakes, nil
}

// Restore implements timer.Index.
func (x *Index) Restore(ctx context.Context, timers []timer.Timer) (int, []timer.Wake, error) {
	if err := x.f.call("Restore"); err != nil {
		return 0, nil, err
	}
	es, err := entriesOf(timers)
	if err != nil {
		return 0, nil, fmt.Errorf("restore timers: %w", err)
	}
	n, wakes := x.add(es, true)
	return n, wakes, nil
}

// add runs the add script on the entries of each slot, slots in the order
// they first appear. In restore mode a member is added only when it was in
// none of its slot's sets before the call; a member given twice takes its
// last score.
func (x *Index) add(es []entry, restore bool) (int, []timer.Wake) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var order []timer.Slot
	bySlot := map[timer.Slot][]entry{}
	for _, e := range es {
		if _, ok := bySlot[e.slot]; !ok {
			order = append(order, e.slot)
		}
		bySlot[e.slot] = append(bySlot[e.slot], e)
	}
	added := 0
	var wakes []timer.Wake
	for _, slot := range order {
		s := x.sets(slot)
		absent := func(m member) bool {
			_, inDue := s.due[m]
			_, inPrepare := s.prepare[m]
			_, inDead := s.dead[m]
			return !inDue && !inPrepare && !inDead
		}
		take := map[member]bool{}
		for _, e := range bySlot[slot] {
			take[e.m] = !restore || absent(e.m)
		}
		before, hadBefore := earliest(s.due)
		for _, e := range bySlot[slot] {
			if !take[e.m] {
				continue
			}
			if _, ok := s.due[e.m]; !ok {
				added++
			}
			s.due[e.m] = e.score
			if e.window > 0 {
				s.window[e.m] = e.window
			} else {
				delete(s.window, e.m)
			}
		}
		if w, ok := wake(slot, s, before, hadBefore); ok {
			wakes = append(wakes, w)
		}
	}
	return added, wakes
}

// wake returns the Wake of slot when its earliest due ms moved earlier
// than before (or the due sets were empty before).
func wake(slot timer.Slot, s *slotSets, before int64, hadBefore bool) (timer.Wake, bool) {
	after, ok := earliest(s.due)
	if !ok || (hadBefore && msOf(after) >= msOf(before)) {
		return timer.Wake{}, false
	}
	return timer.Wake{Slot: slot, DueAt: timer.TimeOf(msOf(after))}, true
}

// Remove implements timer.Index.
func (x *Index) Remove(ctx context.Context, timers []timer.Timer) (int, error) {
	if err := x.f.call("Remove"); err != nil {
		return 0, err
	}
	var es []entry
	for _, t := range timers {
		slot, err := slotOf(t)
		if err != nil {
			return 0, fmt.Errorf("remove timers: %w", err)
		}
		es = append(es, entry{slot: slot, m: member{t.ID, t.Priority}})
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, e := range es {
		if s := x.slots[e.slot]; s != nil {
			if _, ok := s.due[e.m]; ok {
				delete(s.due, e.m)
				delete(s.window, e.m)
				n++
			}
		}
	}
	return n, nil
}

// Revive implements timer.Index.
// Forget implements timer.Leaser.
func (x *Index) Forget(ctx context.Context, slot timer.Slot, id timer.JobID) (bool, error) {
	if err := x.f.call("Forget"); err != nil {
		return false, err
	}
	if err := checkSlot(slot); err != nil {
		return false, fmt.Errorf("forget: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sets(slot)
	found := false
	for _, p := range []timer.Priority{timer.PriorityHigh, timer.PriorityNormal, timer.PriorityLow} {
		if _, ok := s.dead[member{id, p}]; ok {
			delete(s.dead, member{id, p})
			found = true
		}
	}
	return found, nil
}

// Revive implements timer.Index.
func (x *Index) Revive(ctx context.Context, t timer.Timer) (bool, []timer.Wake, error) {
	if err := x.f.call("Revive"); err != nil {
		return false, nil, err
	}
	slot, err := slotOf(t)
	if err != nil {
		return false, nil, fmt.Errorf("revive: %w", err)
	}
	ms, err := millis("due time", t.DueAt)
	if err != nil {
		return false, nil, fmt.Errorf("revive timer %d: %w", t.ID, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sets(slot)
	m := member{t.ID, t.Priority}
	if _, ok := s.dead[m]; !ok {
		return false, nil, nil
	}
	delete(s.dead, m)
	before, hadBefore := earliest(s.due)
	s.due[m] = score(ms, 0)
	if w, ok := wake(slot, s, before, hadBefore); ok {
		return true, []timer.Wake{w}, nil
	}
	return true, nil, nil
}

// Claim implements timer.Leaser, as prepare's Claim documents it: due
// timers of all priorities in the order of due time plus
// timer.PriorityAging (ties: high, normal, low); limit above MaxBatch is
// lowered to it; lease is truncated to milliseconds.
func (x *Index) Claim(ctx context.Context, slot timer.Slot, now time.Time, limit int, lease time.Duration) (timer.Claim, error) {
	if err := x.f.call("Claim"); err != nil {
		return timer.Claim{}, err
	}
	if err := checkSlot(slot); err != nil {
		return timer.Claim{}, fmt.Errorf("claim: %w", err)
	}
	nowMs, err := millis("now", now)
	if err != nil {
		return timer.Claim{}, fmt.Errorf("claim slot %s: %w", slot, err)
	}
	if limit < 1 {
		return timer.Claim{}, fmt.Errorf("claim slot %s: limit %d: %w", slot, limit, timer.ErrInvalid)
	}
	limit = min(limit, MaxBatch)
	leaseMs := lease.Milliseconds()
	if leaseMs < 1 || leaseMs > maxMillis-nowMs {
		return timer.Claim{}, fmt.Errorf("claim slot %s: lease %v: %w", slot, lease, timer.ErrInvalid)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sets(slot)
	// The due members by rank: due ms + window + aging; ties high, normal,
	// low, then those with a window (as the claim script's merge takes
	// them), then by score and id.
	due := sorted(s.due, nil, score(nowMs, maxAttempt), 0)
	rank := func(e scored) int64 {
		return msOf(e.score) + s.window[e.m] + timer.PriorityAging(e.m.p).Milliseconds()
	}
	group := func(e scored) int {
		if s.window[e.m] > 0 {
			return 3
		}
		return int(timer.PriorityHigh - e.m.p)
	}
	slices.SortStableFunc(due, func(a, b scored) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(group(a), group(b)))
	})
	base := score(nowMs+leaseMs, 0)
	c := timer.Claim{Leases: []timer.Lease{}}
	for _, e := range due[:min(limit, len(due))] {
		token := base + int64(attemptOf(e.score))
		delete(s.due, e.m)
		delete(s.window, e.m)
		s.prepare[e.m] = token
		c.Leases = append(c.Leases, timer.Lease{ID: e.m.id, Slot: slot, Attempt: attemptOf(e.score), Priority: e.m.p, Token: float64(token)})
	}
	c.NextDue = timeOf(earliest(s.due))
	c.NextExpiry = timeOf(earliest(s.prepare))
	if err := x.f.lost("Claim"); err != nil {
		return timer.Claim{}, err
	}
	return c, nil
}

var _ timer.Unclaimer = (*Index)(nil)

// UnclaimEach implements timer.Unclaimer.
func (x *Index) UnclaimEach(ctx context.Context, at time.Time, calls []timer.UnclaimCall) ([]int, []error) {
	ns, errs := make([]int, len(calls)), make([]error, len(calls))
	if err := x.f.call("Unclaim"); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return ns, errs
	}
	atMs, bad := millis("due time", at)
	for i, uc := range calls {
		ns[i], errs[i] = x.unclaim(uc, atMs, bad)
	}
	return ns, errs
}

// unclaim is UnclaimEach of one call; bad is the error of its due time.
func (x *Index) unclaim(uc timer.UnclaimCall, atMs int64, bad error) (int, error) {
	if bad != nil {
		return 0, fmt.Errorf("unclaim slot %s: %w", uc.Slot, bad)
	}
	if err := checkSlot(uc.Slot); err != nil {
		return 0, fmt.Errorf("unclaim: %w", err)
	}
	nowMs, err := millis("claim time", uc.Now)
	if err != nil {
		return 0, fmt.Errorf("unclaim slot %s: %w", uc.Slot, err)
	}
	leaseMs := uc.Lease.Milliseconds()
	if leaseMs < 1 || leaseMs > maxMillis-nowMs {
		return 0, fmt.Errorf("unclaim slot %s: lease %v: %w", uc.Slot, uc.Lease, timer.ErrInvalid)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.slots[uc.Slot]
	if s == nil {
		return 0, nil
	}
	end := score(nowMs+leaseMs, 0)
	n := 0
	for m, token := range s.prepare {
		if token < end || token > end+maxAttempt {
			continue
		}
		delete(s.prepare, m)
		if _, ok := s.due[m]; !ok {
			s.due[m] = score(atMs, attemptOf(token))
		}
		n++
	}
	return n, nil
}

// Ack implements timer.Leaser.
func (x *Index) Ack(ctx context.Context, leases []timer.Lease) (int, error) {
	if err := x.f.call("Ack"); err != nil {
		return 0, err
	}
	tokens := make([]int64, len(leases))
	for i, l := range leases {
		tok, err := checkLease(l)
		if err != nil {
			return 0, fmt.Errorf("ack: %w", err)
		}
		tokens[i] = tok
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for i, l := range leases {
		s := x.slots[l.Slot]
		m := member{l.ID, l.Priority}
		if s != nil && held(s, m, tokens[i]) {
			delete(s.prepare, m)
			n++
		}
	}
	return n, nil
}

func held(s *slotSets, m member, token int64) bool {
	sc, ok := s.prepare[m]
	return ok && sc == token
}

// Retry implements timer.Leaser. maxAttempts must be in 1..127.
func (x *Index) Retry(ctx context.Context, l timer.Lease, at time.Time, maxAttempts int, now time.Time) (timer.RetryOutcome, error) {
	if err := x.f.call("Retry"); err != nil {
		return 0, err
	}
	token, err := checkLease(l)
	if err != nil {
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
	if maxAttempts < 1 || maxAttempts > maxAttempt {
		return 0, fmt.Errorf("retry job %d: max attempts %d: %w (1..%d)", l.ID, maxAttempts, timer.ErrInvalid, maxAttempt)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.slots[l.Slot]
	m := member{l.ID, l.Priority}
	if s == nil || !held(s, m, token) {
		return timer.Lost, nil
	}
	delete(s.prepare, m)
	attempt := attemptOf(token) + 1
	if attempt >= maxAttempts || attempt > maxAttempt {
		s.dead[m] = score(nowMs, min(attempt, maxAttempt))
		delete(s.due, m)
		return timer.Buried, nil
	}
	s.due[m] = score(atMs, attempt)
	return timer.Retried, nil
}

// Defer implements timer.Leaser.
func (x *Index) Defer(ctx context.Context, l timer.Lease, at time.Time) (bool, error) {
	if err := x.f.call("Defer"); err != nil {
		return false, err
	}
	token, err := checkLease(l)
	if err != nil {
		return false, fmt.Errorf("defer job %d: %w", l.ID, err)
	}
	atMs, err := millis("defer time", at)
	if err != nil {
		return false, fmt.Errorf("defer job %d: %w", l.ID, err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.slots[l.Slot]
	m := member{l.ID, l.Priority}
	if s == nil || !held(s, m, token) {
		return false, nil
	}
	delete(s.prepare, m)
	s.due[m] = score(atMs, attemptOf(token))
	return true, nil
}

// Sweep implements timer.Leaser. A limit above MaxBatch is lowered to it.
// The dead leases it returns carry no token.
func (x *Index) Sweep(ctx context.Context, slot timer.Slot, now time.Time, limit int) (timer.Sweep, error) {
	if err := x.f.call("Sweep"); err != nil {
		return timer.Sweep{}, err
	}
	return x.sweep(slot, now, false, limit)
}

var _ timer.Reclaimer = (*Index)(nil)

// Reclaim implements timer.Reclaimer: Sweep of every lease, ended or not.
func (x *Index) Reclaim(ctx context.Context, slot timer.Slot, now time.Time, limit int) (timer.Sweep, error) {
	if err := x.f.call("Reclaim"); err != nil {
		return timer.Sweep{}, err
	}
	return x.sweep(slot, now, true, limit)
}

func (x *Index) sweep(slot timer.Slot, now time.Time, all bool, limit int) (timer.Sweep, error) {
	if err := checkSlot(slot); err != nil {
		return timer.Sweep{}, fmt.Errorf("sweep: %w", err)
	}
	nowMs, err := millis("now", now)
	if err != nil {
		return timer.Sweep{}, fmt.Errorf("sweep slot %s: %w", slot, err)
	}
	if limit < 1 {
		return timer.Sweep{}, fmt.Errorf("sweep slot %s: limit %d: %w", slot, limit, timer.ErrInvalid)
	}
	limit = min(limit, MaxBatch)
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.sets(slot)
	var sw timer.Sweep
	upto := score(nowMs, maxAttempt)
	if all {
		upto = math.MaxInt64
	}
	for _, e := range sorted(s.prepare, nil, upto, limit) {
		delete(s.prepare, e.m)
		attempt := attemptOf(e.score) + 1
		if attempt >= timer.MaxAttemptsLimit || attempt > maxAttempt {
			attempt = min(attempt, maxAttempt)
			s.dead[e.m] = score(nowMs, attempt)
			delete(s.due, e.m)
			sw.Dead = append(sw.Dead, timer.Lease{ID: e.m.id, Slot: slot, Attempt: attempt, Priority: e.m.p})
			continue
		}
		if _, ok := s.due[e.m]; !ok { // one added again while leased wins
			s.due[e.m] = score(nowMs, attempt)
		}
		sw.Returned++
	}
	sw.NextExpiry = timeOf(earliest(s.prepare))
	return sw, nil
}
