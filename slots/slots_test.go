package slots

import (
	"errors"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
)

func TestOf(t *testing.T) {
	// Expected values from an independent CRC32-IEEE (Python's zlib.crc32).
	tests := []struct {
		basis uint64
		n     int
		want  int
	}{
		{0, 16, 1},
		{1, 16, 7},
		{42, 16, 8},
		{123456789, 16, 6},
		{123456789, 65536, 14630},
		{1<<64 - 1, 16, 10},
		{1<<64 - 1, 65536, 20762},
		{1<<63 - 1, 16, 14},
		{1<<63 - 1, 65536, 2782},
		{42, 65536, 45192},
		{42, 1, 0},
	}
	for _, tt := range tests {
		if got := Of(tt.basis, tt.n); got != tt.want {
			t.Errorf("Of(%d, %d) = %d, want %d", tt.basis, tt.n, got, tt.want)
		}
		if got := JobSlot("orders", tt.basis, tt.n); got != (timer.Slot{Topic: "orders", Index: tt.want}) {
			t.Errorf("JobSlot(orders, %d, %d) = %v, want index %d", tt.basis, tt.n, got, tt.want)
		}
	}
}

func TestOfPanicsOnInvalidCount(t *testing.T) {
	for _, n := range []int{0, -1, 3, 12, Max * 2} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Of(1, %d) did not panic", n)
				}
			}()
			Of(1, n)
		}()
	}
}

func TestValid(t *testing.T) {
	for n := -2; n <= Max*2; n++ {
		want := false
		for p := 1; p <= Max; p *= 2 {
			if n == p {
				want = true
			}
		}
		if got := Valid(n); got != want {
			t.Fatalf("Valid(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestValidTopic(t *testing.T) {
	good := []string{"a", "0", "orders", "a_b-c", "x" + strings.Repeat("y", 63)}
	bad := []string{"", "_a", "-a", "A", "a b", "a{b", "a}b", "a:b", "é", "x" + strings.Repeat("y", 64)}
	for _, s := range good {
		if !ValidTopic(s) {
			t.Errorf("ValidTopic(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if ValidTopic(s) {
			t.Errorf("ValidTopic(%q) = true, want false", s)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for _, p := range []string{"", "toc:", "a:b:"} {
		if !ValidPrefix(p) {
			t.Errorf("ValidPrefix(%q) = false", p)
		}
	}
	for _, p := range []string{"{", "}", "toc{x}:"} {
		if ValidPrefix(p) {
			t.Errorf("ValidPrefix(%q) = true", p)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	if err := CheckPrefix("toc:"); err != nil {
		t.Errorf("CheckPrefix(toc:) = %v", err)
	}
	var fe *timer.FieldError
	if err := CheckPrefix("a{b"); !errors.As(err, &fe) || fe.Field != "Prefix" {
		t.Errorf("CheckPrefix(a{b) = %v, want a FieldError naming Prefix", err)
	}
}

func TestKeys(t *testing.T) {
	k := Keys("toc:", "orders", 7)
	want := KeySet{
		DueHigh: "toc:{orders:7}:store:high",
		Due:     "toc:{orders:7}:store",
		DueLow:  "toc:{orders:7}:store:low",
		Prepare: "toc:{orders:7}:prepare",
		Dead:    "toc:{orders:7}:dead",

		Window:    "toc:{orders:7}:store:window",
		WindowEnd: "toc:{orders:7}:store:window:end",
		Later:     "toc:{orders:7}:store:later",
	}
	if k != want {
		t.Fatalf("Keys = %+v, want %+v", k, want)
	}
	if s := k.Dues(); s != [3]string{want.DueHigh, want.Due, want.DueLow} {
		t.Errorf("Dues = %v", s)
	}
	name := LaterBucketName(8000, 1_768_000_123_456)
	if b := k.LaterBucket(name); b != "toc:{orders:7}:store:later:8000:221000015" {
		t.Errorf("LaterBucket = %q", b)
	}
	if ClusterSlot(k.LaterBucket(name)) != ClusterSlot(k.Due) {
		t.Errorf("a later bucket is in cluster slot %d, the due set in %d", ClusterSlot(k.LaterBucket(name)), ClusterSlot(k.Due))
	}
}

func TestClusterSlot(t *testing.T) {
	// Expected values from a real redis-server: CLUSTER KEYSLOT.
	tests := map[string]int{
		"foo":                  12182,
		"bar":                  5061,
		"hello":                866,
		"123456789":            12739,
		"{user1000}.following": 3443,
		"foo{}{bar}":           8363,
		"foo{{bar}}zap":        4015,
		"foo{bar}{zap}":        5061,
		"{}":                   15257,
		"{":                    4092,
		"toc:{orders:7}:store": 4453,
		"x{a}":                 15495,
	}
	for key, want := range tests {
		if got := ClusterSlot(key); got != want {
			t.Errorf("ClusterSlot(%q) = %d, want %d", key, got, want)
		}
	}
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16 check value = %#x, want 0x31c3", got)
	}
}

// FuzzKeys checks that the keys of any valid slot share one cluster slot,
// the one of its tag, and that they are distinct.
func FuzzKeys(f *testing.F) {
	f.Add("toc:", "orders", 7)
	f.Add("", "a", 0)
	f.Add("x:y:", "z_-9", 65535)
	f.Fuzz(func(t *testing.T, prefix, topic string, slot int) {
		if !ValidPrefix(prefix) || !ValidTopic(topic) || slot < 0 || slot >= Max {
			t.Skip()
		}
		k := Keys(prefix, topic, slot)
		want := ClusterSlot(Tag(topic, slot))
		if want != int(crc16(topic+":"+strconv.Itoa(slot))%ClusterSlots) {
			t.Fatalf("tag %q hashes to %d, not to its contents", Tag(topic, slot), want)
		}
		all := []string{k.DueHigh, k.Due, k.DueLow, k.Prepare, k.Dead}
		seen := map[string]bool{}
		for _, key := range all {
			if got := ClusterSlot(key); got != want {
				t.Fatalf("ClusterSlot(%q) = %d, want %d", key, got, want)
			}
			seen[key] = true
		}
		if len(seen) != len(all) {
			t.Fatalf("keys not distinct: %+v", k)
		}
	})
}

// FuzzOf checks that Of stays in range and agrees across slot counts: the
// slot under n is the slot under 2n modulo n.
func FuzzOf(f *testing.F) {
	f.Add(uint64(0), uint(4))
	f.Add(uint64(1<<64-1), uint(16))
	f.Fuzz(func(t *testing.T, basis uint64, shift uint) {
		n := 1 << (shift % 17)
		got := Of(basis, n)
		if got < 0 || got >= n {
			t.Fatalf("Of(%d, %d) = %d out of range", basis, n, got)
		}
		if n < Max && Of(basis, 2*n)%n != got {
			t.Fatalf("Of(%d, %d) disagrees with Of(_, %d)", basis, n, 2*n)
		}
	})
}

func BenchmarkOf(b *testing.B) {
	var sink int
	basis := uint64(1 << 62)
	for b.Loop() {
		sink += Of(basis, 1024)
		basis++
	}
	_ = sink
}

func BenchmarkClusterSlot(b *testing.B) {
	var sink int
	for b.Loop() {
		sink += ClusterSlot("toc:{orders:1234}:store")
	}
	_ = sink
}

func FuzzChecksum(f *testing.F) {
	f.Add([]byte("123456789"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := checksum(b), crc32.ChecksumIEEE(b); got != want {
			t.Fatalf("checksum(%q) = %#x, want %#x", b, got, want)
		}
	})
}
