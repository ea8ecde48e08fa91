package lua

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua/luatest"
)

// Benchmarks run against the real redis-server of internal/testenv (they
// are skipped without one): miniredis says nothing about Redis's speed.
//
//	go test -run '^$' -bench . ./lua

// fill puts n members, "0"+suffix.."<n-1>"+suffix, into key with the
// given score, by pipelined ZADDs.
func fill(b *testing.B, be *luatest.Backend, key, suffix string, n int, score float64) {
	b.Helper()
	ctx := b.Context()
	const chunk = 1000
	pipe := be.Client.Pipeline()
	for i := 0; i < n; i += chunk {
		zs := make([]redis.Z, 0, chunk)
		for j := i; j < min(i+chunk, n); j++ {
			zs = append(zs, redis.Z{Score: score, Member: strconv.Itoa(j) + suffix})
		}
		pipe.ZAdd(ctx, key, zs...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatalf("fill %s: %v", key, err)
	}
}

func del(b *testing.B, be *luatest.Backend, keys ...string) {
	b.Helper()
	if err := be.Client.Del(b.Context(), keys...).Err(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkClaim(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			benchClaim(b, n, PriorityNormal)
		})
	}
	// Due members in all three due sets: the script reads up to n of
	// each and merges them.
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("%d_three_priorities", n), func(b *testing.B) {
			benchClaim(b, n, PriorityHigh, PriorityNormal, PriorityLow)
		})
	}
}

// benchClaim claims n at a time from a stock of members due at t0, spread
// evenly over the due sets of priorities.
func benchClaim(b *testing.B, n int, priorities ...int) {
	be := luatest.Redis(b)
	k := keysOf(be, 0)
	const stock = 20_000
	per := stock / len(priorities)
	left := 0
	var tally luatest.ScriptTally
	for b.Loop() {
		if left < n {
			b.StopTimer()
			tally.Stop(b, be)
			del(b, be, k.DueHigh, k.Due, k.DueLow, k.Prepare)
			for _, p := range priorities {
				fill(b, be, dueKey(k, p), Member(0, p)[1:], per, float64(t0*128))
			}
			tally.Start(b, be)
			left = per * len(priorities)
			b.StartTimer()
		}
		r, err := Claim(b.Context(), be.Client, k, t0, n, 30_000, testAging)
		if err != nil || len(r.Leased) != n {
			b.Fatalf("Claim = %d leased, %v", len(r.Leased), err)
		}
		left -= n
	}
	tally.Stop(b, be)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "timers/s")
	b.ReportMetric(tally.Usec/tally.Calls/float64(n), "redis-µs/timer")
}

