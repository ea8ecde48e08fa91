package prepare

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// A member's series (timer.Series) in Redis, for any member to add up:
// one hash per label, resolution and period (an hour of 10 s buckets, a
// day of minutes), whose fields are "index:member" (the bucket's index,
// its start in seconds since the epoch over its width) and whose values
// are the member's bucket (seriesText). A hash expires a period after its
// own ends, so that the 10 s buckets stay an hour or more and the minutes
// a day or more. Like the usage hashes they have no hash tag.

// SeriesRecord is one member's bucket of a series to publish.
type SeriesRecord struct {
	Label string
	// Res is the bucket's width, timer.SeriesFine or timer.SeriesCoarse,
	// and Start its start, a multiple of Res.
	Res    time.Duration
	Start  time.Time
	Bucket timer.SeriesBucket
}

// seriesPeriod is the period of a hash of buckets of width res: the span
// its ring keeps.
func seriesPeriod(res time.Duration) time.Duration {
	if res == timer.SeriesCoarse {
		return timer.SeriesCoarseSpan
	}
	return timer.SeriesFineSpan
}

// seriesKey is the hash of label's buckets of width res in the period
// holding start; expireAt is when it expires.
func (q *Index) seriesKey(label string, res time.Duration, start time.Time) (key string, expireAt time.Time) {
	period := seriesPeriod(res)
	n := start.Unix() / int64(period/time.Second)
	key = q.cfg.Prefix + "series:" + label + ":" + res.String() + ":" + strconv.FormatInt(n, 10)
	return key, time.Unix((n+2)*int64(period/time.Second), 0)
}

// SeriesPublisher writes one member's buckets. It sets a hash's expiry
// once, not at every write. It is not safe for concurrent use.
type SeriesPublisher struct {
	q      *Index
	member string
	// expiring are the hashes whose expiry was set, until then.
	expiring map[string]time.Time
}

// NewSeriesPublisher returns a publisher of member's buckets.
func (q *Index) NewSeriesPublisher(member string) *SeriesPublisher {
	return &SeriesPublisher{q: q, member: member, expiring: make(map[string]time.Time)}
}

// Publish writes records in one round trip: an HSET each, and an
// EXPIREAT of each hash not yet written. A bucket written again
// replaces the last (a minute is written every 10 s while it fills).
func (p *SeriesPublisher) Publish(ctx context.Context, records []SeriesRecord, now time.Time) error {
	for key, at := range p.expiring {
		if now.After(at) {
			delete(p.expiring, key)
		}
	}
	if len(records) == 0 {
		return nil
	}
	pipe := p.q.client.Pipeline()
	set := map[string]time.Time{}
	for _, r := range records {
		key, expireAt := p.q.seriesKey(r.Label, r.Res, r.Start)
		field := strconv.FormatInt(r.Start.Unix()/int64(r.Res/time.Second), 10) + ":" + p.member
		pipe.HSet(ctx, key, field, seriesText(r.Bucket))
		if _, ok := p.expiring[key]; !ok {
			pipe.ExpireAt(ctx, key, expireAt)
			set[key] = expireAt
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish %d series buckets: %w", len(records), err)
	}
	for key, at := range set {
		p.expiring[key] = at
	}
	return nil
}

// seriesText is a bucket as Redis holds it: "fires failures dead
// throttled in-flight lateness", failures and lateness comma-separated
// counts (lateness without its trailing zeros).
func seriesText(b timer.SeriesBucket) string {
	last := len(b.Lateness)
	for last > 1 && b.Lateness[last-1] == 0 {
		last--
	}
	return strconv.FormatInt(b.Fires, 10) + " " + joinCounts(b.Failures[:]) + " " + strconv.FormatInt(b.Dead, 10) + " " +
		strconv.FormatInt(b.Throttled, 10) + " " + strconv.FormatInt(b.InFlight, 10) + " " + joinCounts(b.Lateness[:last])
}

// joinCounts is counts comma-separated, as parseCounts reads them.
func joinCounts(counts []int64) string {
	s := make([]string, len(counts))
	for i, c := range counts {
		s[i] = strconv.FormatInt(c, 10)
	}
	return strings.Join(s, ",")
}

// parseSeries reads seriesText; false when v is not one.
func parseSeries(v string) (timer.SeriesBucket, bool) {
	var b timer.SeriesBucket
	parts := strings.Fields(v)
	if len(parts) != 6 {
		return b, false
	}
	fails, late := parseCounts(parts[1]), parseCounts(parts[5])
	if len(fails) != len(b.Failures) || len(late) == 0 || len(late) > len(b.Lateness) {
		return b, false
	}
	copy(b.Failures[:], fails)
	copy(b.Lateness[:], late)
	ones := parseCounts(parts[0] + "," + parts[2] + "," + parts[3] + "," + parts[4])
	if len(ones) != 4 {
		return b, false
	}
	b.Fires, b.Dead, b.Throttled, b.InFlight = ones[0], ones[1], ones[2], ones[3]
	return b, true
}

// ReadSeries adds up the published buckets of label of width res from
// the one starting at from to the one before to (both multiples of res),
// of every member but skip (the caller, which adds its own from memory),
// and returns them in order, with the members that published any.
func (q *Index) ReadSeries(ctx context.Context, label string, res time.Duration, from, to time.Time, skip string) ([]timer.SeriesBucket, []string, error) {
	width := int64(res / time.Second)
	first, end := from.Unix()/width, to.Unix()/width
	out := make([]timer.SeriesBucket, max(end-first, 0))
	seen := map[string]bool{}
	period := seriesPeriod(res)
	for p := from.Truncate(period); p.Before(to); p = p.Add(period) {
		key, _ := q.seriesKey(label, res, p)
		fields, err := q.client.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, nil, fmt.Errorf("read series %s by %v: %w", label, res, err)
		}
		for f, v := range fields {
			index, member, ok := strings.Cut(f, ":")
			i, err := strconv.ParseInt(index, 10, 64)
			if !ok || err != nil || member == skip || i < first || i >= end {
				continue
			}
			b, ok := parseSeries(v)
			if !ok {
				continue
			}
			out[i-first].Add(b)
			seen[member] = true
		}
	}
	members := make([]string, 0, len(seen))
	for m := range seen {
		members = append(members, m)
	}
	return out, members, nil
}
