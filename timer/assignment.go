package timer

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// Assignment tells a worker which slots it owns.
type Assignment interface {
	// Owned returns the slots owned now and a channel that is closed when
	// that may have changed; the worker then calls Owned again and stops
	// claiming from any slot it no longer owns at once.
	Owned(ctx context.Context) ([]Slot, <-chan struct{}, error)
}

// AllSlots owns every slot of every topic: the standalone mode, one worker
// for the whole store. It re-reads the topic list every Refresh, and a
// worker told of a job in a slot it has not seen yet takes it at once.
type AllSlots struct {
	Topics  TopicStore
	Refresh time.Duration
}

var _ Assignment = (*AllSlots)(nil)

// Owned returns every slot of every topic.
func (a *AllSlots) Owned(ctx context.Context) ([]Slot, <-chan struct{}, error) {
	topics, err := a.Topics.Topics(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list topics: %w", err)
	}
	var slots []Slot
	for _, t := range topics {
		for i := range t.Slots {
			slots = append(slots, Slot{Topic: t.Name, Index: i})
		}
	}
	changed := make(chan struct{})
	time.AfterFunc(cmp.Or(a.Refresh, DefaultTopicRefresh), func() { close(changed) })
	return slots, changed, nil
}

// Wants reports that every slot is owned, known yet or not.
func (a *AllSlots) Wants(Slot) bool { return true }

// StaticSlots owns a fixed list of slots.
type StaticSlots []Slot

// Owned returns the list; it never changes.
func (s StaticSlots) Owned(context.Context) ([]Slot, <-chan struct{}, error) {
	return s, nil, nil
}
