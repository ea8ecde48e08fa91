// The timer.Index side of Index: add, restore, remove and revive timers
// in their due sets and later buckets.

package prepare

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

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

// IndexNew implements timer.NewIndexer: Restore without the search of
// later buckets (lua.ModeNew), which for a job just committed costs a
// scan of up to 128 members a bucket and finds nothing.
func (q *Index) IndexNew(ctx context.Context, timers []timer.Timer) (int, []timer.Wake, error) {
	n, wakes, err := q.add(ctx, lua.ModeNew, timers)
	if err != nil {
		return 0, nil, fmt.Errorf("index new timers: %w", err)
	}
	return n, wakes, nil
}

func (q *Index) add(ctx context.Context, mode lua.AddMode, timers []timer.Timer) (int, []timer.Wake, error) {
	type windowed struct {
		e lua.Entry
		w int64 // ms
	}
	var g grouping[windowed]
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
		if !timer.ValidWindow(t.Window) {
			return 0, nil, fmt.Errorf("timer %d: window %v: %w", t.ID, t.Window, timer.ErrInvalid)
		}
		w := t.Window.Milliseconds()
		if _, err := lua.Score(ms+w, t.Attempt); err != nil {
			return 0, nil, fmt.Errorf("timer %d: %w: %w", t.ID, timer.ErrInvalid, err)
		}
		g.add(slot, windowed{lua.Entry{Member: member(t.ID, t.Priority), Ms: ms, Attempt: t.Attempt}, w})
	}
	laterFrom, widths := q.laterFrom()
	var calls []lua.AddCall
	var callSlots []timer.Slot
	for _, b := range g.batches() {
		entries := make([]lua.Entry, len(b.items))
		var windows []int64 // nil while no entry has a window
		for i, it := range b.items {
			entries[i] = it.e
			if it.w > 0 && windows == nil {
				windows = make([]int64, len(b.items))
			}
			if windows != nil {
				windows[i] = it.w
			}
		}
		calls = append(calls, lua.AddCall{
			Keys:           q.Keys(b.slot),
			Mode:           mode,
			WakeChannel:    q.cfg.WakeChannel,
			WakeMessage:    b.slot.Topic + " " + strconv.Itoa(b.slot.Index),
			Entries:        entries,
			WindowMs:       windows,
			LaterFromMs:    laterFrom,
			BucketWidthsMs: widths,
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

// laterFrom returns the Unix ms from which add sends a timer to a later
// bucket, two of the finest widths from now, and the widths in ms; 0,
// nil when buckets are off.
func (q *Index) laterFrom() (from int64, widths []int64) {
	if len(q.widths) == 0 {
		return 0, nil
	}
	return max(timer.MillisOf(q.cfg.Now())+2*q.widths[0], 1), q.widths
}

// Remove implements timer.Index. It removes each timer from the due set
// of its priority, from the slot's window sets, where a timer with a
// window waits instead, and from the later buckets of its due time, one
// of each width. A copy in a bucket of another time (its due time changed
// since it was put there, without Redis) stays until its bucket is due;
// the store, the truth, then says the timer has ended.
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
		slot    timer.Slot
		cmd     *redis.IntCmd
		uncount bool // windowEnd's: the same members as window's
	}
	var rs []removal
	pipe := q.client.Pipeline()
	for _, b := range batches {
		var members [3][]any // by priority, as KeySet.Dues orders them
		var all []any
		later := map[string][]any{} // by bucket name
		var buckets []string
		keys := q.Keys(b.slot)
		for _, t := range b.items {
			i := dueIndex(t.Priority)
			m := member(t.ID, t.Priority)
			members[i] = append(members[i], m)
			all = append(all, m)
			for _, w := range q.widths {
				n := slots.LaterBucketName(w, timer.MillisOf(t.DueAt))
				if later[n] == nil {
					buckets = append(buckets, n)
				}
				later[n] = append(later[n], m)
			}
		}
		for i, key := range keys.Dues() {
			if len(members[i]) > 0 {
				rs = append(rs, removal{slot: b.slot, cmd: pipe.ZRem(ctx, key, members[i]...)})
			}
		}
		// A member waits in one of its due set, window and the bucket of
		// its due time; a stale copy left in the bucket counts as well.
		for _, n := range buckets {
			rs = append(rs, removal{slot: b.slot, cmd: pipe.ZRem(ctx, keys.LaterBucket(n), later[n]...)})
		}
		// A member is in its due set or in window, never both; windowEnd
		// holds the same members as window, so only window counts.
		rs = append(rs, removal{slot: b.slot, cmd: pipe.ZRem(ctx, keys.Window, all...)},
			removal{slot: b.slot, cmd: pipe.ZRem(ctx, keys.WindowEnd, all...), uncount: true})
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	n := 0
	for _, r := range rs {
		if err := r.cmd.Err(); err != nil {
			return 0, fmt.Errorf("remove timers of slot %s: %w", r.slot, err)
		}
		if !r.uncount {
			n += int(r.cmd.Val())
		}
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
