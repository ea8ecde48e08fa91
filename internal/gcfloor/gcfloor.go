// Package gcfloor keeps the Go collector from running more often than a
// small heap needs.
//
// The collector starts a cycle once the heap has grown by GOGC percent
// (100 by default) of what the last cycle found live, plus the goroutine
// stacks and globals. toc serve's live heap is small, about 7 MB under a
// load of thousands of jobs a second, and it allocates for every request
// and fire: at the default it collected 14 times a second, and each cycle
// scans every goroutine's stack whatever the heap's size. The collector's
// own work was 8-9 % of toc's CPU (BENCHMARKS.md, issue 35).
//
// Start sets the collector's percent after each cycle so that the heap
// may grow by at least a given headroom before the next one, and by no
// less than the default's share: with 64 MiB of headroom, a 7 MB heap
// collects about every 64 MB allocated instead of every 10, and a heap
// whose live part is larger than the headroom collects as it would
// without this package. A memory
// limit (GOMEMLIMIT) still holds: the collector runs as the heap nears it,
// whatever the percent.
package gcfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MinPercent is the lowest percent Start sets: the runtime's default.
const MinPercent = 100

// minBase is the least base PercentFor counts a heap as: the runtime's
// own smallest heap goal at the default percent. Before its first cycle
// the runtime reports a live heap of 0, which would allow any growth.
const minBase = 4 << 20

// The runtime's own measures of what the next cycle's goal grows from:
// the heap the last cycle marked live, and the stacks and globals it
// scanned.
var samples = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// Floor holds the collector's percent to a headroom; Start makes one.
type Floor struct {
	headroom uint64
	previous int // the percent before Start, set again by Stop

	mu      sync.Mutex
	stopped bool
	percent int
	sample  []metrics.Sample
}

// Start makes every cycle's heap goal at least headroom bytes above the
// live heap, from the next cycle on, until Stop. It sets the percent at
// once too, from what the last cycle found.
func Start(headroom uint64) *Floor {
	f := &Floor{headroom: headroom, sample: make([]metrics.Sample, len(samples)+1)}
	for i, name := range samples {
		f.sample[i].Name = name
	}
	f.sample[len(samples)].Name = "/gc/gogc:percent"
	f.previous = debug.SetGCPercent(MinPercent)
	f.percent = MinPercent
	f.afterCycle()
	return f
}

// Stop sets the percent back to what it was before Start.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.stopped = true
	debug.SetGCPercent(f.previous)
}

// Percent is the percent f set last.
func (f *Floor) Percent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.percent
}

// afterCycle sets the percent from what the last cycle found and arms a
// cleanup that calls it again after the next cycle: the cleanup of an
// object nothing refers to runs once a cycle has found it unreachable.
func (f *Floor) afterCycle() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	metrics.Read(f.sample)
	var base uint64
	for _, s := range f.sample[:len(samples)] {
		if s.Value.Kind() == metrics.KindUint64 {
			base += s.Value.Uint64()
		}
	}
	// Compared with the runtime's own percent, not the one set last: a
	// test may run two services in one process, and one's Stop sets back
	// what it found.
	p := PercentFor(f.headroom, base)
	if now := f.sample[len(samples)].Value; now.Kind() != metrics.KindUint64 || now.Uint64() != uint64(p) {
		debug.SetGCPercent(p)
	}
	f.percent = p
	runtime.AddCleanup(new(sentinel), func(f *Floor) { f.afterCycle() }, f)
}

// sentinel is the object whose cleanup marks the end of a cycle. It holds
// a pointer so that the allocator never batches it with other small
// objects into one slot, where its cleanup might never run (AddCleanup).
type sentinel struct{ _ *int }

// PercentFor is the percent under which a heap whose last cycle found
// base bytes (live heap, stacks and globals) grows by at least headroom
// bytes before the next cycle, MinPercent when the default already allows
// that much. A base under minBase counts as minBase.
func PercentFor(headroom, base uint64) int {
	p := math.Ceil(float64(headroom) * 100 / float64(max(base, minBase)))
	return int(min(max(p, MinPercent), math.MaxInt32))
}
