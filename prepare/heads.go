package prepare

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/timer"
)

var _ timer.HeadReader = (*Index)(nil)

// This file holds what a worker reads or clears beside the claim scripts:
// the heads of slots, and the Dead set member of a buried job.

// Heads implements timer.HeadReader: it reads the first member of each
// slot's due sets, later buckets' index and Prepare set without changing
// anything. Most slots read are empty (a topic's new slots, a rescan of
// idle ones), so one pipeline first asks which of them hold anything, one
// EXISTS a slot over its six keys, and a second reads the heads of those
// that do: a thousand new topics cost Redis 16,000 commands, not 96,000.
// Pipelines are split by node on a Redis Cluster (a slot's keys share a
// hash tag).
func (q *Index) Heads(ctx context.Context, slots []timer.Slot) ([]timer.SlotHeads, error) {
	pipe := q.client.Pipeline()
	exists := make([]*redis.IntCmd, len(slots))
	for i, s := range slots {
		if err := checkSlot(s); err != nil {
			return nil, fmt.Errorf("heads: %w", err)
		}
		keys := q.Keys(s)
		d := keys.Heads()
		exists[i] = pipe.Exists(ctx, d[0], d[1], d[2], d[3], d[4], keys.Prepare)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("heads of %d slots: %w", len(slots), err)
	}
	type slotCmds struct {
		due     [5]*redis.ZSliceCmd
		prepare *redis.ZSliceCmd
	}
	cmds := make([]*slotCmds, len(slots))
	pipe = q.client.Pipeline()
	for i, s := range slots {
		if exists[i].Val() == 0 {
			continue
		}
		keys := q.Keys(s)
		c := &slotCmds{prepare: pipe.ZRangeWithScores(ctx, keys.Prepare, 0, 0)}
		for j, key := range keys.Heads() {
			c.due[j] = pipe.ZRangeWithScores(ctx, key, 0, 0)
		}
		cmds[i] = c
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("heads of %d slots: %w", len(slots), err)
		}
	}
	out := make([]timer.SlotHeads, len(slots))
	for i, c := range cmds {
		if c == nil {
			continue
		}
		due, err := earliest(c.due[:])
		if err != nil {
			return nil, fmt.Errorf("heads of slot %s: %w", slots[i], err)
		}
		lease, err := lua.HeadOf(c.prepare.Val())
		if err != nil {
			return nil, fmt.Errorf("heads of slot %s: %w", slots[i], err)
		}
		out[i] = timer.SlotHeads{NextDue: timeOf(due), NextExpiry: timeOf(lease)}
	}
	return out, nil
}

// Forget implements timer.Leaser: it removes job id, of any priority,
// from slot's Dead set, reporting whether it was there.
func (q *Index) Forget(ctx context.Context, slot timer.Slot, id timer.JobID) (bool, error) {
	if err := checkSlot(slot); err != nil {
		return false, fmt.Errorf("forget: %w", err)
	}
	ms := lua.Members(uint64(id))
	n, err := q.client.ZRem(ctx, q.Keys(slot).Dead, ms[0], ms[1], ms[2]).Result()
	if err != nil {
		return false, fmt.Errorf("forget job %d of slot %s: %w", id, slot, err)
	}
	return n > 0, nil
}
