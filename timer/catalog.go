package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DefaultTopicRefresh is how often a Catalog re-reads the topic list.
const DefaultTopicRefresh = 2 * time.Second

// fullRefresh is how often a Catalog over a TopicVersioner reads the
// whole list even though the version did not move: a write whose move of
// the version was lost (a crash between the two) is seen within it.
const fullRefresh = time.Minute

// missTTL is how long a Catalog remembers that a topic was not found, so
// that the claim loop does not read the store on every claim of a topic
// created a moment ago by another process.
const missTTL = time.Second

// Catalog is the process's one copy of the topic list: the worker's
// limits, the standalone assignment and the scheduler read topics from it
// rather than each from the store. Run re-reads the list every Refresh;
// Put applies a change made by this process at once. It is safe for
// concurrent use.
type Catalog struct {
	store   TopicStore
	refresh time.Duration
	now     func() time.Time

	mu     sync.RWMutex
	topics map[string]Topic
	// sorted is topics ordered by name, as All returned it; nil once
	// topics changed since.
	sorted  []Topic
	misses  map[string]time.Time
	loaded  bool
	changed chan struct{} // closed at the next change, then replaced
	// log names the topics changed, in order, for Changes; logStart is
	// the position of its first entry. It is dropped when it grows past
	// maxChangeLog, and a reader behind its start then looks at every
	// topic.
	log      []string
	logStart uint64
	// version is the store's topic version when the list was last read
	// whole, at fullAt; versioned says the store has one.
	version   int64
	versioned bool
	fullAt    time.Time
	// puts numbers the Puts; putAt is the number of the last Put of each
	// topic put since the last Refresh began reading, so that a topic put
	// while a Refresh read the list (created then, and missing from what
	// it read) is not dropped by that Refresh.
	puts  uint64
	putAt map[string]uint64
}

// maxChangeLog bounds a Catalog's log of changed topics.
const maxChangeLog = 1 << 16

// NewCatalog returns a catalog over store, re-read every refresh (default
// DefaultTopicRefresh) once Run runs. now is the clock (default time.Now).
func NewCatalog(store TopicStore, refresh time.Duration, now func() time.Time) *Catalog {
	if now == nil {
		now = time.Now
	}
	return &Catalog{
		store:   store,
		refresh: cmp.Or(refresh, DefaultTopicRefresh),
		now:     now,
		topics:  make(map[string]Topic),
		misses:  make(map[string]time.Time),
		changed: make(chan struct{}),
		putAt:   make(map[string]uint64),
	}
}

// Run re-reads the topic list every refresh until ctx is done. A failed
// read keeps the current list; the next tick tries again.
func (c *Catalog) Run(ctx context.Context) error {
	t := time.NewTicker(c.refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		_ = c.Refresh(ctx) // the next tick retries; Loaded tells whether it ever worked
	}
}

// Refresh reads the topic list from the store once. Over a
// TopicVersioner it first reads the version, and the list only when the
// version moved since the last whole read, or that read is fullRefresh
// old: with 100,000 topics, the list is most of what an idle process
// would read.
func (c *Catalog) Refresh(ctx context.Context) error {
	var version int64
	vs, versioned := c.store.(TopicVersioner)
	if versioned {
		var err error
		if version, err = vs.TopicsVersion(ctx); err != nil {
			return fmt.Errorf("read topics: %w", err)
		}
		c.mu.RLock()
		same := c.loaded && c.versioned && version == c.version && c.now().Sub(c.fullAt) < fullRefresh
		c.mu.RUnlock()
		if same {
			return nil
		}
	}
	// Read after the version: a write that the list misses moved the
	// version past the one kept, and the next Refresh reads again.
	c.mu.RLock()
	began := c.puts
	c.mu.RUnlock()
	topics, err := c.store.Topics(ctx)
	if err != nil {
		return fmt.Errorf("read topics: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.versioned, c.fullAt = version, versioned, c.now()
	diff := !c.loaded
	next := make(map[string]Topic, len(topics))
	for _, t := range topics {
		if old, ok := c.topics[t.Name]; !ok || !sameTopic(old, t) {
			diff = true
			c.logChange(t.Name)
		}
		next[t.Name] = t
		delete(c.misses, t.Name)
	}
	for name, t := range c.topics {
		if _, ok := next[name]; ok {
			continue
		}
		if c.putAt[name] > began {
			next[name] = t // put while the list was read: newer than it
			continue
		}
		diff = true
		c.logChange(name)
	}
	for name, at := range c.putAt {
		if at <= began {
			delete(c.putAt, name)
		}
	}
	c.topics, c.loaded, c.sorted = next, true, nil
	if diff {
		c.notify()
	}
	return nil
}

// logChange records that the topic named name changed; c.mu is held.
func (c *Catalog) logChange(name string) {
	if len(c.log) == maxChangeLog {
		c.logStart += uint64(len(c.log))
		c.log = c.log[:0]
	}
	c.log = append(c.log, name)
}

// Changes returns the names of the topics changed (created, updated or
// deleted) since position pos, once or more each, and the position to
// ask from next time. all means the log no longer reaches back to pos:
// the caller must look at every topic. Position 0 is the beginning.
func (c *Catalog) Changes(pos uint64) (names []string, next uint64, all bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	end := c.logStart + uint64(len(c.log))
	if pos < c.logStart {
		return nil, end, true
	}
	return slices.Clone(c.log[pos-c.logStart:]), end, false
}

func sameTopic(a, b Topic) bool {
	return a.Slots == b.Slots && a.MaxAttempts == b.MaxAttempts && a.Limits == b.Limits && a.Paused == b.Paused && a.Expiry == b.Expiry && a.Retention == b.Retention
}

// notify wakes those waiting on Changed; c.mu is held.
func (c *Catalog) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Put records t, created or changed by this process, at once.
func (c *Catalog) Put(t Topic) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.topics[t.Name]
	c.topics[t.Name] = t
	c.sorted = nil
	c.puts++
	c.putAt[t.Name] = c.puts
	delete(c.misses, t.Name)
	if !ok || !sameTopic(old, t) {
		c.logChange(t.Name)
		c.notify()
	}
}

// Delete forgets the topic named name, deleted by this process, at once;
// other processes forget it at their next refresh.
func (c *Catalog) Delete(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.putAt, name)
	if _, ok := c.topics[name]; ok {
		delete(c.topics, name)
		c.sorted = nil
		c.logChange(name)
		c.notify()
	}
}

