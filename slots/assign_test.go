package slots

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/toc-project/toc/timer"
)

// uniformTopics returns n topics named <prefix>0.. of slots slots each.
func uniformTopics(prefix string, n, slots int) []timer.Topic {
	topics := make([]timer.Topic, n)
	for i := range topics {
		topics[i] = timer.Topic{Name: prefix + strconv.Itoa(i), Slots: slots}
	}
	return topics
}

func memberIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "member-" + strconv.Itoa(i+1)
	}
	return ids
}

func totalSlots(topics []timer.Topic) int {
	n := 0
	for _, t := range normalTopics(topics) {
		n += t.Slots
	}
	return n
}

// checkMap checks that m gives every slot of topics to exactly one of
// members, consistently through Owner, Owned and Counts, and that no member
// owns more than the bound.
func checkMap(tb testing.TB, m *Map, members []string, topics []timer.Topic, load float64) {
	tb.Helper()
	ms := sortedSet(members)
	total := totalSlots(topics)
	if m.Slots() != total {
		tb.Fatalf("Slots = %d, want %d", m.Slots(), total)
	}
	if len(ms) == 0 {
		for _, t := range topics {
			for i := range t.Slots {
				if o, ok := m.Owner(timer.Slot{Topic: t.Name, Index: i}); ok {
					tb.Fatalf("no members, yet %s/%d is owned by %q", t.Name, i, o)
				}
			}
		}
		return
	}
	bound := int(min(math.Ceil(load*float64(total)/float64(len(ms))), float64(total)))
	if m.Cap() != bound {
		tb.Fatalf("Cap = %d, want ceil(%v × %d / %d) = %d", m.Cap(), load, total, len(ms), bound)
	}
	owners := make(map[timer.Slot]string, total)
	for _, id := range ms {
		owned := m.Owned(id)
		if !slices.IsSortedFunc(owned, func(a, b timer.Slot) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
		}) {
			tb.Fatalf("Owned(%q) is not sorted", id)
		}
		if len(owned) > m.Cap() {
			tb.Fatalf("%q owns %d slots, above the bound %d", id, len(owned), m.Cap())
		}
		if got := m.Counts()[id]; got != len(owned) {
			tb.Fatalf("Counts()[%q] = %d, Owned lists %d", id, got, len(owned))
		}
		for _, s := range owned {
			if prev, dup := owners[s]; dup {
				tb.Fatalf("slot %s owned by %q and %q", s, prev, id)
			}
			owners[s] = id
		}
	}
	if len(owners) != total {
		tb.Fatalf("%d slots owned, want %d", len(owners), total)
	}
	for _, t := range normalTopics(topics) {
		for i := range t.Slots {
			s := timer.Slot{Topic: t.Name, Index: i}
			if o, ok := m.Owner(s); !ok || o != owners[s] {
				tb.Fatalf("Owner(%s) = %q, %v; Owned says %q", s, o, ok, owners[s])
			}
		}
	}
	if len(m.Counts()) != len(ms) {
		tb.Fatalf("Counts has %d members, want %d", len(m.Counts()), len(ms))
	}
}

func TestAssignOwnsEverySlotOnce(t *testing.T) {
	mixes := map[string][]timer.Topic{
		"none":          nil,
		"one slot":      {{Name: "a", Slots: 1}},
		"one topic":     {{Name: "orders", Slots: 16}},
		"1024 in one":   {{Name: "big", Slots: 1024}},
		"64x16":         uniformTopics("t", 64, 16),
		"mixed sizes":   {{Name: "a", Slots: 1}, {Name: "b", Slots: 2}, {Name: "c", Slots: 64}, {Name: "d", Slots: 256}, {Name: "e", Slots: 4}},
		"empty topics":  {{Name: "z", Slots: 0}, {Name: "y", Slots: 8}},
		"fewer than n":  {{Name: "a", Slots: 2}},
		"256x16 (4096)": uniformTopics("topic-", 256, 16),
	}
	for name, topics := range mixes {
		for n := 1; n <= 7; n++ {
			t.Run(fmt.Sprintf("%s/%d members", name, n), func(t *testing.T) {
				members := memberIDs(n)
				m := Assign(members, topics, DefaultLoad)
				checkMap(t, m, members, topics, DefaultLoad)
			})
		}
	}
}

// The case the issue names: 1,024 slots over 3 members, each under
// ceil(1.25 × 1024 / 3) = 427.
func TestAssign1024SlotsOver3(t *testing.T) {
	members := []string{"a", "b", "c"}
	for _, topics := range [][]timer.Topic{uniformTopics("t", 64, 16), {{Name: "one", Slots: 1024}}} {
		m := Assign(members, topics, DefaultLoad)
		checkMap(t, m, members, topics, DefaultLoad)
		if m.Cap() != 427 {
			t.Fatalf("Cap = %d, want 427", m.Cap())
		}
		t.Logf("%d topics: counts %v", len(topics), m.Counts())
	}
}

