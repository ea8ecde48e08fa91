// A topic's lateness over the last minutes, as counts per bucket that the
// members of a cluster can add up, and the percentiles read from them.

package timer

import (
	"math"
	"sync"
	"time"
)

// LatenessBounds are the upper bounds, in milliseconds, of the lateness
// buckets; a last bucket holds the rest.
var LatenessBounds = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000}

// LatenessBuckets is how many buckets the lateness is counted in: one per
// bound of LatenessBounds and one beyond.
const LatenessBuckets = 16

// LatenessWindow is how far back a topic's lateness counts.
const LatenessWindow = 5 * time.Minute

// latenessSlots is the window's ring: one slot a minute.
const latenessSlots = 5

// lateness counts one topic's lateness, a minute to a slot. Safe for
// concurrent use.
type lateness struct {
	mu    sync.Mutex
	slots [latenessSlots]struct {
		minute int64
		counts [LatenessBuckets]int64
	}
}

func bucketOf(d time.Duration) int {
	ms := d.Milliseconds()
	for i, b := range LatenessBounds {
		if ms < b {
			return i
		}
	}
	return len(LatenessBounds)
}

// observe counts a lateness d at now.
func (l *lateness) observe(d time.Duration, now time.Time) {
	m := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.slots[m%latenessSlots]
	if s.minute != m {
		s.minute, s.counts = m, [LatenessBuckets]int64{}
	}
	s.counts[bucketOf(d)]++
}

// counts returns the counts per bucket of the window before now, nil
// when there are none.
func (l *lateness) counts(now time.Time) []int64 {
	m := now.Unix() / 60
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, s := range l.slots {
		if s.minute <= m-latenessSlots || s.minute > m {
			continue
		}
		for i, c := range s.counts {
			if c == 0 {
				continue
			}
			if out == nil {
				out = make([]int64, len(LatenessBounds)+1)
			}
			out[i] += c
		}
	}
	return out
}

// LatenessQuantile returns the q-quantile (0 < q < 1) of the lateness
// counted in buckets (as TopicUsage.Lateness holds them), as the upper
// bound of its bucket, and false when there is none. The last bucket has
// no bound: it reads as the last bound, 60 s, and more.
func LatenessQuantile(buckets []int64, q float64) (time.Duration, bool) {
	var total int64
	for _, c := range buckets {
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := max(1, int64(math.Ceil(q*float64(total)))) // nearest rank
	var seen int64
	for i, c := range buckets {
		if seen += c; seen >= rank {
			b := LatenessBounds[min(i, len(LatenessBounds)-1)]
			return time.Duration(b) * time.Millisecond, true
		}
	}
	return time.Duration(LatenessBounds[len(LatenessBounds)-1]) * time.Millisecond, true
}

// recentTick is the step of recentLate: it remembers this tick and the
// one before.
const recentTick = 250 * time.Millisecond

// recentLate is the fire path's largest lateness over the last quarter
// to half second, for the retirer, which yields to a fire path that is
// already late. Safe for concurrent use.
type recentLate struct {
	mu        sync.Mutex
	tick      int64 // of cur, in recentTicks since the epoch
	cur, prev time.Duration
}

// observe counts a lateness d at now.
func (r *recentLate) observe(d time.Duration, now time.Time) {
	k := now.UnixNano() / int64(recentTick)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case k == r.tick+1:
		r.tick, r.prev, r.cur = k, r.cur, 0
	case k > r.tick:
		r.tick, r.prev, r.cur = k, 0, 0
	}
	// An earlier tick (the clock stepped back) counts in the current one.
	r.cur = max(r.cur, d)
}

// max returns the largest lateness observed in now's tick and the one
// before; 0 when nothing fired then.
func (r *recentLate) max(now time.Time) time.Duration {
	k := now.UnixNano() / int64(recentTick)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case k <= r.tick:
		return max(r.cur, r.prev)
	case k == r.tick+1:
		return r.cur
	}
	return 0
}