// Get returns the topic named name from memory.
func (c *Catalog) Get(name string) (Topic, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.topics[name]
	return t, ok
}

// Lookup returns the topic named name from memory, or else reads it from
// the store (a topic created by another process since the last refresh).
// It returns an error wrapping ErrNotFound for a topic that does not
// exist; that answer is remembered for a second.
func (c *Catalog) Lookup(ctx context.Context, name string) (Topic, error) {
	c.mu.RLock()
	t, ok := c.topics[name]
	missed, miss := c.misses[name]
	c.mu.RUnlock()
	if ok {
		return t, nil
	}
	if miss && c.now().Sub(missed) < missTTL {
		return Topic{}, fmt.Errorf("topic %s: %w", name, ErrNotFound)
	}
	t, err := c.store.Topic(ctx, name)
	if errors.Is(err, ErrNotFound) {
		c.mu.Lock()
		c.misses[name] = c.now()
		c.mu.Unlock()
	}
	if err != nil {
		return Topic{}, err
	}
	c.Put(t)
	return t, nil
}

// All returns every topic, ordered by name, and a channel closed at the
// next change of the list. The slice is shared by every caller until the
// list changes, so that a member's assignment, which asks every few
// seconds, sorts 100,000 topics once a change: read it, never write it.
func (c *Catalog) All() ([]Topic, <-chan struct{}) {
	c.mu.RLock()
	all, changed := c.sorted, c.changed
	c.mu.RUnlock()
	if all != nil {
		return all, changed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sorted == nil {
		c.sorted = make([]Topic, 0, len(c.topics))
		for _, t := range c.topics {
			c.sorted = append(c.sorted, t)
		}
		slices.SortFunc(c.sorted, topicsByName)
	}
	return c.sorted, c.changed
}

// Names returns the names of the topics for which match is true, in no
// order, without copying the others. match runs under the catalog's
// read lock and must not call it.
func (c *Catalog) Names(match func(name string) bool) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	for name := range c.topics {
		if match(name) {
			names = append(names, name)
		}
	}
	return names
}

// First returns the first n topics by name, or all of them when there
// are fewer, without copying or sorting the others: a scrape of the
// metrics reads it for its bounded series.
func (c *Catalog) First(n int) []Topic {
	c.mu.RLock()
	defer c.mu.RUnlock()
	first := make([]Topic, 0, min(n, len(c.topics))+1)
	for _, t := range c.topics {
		if len(first) == n && (n == 0 || t.Name > first[n-1].Name) {
			continue
		}
		i, _ := slices.BinarySearchFunc(first, t, topicsByName)
		first = slices.Insert(first, i, t)
		if len(first) > n {
			first = first[:n]
		}
	}
	return first
}

// topicsByName orders topics by name, as All and First return them.
func topicsByName(a, b Topic) int { return cmp.Compare(a.Name, b.Name) }

// Changed returns a channel closed at the next change of the list.
func (c *Catalog) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// Len returns how many topics the catalog holds.
func (c *Catalog) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.topics)
}

// Loaded reports whether the list was read from the store at least once.
func (c *Catalog) Loaded() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.loaded
}
