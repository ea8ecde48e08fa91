package lua

import (
	"errors"
	"fmt"
	"testing"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
)

// bucketMs is the later buckets' width in most of these tests.
const bucketMs = 4000

// addLater adds es in mode with every entry due at or after t0+10s sent
// to a later bucket bucketMs wide.
func addLater(t *testing.T, b *luatest.Backend, k slots.KeySet, mode AddMode, es ...Entry) AddResult {
	t.Helper()
	return addOne(t, b, AddCall{Keys: k, Mode: mode, Entries: es, LaterFromMs: t0 + 10_000, BucketWidthsMs: []int64{bucketMs}})
}

func bucketOf(ms int64) string { return slots.LaterBucketName(bucketMs, ms) }

func TestLaterBuckets(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 40)
		far := t0 + 60_000 // a bucket's start: far and far+3999 share it
		r := addLater(t, b, k, ModeSet,
			Entry{"1", t0 + 5_000, 0}, Entry{"2", far + 3_000, 0}, Entry{"3h", far + 1_000, 0},
			Entry{"4l", far + 9_000, 2})
		if r.Added != 4 || !r.Earliest.OK || r.Earliest.Ms != t0+5_000 {
			t.Fatalf("Add = %+v, want 4 added, earliest t0+5s", r)
		}
		wantSet(t, b, k.Due, Entry{"1", t0 + 5_000, 0})
		wantSet(t, b, k.DueHigh)
		wantSet(t, b, k.LaterBucket(bucketOf(far)), Entry{"3h", far + 1_000, 0}, Entry{"2", far + 3_000, 0})
		wantSet(t, b, k.LaterBucket(bucketOf(far+9_000)), Entry{"4l", far + 9_000, 2})
		// The index scores each bucket by its lowest member.
		idx, err := b.Client.ZRangeWithScores(ctx, k.Later, 0, -1).Result()
		if err != nil || len(idx) != 2 || idx[0].Score != float64((far+1_000)*128) || idx[1].Score != float64((far+9_000)*128+2) {
			t.Fatalf("later = %v, %v", idx, err)
		}
		if b.Mini == nil { // miniredis has no encodings
			if enc, err := b.Client.ObjectEncoding(ctx, k.LaterBucket(bucketOf(far))).Result(); err != nil || enc != "listpack" {
				t.Errorf("a bucket's encoding = %q, %v; want listpack", enc, err)
			}
		}

		// Before the bucket's lowest member is due it stays where it is,
		// and the slot's head is that member.
		c := claim(t, b, k, far+999, 10, 100)
		if len(c.Leased) != 1 || c.Leased[0].Member != "1" || c.DueHead.Ms != far+1_000 {
			t.Fatalf("Claim at far+999 = %+v, want 1 leased, head far+1s", c)
		}
		wantSet(t, b, k.DueHigh)
		// Then the whole bucket moves, each member to its due set, and
		// only what is due is leased.
		c = claim(t, b, k, far+1_000, 10, 100)
		if got := memberNames(c.Leased); len(got) != 1 || got[0] != "3h" || c.DueHead.Ms != far+3_000 {
			t.Fatalf("Claim at far+1s = %v, head %+v; want [3h], head far+3s", got, c.DueHead)
		}
		wantSet(t, b, k.Due, Entry{"2", far + 3_000, 0})
		if n, _ := b.Client.Exists(ctx, k.LaterBucket(bucketOf(far))).Result(); n != 0 {
			t.Errorf("the moved bucket still exists")
		}
		c = claim(t, b, k, far+9_000, 10, 100)
		if got := memberNames(c.Leased); len(got) != 2 || got[0] != "2" || got[1] != "4l" || c.DueHead.OK {
			t.Fatalf("Claim at far+9s = %v, head %+v; want [2 4l], no head", got, c.DueHead)
		}
		if c.Leased[1].Attempt != 2 {
			t.Errorf("4l leased at attempt %d, want its 2", c.Leased[1].Attempt)
		}
		if n, _ := b.Client.Exists(ctx, k.Later).Result(); n != 0 {
			t.Errorf("later still exists with every bucket moved")
		}
	})
}

