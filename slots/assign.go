package slots

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/toc-project/toc/timer"
)

// DefaultLoad is the default load factor of Assign: no member owns more
// than 1.25 times the average number of slots.
const DefaultLoad = 1.25

// RingPoints is the number of points each member has on the hash ring.
// It is part of the assignment scheme: members that disagree on it, or on
// the hash, compute different maps.
const RingPoints = 128

// maxMembers is the most members a Map can tell apart (a member is a
// uint16 index; the highest value means no owner).
const maxMembers = math.MaxUint16

// Map says which member owns each slot of each topic. It is immutable and
// safe for concurrent use. It holds two bytes per slot and a few words per
// topic: 10,000 topics of 64 slots take about 1.5 MB.
type Map struct {
	members []string // sorted, distinct
	topics  []string // sorted, distinct
	start   []int    // slots of topics[i] are owner[start[i]:start[i+1]]
	owner   []uint16 // index into members, per slot
	counts  []int    // slots per member
	limit   int
}

// Assign maps every slot of every topic to one of members by consistent
// hashing with bounded loads (Mirrokni, Thorup and Zadimoghaddam, 2018).
//
// Each member has RingPoints points on a ring of 64-bit hashes. The slots
// are taken in the order of the hash of "<topic>/<index>" (ties broken by
// topic name, then index), and each goes to the first member clockwise from
// its hash that owns fewer than ceil(load × slots / members) slots so far.
// No member owns more than that bound (Map.Cap), and when a member joins or
// leaves few slots move: those of the member that left, or about a share
// for the one that joined, plus some that overflowed a full member.
//
// Members and topics are sets: their order and duplicates do not matter (a
// duplicate topic name keeps the smaller slot count), so every process given
// the same sets computes the same Map. A load below 1, or NaN, means
// DefaultLoad. With no members nothing is owned. Beyond 65,535 members the
// ones that sort last own nothing. It takes time linear in the number of
// slots (in practice; the slots are ordered by a bucket sort on their
// uniform hashes) and about 40 bytes of memory per slot while it runs:
// some 50 ms and 25 MB for 10,000 topics of 64 slots.
func Assign(members []string, topics []timer.Topic, load float64) *Map {
	if !(load >= 1) {
		load = DefaultLoad
	}
	m := &Map{members: sortedSet(members)}
	if len(m.members) > maxMembers {
		m.members = m.members[:maxMembers]
	}
	ts := normalTopics(topics)
	m.topics = make([]string, len(ts))
	m.start = make([]int, len(ts)+1)
	for i, t := range ts {
		m.topics[i] = t.Name
		m.start[i+1] = m.start[i] + t.Slots
	}
	total := m.start[len(ts)]
	n := len(m.members)
	m.counts = make([]int, n)
	if n == 0 {
		return m
	}
	m.limit = int(min(math.Ceil(load*float64(total)/float64(n)), float64(total)))
	if m.limit*n < total { // cannot happen with load >= 1; never leave a slot unplaced
		m.limit = (total + n - 1) / n
	}

	// Slots in hash order. The ring pointer then only moves forward.
	order := make([]slotKey, 0, total)
	for i, t := range ts {
		for j := range t.Slots {
			order = append(order, slotKey{hash: slotHash(t.Name, j), topic: int32(i), index: int32(j)})
		}
	}
	order = sortByHash(order)
	ring := newRing(m.members)

	m.owner = make([]uint16, total)
	p := 0
	for _, s := range order {
		for p < len(ring) && ring[p].hash < s.hash {
			p++
		}
		q := p % len(ring) // past the last point: wrap to the first
		for m.counts[ring[q].member] >= m.limit {
			q = (q + 1) % len(ring)
		}
		owner := ring[q].member
		m.owner[m.start[s.topic]+int(s.index)] = owner
		m.counts[owner]++
	}
	return m
}

// slotKey is one slot in the processing order of Assign.
type slotKey struct {
	hash         uint64
	topic, index int32
}

