// Series: what a member fired, per topic and overall, by 10 s for the
// last hour and by the minute for the last day, in memory and bounded,
// as buckets that the members of a cluster add up (GET /v1/series).

package timer

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The two resolutions a Series keeps, and how far back each goes.
const (
	SeriesFine       = 10 * time.Second
	SeriesFineSpan   = time.Hour
	SeriesCoarse     = time.Minute
	SeriesCoarseSpan = 24 * time.Hour
)

const (
	fineCells   = int64(SeriesFineSpan / SeriesFine)     // 360
	coarseCells = int64(SeriesCoarseSpan / SeriesCoarse) // 1440
)

// SeriesAll is the label of the series of every topic, SeriesOther that
// of the topics past a Series's bound; neither is a valid topic name.
const (
	SeriesAll   = "_all"
	SeriesOther = "_other"
)

// FailureClasses name the classes of failed attempts, in the order of
// SeriesBucket.Failures: the receiver answered 4xx or 5xx (410 Gone and
// 429 included), the attempt timed out, or something else (no
// connection, a refused address, another status).
var FailureClasses = [4]string{"4xx", "5xx", "timeout", "other"}

// SeriesBucket is what was counted in one bucket of time.
type SeriesBucket struct {
	// Fires counts the attempts that ended in the bucket (a job not sent
	// because its host's breaker was open made none), Failures those of
	// them that failed, by FailureClasses.
	Fires    int64
	Failures [len(FailureClasses)]int64
	// Dead counts the jobs that ran out of attempts, Throttled the claims
	// held back by a topic's rate_limit or max_in_flight.
	Dead, Throttled int64
	// InFlight is the most handler calls running at once when sampled
	// (about once a second) in the bucket.
	InFlight int64
	// Lateness counts the attempts by how late they started, per bucket
	// of LatenessBounds and one beyond: read percentiles with
	// LatenessQuantile.
	Lateness [LatenessBuckets]int64
}

// Add adds o, another member's bucket of the same time, to b: every
// field is summed.
func (b *SeriesBucket) Add(o SeriesBucket) {
	b.Fires += o.Fires
	for i := range b.Failures {
		b.Failures[i] += o.Failures[i]
	}
	b.Dead += o.Dead
	b.Throttled += o.Throttled
	b.InFlight += o.InFlight
	for i := range b.Lateness {
		b.Lateness[i] += o.Lateness[i]
	}
}

// Fold adds o, a later bucket of the same series, to b, making a wider
// bucket: the counts are summed, InFlight is the larger.
func (b *SeriesBucket) Fold(o SeriesBucket) {
	in := max(b.InFlight, o.InFlight)
	b.Add(o)
	b.InFlight = in
}

// IsZero reports whether nothing was counted in b.
func (b SeriesBucket) IsZero() bool { return b == SeriesBucket{} }

// FailureClass is the index in FailureClasses of a failed attempt's err.
func FailureClass(err error) int {
	code := statusOf(err)
	timeout, isTimeout := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	switch {
	case code >= 400 && code < 500:
		return 0
	case code >= 500 && code < 600:
		return 1
	case errors.Is(err, context.DeadlineExceeded) || (isTimeout && timeout.Timeout()):
		return 2
	}
	return 3
}

// Series counts a member's attempts, dead jobs, throttled claims and
// calls in flight for each topic (the first MaxTopics seen; the rest
// under SeriesOther) and for all of them (SeriesAll), in buckets of
// SeriesFine over the last SeriesFineSpan and of SeriesCoarse over the
// last SeriesCoarseSpan. Each series takes 1,800 buckets of 100 bytes,
// 180 KB, allocated when its topic is first counted: with the default
// bound of 200 topics, at most 202 series, 36 MB. Recording an event
// takes a read lock and two short locks, and allocates nothing. Safe for
// concurrent use.
type Series struct {
	now func() time.Time
	max int
	all *seriesRings

	mu     sync.RWMutex
	topics map[string]*seriesRings
}

// NewSeries returns a Series of up to maxTopics topics on the clock now
// (time.Now when nil); the members of a cluster share a clock, so that
// their buckets line up.
func NewSeries(maxTopics int, now func() time.Time) *Series {
	if now == nil {
		now = time.Now
	}
	return &Series{now: now, max: maxTopics, all: new(seriesRings), topics: make(map[string]*seriesRings)}
}

// seriesCell is one bucket as a Series keeps it: 100 bytes. stamp is the
// bucket's index (seconds since the epoch over its width) plus one, so
// that a zero cell is empty.
type seriesCell struct {
	stamp                            uint32
	fires, dead, throttled, inFlight uint32
	failures                         [len(FailureClasses)]uint32
	lateness                         [LatenessBuckets]uint32
}

