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
// with Usage: UsagePublisher.Publish of a new publisher, which writes
// every topic.
func (q *Index) PublishUsage(ctx context.Context, member string, usage map[string]timer.TopicUsage, now time.Time) error {
	return q.NewUsagePublisher(member).Publish(ctx, usage, now)
}

// How a UsagePublisher spares Redis: a record a reader still counts (it is
// younger than usageTTL) and that says the same is not written again
// until it is usageRefresh old, and a hash's expiry (usageKeep after it was
// set) is pushed on every usageKeep/2, not at every write. With thousands
// of busy topics a write and an EXPIRE of each every second were a fifth
// of Redis's commands.
const (
	usageRefresh = 2 * time.Second
	usageKeep    = time.Minute
)

// UsagePublisher publishes one member's use of topics, once a second, for
// any member to sum with Usage. It is not safe for concurrent use.
type UsagePublisher struct {
	q      *Index
	member string
	last   map[string]published
}

// published is what a UsagePublisher last wrote of a topic.
type published struct {
	body     string    // the record without its time
	at       time.Time // when it was written
	expireAt time.Time // when the hash's expiry was last set
}

// NewUsagePublisher returns a publisher of member's usage.
func (q *Index) NewUsagePublisher(member string) *UsagePublisher {
	return &UsagePublisher{q: q, member: member, last: make(map[string]published)}
}

// Publish records the member's use of each topic in usage at now: what
// changed since the last call, and what would soon be too old to count.
// A topic left out of usage drops out of the sums when its record is 5 s
// old, and its hash expires when no member writes it for a minute.
func (p *UsagePublisher) Publish(ctx context.Context, usage map[string]timer.TopicUsage, now time.Time) error {
	for topic, last := range p.last {
		if _, ok := usage[topic]; !ok && now.Sub(last.at) > usageTTL {
			delete(p.last, topic)
		}
	}
	pipe := p.q.client.Pipeline()
	written := make(map[string]published)
	for topic, u := range usage {
		head, tail := usageParts(u)
		body := head + tail
		last, seen := p.last[topic]
		if seen && last.body == body && now.Sub(last.at) < usageRefresh {
			continue
		}
		key := p.q.usageKey(topic)
		pipe.HSet(ctx, key, p.member, head+" "+strconv.FormatInt(now.UnixMilli(), 10)+tail)
		next := published{body: body, at: now, expireAt: last.expireAt}
		if !seen || now.Sub(last.expireAt) >= usageKeep/2 {
			pipe.Expire(ctx, key, usageKeep)
			next.expireAt = now
		}
		written[topic] = next
	}
	if len(written) == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish usage of %d topics: %w", len(written), err)
	}
	for topic, w := range written {
		p.last[topic] = w
	}
	return nil
}

// usageParts are a usage record without its time: "in-flight rate
// throttled", and " lateness,counts,..." when there are any. The record
// Usage reads is head + " " + time + tail.
func usageParts(u timer.TopicUsage) (head, tail string) {
	head = strconv.FormatInt(u.InFlight, 10) + " " + strconv.FormatFloat(u.Rate, 'f', 3, 64) + " " +
		strconv.FormatInt(u.Throttled, 10)
	if len(u.Lateness) > 0 {
		tail = " " + joinCounts(u.Lateness)
	}
	return head, tail
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
// and still in their due sets or later buckets: not yet claimed, because
// their topic is throttled or the workers are behind. A now before 1970
// or after the year 4199 (see lua.MaxMillis) is an error wrapping
// timer.ErrInvalid.
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
		var buckets []*redis.StringSliceCmd // by slot from+i
		for i := from; i < min(from+statsChunk, n); i++ {
			k := slots.Keys(q.prefixOf(topic), topic, i)
			for _, key := range k.Waiting() {
				cmds = append(cmds, pipe.ZCount(ctx, key, "-inf", upTo))
			}
			buckets = append(buckets, pipe.ZRangeByScore(ctx, k.Later, &redis.ZRangeBy{Min: "-inf", Max: upTo}))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, fmt.Errorf("due waiting of %s: %w", topic, err)
		}
		for _, c := range cmds {
			due += c.Val()
		}
		later, err := q.countBuckets(ctx, topic, from, upTo, buckets)
		if err != nil {
			return 0, fmt.Errorf("due waiting of %s: %w", topic, err)
		}
		due += later
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