// sortByHash sorts keys by hash, keeping keys of equal hash in their order
// (topic, then index, as Assign builds them). The hashes are uniform, so
// one counting pass on their top bits spreads the keys over about as many
// buckets as keys, and an insertion sort finishes each small bucket. At
// 640,000 slots it is about five times faster than slices.SortFunc.
func sortByHash(keys []slotKey) []slotKey {
	shift := 64 - min(max(bits.Len(uint(len(keys)))-1, 1), 20)
	start := make([]int32, 1<<(64-shift)+1) // start[b]: first index of bucket b
	for _, k := range keys {
		start[k.hash>>shift+1]++
	}
	for b := 1; b < len(start); b++ {
		start[b] += start[b-1]
	}
	sorted := make([]slotKey, len(keys))
	for _, k := range keys {
		sorted[start[k.hash>>shift]] = k
		start[k.hash>>shift]++
	}
	// Now start[b] is the end of bucket b, and so the start of bucket b+1.
	lo := int32(0)
	for _, hi := range start[:len(start)-1] {
		bucket := sorted[lo:hi]
		lo = hi
		if len(bucket) > 16 { // crafted topic names can crowd one bucket
			slices.SortStableFunc(bucket, func(a, b slotKey) int { return cmp.Compare(a.hash, b.hash) })
			continue
		}
		for i := 1; i < len(bucket); i++ {
			for j := i; j > 0 && bucket[j].hash < bucket[j-1].hash; j-- {
				bucket[j], bucket[j-1] = bucket[j-1], bucket[j]
			}
		}
	}
	return sorted
}

// point is one of a member's points on the ring.
type point struct {
	hash   uint64
	member uint16
}

// newRing returns the points of members, sorted by hash and then member.
func newRing(members []string) []point {
	ring := make([]point, 0, len(members)*RingPoints)
	var buf []byte
	for i, id := range members {
		for v := range RingPoints {
			buf = append(buf[:0], id...)
			buf = append(buf, '#')
			buf = strconv.AppendInt(buf, int64(v), 10)
			ring = append(ring, point{hash: hash64(buf), member: uint16(i)})
		}
	}
	slices.SortFunc(ring, func(a, b point) int {
		return cmp.Or(cmp.Compare(a.hash, b.hash), cmp.Compare(a.member, b.member))
	})
	return ring
}

// Owner returns the member that owns slot, and false when no member does
// (an unknown topic, an index out of range, or no members).
func (m *Map) Owner(slot timer.Slot) (member string, ok bool) {
	t, found := slices.BinarySearch(m.topics, slot.Topic)
	if !found || len(m.members) == 0 || slot.Index < 0 || slot.Index >= m.start[t+1]-m.start[t] {
		return "", false
	}
	return m.members[m.owner[m.start[t]+slot.Index]], true
}

// Owned returns the slots member owns, ordered by topic name and index; nil
// when it is not one of the members.
func (m *Map) Owned(member string) []timer.Slot {
	i, found := slices.BinarySearch(m.members, member)
	if !found || m.counts[i] == 0 {
		return nil
	}
	owned := make([]timer.Slot, 0, m.counts[i])
	for t, name := range m.topics {
		for j, o := range m.owner[m.start[t]:m.start[t+1]] {
			if int(o) == i {
				owned = append(owned, timer.Slot{Topic: name, Index: j})
			}
		}
	}
	return owned
}

// Counts returns the number of slots each member owns, zero included.
func (m *Map) Counts() map[string]int {
	counts := make(map[string]int, len(m.members))
	for i, id := range m.members {
		counts[id] = m.counts[i]
	}
	return counts
}

// Members returns the members the map was computed for, sorted.
func (m *Map) Members() []string { return slices.Clone(m.members) }

// Slots returns the number of slots of all topics.
func (m *Map) Slots() int { return m.start[len(m.topics)] }

// Cap returns the most slots any member may own: ceil(load × slots /
// members), or 0 with no members.
func (m *Map) Cap() int { return m.limit }

// sortedSet returns the distinct strings of s, sorted, in a new slice.
func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// normalTopics returns topics sorted by name, one per name (the smallest
// slot count wins, so the choice does not depend on input order), with
// negative slot counts as 0, in a new slice.
func normalTopics(topics []timer.Topic) []timer.Topic {
	out := make([]timer.Topic, len(topics))
	for i, t := range topics {
		out[i] = timer.Topic{Name: t.Name, Slots: max(t.Slots, 0)}
	}
	slices.SortFunc(out, func(a, b timer.Topic) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Slots, b.Slots))
	})
	return slices.CompactFunc(out, func(a, b timer.Topic) bool { return a.Name == b.Name })
}

// slotHash is hash64 of "<topic>/<index>", without allocating.
func slotHash(topic string, index int) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(topic); i++ {
		h = (h ^ uint64(topic[i])) * fnvPrime
	}
	h = (h ^ '/') * fnvPrime
	var buf [20]byte
	for _, c := range strconv.AppendInt(buf[:0], int64(index), 10) {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return mix64(h)
}

// hash64 is the hash of the ring and the slot order: 64-bit FNV-1a, whose
// high bits mix poorly for keys that differ in their last byte, followed by
// the MurmurHash3 finalizer, which spreads every input bit over every
// output bit. It is part of the assignment scheme and must never change.
func hash64(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return mix64(h)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9a64fe53e87
	h ^= h >> 33
	return h
}
