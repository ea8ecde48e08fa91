package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		headroom, base uint64
		want           int
	}{
		{64 * mib, 8 * mib, 800},
		{64 * mib, 7 * mib, 915}, // rounded up: the goal is never under the headroom
		{64 * mib, 64 * mib, 100},
		{64 * mib, 200 * mib, MinPercent}, // the default already allows more
		{64 * mib, 0, 1600},               // no cycle yet: counted as minBase
		{64 * mib, 1 * mib, 1600},
		{1 << 40, 4 * mib, 26_214_400},
	} {
		if got := PercentFor(c.headroom, c.base); got != c.want {
			t.Errorf("PercentFor(%d MiB, %d MiB) = %d, want %d", c.headroom/mib, c.base/mib, got, c.want)
		}
	}
}

// gcPercent is the collector's percent as the runtime reports it.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// cycles runs the collector n times and waits until f has set the percent
// after the last of them (the cleanup runs on a goroutine of its own).
func cycles(t *testing.T, f *Floor, n int, want func(int) bool) {
	t.Helper()
	for range n {
		runtime.GC()
	}
	for deadline := time.Now().Add(10 * time.Second); !want(f.Percent()); {
		if time.Now().After(deadline) {
			t.Fatalf("the percent stayed %d after %d cycles", f.Percent(), n)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

// TestFloor runs the real collector: a small heap gets a percent that
// leaves the headroom, a large one the default, and Stop sets back what
// was there before.
func TestFloor(t *testing.T) {
	old := debug.SetGCPercent(150)
	defer debug.SetGCPercent(old)

	const headroom = 64 << 20
	f := Start(headroom)
	defer f.Stop()
	small := func(p int) bool { return p > 400 } // a live heap under 16 MB
	cycles(t, f, 2, small)
	if got := gcPercent(); got != f.Percent() {
		t.Fatalf("the runtime's percent is %d, Floor's %d", got, f.Percent())
	}

	// A live heap larger than the headroom: the default's share is more.
	big := make([][]byte, 16) // 128 MiB
	for i := range big {
		big[i] = make([]byte, 8<<20)
	}
	cycles(t, f, 2, func(p int) bool { return p == MinPercent })
	runtime.KeepAlive(big)

	// Freed again, the heap is small once more.
	cycles(t, f, 2, small)

	// Set behind its back (another Floor's Stop in the same process), the
	// percent is set again after the next cycle.
	debug.SetGCPercent(MinPercent)
	runtime.GC()
	for deadline := time.Now().Add(10 * time.Second); !small(gcPercent()); {
		if time.Now().After(deadline) {
			t.Fatalf("the percent set behind the Floor's back stayed %d", gcPercent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}

	f.Stop()
	if got := gcPercent(); got != 150 {
		t.Errorf("after Stop the percent is %d, want 150 as before Start", got)
	}
	// Stopped, the cycles that follow leave the percent alone.
	debug.SetGCPercent(120)
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := gcPercent(); got != 120 {
		t.Errorf("a cycle after Stop set the percent to %d, want 120 left alone", got)
	}
}
