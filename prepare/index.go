// Index, its Config, and what its sides share: checks of slots and
// times, members and heads converted to and from package lua's forms,
// and grouping by slot. The sides are timers.go (timer.Index), leases.go
// (timer.Leaser), wake.go (timer.Waker), stats.go and usage.go.

package prepare

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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

// DefaultBuckets are the widths of a slot's later buckets, finest first,
// 32 times apart: a slot with up to 128 timers in 17 minutes keeps them
// in one key, and one with up to 128 a second in keys of a second, each a
// listpack. Each width is a place Restore looks for a timer, a scan of up
// to 128 members.
var DefaultBuckets = []time.Duration{time.Second, 32 * time.Second, 1024 * time.Second}

// Config configures an Index.
type Config struct {
	// Prefix starts every key; slots.DefaultPrefix when empty. It must not
	// hold '{' or '}', which would take the hash tag away from the slot's.
	Prefix string
	// NamespacePrefixes are the key prefixes of the slots of the topics
	// of other namespaces than the default, by namespace (see
	// slots.PrefixOf); Prefix for a namespace it does not hold. Wake-ups,
	// marks and usage stay under Prefix.
	NamespacePrefixes map[string]string
	// WakeChannel is the pub/sub channel of wake-ups; Prefix followed by
	// DefaultWakeSuffix when empty.
	WakeChannel string
	// Logger receives the Waker's reconnect warnings; slog.Default() when
	// nil.
	Logger *slog.Logger
	// Buckets are the widths of the later buckets (slots.KeySet.Later),
	// whole milliseconds, finest first: a timer without a window due two
	// of the finest widths or more after it is added waits in a bucket of
	// its due time, a small sorted set, until the claim of its slot moves
	// the bucket to the due sets when its first timer is due.
	// DefaultBuckets when nil; empty keeps every timer in its due set.
	Buckets []time.Duration
	// Now is the clock of Add's choice between due set and later bucket;
	// time.Now when nil.
	Now func() time.Time
}

// Validate returns a *timer.FieldError naming the first invalid field.
func (c Config) Validate() error {
	return errors.Join(slots.CheckPrefix(c.Prefix), slots.CheckPrefixes(c.NamespacePrefixes), checkBuckets(c.Buckets))
}

// checkBuckets returns a *timer.FieldError naming Buckets unless each
// width is a whole number of milliseconds, wider than the one before.
func checkBuckets(ws []time.Duration) error {
	for i, w := range ws {
		if w < time.Millisecond || w%time.Millisecond != 0 || (i > 0 && w <= ws[i-1]) {
			return &timer.FieldError{Field: "Buckets", Message: fmt.Sprintf("%v: whole milliseconds, finest first", ws)}
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Prefix = cmp.Or(c.Prefix, slots.DefaultPrefix)
	c.WakeChannel = cmp.Or(c.WakeChannel, c.Prefix+DefaultWakeSuffix)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Buckets == nil {
		c.Buckets = DefaultBuckets
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Index is the Redis timer index over one Redis deployment (a single node,
// Sentinel or Cluster).
type Index struct {
	client redis.UniversalClient
	cfg    Config
	widths []int64 // cfg.Buckets in ms

	// subscribed, when set (by tests), is called each time Wakes has
	// subscribed.
	subscribed func()

	markMu   sync.Mutex
	marked   *mark             // the last Mark; nil before
	markKeys map[[2]int]string // by cluster hash slot range
}

var (
	_ timer.Index  = (*Index)(nil)
	_ timer.Leaser = (*Index)(nil)
	_ timer.Waker  = (*Index)(nil)

	_ timer.NewIndexer = (*Index)(nil)
)

// New returns an Index over client, or an error wrapping cfg's
// *timer.FieldError.
func New(client redis.UniversalClient, cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("prepare config: %w", err)
	}
	q := &Index{client: client, cfg: cfg.withDefaults()}
	for _, w := range q.cfg.Buckets {
		q.widths = append(q.widths, w.Milliseconds())
	}
	return q, nil
}

// Keys returns the keys of slot.
func (q *Index) Keys(slot timer.Slot) slots.KeySet {
	return slots.Keys(q.prefixOf(slot.Topic), slot.Topic, slot.Index)
}

// prefixOf returns the key prefix of topic's slots.
func (q *Index) prefixOf(topic string) string {
	return slots.PrefixOf(q.cfg.Prefix, q.cfg.NamespacePrefixes, topic)
}

func checkSlot(s timer.Slot) error {
	if !slots.ValidTopic(s.Topic) || s.Index < 0 || s.Index >= slots.Max {
		return fmt.Errorf("slot %q/%d: %w", s.Topic, s.Index, timer.ErrInvalid)
	}
	return nil
}

// member returns the sorted-set member of job id at priority p, which the
// caller has validated (see lua.Member).
func member(id timer.JobID, p timer.Priority) string { return lua.Member(uint64(id), int(p)) }

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
