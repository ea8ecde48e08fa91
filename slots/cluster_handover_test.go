package slots

import (
	"testing"

	"github.com/toc-project/toc/timer"
)

// Only the slots of a member that left the map are orphans, and only for
// the members that take them; a member joining orphans nothing.
func TestOrphaned(t *testing.T) {
	topics := []timer.Topic{{Name: "orders", Slots: 64}, {Name: "coupons", Slots: 16}}
	three := Assign([]string{"a", "b", "c"}, topics, 0)
	two := Assign([]string{"a", "b"}, topics, 0)

	total := 0
	for _, m := range []string{"a", "b"} {
		orphans := orphaned(three, two, two.Owned(m), m)
		for _, s := range orphans {
			if was, _ := three.Owner(s); was != "c" {
				t.Errorf("%s: orphan %v was %s's, not the departed c's", m, s, was)
			}
		}
		total += len(orphans)
	}
	if want := len(three.Owned("c")); total != want {
		t.Errorf("%d orphans in all, want c's %d slots", total, want)
	}
	for _, m := range []string{"a", "b", "c"} {
		if o := orphaned(two, three, three.Owned(m), m); len(o) != 0 {
			t.Errorf("c joining: %s has orphans %v", m, o)
		}
	}
	if o := orphaned(nil, two, two.Owned("a"), "a"); o != nil {
		t.Errorf("with no earlier map: orphans %v", o)
	}
}