// seriesRings are one series: a ring of each resolution.
type seriesRings struct {
	mu     sync.Mutex
	fine   [fineCells]seriesCell
	coarse [coarseCells]seriesCell
}

// seriesIndex is the index of the bucket of width res holding t.
func seriesIndex(t time.Time, res time.Duration) int64 {
	return t.Unix() / int64(res/time.Second)
}

// at returns the cell of width res holding t, emptied first when it held
// an older bucket.
func (r *seriesRings) at(t time.Time, res time.Duration) *seriesCell {
	ring := r.fine[:]
	if res == SeriesCoarse {
		ring = r.coarse[:]
	}
	i := seriesIndex(t, res)
	c := &ring[i%int64(len(ring))]
	if stamp := uint32(i + 1); c.stamp != stamp {
		*c = seriesCell{stamp: stamp}
	}
	return c
}

// add counts at now in both rings.
func (r *seriesRings) add(now time.Time, f func(*seriesCell)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.at(now, SeriesFine))
	f(r.at(now, SeriesCoarse))
}

// bucket reads the bucket of width res at index i, zero when not kept.
func (r *seriesRings) bucket(res time.Duration, i int64) SeriesBucket {
	r.mu.Lock()
	defer r.mu.Unlock()
	ring := r.fine[:]
	if res == SeriesCoarse {
		ring = r.coarse[:]
	}
	c := ring[i%int64(len(ring))]
	if c.stamp != uint32(i+1) {
		return SeriesBucket{}
	}
	b := SeriesBucket{Fires: int64(c.fires), Dead: int64(c.dead), Throttled: int64(c.throttled), InFlight: int64(c.inFlight)}
	for j, n := range c.failures {
		b.Failures[j] = int64(n)
	}
	for j, n := range c.lateness {
		b.Lateness[j] = int64(n)
	}
	return b
}

// rings returns topic's series, made when there is room; SeriesOther's
// when there is none.
func (s *Series) rings(topic string) *seriesRings {
	s.mu.RLock()
	r := s.topics[topic]
	s.mu.RUnlock()
	if r != nil {
		return r
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r = s.topics[topic]; r != nil {
		return r
	}
	if len(s.topics) >= s.max && topic != SeriesOther {
		topic = SeriesOther
		if r = s.topics[topic]; r != nil {
			return r
		}
	}
	r = new(seriesRings)
	s.topics[topic] = r
	return r
}

// record counts f at now in topic's series and in SeriesAll.
func (s *Series) record(topic string, f func(*seriesCell)) {
	now := s.now()
	s.rings(topic).add(now, f)
	s.all.add(now, f)
}

// Fired counts an attempt of topic that started lateness late and ended
// with err (nil: success). A job not sent (a *NotSentError) made no
// attempt and is not counted.
func (s *Series) Fired(topic string, lateness time.Duration, err error) {
	if _, ok := errors.AsType[*NotSentError](err); ok {
		return
	}
	late := bucketOf(lateness)
	class := -1
	if err != nil {
		class = FailureClass(err)
	}
	s.record(topic, func(c *seriesCell) {
		c.fires++
		c.lateness[late]++
		if class >= 0 {
			c.failures[class]++
		}
	})
}

// Buried counts a job of topic that ran out of attempts.
func (s *Series) Buried(topic string) { s.record(topic, buried) }

// Throttled counts a claim of topic held back by its limits.
func (s *Series) Throttled(topic string) { s.record(topic, throttled) }

func buried(c *seriesCell)    { c.dead++ }
func throttled(c *seriesCell) { c.throttled++ }

// SampleInFlight records the handler calls running now of each topic,
// and their sum, keeping the largest sample of each bucket.
func (s *Series) SampleInFlight(byTopic map[string]int64) {
	now := s.now()
	sums := make(map[*seriesRings]int64, len(byTopic))
	var all int64
	for topic, n := range byTopic {
		sums[s.rings(topic)] += n
		all += n
	}
	sums[s.all] = all
	for r, n := range sums {
		v := uint32(min(max(n, 0), 1<<32-1))
		r.add(now, func(c *seriesCell) { c.inFlight = max(c.inFlight, v) })
	}
}

// Labels returns the labels of the series held: SeriesAll, the topics,
// and SeriesOther once a topic was past the bound.
func (s *Series) Labels() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.topics)+1)
	out = append(out, SeriesAll)
	for t := range s.topics {
		out = append(out, t)
	}
	return out
}

