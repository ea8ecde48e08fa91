package timer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// Changes names each topic created, changed or deleted since a position,
// whether by this process (Put, Delete) or found by a Refresh, and
// nothing for a Put or Refresh that changes nothing.
func TestCatalogChanges(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	for _, name := range []string{"a", "b"} {
		if _, err := store.EnsureTopic(ctx, timer.Topic{Name: name, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	c := timer.NewCatalog(store, 0, nil)
	want := func(pos uint64, names ...string) uint64 {
		t.Helper()
		got, next, all := c.Changes(pos)
		slices.Sort(got)
		if all || !slices.Equal(got, names) {
			t.Errorf("Changes(%d) = %v, all %v; want %v", pos, got, all, names)
		}
		return next
	}

	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pos := want(0, "a", "b")
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pos = want(pos) // read again, the same

	a, _ := c.Get("a")
	c.Put(a) // no change
	pos = want(pos)
	a.MaxAttempts = 3
	c.Put(a)
	pos = want(pos, "a")
	c.Delete("b")
	pos = want(pos, "b")

	// Another process creates c, pauses a and deletes nothing; b comes
	// back from the store, where it was never deleted.
	if _, err := store.EnsureTopic(ctx, timer.Topic{Name: "c", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PauseTopic(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	pos = want(pos, "a", "b", "c")
	if err := store.DeleteTopic(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want(pos, "c")
}

// A reader that fell behind the bounded log is told to look at every
// topic.
func TestCatalogChangesBehind(t *testing.T) {
	c := timer.NewCatalog(timertest.NewStore(), 0, nil)
	const n = 1<<16 + 10 // past the log's bound
	for i := range n {
		c.Put(timer.Topic{Name: "t" + string(rune('a'+i%26)), Slots: 1, MaxAttempts: i%7 + 1})
	}
	if _, _, all := c.Changes(0); !all {
		t.Error("Changes(0) after the log was dropped: all = false, want true")
	}
	_, next, _ := c.Changes(0)
	c.Put(timer.Topic{Name: "new", Slots: 1})
	if got, _, all := c.Changes(next); all || !slices.Equal(got, []string{"new"}) {
		t.Errorf("Changes from the end = %v, all %v; want [new]", got, all)
	}
}

// Over a store with a topic version, Refresh reads the whole list only
// when the version moved.
func TestCatalogRefreshReadsOnChange(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	if _, err := store.EnsureTopic(ctx, timer.Topic{Name: "a", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	c := timer.NewCatalog(store, 0, nil)
	refresh := func(reads int) {
		t.Helper()
		before := store.Calls("Topics")
		if err := c.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got := store.Calls("Topics") - before; got != reads {
			t.Errorf("Refresh read the list %d times, want %d", got, reads)
		}
	}
	refresh(1)
	refresh(0)
	refresh(0)
	if _, err := store.PauseTopic(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	refresh(1)
	if a, _ := c.Get("a"); !a.Paused {
		t.Error("the pause made elsewhere is not in the catalog")
	}
	refresh(0)
}

// slowTopics is a store whose topic list is read as it was before a
// topic was created: the list a Refresh reads while the scheduler
// creates a topic and puts it in the catalog.
type slowTopics struct {
	*timertest.Store
	during func() // runs after the list was read, before it is returned
}

func (s *slowTopics) Topics(ctx context.Context) ([]timer.Topic, error) {
	ts, err := s.Store.Topics(ctx)
	if s.during != nil {
		s.during()
	}
	return ts, err
}

// A topic put while a Refresh reads the list is not dropped by that
// Refresh: the scheduler that created it reads its slot count from the
// catalog to index its jobs (before, a job of a brand-new topic could be
// indexed with no slots and wait for the backstop).
func TestCatalogRefreshKeepsWhatWasPutMeanwhile(t *testing.T) {
	ctx := t.Context()
	store := &slowTopics{Store: timertest.NewStore()}
	if _, err := store.EnsureTopic(ctx, timer.Topic{Name: "old", Slots: 4}); err != nil {
		t.Fatal(err)
	}
	c := timer.NewCatalog(store, 0, nil)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := timer.Topic{Name: "fresh", Slots: 8}
	store.during = func() {
		if _, err := store.Store.EnsureTopic(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		c.Put(fresh)
	}
	if _, err := store.PauseTopic(ctx, "old", true); err != nil { // the version moves: the list is read
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Get("fresh"); !ok || got.Slots != 8 {
		t.Fatalf("the topic put during the refresh: %+v, %v; want it, with 8 slots", got, ok)
	}
	store.during = nil
	if err := c.Refresh(ctx); err != nil { // reads the list again: the version moved
		t.Fatal(err)
	}
	if _, ok := c.Get("fresh"); !ok {
		t.Fatal("the next refresh dropped the topic")
	}
	c.Delete("fresh")
	if err := store.DeleteTopic(ctx, "fresh"); err != nil {
		t.Fatal(err)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get("fresh"); ok {
		t.Fatal("a deleted topic is back after a refresh")
	}
}

// First is the first n topics of All, whatever the order they were put
// in, and all of them when there are fewer.
func TestCatalogFirst(t *testing.T) {
	c := timer.NewCatalog(timertest.NewStore(), 0, nil)
	if got := c.First(3); len(got) != 0 {
		t.Fatalf("First(3) of an empty catalog = %v", got)
	}
	for _, i := range rand.Perm(500) {
		c.Put(timer.Topic{Name: fmt.Sprintf("t%03d", i), Slots: 1 + i%16})
	}
	all, _ := c.All()
	for _, n := range []int{0, 1, 7, 200, 499, 500, 600} {
		got, want := c.First(n), all[:min(n, len(all))]
		if !slices.Equal(got, want) {
			t.Errorf("First(%d): %d topics, want the first %d of All", n, len(got), len(want))
		}
	}
}

// TopicNames reads the store's list until the scheduler's catalog has
// read it whole, then the catalog alone: a topic put since is named, one
// deleted is not, and the store's list is not read again.
func TestSchedulerTopicNames(t *testing.T) {
	ctx := t.Context()
	lists := 0
	store := &slowTopics{Store: timertest.NewStore(), during: func() { lists++ }}
	for _, name := range []string{"a/1", "a/2", "b/1"} {
		if _, _, err := store.PutTopic(ctx, timer.Topic{Name: name, Slots: 1}); err != nil {
			t.Fatal(err)
		}
	}
	c := timer.NewCatalog(store, 0, nil)
	s, err := timer.NewScheduler(store, timertest.NewIndex(), timer.SchedulerConfig{Catalog: c})
	if err != nil {
		t.Fatal(err)
	}
	ofA := func(name string) bool { return strings.HasPrefix(name, "a/") }
	names := func() []string {
		t.Helper()
		got, err := s.TopicNames(ctx, ofA)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	if got := names(); !slices.Equal(got, []string{"a/1", "a/2"}) || lists != 1 {
		t.Fatalf("before the catalog read the list: %v after %d lists; want a/1, a/2 from one", got, lists)
	}
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	before := lists
	c.Put(timer.Topic{Name: "a/3", Slots: 1})
	c.Delete("a/1")
	if got := names(); !slices.Equal(got, []string{"a/2", "a/3"}) || lists != before {
		t.Fatalf("once the catalog read the list: %v after %d more lists; want a/2, a/3 from none", got, lists-before)
	}
}

// All sorts the list once a change: calls without a change between them
// share one slice; a Put or Delete makes a new one and leaves the slice
// returned before as it was.
func TestCatalogAllSortsOnceAChange(t *testing.T) {
	c := timer.NewCatalog(timertest.NewStore(), 0, nil)
	names := func(ts []timer.Topic) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	c.Put(timer.Topic{Name: "b", Slots: 1})
	c.Put(timer.Topic{Name: "a", Slots: 1})
	first, _ := c.All()
	again, _ := c.All()
	if len(first) != 2 || &first[0] != &again[0] {
		t.Fatalf("two calls without a change: %v and %v, not one slice", names(first), names(again))
	}
	c.Put(timer.Topic{Name: "c", Slots: 1})
	c.Delete("a")
	next, _ := c.All()
	if got := names(next); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("after a Put and a Delete: %v; want b, c", got)
	}
	if got := names(first); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("the slice returned before the change became %v; want a, b", got)
	}
}
