// What Index reports about its sets: the next due time of a slot and the
// counts of a topic.

package prepare

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Peek returns the earliest due time in slot's due sets, zero when they
// are empty.
func (q *Index) Peek(ctx context.Context, slot timer.Slot) (time.Time, error) {
	heads, err := q.Heads(ctx, []timer.Slot{slot})
	if err != nil {
		return time.Time{}, fmt.Errorf("peek: %w", err)
	}
	return heads[0].NextDue, nil
}

// earliest decodes the heads of a slot's waiting sets (KeySet.Heads), as
// ZRANGE key 0 0 WITHSCORES returned them, and returns the lowest.
func earliest(cmds []*redis.ZSliceCmd) (lua.Head, error) {
	hs := make([]lua.Head, len(cmds))
	for i, c := range cmds {
		h, err := lua.HeadOf(c.Val())
		if err != nil {
			return lua.Head{}, err
		}
		hs[i] = h
	}
	return lua.Earliest(hs...), nil
}

// statsChunk bounds the slots whose counts go in one pipeline.
const statsChunk = 1024

// Stats counts the timers of topic (with n slots) waiting (in the due
// sets of all priorities, window and later buckets), leased and dead,
// and returns the earliest due time in any of them (zero when all are
// empty). It reads every slot, in pipelines of statsChunk slots, and the
// buckets of those with any in a second; the counts are not one snapshot.
func (q *Index) Stats(ctx context.Context, topic string, n int) (waiting, leased, dead int64, nextDue time.Time, err error) {
	if !slots.ValidTopic(topic) {
		return 0, 0, 0, time.Time{}, fmt.Errorf("stats: topic %q: %w", topic, timer.ErrInvalid)
	}
	if !slots.Valid(n) {
		return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: slot count %d: %w", topic, n, timer.ErrInvalid)
	}
	type counts struct {
		due           [4]*redis.IntCmd
		prepare, dead *redis.IntCmd
		head          [5]*redis.ZSliceCmd
		buckets       *redis.StringSliceCmd
	}
	var next lua.Head
	for from := 0; from < n; from += statsChunk {
		pipe := q.client.Pipeline()
		cs := make([]counts, 0, statsChunk)
		for i := from; i < min(from+statsChunk, n); i++ {
			k := slots.Keys(q.prefixOf(topic), topic, i)
			c := counts{prepare: pipe.ZCard(ctx, k.Prepare), dead: pipe.ZCard(ctx, k.Dead),
				buckets: pipe.ZRange(ctx, k.Later, 0, -1)}
			for j, key := range k.Waiting() {
				c.due[j] = pipe.ZCard(ctx, key)
			}
			for j, key := range k.Heads() {
				c.head[j] = pipe.ZRangeWithScores(ctx, key, 0, 0)
			}
			cs = append(cs, c)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: %w", topic, err)
		}
		buckets := make([]*redis.StringSliceCmd, len(cs))
		for i, c := range cs {
			buckets[i] = c.buckets
		}
		later, err := q.countBuckets(ctx, topic, from, "+inf", buckets)
		if err != nil {
			return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: %w", topic, err)
		}
		waiting += later
		for _, c := range cs {
			for _, n := range c.due {
				waiting += n.Val()
			}
			leased += c.prepare.Val()
			dead += c.dead.Val()
			h, err := earliest(c.head[:])
			if err != nil {
				return 0, 0, 0, time.Time{}, fmt.Errorf("stats of %s: %w", topic, err)
			}
			next = lua.Earliest(next, h)
		}
	}
	return waiting, leased, dead, timeOf(next), nil
}

// countBuckets counts the members scored up to upTo ("+inf": all) of the
// later buckets of topic's slots from, from+1, ..., names[i] the read of
// the names of those of slot from+i, in one pipeline.
func (q *Index) countBuckets(ctx context.Context, topic string, from int, upTo string, names []*redis.StringSliceCmd) (int64, error) {
	pipe := q.client.Pipeline()
	var cmds []*redis.IntCmd
	for i, buckets := range names {
		k := slots.Keys(q.prefixOf(topic), topic, from+i)
		for _, b := range buckets.Val() {
			cmds = append(cmds, pipe.ZCount(ctx, k.LaterBucket(b), "-inf", upTo))
		}
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("later buckets: %w", err)
	}
	var sum int64
	for _, c := range cmds {
		sum += c.Val()
	}
	return sum, nil
}