func TestAssignLoads(t *testing.T) {
	topics := uniformTopics("t", 64, 16)
	members := memberIDs(5)
	for _, load := range []float64{1, 1.1, 1.25, 2, 100, math.Inf(1)} {
		m := Assign(members, topics, load)
		checkMap(t, m, members, topics, load)
	}
	// Below 1, or NaN: the default.
	for _, load := range []float64{0, 0.5, -1, math.NaN()} {
		m := Assign(members, topics, load)
		checkMap(t, m, members, topics, DefaultLoad)
	}
}

func TestAssignNoMembers(t *testing.T) {
	topics := uniformTopics("t", 4, 16)
	m := Assign(nil, topics, DefaultLoad)
	checkMap(t, m, nil, topics, DefaultLoad)
	if got := m.Owned("anyone"); got != nil {
		t.Fatalf("Owned = %v, want nil", got)
	}
	if len(m.Counts()) != 0 || m.Cap() != 0 {
		t.Fatalf("Counts = %v, Cap = %d; want none", m.Counts(), m.Cap())
	}
}

func TestAssignOwnerOutOfRange(t *testing.T) {
	m := Assign([]string{"a"}, []timer.Topic{{Name: "t", Slots: 4}}, DefaultLoad)
	for _, s := range []timer.Slot{{Topic: "t", Index: -1}, {Topic: "t", Index: 4}, {Topic: "u", Index: 0}, {Topic: "", Index: 0}} {
		if o, ok := m.Owner(s); ok {
			t.Errorf("Owner(%s) = %q, want none", s, o)
		}
	}
	if got := m.Owned("b"); got != nil {
		t.Errorf("Owned(non-member) = %v", got)
	}
}

// Same sets in any order, with duplicates: the same map.
func TestAssignDeterministic(t *testing.T) {
	members := memberIDs(5)
	topics := append(uniformTopics("t", 40, 16), timer.Topic{Name: "odd", Slots: 8})
	want := Assign(members, topics, DefaultLoad)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		ms := append(slices.Clone(members), members[rng.IntN(len(members))])
		ts := append(slices.Clone(topics), topics[rng.IntN(len(topics))])
		rng.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		got := Assign(ms, ts, DefaultLoad)
		if !slices.Equal(got.owner, want.owner) || !slices.Equal(got.members, want.members) || !slices.Equal(got.topics, want.topics) {
			t.Fatal("shuffled inputs gave another map")
		}
	}
	// Pinned: the hash and the ring are part of the scheme; a change here
	// means members of different versions would disagree.
	pinned := Assign([]string{"a", "b", "c"}, []timer.Topic{{Name: "orders", Slots: 8}}, DefaultLoad)
	var got []string
	for i := range 8 {
		o, _ := pinned.Owner(timer.Slot{Topic: "orders", Index: i})
		got = append(got, o)
	}
	t.Logf("pinned owners: %q", got)
	if want := pinnedOwners; !slices.Equal(got, want) {
		t.Fatalf("owners of orders/0..7 = %q, want %q: the assignment scheme changed", got, want)
	}
}

// pinnedOwners are the owners of orders/0..7 (8 slots) among a, b, c.
var pinnedOwners = []string{"c", "c", "c", "a", "b", "a", "a", "b"}

// moved returns the fraction of slots whose owner differs between a and b.
func moved(a, b *Map, topics []timer.Topic) (n int, frac float64) {
	total := 0
	for _, t := range topics {
		for i := range t.Slots {
			s := timer.Slot{Topic: t.Name, Index: i}
			oa, _ := a.Owner(s)
			ob, _ := b.Owner(s)
			if oa != ob {
				n++
			}
			total++
		}
	}
	return n, float64(n) / float64(total)
}

// Adding a fourth member should move about the quarter of the slots it
// takes; removing it, the quarter it had. Bounded loads add some cascade;
// the test allows twice the ideal.
func TestAssignMovement(t *testing.T) {
	topics := uniformTopics("topic-", 256, 16) // 4,096 slots
	three := Assign([]string{"a", "b", "c"}, topics, DefaultLoad)
	four := Assign([]string{"a", "b", "c", "d"}, topics, DefaultLoad)

	n, frac := moved(three, four, topics)
	t.Logf("3→4 members: %d of 4096 slots moved (%.3f; ideal 0.250); new member owns %d; counts %v", n, frac, four.Counts()["d"], four.Counts())
	if frac > 2*0.25 {
		t.Errorf("3→4 moved %.3f of slots, want at most %.3f", frac, 2*0.25)
	}
	n, frac = moved(four, three, topics)
	t.Logf("4→3 members: %d of 4096 slots moved (%.3f; ideal 0.250, the leaver's %d)", n, frac, four.Counts()["d"])
	if frac > 2*0.25 {
		t.Errorf("4→3 moved %.3f of slots, want at most %.3f", frac, 2*0.25)
	}
	// A member other than the one that left or joined keeps most of its
	// slots: what moves is mostly to or from the changed member.
	for _, id := range []string{"a", "b", "c"} {
		kept := 0
		for _, s := range three.Owned(id) {
			if o, _ := four.Owner(s); o == id {
				kept++
			}
		}
		t.Logf("member %s kept %d of its %d slots", id, kept, len(three.Owned(id)))
	}
}

