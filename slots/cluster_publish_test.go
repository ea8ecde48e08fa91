package slots

import (
	"slices"
	"testing"

	"github.com/toc-project/toc/timer"
)

func TestSummarize(t *testing.T) {
	a := summarize([]timer.Topic{{Name: "b", Slots: 4}, {Name: "a", Slots: 16}})
	b := summarize([]timer.Topic{{Name: "a", Slots: 16}, {Name: "b", Slots: 4}, {Name: "a", Slots: 16}})
	if a != b || a.Topics != 2 || a.Slots != 20 {
		t.Fatalf("summaries %+v and %+v, want equal, 2 topics, 20 slots", a, b)
	}
	if c := summarize([]timer.Topic{{Name: "a", Slots: 16}, {Name: "b", Slots: 8}}); c.Digest == a.Digest {
		t.Fatal("a different slot count gave the same digest")
	}
	if c := summarize([]timer.Topic{{Name: "a", Slots: 16}, {Name: "b", Slots: 4}, {Name: "c", Slots: 1}}); c.Digest == a.Digest {
		t.Fatal("one more topic gave the same digest")
	}
}

func TestOldestPerID(t *testing.T) {
	m := func(id, node string) memberData { return memberData{ID: id, Node: node} }
	members := map[string]memberData{
		"m-aa-0000000003": m("b", "m-aa-0000000003"),
		"m-bb-0000000001": m("c", "m-bb-0000000001"),
		"m-cc-0000000002": m("b", "m-cc-0000000002"),
		"m-dd-0000000010": m("a", "m-dd-0000000010"),
		"m-ee-0000000004": m("b", "m-ee-0000000004"),
	}
	tests := []struct {
		name         string
		names        []string
		out, younger []memberData
	}{
		{"none", nil, nil, nil},
		{"one", []string{"m-aa-0000000003"}, []memberData{m("b", "m-aa-0000000003")}, nil},
		{
			"sorted by ID, the oldest of an ID wins whatever the listing order",
			[]string{"m-ee-0000000004", "m-aa-0000000003", "m-dd-0000000010", "m-cc-0000000002", "m-bb-0000000001"},
			[]memberData{m("a", "m-dd-0000000010"), m("b", "m-cc-0000000002"), m("c", "m-bb-0000000001")},
			[]memberData{m("b", "m-aa-0000000003"), m("b", "m-ee-0000000004")},
		},
		{
			"a listed znode without data (unreadable, or gone) is skipped",
			[]string{"m-aa-0000000003", "m-zz-0000000000"},
			[]memberData{m("b", "m-aa-0000000003")},
			nil,
		},
	}
	for _, tt := range tests {
		names := slices.Clone(tt.names)
		out, younger := oldestPerID(names, members)
		if !slices.Equal(out, tt.out) || !slices.Equal(younger, tt.younger) {
			t.Errorf("%s: oldestPerID = %v, %v; want %v, %v", tt.name, out, younger, tt.out, tt.younger)
		}
		if !slices.Equal(names, tt.names) {
			t.Errorf("%s: oldestPerID reordered its argument to %q", tt.name, names)
		}
	}
}

// Two assignments with the same key have the same map: the key covers the
// scheme, member IDs, topic digest and load, and nothing else.
func TestPublishedKey(t *testing.T) {
	base := published{
		Scheme:  AssignScheme,
		Leader:  "a",
		Members: []memberData{{ID: "a", Node: "m-1"}, {ID: "b", Node: "m-2"}},
		Topics:  2, Slots: 32, Digest: "d1", Load: 1.25, Version: 7,
	}
	tests := []struct {
		name string
		edit func(*published)
		same bool
	}{
		{"another leader", func(a *published) { a.Leader = "b" }, true},
		{"another version", func(a *published) { a.Version = 8 }, true},
		{"a member's new znode and address", func(a *published) {
			a.Members = []memberData{{ID: "a", Node: "m-9", Addr: "x"}, {ID: "b", Node: "m-2"}}
		}, true},
		{"another scheme", func(a *published) { a.Scheme = "other" }, false},
		{"a member more", func(a *published) { a.Members = append(a.Members, memberData{ID: "c"}) }, false},
		{"another digest", func(a *published) { a.Digest = "d2" }, false},
		{"another load", func(a *published) { a.Load = 1.5 }, false},
	}
	for _, tt := range tests {
		a := base
		a.Members = slices.Clone(base.Members)
		tt.edit(&a)
		if same := a.key() == base.key(); same != tt.same {
			t.Errorf("%s: same key = %v, want %v", tt.name, same, tt.same)
		}
	}
	if (*published)(nil).key() != "" {
		t.Error("the key of no assignment is not empty")
	}
}