func TestLaterBucketsOnePlace(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 41)
		far := t0 + 60_000
		addLater(t, b, k, ModeSet, Entry{"1", t0 + 1_000, 0})
		// Set mode moves a member from its due set to a later bucket...
		if r := addLater(t, b, k, ModeSet, Entry{"1", far, 0}); r.Added != 1 {
			t.Fatalf("Add to later = %+v", r)
		}
		wantSet(t, b, k.Due)
		wantSet(t, b, k.LaterBucket(bucketOf(far)), Entry{"1", far, 0})
		// ...restore mode leaves a member found in the bucket of its time...
		if r := addLater(t, b, k, ModeRestore, Entry{"1", far, 0}); r.Added != 0 {
			t.Errorf("restore of a member in its bucket added %d", r.Added)
		}
		// ...and back to the due set leaves the copy in the bucket, which
		// the due set's entry outlives when the bucket moves (NX).
		addLater(t, b, k, ModeSet, Entry{"1", t0 + 2_000, 0})
		c := claim(t, b, k, far, 10, 100)
		if len(c.Leased) != 1 || c.Leased[0].Member != "1" {
			t.Fatalf("Claim = %+v, want 1 leased once", c)
		}
		wantSet(t, b, k.Due)
	})
}

func TestLaterBucketSkipsLeased(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 42)
		far := t0 + 60_000
		addLater(t, b, k, ModeSet, Entry{"1", far, 0})
		// Moved to the near future, it leaves a copy in its old bucket;
		// claimed there and still leased when the bucket is due, it is
		// not taken over: the lease's end (ack, or a sweep back to the
		// due set) decides, as the store says.
		addLater(t, b, k, ModeSet, Entry{"1", t0 + 1_000, 0})
		if c := claim(t, b, k, t0+1_000, 10, 100_000); len(c.Leased) != 1 {
			t.Fatalf("Claim = %+v", c)
		}
		addLater(t, b, k, ModeSet, Entry{"2", far, 0})
		c := claim(t, b, k, far, 10, 100)
		if got := memberNames(c.Leased); len(got) != 1 || got[0] != "2" {
			t.Fatalf("Claim at far = %v, want [2]", got)
		}
		wantSet(t, b, k.Prepare, Entry{"2", far + 100, 0}, Entry{"1", t0 + 1_000 + 100_000, 0})
		// Added again while leased, it goes to its due set, not a bucket:
		// claimable again, as without buckets.
		addLater(t, b, k, ModeSet, Entry{"2", far + 30_000, 0})
		wantSet(t, b, k.Due, Entry{"2", far + 30_000, 0})
	})
}

func TestLaterBucketLimit(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 43)
		far := t0 + 60_000
		var es []Entry
		for i := range 30 { // ten buckets of three
			es = append(es, Entry{string(rune('a'+i%26)) + string(rune('a'+i/26)), far + int64(i)*bucketMs/3, 0})
		}
		addLater(t, b, k, ModeSet, es...)
		// A claim moves whole buckets until limit members have moved: two
		// buckets for a limit of 4, then leases the due ones of those.
		c := claim(t, b, k, far+100*bucketMs, 4, 100)
		if len(c.Leased) != 4 {
			t.Fatalf("Claim leased %d, want 4", len(c.Leased))
		}
		if n, _ := b.Client.ZCard(t.Context(), k.Due).Result(); n != 2 {
			t.Errorf("due set holds %d after the claim, want the 2 of the second bucket left", n)
		}
		if n, _ := b.Client.ZCard(t.Context(), k.Later).Result(); n != 8 {
			t.Errorf("later holds %d buckets, want 8", n)
		}
		if !c.DueHead.OK || c.DueHead.Ms != far+4*bucketMs/3 {
			t.Errorf("due head = %+v, want the fifth member's", c.DueHead)
		}
	})
}

func TestAddLaterArgs(t *testing.T) {
	b := luatest.Mini(t)
	for _, ws := range [][]int64{nil, {0}, {1000, 1000}, {8000, 1000}} {
		_, err := Add(t.Context(), b.Client, AddCall{Keys: keysOf(b, 1), Mode: ModeSet, Entries: []Entry{{"1", t0, 0}}, LaterFromMs: t0, BucketWidthsMs: ws})
		if !errors.Is(err, ErrRange) {
			t.Errorf("Add with bucket widths %v = %v, want ErrRange", ws, err)
		}
	}
}

