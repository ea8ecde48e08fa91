package prepare

import (
	"testing"
	"time"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// newLaterIndex returns an Index whose clock reads t0, so that timers due
// 2 s or more after t0 go to later buckets.
func newLaterIndex(t *testing.T, b *luatest.Backend) *Index {
	t.Helper()
	if err := lua.Load(t.Context(), b.Client); err != nil {
		t.Fatal(err)
	}
	q, err := New(b.Client, Config{Prefix: b.Prefix, WakeChannel: b.Prefix + "wake", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestLaterBucketsSeen checks that what reads the sets sees the timers in
// later buckets: the heads, the counts, what is due, and Remove.
func TestLaterBucketsSeen(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newLaterIndex(t, b)
		slot := timer.Slot{Topic: "orders", Index: 0}
		near := tm(1, "orders", 1, at(1_500))
		later := []timer.Timer{tm(2, "orders", 1, at(60_500)), tm(3, "orders", 1, at(61_000)), tm(4, "orders", 1, at(90_000))}
		high := tm(5, "orders", 1, at(60_000))
		high.Priority = timer.PriorityHigh
		later = append(later, high)
		if _, err := q.Add(ctx, append([]timer.Timer{near}, later...)); err != nil {
			t.Fatal(err)
		}
		k := q.Keys(slot)
		if n, _ := b.Client.ZCard(ctx, k.Due).Result(); n != 1 {
			t.Fatalf("due set holds %d, want the near timer only", n)
		}
		// Four timers fit the widest bucket.
		if n, _ := b.Client.ZCard(ctx, k.Later).Result(); n != 1 {
			t.Fatalf("later holds %d buckets, want 1", n)
		}

		waiting, _, _, next, err := q.Stats(ctx, "orders", 1)
		if err != nil || waiting != 5 || !next.Equal(at(1_500)) {
			t.Errorf("Stats = %d waiting, next %v, %v; want 5, at(1.5s)", waiting, next, err)
		}
		for ms, want := range map[int64]int64{1_000: 0, 2_000: 1, 60_600: 3, 100_000: 5} {
			if n, err := q.DueWaiting(ctx, "orders", 1, at(ms)); err != nil || n != want {
				t.Errorf("DueWaiting at %d ms = %d, %v; want %d", ms, n, err, want)
			}
		}

		// With the near one gone the head is the earliest later timer,
		// exactly, not its bucket's start.
		if _, err := q.Remove(ctx, []timer.Timer{near}); err != nil {
			t.Fatal(err)
		}
		if h, err := q.Peek(ctx, slot); err != nil || !h.Equal(at(60_000)) {
			t.Errorf("Peek = %v, %v; want at(60s)", h, err)
		}
		// Remove finds a timer in the bucket of its due time.
		if n, err := q.Remove(ctx, []timer.Timer{later[1], later[2]}); err != nil || n != 2 {
			t.Errorf("Remove of later timers = %d, %v; want 2", n, err)
		}
		waiting, _, _, _, err = q.Stats(ctx, "orders", 1)
		if err != nil || waiting != 2 {
			t.Errorf("Stats after Remove = %d waiting, %v; want 2", waiting, err)
		}
		// A claim at 61 s moves the bucket, and leases high before normal.
		c, err := q.Claim(ctx, slot, at(61_000), 10, time.Minute)
		if err != nil || len(c.Leases) != 2 || c.Leases[0].ID != 5 || c.Leases[1].ID != 2 {
			t.Fatalf("Claim = %+v, %v; want 5 then 2", c.Leases, err)
		}
		if !c.NextDue.IsZero() {
			t.Errorf("next due after the claim = %v, want none", c.NextDue)
		}
	})
}
