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
		counts [16]int64
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
		s.minute, s.counts = m, [16]int64{}
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