// TestLaterBucketWidths checks the choice of width: the widest bucket
// with room under 128 members, then the finer ones, and the finest
// beyond; and that restore finds a member in any of them.
func TestLaterBucketWidths(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 44)
		widths := []int64{1000, 8000, 64000}
		start := (t0/64000 + 1) * 64000 // a 64 s bucket's start, after t0+10s
		add := func(mode AddMode, es []Entry) AddResult {
			return addOne(t, b, AddCall{Keys: k, Mode: mode, Entries: es, LaterFromMs: t0 + 10_000, BucketWidthsMs: widths})
		}
		// 400 members in the first second of the 64 s bucket, in calls of
		// 100: 128 fill the 64 s bucket, 128 the 8 s one, the rest go to
		// the 1 s one, beyond its 128.
		var es []Entry
		for i := range 400 {
			es = append(es, Entry{fmt.Sprint(i + 1), start + int64(i), 0})
		}
		for i := 0; i < 400; i += 100 {
			if r := add(ModeSet, es[i:i+100]); r.Added != 100 {
				t.Fatalf("Add = %+v", r)
			}
		}
		for w, want := range map[int64]int64{64000: 128, 8000: 128, 1000: 144} {
			if n, _ := b.Client.ZCard(ctx, k.LaterBucket(slots.LaterBucketName(w, start))).Result(); n != want {
				t.Errorf("the %d ms bucket holds %d, want %d", w, n, want)
			}
		}
		if r := add(ModeRestore, es); r.Added != 0 {
			t.Errorf("restore added %d already in buckets", r.Added)
		}
		// A sparse member goes to the widest bucket of its time.
		add(ModeSet, []Entry{{"sparse", start + 100_000, 0}})
		wantSet(t, b, k.LaterBucket(slots.LaterBucketName(64000, start+100_000)), Entry{"sparse", start + 100_000, 0})
		// The claim moves whole buckets, earliest first, until limit
		// members have moved.
		c := claim(t, b, k, start+1_000, 1000, 100)
		if len(c.Leased) != 400 {
			t.Errorf("Claim leased %d, want 400", len(c.Leased))
		}
		if !c.DueHead.OK || c.DueHead.Ms != start+100_000 {
			t.Errorf("due head %+v, want the sparse member's", c.DueHead)
		}
	})
}

// TestAddNew checks mode new: restore's checks of the due set, Prepare and
// Dead, but none of the later buckets.
func TestAddNew(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 45)
		far := t0 + 60_000
		addLater(t, b, k, ModeSet, Entry{"1", t0 + 1_000, 0})
		if c := claim(t, b, k, t0+1_000, 10, 100_000); len(c.Leased) != 1 {
			t.Fatalf("Claim = %+v", c)
		}
		addLater(t, b, k, ModeSet, Entry{"2", t0 + 2_000, 0})
		// Leased, or in its due set: left alone, as restore does.
		if r := addLater(t, b, k, ModeNew, Entry{"1", far, 0}, Entry{"2", far, 0}); r.Added != 0 {
			t.Errorf("new added %d of a leased member and a waiting one", r.Added)
		}
		// In a bucket: new does not look there, and puts it in the bucket
		// of its time all the same, replacing its score.
		addLater(t, b, k, ModeSet, Entry{"3", far, 0})
		if r := addLater(t, b, k, ModeNew, Entry{"3", far, 1}); r.Added != 0 {
			t.Errorf("new added %d to the bucket holding the member", r.Added)
		}
		wantSet(t, b, k.LaterBucket(bucketOf(far)), Entry{"3", far, 1})
	})
}

// TestLaterBucketLarge moves a bucket past MaxBatch members, in chunks,
// leaving out the one leased.
func TestLaterBucketLarge(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := keysOf(b, 46)
		far := (t0/bucketMs + 20) * bucketMs
		es := []Entry{{"x", far, 0}}
		for i := range 2*MaxBatch + 499 {
			es = append(es, Entry{fmt.Sprint(i + 1), far + int64(i%bucketMs), 0})
		}
		for i := 0; i < len(es); i += MaxBatch {
			addOne(t, b, AddCall{Keys: k, Mode: ModeNew, Entries: es[i:min(i+MaxBatch, len(es))], LaterFromMs: t0 + 10_000, BucketWidthsMs: []int64{bucketMs}})
		}
		// x moves near, leaving its copy in the bucket, and is leased.
		addLater(t, b, k, ModeSet, Entry{"x", t0 + 1_000, 0})
		if c := claim(t, b, k, t0+1_000, 1, 100_000); len(c.Leased) != 1 {
			t.Fatalf("Claim = %+v", c)
		}
		if n, _ := b.Client.ZCard(ctx, k.LaterBucket(bucketOf(far))).Result(); n != int64(len(es)) {
			t.Fatalf("the bucket holds %d, want %d", n, len(es))
		}
		c := claim(t, b, k, far+bucketMs, MaxBatch, 100)
		if len(c.Leased) != MaxBatch {
			t.Errorf("Claim leased %d, want %d", len(c.Leased), MaxBatch)
		}
		if n, _ := b.Client.ZCard(ctx, k.Due).Result(); n != int64(len(es)-1-MaxBatch) {
			t.Errorf("due set holds %d, want all but the leased one and those leased now (%d)", n, len(es)-1-MaxBatch)
		}
		if n, _ := b.Client.Exists(ctx, k.LaterBucket(bucketOf(far)), k.Later).Result(); n != 0 {
			t.Errorf("%d of the bucket and its index left", n)
		}
	})
}
