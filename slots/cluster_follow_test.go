package slots

import (
	"reflect"
	"slices"
	"testing"

	"github.com/toc-project/toc/timer"
)

// A member derives the map only from the topic list the leader published:
// the same set in any order and with duplicates gives Assign's map, any
// other list gives none.
func TestDeriveMap(t *testing.T) {
	list := []timer.Topic{{Name: "a", Slots: 16}, {Name: "b", Slots: 4}}
	a := &published{Scheme: AssignScheme, Members: []memberData{{ID: "x"}, {ID: "y"}}, Digest: summarize(list).Digest, Load: 1.25}
	want := Assign([]string{"x", "y"}, list, 1.25)
	tests := []struct {
		name   string
		topics []timer.Topic
		ok     bool
		topicN int
	}{
		{"the published list", list, true, 2},
		{"reordered, with a duplicate", []timer.Topic{{Name: "b", Slots: 4}, {Name: "a", Slots: 16}, {Name: "b", Slots: 4}}, true, 2},
		{"one topic more", append(slices.Clone(list), timer.Topic{Name: "c", Slots: 1}), false, 3},
		{"one topic fewer", list[:1], false, 1},
		{"another slot count", []timer.Topic{{Name: "a", Slots: 16}, {Name: "b", Slots: 8}}, false, 2},
		{"none", nil, false, 0},
	}
	for _, tt := range tests {
		m, sum := a.deriveMap(tt.topics)
		if (m != nil) != tt.ok || sum.Topics != tt.topicN {
			t.Errorf("%s: deriveMap = %v, %d topics; want a map %v, %d topics", tt.name, m != nil, sum.Topics, tt.ok, tt.topicN)
			continue
		}
		if m != nil && !reflect.DeepEqual(m, want) {
			t.Errorf("%s: deriveMap gave another map than Assign", tt.name)
		}
	}
}
