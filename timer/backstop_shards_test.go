package timer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// twoShards is a Sharded store of two in-memory stores: the Store
// methods go to shard 0 (enough for the backstop, which scans each shard
// through Scanner).
type twoShards struct {
	*timertest.Store
	shards [2]*timertest.Store
}

func (s *twoShards) Shards() int                    { return 2 }
func (s *twoShards) KeyShards(string, string) []int { return []int{0, 1} }
func (s *twoShards) Scanner(i int) timer.Scanner    { return s.shards[i] }

// owner owns the shards set in it.
type owner map[int]bool

func (o owner) OwnsShard(i int) bool { return o[i] }

// The backstop scans each shard on its own: only the shards it owns, a
// shard it comes to own in full, and a shard that fails does not keep
// the other's jobs from Redis.
func TestBackstopScansOwnedShards(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	a, b := timertest.NewStore(), timertest.NewStore()
	store := &twoShards{Store: a, shards: [2]*timertest.Store{a, b}}
	for _, s := range store.shards { // each fake reads slot counts from its own topics
		if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "t", Slots: 16}); err != nil {
			t.Fatal(err)
		}
	}
	g := timer.NewIDGen(1, nil)
	insert := func(s *timertest.Store, shard int) timer.JobID {
		j := &timer.Job{ID: g.NextIn(shard), Topic: "t", Status: timer.StatusPending, DueAt: now.Add(time.Minute), MaxAttempts: 3, CallbackURL: "x"}
		if err := s.Insert(ctx, []*timer.Job{j}); err != nil {
			t.Fatal(err)
		}
		return j.ID
	}
	in0, in1 := insert(a, 0), insert(b, 1)
	own := owner{1: true}
	index := timertest.NewIndex()
	bs := timer.NewBackstop(store, index, nil, timer.BackstopConfig{Owner: own})
	restored := func() map[timer.JobID]bool {
		out := map[timer.JobID]bool{}
		for i := range 16 {
			for _, e := range index.Due(timer.Slot{Topic: "t", Index: i}) {
				out[e.ID] = true
			}
		}
		return out
	}
	if n, err := bs.RunOnce(ctx, true); err != nil || n != 1 {
		t.Fatalf("RunOnce owning shard 1 = %d, %v; want 1", n, err)
	}
	if r := restored(); !r[in1] || r[in0] {
		t.Fatalf("restored %v owning shard 1 only", r)
	}
	// Shard 0 comes to this backstop: its first scan is a full one, even
	// when asked for an incremental one.
	own[0] = true
	if n, err := bs.RunOnce(ctx, false); err != nil || n != 1 {
		t.Fatalf("RunOnce after taking shard 0 = %d, %v; want 1", n, err)
	}
	// Shard 1 fails: shard 0's new job is restored, and the error names
	// shard 1.
	index = timertest.NewIndex()
	bs = timer.NewBackstop(store, index, nil, timer.BackstopConfig{})
	boom := errors.New("shard down")
	b.FailNext("ScanPending", boom, 1)
	n, err := bs.RunOnce(ctx, true)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "shard 1") || n != 1 {
		t.Fatalf("RunOnce with shard 1 down = %d, %v; want 1 and shard 1's error", n, err)
	}
	if r := restored(); !r[in0] || r[in1] {
		t.Fatalf("restored %v with shard 1 down", r)
	}
	// Its full scan is owed: the next incremental run scans it in full.
	if n, err := bs.RunOnce(ctx, false); err != nil || n != 1 || !restored()[in1] {
		t.Fatalf("RunOnce after shard 1 is back = %d, %v; restored %v", n, err, restored())
	}
}