// sortByHash agrees with a stable sort by hash, for spread hashes and for
// hashes crowded into few buckets or equal.
func TestSortByHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func() uint64{
		"uniform": rng.Uint64,
		"crowded": func() uint64 { return rng.Uint64N(1 << 30) },             // all in the first bucket
		"equal":   func() uint64 { return 1<<63 + rng.Uint64N(3) },           // ties
		"mixed":   func() uint64 { return rng.Uint64() &^ (1<<40 - 1) >> 3 }, // low bits zero
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 17, 100, 5000} {
			keys := make([]slotKey, n)
			for i := range keys {
				keys[i] = slotKey{hash: gen(), topic: int32(i / 7), index: int32(i % 7)}
			}
			want := slices.Clone(keys)
			slices.SortStableFunc(want, func(a, b slotKey) int { return cmp.Compare(a.hash, b.hash) })
			if got := sortByHash(slices.Clone(keys)); !slices.Equal(got, want) {
				t.Errorf("%s, %d keys: sortByHash disagrees with a stable sort", name, n)
			}
		}
	}
}

// FuzzAssign checks the invariants for arbitrary member sets and topic
// mixes: one owner per slot, none above the bound, the same map for any
// input order.
func FuzzAssign(f *testing.F) {
	f.Add([]byte("abc"), uint8(4), uint8(16), uint16(125))
	f.Add([]byte{0, 1, 1, 2, 255}, uint8(64), uint8(16), uint16(100))
	f.Add([]byte{}, uint8(3), uint8(1), uint16(0))
	f.Add([]byte("x"), uint8(1), uint8(200), uint16(300))
	f.Fuzz(func(t *testing.T, memberBytes []byte, nTopics, slotsEach uint8, loadPct uint16) {
		var members []string
		for _, b := range memberBytes {
			members = append(members, "m"+strconv.Itoa(int(b)%37)) // duplicates on purpose
		}
		var topics []timer.Topic
		for i := range int(nTopics) {
			topics = append(topics, timer.Topic{Name: "t" + strconv.Itoa(i), Slots: 1 + (int(slotsEach)+i)%int(max(slotsEach, 1))})
		}
		load := float64(loadPct) / 100
		m := Assign(members, topics, load)
		if !(load >= 1) {
			load = DefaultLoad
		}
		checkMap(t, m, members, topics, load)
		rev := slices.Clone(members)
		slices.Reverse(rev)
		trev := slices.Clone(topics)
		slices.Reverse(trev)
		if got := Assign(rev, trev, load); !slices.Equal(got.owner, m.owner) {
			t.Fatal("reversed inputs gave another map")
		}
	})
}

func BenchmarkAssign10kTopics(b *testing.B) {
	topics := uniformTopics("topic-", 10_000, 64) // 640,000 slots
	for _, n := range []int{3, 20} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			members := memberIDs(n)
			b.ReportAllocs()
			var m *Map
			for b.Loop() {
				m = Assign(members, topics, DefaultLoad)
			}
			most := 0
			for _, n := range m.Counts() {
				most = max(most, n)
			}
			b.ReportMetric(float64(m.size())/(1<<20), "map-MB")
			b.ReportMetric(float64(most)/(float64(m.Slots())/float64(n)), "max/avg")
		})
	}
}

// size approximates the bytes a Map holds on to.
func (m *Map) size() int {
	n := 2*len(m.owner) + 8*len(m.start) + 8*len(m.counts) + 16*(len(m.topics)+len(m.members))
	return n
}

func BenchmarkMapOwned(b *testing.B) {
	m := Assign(memberIDs(20), uniformTopics("topic-", 10_000, 64), DefaultLoad)
	b.ReportAllocs()
	for b.Loop() {
		_ = m.Owned("member-7")
	}
}

// Each task store shard has exactly one owner among the members, the
// shards spread over them, and every map of the same members agrees.
func TestShardOwner(t *testing.T) {
	members := []string{"c", "a", "b"}
	m := Assign(members, nil, DefaultLoad)
	again := Assign([]string{"b", "c", "a"}, nil, DefaultLoad)
	per := map[string]int{}
	for i := range 6 {
		o := m.ShardOwner(i)
		if o == "" || o != again.ShardOwner(i) {
			t.Fatalf("shard %d: owner %q, and %q in the same members' other map", i, o, again.ShardOwner(i))
		}
		per[o]++
	}
	for _, id := range members {
		if per[id] != 2 {
			t.Errorf("member %s owns %d of 6 shards, want 2", id, per[id])
		}
	}
	if o := Assign(nil, nil, DefaultLoad).ShardOwner(0); o != "" {
		t.Errorf("owner without members = %q", o)
	}
}
