package timer

import (
	"context"
	"fmt"
)

// Assignment tells a worker which slots it owns.
type Assignment interface {
	// Owned returns the slots owned now and a channel that is closed when
	// that may have changed; the worker then calls Owned again and stops
	// claiming from any slot it no longer owns at once.
	Owned(ctx context.Context) ([]Slot, <-chan struct{}, error)
}

// TopicAssignment is an Assignment that owns every slot of the topics it
// names, which a worker then tracks per topic rather than per slot.
type TopicAssignment interface {
	Assignment
	// OwnedTopics returns the topics whose slots are all owned now, and a
	// channel closed when that may have changed.
	OwnedTopics(ctx context.Context) ([]Topic, <-chan struct{}, error)
}

// Handover is implemented by an Assignment that knows when slots it now
// owns were held by a member that died: their leases can be taken back
// at once (timer.Reclaimer) instead of waiting out their end, since the
// holder can no longer ack them. A member that leaves gracefully finishes
// its calls before it gives its slots up, and is no such holder.
type Handover interface {
	// Orphans returns the owned slots whose previous owner died since the
	// last call, and forgets them.
	Orphans() []Slot
}

// AllSlots owns every slot of every topic of a Catalog: the standalone
// mode, one worker for the whole store. A worker told of a job in a slot
// of a topic it has not seen yet takes it at once.
type AllSlots struct {
	Catalog *Catalog
}

var _ TopicAssignment = (*AllSlots)(nil)

// OwnedTopics returns every topic of the catalog, reading it first if it
// was never read.
func (a *AllSlots) OwnedTopics(ctx context.Context) ([]Topic, <-chan struct{}, error) {
	if !a.Catalog.Loaded() {
		if err := a.Catalog.Refresh(ctx); err != nil {
			return nil, nil, fmt.Errorf("list topics: %w", err)
		}
	}
	topics, changed := a.Catalog.All()
	return topics, changed, nil
}

// Owned returns every slot of every topic.
func (a *AllSlots) Owned(ctx context.Context) ([]Slot, <-chan struct{}, error) {
	topics, changed, err := a.OwnedTopics(ctx)
	if err != nil {
		return nil, nil, err
	}
	var slots []Slot
	for _, t := range topics {
		for i := range t.Slots {
			slots = append(slots, Slot{Topic: t.Name, Index: i})
		}
	}
	return slots, changed, nil
}

// StaticSlots owns a fixed list of slots.
type StaticSlots []Slot

// Owned returns the list; it never changes.
func (s StaticSlots) Owned(context.Context) ([]Slot, <-chan struct{}, error) {
	return s, nil, nil
}

// ownership is the worker's record of what it owns: whole topics (from a
// TopicAssignment, with any slot of an unseen topic owned too) or a set
// of slots.
type ownership struct {
	whole bool
	// counts holds how many slots of each topic are owned (whole: the
	// topic's slot count).
	counts map[string]int
	slots  map[Slot]struct{} // not whole
}

func newOwnership(whole bool) *ownership {
	o := &ownership{whole: whole, counts: make(map[string]int)}
	if !whole {
		o.slots = make(map[Slot]struct{})
	}
	return o
}

func (o *ownership) has(s Slot) bool {
	if o.whole {
		return true
	}
	_, ok := o.slots[s]
	return ok
}

// share is the fraction of t's slots owned.
func (o *ownership) share(t Topic) float64 {
	if o.whole || t.Slots <= 0 {
		return 1
	}
	return min(1, float64(o.counts[t.Name])/float64(t.Slots))
}

// size is the number of slots owned.
func (o *ownership) size() int {
	n := 0
	for _, c := range o.counts {
		n += c
	}
	return n
}

// setTopics records topics as owned whole and returns the slot ranges of
// the topics that are new, and the topics no longer there.
func (o *ownership) setTopics(topics []Topic) (added []slotRange, removed []string) {
	seen := make(map[string]bool, len(topics))
	for _, t := range topics {
		seen[t.Name] = true
		if o.counts[t.Name] != t.Slots {
			added = append(added, slotRange{topic: t.Name, from: o.counts[t.Name], to: t.Slots})
			o.counts[t.Name] = t.Slots
		}
	}
	for name := range o.counts {
		if !seen[name] {
			removed = append(removed, name)
			delete(o.counts, name)
		}
	}
	return added, removed
}

// setSlots records slots as the owned set and returns the slots gained
// and lost.
func (o *ownership) setSlots(slots []Slot) (added []slotRange, removed []Slot) {
	next := make(map[Slot]struct{}, len(slots))
	for _, s := range slots {
		next[s] = struct{}{}
		if _, ok := o.slots[s]; !ok {
			added = append(added, slotRange{topic: s.Topic, from: s.Index, to: s.Index + 1})
		}
	}
	for s := range o.slots {
		if _, ok := next[s]; !ok {
			removed = append(removed, s)
		}
	}
	o.slots = next
	clear(o.counts)
	for s := range next {
		o.counts[s.Topic]++
	}
	return added, removed
}

// ranges returns every owned slot as ranges, for a rescan.
func (o *ownership) ranges() []slotRange {
	var out []slotRange
	if o.whole {
		for name, n := range o.counts {
			out = append(out, slotRange{topic: name, to: n})
		}
		return out
	}
	for s := range o.slots {
		out = append(out, slotRange{topic: s.Topic, from: s.Index, to: s.Index + 1})
	}
	return out
}