// Buckets returns label's buckets of width res (SeriesFine or
// SeriesCoarse) from the one holding from to the one before the one
// holding to, in order; a bucket not kept, or of a label not held, is
// zero.
func (s *Series) Buckets(label string, res time.Duration, from, to time.Time) []SeriesBucket {
	var r *seriesRings
	if label == SeriesAll {
		r = s.all
	} else {
		s.mu.RLock()
		r = s.topics[label]
		s.mu.RUnlock()
	}
	first, end := seriesIndex(from, res), seriesIndex(to, res)
	out := make([]SeriesBucket, max(end-first, 0))
	if r == nil {
		return out
	}
	oldest := seriesIndex(s.now(), res) - int64(len(r.fine))
	if res == SeriesCoarse {
		oldest = seriesIndex(s.now(), res) - coarseCells
	}
	for i := range out {
		if idx := first + int64(i); idx > oldest {
			out[i] = r.bucket(res, idx)
		}
	}
	return out
}

// MaxSeriesBuckets bounds the buckets of one SeriesQuery.
const MaxSeriesBuckets = 1440

// SeriesQuery asks for a label's series (a topic, or SeriesAll) from
// From to To by Step, both aligned to Step since the epoch (so that the
// members' and the caller's buckets line up).
type SeriesQuery struct {
	Label    string
	From, To time.Time
	Step     time.Duration
}

// DefaultSeriesStep is the step of a query from from to to at now that
// gives none: SeriesFine while the range starts within the last hour and
// spans at most an hour, else the least whole minutes that make at most
// 360 buckets.
func DefaultSeriesStep(from, to, now time.Time) time.Duration {
	span := to.Sub(from)
	if span <= SeriesFineSpan && !from.Before(now.Add(-SeriesFineSpan-SeriesFine)) {
		return SeriesFine
	}
	return max(SeriesCoarse, (span/360 + SeriesCoarse - 1).Truncate(SeriesCoarse))
}

// Resolution is the width of the buckets that q reads at now: SeriesFine
// when its range starts within the last hour (and 10 s), else
// SeriesCoarse.
func (q SeriesQuery) Resolution(now time.Time) time.Duration {
	if !q.From.Before(now.Add(-SeriesFineSpan - SeriesFine)) {
		return SeriesFine
	}
	return SeriesCoarse
}

// Check returns a *FieldError naming the first field of q out of range at
// now: From no older than SeriesCoarseSpan (and a minute), To after From
// and at most an hour ahead of now, Step a positive multiple of
// SeriesFine (of SeriesCoarse for a range older than SeriesFineSpan),
// and at most MaxSeriesBuckets buckets. From and To are as Align leaves
// them.
func (q SeriesQuery) Check(now time.Time) error {
	switch {
	case q.From.Before(now.Add(-SeriesCoarseSpan - SeriesCoarse)):
		return invalid("from", "the series go back %v: from must be after %s", SeriesCoarseSpan, now.Add(-SeriesCoarseSpan).UTC().Format(time.RFC3339))
	case !q.From.Before(q.To):
		return invalid("to", "must be after from")
	case q.To.After(now.Add(time.Hour)):
		return invalid("to", "must be at most an hour from now")
	case q.Step <= 0 || q.Step%SeriesFine != 0:
		return invalid("step", "must be a multiple of 10s, such as 10s, 1m or 5m")
	case q.From.Before(now.Add(-SeriesFineSpan-SeriesFine)) && q.Step%SeriesCoarse != 0:
		return invalid("step", "older than an hour the series are kept by the minute: step must be a multiple of 1m")
	case q.Buckets() > MaxSeriesBuckets:
		return invalid("step", "(to - from) / step is more than %d buckets", MaxSeriesBuckets)
	}
	return nil
}

// Align moves From down and To up to multiples of Step since the epoch.
func (q *SeriesQuery) Align() {
	if q.Step <= 0 {
		return
	}
	q.From = time.Unix(0, 0).Add(q.From.Sub(time.Unix(0, 0)).Truncate(q.Step)).UTC()
	if to := time.Unix(0, 0).Add(q.To.Sub(time.Unix(0, 0)).Truncate(q.Step)).UTC(); to.Before(q.To) {
		q.To = to.Add(q.Step)
	} else {
		q.To = to
	}
}

// Buckets is how many buckets q asks for: (To-From)/Step, rounded up.
func (q SeriesQuery) Buckets() int {
	if q.Step <= 0 {
		return 0
	}
	return int((q.To.Sub(q.From) + q.Step - 1) / q.Step)
}

// Start is when bucket i of q begins.
func (q SeriesQuery) Start(i int) time.Time { return q.From.Add(time.Duration(i) * q.Step) }

// FoldSeries folds base, buckets of width res from q.From on, into q's
// buckets of q.Step (a multiple of res).
func FoldSeries(q SeriesQuery, res time.Duration, base []SeriesBucket) []SeriesBucket {
	out := make([]SeriesBucket, q.Buckets())
	per := int(q.Step / res)
	for i, b := range base {
		if j := i / per; j < len(out) {
			out[j].Fold(b)
		}
	}
	return out
}
