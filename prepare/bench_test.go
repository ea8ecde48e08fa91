package prepare

import (
	"testing"
	"time"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// Benchmarks of the whole Index path (validation, grouping, pipelining,
// decoding) against the real redis-server of internal/testenv; the
// per-script figures are in package lua.
//
//	go test -run '^$' -bench . ./prepare

// BenchmarkAdd adds 1000 timers spread over a 16-slot topic: one script
// call on one server (a Redis Cluster: a pipeline of 16).
func BenchmarkAdd(b *testing.B) {
	_, q := benchIndex(b)
	timers := make([]timer.Timer, 1000)
	id := timer.JobID(1)
	for b.Loop() {
		for i := range timers {
			timers[i] = tm(id%100_000+1, "orders", 16, at(int64(id%5000)))
			id++
		}
		if _, err := q.Add(b.Context(), timers); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(timers))*float64(b.N)/b.Elapsed().Seconds(), "timers/s")
}

// BenchmarkIndexNewCoalesced indexes the timers of one coalesced batch
// as a schedule does (IndexNew): 63 new timers of a 16-slot topic, due
// within the next minutes, one call of add.lua for all the slots they
// fall in (a call a slot before 068dd1d). It reports the calls an op and
// Redis's own time a timer (INFO commandstats):
//
//	go test -run '^$' -bench IndexNewCoalesced ./prepare
func BenchmarkIndexNewCoalesced(b *testing.B) {
	be, q := benchIndex(b)
	var tally luatest.ScriptTally
	tally.Start(b, be)
	timers := make([]timer.Timer, 63)
	id := timer.JobID(1)
	for b.Loop() {
		for i := range timers {
			timers[i] = tm(id, "orders", 16, at(1500+int64(id%300_000)))
			id++
		}
		if _, _, err := q.IndexNew(b.Context(), timers); err != nil {
			b.Fatal(err)
		}
	}
	tally.Stop(b, be)
	b.ReportMetric(tally.Calls/float64(b.N), "calls/op")
	b.ReportMetric(tally.Usec/float64(b.N*len(timers)), "redis-µs/timer")
}

// benchIndex returns the real redis-server's backend with the scripts
// loaded, and an Index on it.
func benchIndex(b *testing.B) (*luatest.Backend, *Index) {
	be := luatest.Redis(b)
	if err := lua.Load(b.Context(), be.Client); err != nil {
		b.Fatal(err)
	}
	q, err := New(be.Client, Config{Prefix: be.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	return be, q
}

// BenchmarkClaimAck claims 100 due timers of one slot and acks them: the
// worker's round trips for one full batch.
func BenchmarkClaimAck(b *testing.B) {
	be := luatest.Redis(b)
	q, err := New(be.Client, Config{Prefix: be.Prefix})
	if err != nil {
		b.Fatal(err)
	}
	s := timer.Slot{Topic: "orders"}
	timers := make([]timer.Timer, lua.MaxBatch)
	for i := range timers {
		timers[i] = tm(timer.JobID(i+1), "orders", 1, t0)
	}
	left := 0
	for b.Loop() {
		if left < 100 {
			b.StopTimer()
			if _, err := q.Add(b.Context(), timers); err != nil {
				b.Fatal(err)
			}
			left = len(timers)
			b.StartTimer()
		}
		c, err := q.Claim(b.Context(), s, t0, 100, 30*time.Second)
		if err != nil || len(c.Leases) != 100 {
			b.Fatalf("Claim = %d, %v", len(c.Leases), err)
		}
		if n, err := q.Ack(b.Context(), c.Leases); err != nil || n != 100 {
			b.Fatalf("Ack = %d, %v", n, err)
		}
		left -= 100
	}
	b.ReportMetric(100*float64(b.N)/b.Elapsed().Seconds(), "timers/s")
}