func BenchmarkAdd(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("%d_per_slot", n), func(b *testing.B) {
			be := luatest.Redis(b)
			k := keysOf(be, 0)
			entries := make([]Entry, n)
			i := 0
			for b.Loop() {
				for j := range entries {
					// Cycle over 100k ids so the set stays of a realistic size.
					entries[j] = Entry{Member: strconv.Itoa(i % 100_000), Ms: t0 + int64(i%5000), Attempt: 0}
					i++
				}
				if _, err := Add(b.Context(), be.Client, AddCall{Keys: k, Mode: ModeSet, Entries: entries}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "timers/s")
		})
	}
	// 1,000 timers a call, a second of due time a call as a backstop's
	// page restores them, in the due set and in later buckets.
	for _, later := range []bool{false, true} {
		for _, mode := range []AddMode{ModeSet, ModeRestore} {
			b.Run(fmt.Sprintf("1000_%s_later_%v", mode, later), func(b *testing.B) {
				be := luatest.Redis(b)
				k := keysOf(be, 0)
				entries := make([]Entry, 1000)
				i := 0
				for b.Loop() {
					for j := range entries {
						entries[j] = Entry{Member: Member(uint64(i%1_000_000+1), PriorityNormal), Ms: t0 + int64(i%1_000_000)}
						i++
					}
					ac := AddCall{Keys: k, Mode: mode, Entries: entries}
					if later {
						ac.LaterFromMs, ac.BucketWidthsMs = 1, []int64{1000, 32000, 1024000}
					}
					if _, err := Add(b.Context(), be.Client, ac); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(entries))*float64(b.N)/b.Elapsed().Seconds(), "timers/s")
			})
		}
	}
	b.Run("100_over_16_slots_pipelined", func(b *testing.B) {
		be := luatest.Redis(b)
		calls := make([]AddCall, 16)
		i := 0
		for b.Loop() {
			for s := range calls {
				es := make([]Entry, 100/16+1)
				for j := range es {
					es[j] = Entry{Member: strconv.Itoa(i % 100_000), Ms: t0 + int64(i%5000)}
					i++
				}
				calls[s] = AddCall{Keys: keysOf(be, s), Mode: ModeSet, Entries: es}
			}
			if _, err := Add(b.Context(), be.Client, calls...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// leases fills Prepare with stock leases that expired at t0 (token
// t0*128, attempt 0), named "0".."stock-1".
func leases(b *testing.B, be *luatest.Backend, stock int) {
	b.Helper()
	k := keysOf(be, 0)
	del(b, be, k.DueHigh, k.Due, k.DueLow, k.Prepare, k.Dead)
	fill(b, be, k.Prepare, "", stock, float64(t0*128))
}

// BenchmarkAck acks n leases a call, as the worker's completer does for
// the successes of a slot (a drain's calls carry tens to hundreds). It
// reports redis-server's own time a lease (INFO commandstats), the
// figure that matters on a shared machine.
func BenchmarkAck(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			be := luatest.Redis(b)
			k := keysOf(be, 0)
			const stock = 20_000
			next := stock
			hs := make([]Held, n)
			var tally luatest.ScriptTally
			for b.Loop() {
				if next+n > stock {
					b.StopTimer()
					tally.Stop(b, be)
					leases(b, be, stock)
					tally.Start(b, be)
					next = 0
					b.StartTimer()
				}
				for j := range hs {
					hs[j] = Held{Member: strconv.Itoa(next), Token: float64(t0 * 128)}
					next++
				}
				if got, err := Ack(b.Context(), be.Client, AckCall{Keys: k, Leases: hs}); err != nil || got != n {
					b.Fatalf("Ack = %d, %v", got, err)
				}
			}
			tally.Stop(b, be)
			b.ReportMetric(tally.Usec/tally.Calls/float64(n), "redis-µs/lease")
		})
	}
}

func BenchmarkRetry(b *testing.B) {
	be := luatest.Redis(b)
	k := keysOf(be, 0)
	const stock = 20_000
	next := stock
	for b.Loop() {
		if next >= stock {
			b.StopTimer()
			leases(b, be, stock)
			next = 0
			b.StartTimer()
		}
		h := Held{Member: strconv.Itoa(next), Token: float64(t0 * 128)}
		next++
		if o, err := Retry(b.Context(), be.Client, k, h, t0+1000, 16, t0); err != nil || o != Retried {
			b.Fatalf("Retry = %v, %v", o, err)
		}
	}
}

func BenchmarkSweep(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			be := luatest.Redis(b)
			k := keysOf(be, 0)
			const stock = 20_000
			left := 0
			for b.Loop() {
				if left < n {
					b.StopTimer()
					leases(b, be, stock)
					left = stock
					b.StartTimer()
				}
				s, err := Sweep(b.Context(), be.Client, k, t0, n, 64)
				if err != nil || s.Returned != n {
					b.Fatalf("Sweep = %+v, %v", s, err)
				}
				left -= n
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "leases/s")
		})
	}
}

func BenchmarkRevive(b *testing.B) {
	be := luatest.Redis(b)
	k := keysOf(be, 0)
	const stock = 20_000
	next := stock
	for b.Loop() {
		if next >= stock {
			b.StopTimer()
			del(b, be, k.DueHigh, k.Due, k.DueLow, k.Dead)
			fill(b, be, k.Dead, "", stock, float64(t0*128+16))
			next = 0
			b.StartTimer()
		}
		r, err := Revive(b.Context(), be.Client, ReviveCall{Keys: k, Member: strconv.Itoa(next), Ms: t0})
		if err != nil || !r.Revived {
			b.Fatalf("Revive = %+v, %v", r, err)
		}
		next++
	}
}

// BenchmarkAddNew is a schedule's add: mode new, as IndexNew sends for
// jobs just committed, of n timers into a slot that already holds 10,000
// due ones earlier and later buckets (the service's default widths), with
// a wake channel. A single schedule sends one timer a call; a coalesced
// batch of 32 over 16 slots, two. It reports redis-server's own time a
// call (INFO commandstats), the figure that matters on a shared machine.
func BenchmarkAddNew(b *testing.B) {
	for _, n := range []int{1, 2, 8} {
		b.Run(fmt.Sprintf("%d_per_call", n), func(b *testing.B) {
			be := luatest.Redis(b)
			k := keysOf(be, 0)
			fill(b, be, k.Due, "", 10_000, float64(t0*128))
			ctx := b.Context()
			var tally luatest.ScriptTally
			tally.Start(b, be)
			entries := make([]Entry, n)
			i := 0
			for b.Loop() {
				for j := range entries {
					i++
					// Due after the filled ones, some within the finest later
					// bucket's reach and some beyond, as new jobs are.
					entries[j] = Entry{Member: Member(uint64(1_000_000+i), PriorityNormal), Ms: t0 + 1000 + int64(i%10_000)}
				}
				ac := AddCall{Keys: k, Mode: ModeNew, WakeChannel: "wake", WakeMessage: "t 0", Entries: entries,
					LaterFromMs: t0 + 5000, BucketWidthsMs: []int64{1000, 32000, 1024000}}
				if _, err := Add(ctx, be.Client, ac); err != nil {
					b.Fatal(err)
				}
			}
			tally.Stop(b, be)
			b.ReportMetric(tally.Usec/tally.Calls, "redis-µs/call")
		})
	}
}
