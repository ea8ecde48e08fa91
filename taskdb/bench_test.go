package taskdb

import (
	"testing"

	"github.com/toc-project/toc/timer"
)

// The benchmarks run on both backends: SQLite in a temp dir, MariaDB on
// the test's own mariadbd (skipped without one).
var benchBackends = []struct {
	name string
	open func(testing.TB) *Store
}{
	{"sqlite", openSQLite},
	{"mariadb", openMariaDB},
}

// BenchmarkInsert1000 inserts 1,000 jobs of 100-byte payloads per op.
func BenchmarkInsert1000(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			payload := make([]byte, 100)
			next := timer.JobID(1)
			for b.Loop() {
				js := jobs(next, 1000, "bench")
				for _, j := range js {
					j.Payload = payload
				}
				next += 1000
				if err := s.Insert(b.Context(), js); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(next-1)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkGetMany100 reads 100 of 10,000 jobs per op.
func BenchmarkGetMany100(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			mustInsert(b, s, jobs(1, 10_000, "bench")...)
			ids := make([]timer.JobID, 100)
			n := 0
			for b.Loop() {
				for i := range ids {
					ids[i] = timer.JobID(n%10_000 + 1)
					n += 97
				}
				got, err := s.GetMany(b.Context(), ids)
				if err != nil || len(got) == 0 {
					b.Fatalf("GetMany = %d jobs, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkComplete100 completes 100 pending jobs per op.
func BenchmarkComplete100(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			done := make([]timer.Completion, 100)
			next := timer.JobID(1)
			for b.Loop() {
				b.StopTimer()
				mustInsert(b, s, jobs(next, 100, "bench")...)
				for i := range done {
					done[i] = timer.Completion{ID: next + timer.JobID(i), Attempts: 1}
				}
				next += 100
				b.StartTimer()
				n, err := s.Complete(b.Context(), done, base)
				if err != nil || n != len(done) {
					b.Fatalf("Complete = %d, %v", n, err)
				}
			}
		})
	}
}
