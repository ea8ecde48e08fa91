package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/toc-project/toc/internal/testenv"
)

// shards measures durable single-job schedules a second (POST /v1/jobs,
// which answers once the job's row is committed) with toc serve over one
// task store shard, then over two, each shard on a mariadbd of its own,
// and the ratio. It starts the two mariadbd, and a toc serve for each
// count on the bench's Redis under a prefix of its own, each over fresh
// databases; the bench's own toc stays idle meanwhile. The jobs have
// neither business id nor key, so toc spreads them over the shards in
// turn.
func (b *bench) shards(ctx context.Context) ([]result, error) {
	if b.redisAddr == "" {
		fmt.Fprintln(b.log, "shards: skipped (it starts mariadbd and toc serve; use --stack real)")
		return nil, nil
	}
	ms, err := startMariaDBs(2)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, m := range ms {
			m.Stop()
		}
	}()
	one, err := ms[0].CreateDatabase("tocshards1")
	if err != nil {
		return nil, err
	}
	two := make([]string, 2)
	for i, m := range ms {
		if two[i], err = m.CreateDatabase(fmt.Sprintf("tocshards2_%d", i)); err != nil {
			return nil, err
		}
	}
	byOne, err := b.scheduleOnShards(ctx, []string{one})
	if err != nil {
		return nil, err
	}
	byTwo, err := b.scheduleOnShards(ctx, two)
	if err != nil {
		return nil, err
	}
	var res []result
	for i, r1 := range byOne {
		r2 := byTwo[i]
		r2.Extra["rate_vs_shards1"] = "n/a"
		if r1.Rate > 0 {
			r2.Extra["rate_vs_shards1"] = math.Round(100*r2.Rate/r1.Rate) / 100
		}
		res = append(res, r1, r2)
	}
	return res, nil
}

// scheduleOnShards runs toc serve over the shards dsns, in order, and
// measures schedule single against it at each of the scenario's
// concurrencies.
func (b *bench) scheduleOnShards(ctx context.Context, dsns []string) ([]result, error) {
	n := len(dsns)
	args := []string{"serve", "--redis-addr", b.redisAddr, "--redis-prefix", fmt.Sprintf("tocshards%d:", n),
		"--api-token", b.token, "--webhook-secret", benchSecret, "--allow-private-callbacks"}
	for _, dsn := range dsns {
		args = append(args, "--mysql-dsn", dsn)
	}
	t, err := b.runToc(ctx, fmt.Sprintf("toc-shards%d", n), args...)
	if err != nil {
		return nil, fmt.Errorf("toc serve over %d shards: %w", n, err)
	}
	defer t.stop()
	url, pid := b.url, b.tocPID
	b.url, b.tocPID = t.url, t.pid
	defer func() { b.url, b.tocPID = url, pid }()

	var res []result
	for _, c := range b.cfg.shardsConcurrency {
		m, cpu0 := b.mark(ctx), readMachineCPU()
		r := b.scheduleSingle(ctx, c, scheduleDue())
		use, cpu1 := b.useSince(ctx, m), readMachineCPU()
		r.Scenario, r.Name = "shards", fmt.Sprintf("%s shards=%d", r.Name, n)
		r.Extra = map[string]any{"shards": n, "toc_cpu_pct": use["toc_cpu_pct"], "redis_cpu_pct": use["redis_cpu_pct"]}
		if busy, iowait, ok := cpu1.since(cpu0); ok {
			// What limits the rate on a small machine: every process of the
			// bench shares its cores, and both mariadbd its disk.
			r.Extra["machine_busy_pct"], r.Extra["machine_iowait_pct"] = busy, iowait
		}
		res = append(res, r)
	}
	return res, nil
}

// startMariaDBs starts n mariadbd at once, each with its own dir and
// port. On failure it stops those that started.
func startMariaDBs(n int) ([]*testenv.MariaDBServer, error) {
	ms := make([]*testenv.MariaDBServer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range ms {
		wg.Go(func() { ms[i], errs[i] = testenv.StartMariaDB() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, m := range ms {
			if m != nil {
				m.Stop()
			}
		}
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	return ms, nil
}

// machineCPU is the machine's CPU time from /proc/stat, in ticks.
type machineCPU struct {
	busy, iowait, total float64
	ok                  bool
}

// readMachineCPU reads the first line of /proc/stat: user nice system
// idle iowait irq softirq steal; ok is false where there is none.
func readMachineCPU() machineCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}
	}
	var v [8]float64
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i+1], 64); err != nil {
			return machineCPU{}
		}
	}
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return machineCPU{busy: busy, iowait: v[4], total: busy + v[3] + v[4], ok: true}
}

// since returns the share of all cores busy and waiting for the disk
// between m0 and m, in percent.
func (m machineCPU) since(m0 machineCPU) (busy, iowait float64, ok bool) {
	total := m.total - m0.total
	if !m.ok || !m0.ok || total <= 0 {
		return 0, 0, false
	}
	pct := func(x float64) float64 { return math.Round(1000*x/total) / 10 }
	return pct(m.busy - m0.busy), pct(m.iowait - m0.iowait), true
}
