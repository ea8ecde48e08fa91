package prepare

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Defaults of Config.
const (
	// DefaultWakeSuffix follows the prefix in the default wake channel.
	DefaultWakeSuffix = "wake"
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

// Config configures an Index.
type Config struct {
	// Prefix starts every key; slots.DefaultPrefix when empty. It must not
	// hold '{' or '}', which would take the hash tag away from the slot's.
	Prefix string
	// WakeChannel is the pub/sub channel of wake-ups; Prefix followed by
	// DefaultWakeSuffix when empty.
	WakeChannel string
	// Logger receives the Waker's reconnect warnings; slog.Default() when
	// nil.
	Logger *slog.Logger
}

// Validate returns a *timer.FieldError naming the first invalid field.
func (c Config) Validate() error { return slots.CheckPrefix(c.Prefix) }

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, slots.DefaultPrefix)
	c.WakeChannel = cmp.Or(c.WakeChannel, c.Prefix+DefaultWakeSuffix)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Index is the Redis timer index over one Redis deployment (a single node,
// Sentinel or Cluster).
type Index struct {
	client redis.UniversalClient
	cfg    Config

	// subscribed, when set (by tests), is called each time Wakes has
	// subscribed.
	subscribed func()
}

var (
	_ timer.Index  = (*Index)(nil)
	_ timer.Leaser = (*Index)(nil)
	_ timer.Waker  = (*Index)(nil)
)

// New returns an Index over client, or an error wrapping cfg's
// *timer.FieldError.
func New(client redis.UniversalClient, cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("prepare config: %w", err)
	}
	return &Index{client: client, cfg: cfg.withDefaults()}, nil
}

// Keys returns the keys of slot.
func (q *Index) Keys(slot timer.Slot) slots.KeySet {
	return slots.Keys(q.cfg.Prefix, slot.Topic, slot.Index)
}

// Add implements timer.Index.
func (q *Index) Add(ctx context.Context, timers []timer.Timer) ([]timer.Wake, error) {
	_, wakes, err := q.add(ctx, lua.ModeSet, timers)
	if err != nil {
		return nil, fmt.Errorf("add timers: %w", err)
	}
	return wakes, nil
}

// Restore implements timer.Index.
func (q *Index) Restore(ctx context.Context, timers []timer.Timer) (int, []timer.Wake, error) {
	n, wakes, err := q.add(ctx, lua.ModeRestore, timers)
	if err != nil {
		return 0, nil, fmt.Errorf("restore timers: %w", err)
	}
	return n, wakes, nil
}

func (q *Index) add(ctx context.Context, mode lua.AddMode, timers []timer.Timer) (int, []timer.Wake, error) {
	var g grouping[lua.Entry]
	for _, t := range timers {
		slot, err := slotOf(t)
		if err != nil {
			return 0, nil, err
		}
		ms, err := millis("due time", t.DueAt)
		if err != nil {
			return 0, nil, fmt.Errorf("timer %d: %w", t.ID, err)
		}
		if _, err := lua.Score(ms, t.Attempt); err != nil {
			return 0, nil, fmt.Errorf("timer %d: %w: %w", t.ID, timer.ErrInvalid, err)
		}
		g.add(slot, lua.Entry{Member: member(t.ID, t.Priority), Ms: ms, Attempt: t.Attempt})
	}
	var calls []lua.AddCall
	var callSlots []timer.Slot
	for _, b := range g.batches() {
		calls = append(calls, lua.AddCall{
			Keys:        q.Keys(b.slot),
			Mode:        mode,
			WakeChannel: q.cfg.WakeChannel,
			WakeMessage: b.slot.Topic + " " + strconv.Itoa(b.slot.Index),
			Entries:     b.items,
		})
		callSlots = append(callSlots, b.slot)
	}
	if len(calls) == 0 {
		return 0, nil, nil
	}
	results, err := lua.Add(ctx, q.client, calls...)
	if err != nil {
		return 0, nil, err
	}
	added := 0
	var wakes []timer.Wake
	at := map[timer.Slot]int{} // index in wakes
	for i, r := range results {
		added += r.Added
		if !r.Earliest.OK {
			continue
		}
		w := timer.Wake{Slot: callSlots[i], DueAt: timer.TimeOf(r.Earliest.Ms)}
		if j, ok := at[w.Slot]; !ok {
			at[w.Slot] = len(wakes)
			wakes = append(wakes, w)
		} else if w.DueAt.Before(wakes[j].DueAt) {
			wakes[j] = w
		}
	}
	return added, wakes, nil
}

