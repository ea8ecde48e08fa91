package prepare

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// usageTTL is how long a member's published usage counts: a member that
// stopped publishing (it died) drops out of the sums after it.
const usageTTL = 5 * time.Second

// usageKey is the hash of a topic's usage, one field per member. It has
// no hash tag: each topic's hash lives wherever it hashes to.
func (q *Index) usageKey(topic string) string { return q.cfg.Prefix + "usage:" + topic }

// PublishUsage records member's use of each topic, for any member to sum
// with Usage. Call it about once a second; a record older than 5 s is
// ignored, and the hash expires when no member writes it for a minute.
func (q *Index) PublishUsage(ctx context.Context, member string, usage map[string]timer.TopicUsage, now time.Time) error {
	if len(usage) == 0 {
		return nil
	}
	pipe := q.client.Pipeline()
	for topic, u := range usage {
		v := strconv.FormatInt(u.InFlight, 10) + " " + strconv.FormatFloat(u.Rate, 'f', 3, 64) + " " +
			strconv.FormatInt(u.Throttled, 10) + " " + strconv.FormatInt(now.UnixMilli(), 10)
		if len(u.Lateness) > 0 {
			counts := make([]string, len(u.Lateness))
			for i, c := range u.Lateness {
				counts[i] = strconv.FormatInt(c, 10)
			}
			v += " " + strings.Join(counts, ",")
		}
		key := q.usageKey(topic)
		pipe.HSet(ctx, key, member, v)
		pipe.Expire(ctx, key, time.Minute)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish usage of %d topics: %w", len(usage), err)
	}
	return nil
}

// Usage returns topic's live use over the cluster: the usage that members
// published within the last 5 s before now, summed, and its jobs due at
// now still waiting in Redis.
func (q *Index) Usage(ctx context.Context, topic timer.Topic, now time.Time) (timer.Usage, error) {
	due, err := q.DueWaiting(ctx, topic.Name, topic.Slots, now)
	if err != nil {
		return timer.Usage{}, err
	}
	fields, err := q.client.HGetAll(ctx, q.usageKey(topic.Name)).Result()
	if err != nil {
		return timer.Usage{}, fmt.Errorf("usage of %s: %w", topic.Name, err)
	}
	u := timer.Usage{DueWaiting: due}
	for _, v := range fields {
		// "in-flight rate throttled at [lateness,counts,...]": a member of
		// an older version publishes the first four.
		parts := strings.Fields(v)
		if len(parts) != 4 && len(parts) != 5 {
			continue
		}
		inFlight, err1 := strconv.ParseInt(parts[0], 10, 64)
		rate, err2 := strconv.ParseFloat(parts[1], 64)
		throttled, err3 := strconv.ParseInt(parts[2], 10, 64)
		at, err4 := strconv.ParseInt(parts[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || now.Sub(time.UnixMilli(at)) > usageTTL {
			continue
		}
		u.InFlight += inFlight
		u.Rate += rate
		u.Throttled += throttled
		u.Members++
		if len(parts) == 5 {
			u.AddLateness(parseCounts(parts[4]))
		}
	}
	return u, nil
}

// DueWaiting counts the jobs of a topic of n slots that are due at now
// and still in their due sets: not yet claimed, because their topic is
// throttled or the workers are behind. A now before 1970 or after the
// year 4199 (see lua.MaxMillis) is an error wrapping timer.ErrInvalid.
func (q *Index) DueWaiting(ctx context.Context, topic string, n int, now time.Time) (int64, error) {
	if !slots.ValidTopic(topic) || !slots.Valid(n) {
		return 0, fmt.Errorf("due waiting of %s (%d slots): %w", topic, n, timer.ErrInvalid)
	}
	upTo, err := lua.ScoreBound(timer.MillisOf(now))
	if err != nil {
		return 0, fmt.Errorf("due waiting of %s: %w", topic, invalid(err))
	}
	var due int64
	for from := 0; from < n; from += statsChunk {
		pipe := q.client.Pipeline()
		var cmds []*redis.IntCmd
		for i := from; i < min(from+statsChunk, n); i++ {
			for _, key := range slots.Keys(q.cfg.Prefix, topic, i).Dues() {
				cmds = append(cmds, pipe.ZCount(ctx, key, "-inf", upTo))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("due waiting of %s: %w", topic, err)
		}
		for _, c := range cmds {
			due += c.Val()
		}
	}
	return due, nil
}

// parseCounts reads comma-separated counts; nil when one is not a count.
func parseCounts(s string) []int64 {
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return nil
		}
		out = append(out, n)
	}
	return out
}
