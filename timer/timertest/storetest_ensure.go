package timertest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toc-project/toc/timer"
)

// testEnsureTopics: EnsureTopics creates the topics that do not exist and
// keeps those that do, answering them in the order asked, more than one
// statement's worth at once; a bad topic among them writes nothing.
func testEnsureTopics(t *testing.T, s timer.Store) {
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "kept", Slots: 64, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	var ts []timer.Topic
	for i := range 1200 { // more than one chunk of taskdb's
		ts = append(ts, timer.Topic{Name: fmt.Sprintf("t%04d", 1199-i), Slots: 4, CreatedAt: base})
	}
	ts = append(ts, timer.Topic{Name: "kept", Slots: 2}, timer.Topic{Name: "t0007", Slots: 8}, timer.Topic{Name: "dflt"})
	got, err := s.EnsureTopics(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ts) {
		t.Fatalf("EnsureTopics answered %d topics for %d", len(got), len(ts))
	}
	for i, g := range got {
		want := ts[i].Slots
		switch ts[i].Name {
		case "kept":
			want = 64 // stored before: its slot count wins
		case "t0007":
			want = 4 // the first of the call wins over the repeat
		case "dflt":
			want = timer.DefaultSlots
		}
		if g.Name != ts[i].Name || g.Slots != want {
			t.Fatalf("topic %d = %s with %d slots, want %s with %d", i, g.Name, g.Slots, ts[i].Name, want)
		}
	}
	all, err := s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1202 {
		t.Errorf("%d topics stored, want 1,202", len(all))
	}

	bad := []timer.Topic{{Name: "new-one", Slots: 4}, {Name: "odd", Slots: 3}}
	if _, err := s.EnsureTopics(ctx, bad); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("EnsureTopics with a bad slot count = %v, want ErrInvalid", err)
	}
	if _, err := s.Topic(ctx, "new-one"); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("Topic(new-one) after a refused EnsureTopics = %v, want ErrNotFound", err)
	}
	if got, err := s.EnsureTopics(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("EnsureTopics(nil) = %v, %v", got, err)
	}
}
