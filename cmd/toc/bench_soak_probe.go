package main

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sort"
	"strconv"
)

// soakProbe is what the soak samples at a window's end besides rows and
// RSS, to tell where a creeping lateness comes from: toc's own view of
// it, the bench's heap (its receiver keeps every arrival), InnoDB's purge
// backlog and Redis's memory.
type soakProbe struct {
	tocP99      float64        // ms, from toc_firing_lateness_seconds's buckets over the window; -1 unknown
	benchHeapMB float64        // the bench's live heap
	benchGCs    uint32         // collections the bench ran in the window
	benchGCCPU  float64        // fraction of the bench's CPU spent collecting, since it started
	history     int64          // InnoDB's history list length (undo not yet purged), summed over shards; -1 unknown
	redisMB     float64        // Redis used_memory; -1 unknown
	cpu         map[string]any // CPU µs a fired job by part of the stack over the window (cpuPerJob)
	buckets     map[float64]float64
	numGC       uint32
	mark        cpuMark
}

// latenessBuckets reads toc's firing lateness histogram, summed over
// its topics: count by upper bound.
func (b *bench) latenessBuckets(ctx context.Context) map[float64]float64 {
	out := map[float64]float64{}
	for _, le := range []string{"0.0005", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "300", "+Inf"} {
		n, err := b.metricSum(ctx, "toc_firing_lateness_seconds_bucket", `le="`+le+`"`)
		if err != nil {
			return nil
		}
		v, _ := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			v = 1e9
		}
		out[v] = n
	}
	return out
}

// histP99 is the 99th percentile in ms of the observations between two
// reads of a cumulative histogram, interpolated within its bucket.
func histP99(before, after map[float64]float64) float64 {
	if before == nil || after == nil {
		return -1
	}
	les := make([]float64, 0, len(after))
	for le := range after {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := after[1e9] - before[1e9]
	if total <= 0 {
		return -1
	}
	want, lower, below := 0.99*total, 0.0, 0.0
	for _, le := range les {
		n := after[le] - before[le]
		if n >= want {
			if le == 1e9 {
				return lower * 1000
			}
			return (lower + (le-lower)*(want-below)/max(n-below, 1)) * 1000
		}
		lower, below = le, n
	}
	return -1
}

func (b *bench) probeSoak(ctx context.Context, dbs []*sql.DB, last *soakProbe, fired int) *soakProbe {
	p := &soakProbe{history: -1, redisMB: -1, buckets: b.latenessBuckets(ctx), mark: b.cpuMark(ctx)}
	var prev map[float64]float64
	if last != nil {
		prev = last.buckets
		p.cpu = b.cpuPerJob(ctx, last.mark, fired)
	}
	p.tocP99 = histP99(prev, p.buckets)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.benchHeapMB, p.benchGCCPU, p.numGC = float64(ms.HeapAlloc)/(1<<20), ms.GCCPUFraction, ms.NumGC
	if last != nil {
		p.benchGCs = ms.NumGC - last.numGC
	}
	var sum int64
	for _, db := range dbs {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'`).Scan(&n); err != nil {
			sum = -1
			break
		}
		sum += n
	}
	p.history = sum
	if b.rdb != nil {
		if v, err := b.rdb.Do(ctx, "MEMORY", "STATS").Result(); err == nil {
			if m, ok := v.(map[any]any); ok {
				if f, ok := m["total.allocated"].(int64); ok {
					p.redisMB = float64(f) / (1 << 20)
				}
			} else if l, ok := v.([]any); ok {
				for i := 0; i+1 < len(l); i += 2 {
					if l[i] == "total.allocated" {
						if f, ok := l[i+1].(int64); ok {
							p.redisMB = float64(f) / (1 << 20)
						}
					}
				}
			}
		}
	}
	return p
}

func (p *soakProbe) String() string {
	return fmt.Sprintf("toc's p99 %.2f ms, bench heap %.0f MB (%d GCs, GC CPU %.2f%%), InnoDB history %d, Redis %.1f MB, CPU µs a job %v",
		p.tocP99, p.benchHeapMB, p.benchGCs, 100*p.benchGCCPU, p.history, p.redisMB, p.cpu)
}