// Remove implements timer.Index. It removes each timer from the due set
// of its priority.
func (q *Index) Remove(ctx context.Context, timers []timer.Timer) (int, error) {
	var g grouping[timer.Timer]
	for _, t := range timers {
		slot, err := slotOf(t)
		if err != nil {
			return 0, fmt.Errorf("remove timers: %w", err)
		}
		g.add(slot, t)
	}
	batches := g.batches()
	if len(batches) == 0 {
		return 0, nil
	}
	type removal struct {
		slot timer.Slot
		cmd  *redis.IntCmd
	}
	var rs []removal
	pipe := q.client.Pipeline()
	for _, b := range batches {
		var members [3][]any // by priority, as KeySet.Dues orders them
		for _, t := range b.items {
			i := dueIndex(t.Priority)
			members[i] = append(members[i], member(t.ID, t.Priority))
		}
		for i, key := range q.Keys(b.slot).Dues() {
			if len(members[i]) > 0 {
				rs = append(rs, removal{b.slot, pipe.ZRem(ctx, key, members[i]...)})
			}
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	n := 0
	for _, r := range rs {
		if err := r.cmd.Err(); err != nil {
			return 0, fmt.Errorf("remove timers of slot %s: %w", r.slot, err)
		}
		n += int(r.cmd.Val())
	}
	return n, nil
}

// Revive implements timer.Index. When the revived job moves its slot's
// earliest due time earlier, it returns the Wake, and the script also
// publishes it on the wake channel for the other processes' Wakers.
func (q *Index) Revive(ctx context.Context, t timer.Timer) (bool, []timer.Wake, error) {
	slot, err := slotOf(t)
	if err != nil {
		return false, nil, fmt.Errorf("revive: %w", err)
	}
	ms, err := millis("due time", t.DueAt)
	if err != nil {
		return false, nil, fmt.Errorf("revive timer %d: %w", t.ID, err)
	}
	r, err := lua.Revive(ctx, q.client, lua.ReviveCall{
		Keys:        q.Keys(slot),
		Member:      member(t.ID, t.Priority),
		Ms:          ms,
		WakeChannel: q.cfg.WakeChannel,
		WakeMessage: slot.Topic + " " + strconv.Itoa(slot.Index),
	})
	if err != nil {
		return false, nil, fmt.Errorf("revive in slot %s: %w", slot, invalid(err))
	}
	if !r.Earliest.OK {
		return r.Revived, nil, nil
	}
	return r.Revived, []timer.Wake{{Slot: slot, DueAt: timer.TimeOf(r.Earliest.Ms)}}, nil
}

// Claim implements timer.Leaser. It takes due timers of all priorities in
// the order of due time plus timer.PriorityAging (ties: high, normal,
// low), and returns the leases in that order. limit must be positive;
// above lua.MaxBatch it is lowered to that, so that one call never blocks
// Redis for long (the claim then returns fewer than limit leases with
// NextDue not after now). lease must be at least a millisecond and is
// truncated to milliseconds.
func (q *Index) Claim(ctx context.Context, slot timer.Slot, now time.Time, limit int, lease time.Duration) (timer.Claim, error) {
	nowMs, limit, err := checkPass("claim", slot, now, limit)
	if err != nil {
		return timer.Claim{}, err
	}
	if lease < time.Millisecond {
		return timer.Claim{}, fmt.Errorf("claim slot %s: lease %v: %w (at least 1ms)", slot, lease, timer.ErrInvalid)
	}
	r, err := lua.Claim(ctx, q.client, q.Keys(slot), nowMs, limit, lease.Milliseconds(), aging)
	if err != nil {
		return timer.Claim{}, fmt.Errorf("claim slot %s: %w", slot, invalid(err))
	}
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
	var g grouping[lua.Held]
	for _, l := range leases {
		if err := checkLease(l); err != nil {
			return 0, fmt.Errorf("ack: %w", err)
		}
		g.add(l.Slot, held(l))
	}
	batches := g.batches()
	if len(batches) == 0 {
		return 0, nil
	}
	calls := make([]lua.AckCall, len(batches))
	for i, b := range batches {
		calls[i] = lua.AckCall{Keys: q.Keys(b.slot), Leases: b.items}
	}
	n, err := lua.Ack(ctx, q.client, calls...)
	if err != nil {
		return 0, fmt.Errorf("ack %d leases: %w", len(leases), invalid(err))
	}
	return n, nil
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

// Sweep implements timer.Leaser. limit must be positive; above
// lua.MaxBatch it is lowered to that (NextExpiry then says whether more
// leases have expired). The Dead leases it returns carry the attempt count
// recorded in Dead and no token.
func (q *Index) Sweep(ctx context.Context, slot timer.Slot, now time.Time, limit int) (timer.Sweep, error) {
	nowMs, limit, err := checkPass("sweep", slot, now, limit)
	if err != nil {
		return timer.Sweep{}, err
	}
	r, err := lua.Sweep(ctx, q.client, q.Keys(slot), nowMs, limit, SweepAttemptCap)
	if err != nil {
		return timer.Sweep{}, fmt.Errorf("sweep slot %s: %w", slot, err)
	}
	s := timer.Sweep{Returned: r.Returned, NextExpiry: timeOf(r.PrepareHead)}
	var bad error
	for _, e := range r.Dead {
		lease, err := leaseOf(slot, e.Member, e.Attempt, 0)
		if err != nil {
			bad = errors.Join(bad, err)
			continue
		}
		s.Dead = append(s.Dead, lease)
	}
	if bad != nil {
		return s, fmt.Errorf("sweep slot %s: bad members in Prepare: %w", slot, bad)
	}
	return s, nil
}

// Peek returns the earliest due time in slot's due sets, zero when they
// are empty.
func (q *Index) Peek(ctx context.Context, slot timer.Slot) (time.Time, error) {
	if err := checkSlot(slot); err != nil {
		return time.Time{}, fmt.Errorf("peek: %w", err)
	}
	pipe := q.client.Pipeline()
	var cmds [3]*redis.ZSliceCmd
	for i, key := range q.Keys(slot).Dues() {
		cmds[i] = pipe.ZRangeWithScores(ctx, key, 0, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return time.Time{}, fmt.Errorf("peek slot %s: %w", slot, err)
	}
	h, err := earliest(cmds)
	if err != nil {
		return time.Time{}, fmt.Errorf("peek slot %s: %w", slot, err)
	}
	return timeOf(h), nil
}

// earliest decodes the heads of a slot's due sets, as ZRANGE key 0 0
// WITHSCORES returned them, and returns the lowest.
func earliest(cmds [3]*redis.ZSliceCmd) (lua.Head, error) {
	var hs [3]lua.Head
	for i, c := range cmds {
		h, err := lua.HeadOf(c.Val())
		if err != nil {
			return lua.Head{}, err
		}
		hs[i] = h
	}
	return lua.Earliest(hs[:]...), nil
}

// statsChunk bounds the slots whose counts go in one pipeline.
const statsChunk = 1024

// Stats counts the timers of topic (with n slots) waiting (in the due
// sets of all priorities), leased and dead, and returns the earliest due
// time in any due set (zero when all are empty). It reads every slot, in
// pipelines of statsChunk slots; the counts are not one snapshot.
func (q *Index) Stats(ctx context.Context, topic string, n int) (waiting, leased, dead int64, nextDue time.Time, err error) {
	if !slots.ValidTopic(topic) {
		return 0, 0, 0, time.Time{}, fmt.Errorf("stats: topic %q: %w", topic, timer.ErrInvalid)
	}
	if !slots.Valid(n) {
		return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: slot count %d: %w", topic, n, timer.ErrInvalid)
	}
	type counts struct {
		due           [3]*redis.IntCmd
		prepare, dead *redis.IntCmd
		head          [3]*redis.ZSliceCmd
	}
	var next lua.Head
	for from := 0; from < n; from += statsChunk {
		pipe := q.client.Pipeline()
		cs := make([]counts, 0, statsChunk)
		for i := from; i < min(from+statsChunk, n); i++ {
			k := slots.Keys(q.cfg.Prefix, topic, i)
			c := counts{prepare: pipe.ZCard(ctx, k.Prepare), dead: pipe.ZCard(ctx, k.Dead)}
			for j, key := range k.Dues() {
				c.due[j] = pipe.ZCard(ctx, key)
				c.head[j] = pipe.ZRangeWithScores(ctx, key, 0, 0)
			}
			cs = append(cs, c)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: %w", topic, err)
		}
		for _, c := range cs {
			for _, n := range c.due {
				waiting += n.Val()
			}
			leased += c.prepare.Val()
			dead += c.dead.Val()
			h, err := earliest(c.head)
			if err != nil {
				return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: %w", topic, err)
			}
			next = lua.Earliest(next, h)
		}
	}
	return waiting, leased, dead, timeOf(next), nil
}

// slotOf validates t and returns its slot.
func slotOf(t timer.Timer) (timer.Slot, error) {
	if !t.ID.Valid() {
		return timer.Slot{}, fmt.Errorf("timer id %d: %w", t.ID, timer.ErrInvalid)
	}
	if !slots.ValidTopic(t.Topic) {
		return timer.Slot{}, fmt.Errorf("timer %d: topic %q: %w", t.ID, t.Topic, timer.ErrInvalid)
	}
	if !slots.Valid(t.Slots) {
		return timer.Slot{}, fmt.Errorf("timer %d: slot count %d: %w", t.ID, t.Slots, timer.ErrInvalid)
	}
	if !t.Priority.Valid() {
		return timer.Slot{}, fmt.Errorf("timer %d: priority %d: %w", t.ID, t.Priority, timer.ErrInvalid)
	}
	return slots.JobSlot(t.Topic, t.Basis, t.Slots), nil
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

func checkSlot(s timer.Slot) error {
	if !slots.ValidTopic(s.Topic) || s.Index < 0 || s.Index >= slots.Max {
		return fmt.Errorf("slot %q/%d: %w", s.Topic, s.Index, timer.ErrInvalid)
	}
	return nil
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

// member returns the sorted-set member of job id at priority p, which the
// caller has validated (see lua.Member).
func member(id timer.JobID, p timer.Priority) string { return lua.Member(uint64(id), int(p)) }

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

// dueIndex returns the index of the due set of priority p in
// slots.KeySet.Dues, highest first.
func dueIndex(p timer.Priority) int { return int(timer.PriorityHigh - p) }

// invalid marks a lua.ErrRange error (input that does not fit a score) as
// timer.ErrInvalid too.
func invalid(err error) error {
	if errors.Is(err, lua.ErrRange) {
		return fmt.Errorf("%w: %w", timer.ErrInvalid, err)
	}
	return err
}

// millis converts t to Unix ms, failing with timer.ErrInvalid when it does
// not fit a score.
func millis(what string, t time.Time) (int64, error) {
	ms := timer.MillisOf(t)
	if ms < 0 || ms > lua.MaxMillis {
		return 0, fmt.Errorf("%s %v: %w (from 1970 to year 4199)", what, t, timer.ErrInvalid)
	}
	return ms, nil
}

// timeOf converts a set's head to a time, zero for an empty set.
func timeOf(h lua.Head) time.Time {
	if !h.OK {
		return time.Time{}
	}
	return timer.TimeOf(h.Ms)
}

// grouping collects items by slot, in the order slots first appear, and
// cuts them into batches of at most lua.MaxBatch.
type grouping[T any] struct {
	order []timer.Slot
	items map[timer.Slot][]T
}

type batch[T any] struct {
	slot  timer.Slot
	items []T
}

func (g *grouping[T]) add(s timer.Slot, item T) {
	if g.items == nil {
		g.items = map[timer.Slot][]T{}
	}
	if _, ok := g.items[s]; !ok {
		g.order = append(g.order, s)
	}
	g.items[s] = append(g.items[s], item)
}

func (g *grouping[T]) batches() []batch[T] {
	var out []batch[T]
	for _, s := range g.order {
		items := g.items[s]
		for len(items) > 0 {
			n := min(len(items), lua.MaxBatch)
			out = append(out, batch[T]{slot: s, items: items[:n]})
			items = items[n:]
		}
	}
	return out
}

var _ timer.LossDetector = (*Index)(nil)

// markKey is the key whose absence says Redis lost its data. On Redis
// Cluster it lives on one node: the loss of another node alone is found
// by the backstop's periodic full scan instead.
func (q *Index) markKey() string { return q.cfg.Prefix + "mark" }

// Mark implements timer.LossDetector.
func (q *Index) Mark(ctx context.Context) error {
	if err := q.client.Set(ctx, q.markKey(), "1", 0).Err(); err != nil {
		return fmt.Errorf("set %s: %w", q.markKey(), err)
	}
	return nil
}

// Lost implements timer.LossDetector.
func (q *Index) Lost(ctx context.Context) (bool, error) {
	n, err := q.client.Exists(ctx, q.markKey()).Result()
	if err != nil {
		return false, fmt.Errorf("exists %s: %w", q.markKey(), err)
	}
	return n == 0, nil
}
