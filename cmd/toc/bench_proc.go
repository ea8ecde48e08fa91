package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the bench reads of toc's process (from /proc, when toc is its
// child) and of its Redis (INFO, when the bench can reach it).

func mb(n int64) float64 { return float64(n*10/(1<<20)) / 10 }

// vmRSS reads a process's resident set size in MB from /proc.
func vmRSS(pid int) any { return procStatusMB(pid, "VmRSS") }

// procStatusMB reads a kB field of /proc/PID/status (VmRSS, VmHWM) in MB,
// or "n/a".
func procStatusMB(pid int, field string) any {
	if pid == 0 {
		return "n/a"
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "n/a"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return float64(kb*10/1024) / 10
		}
	}
	return "n/a"
}

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100
// on every Linux architecture Go supports.
const userHZ = 100

// cpuTime returns the CPU time, user plus system, that process pid and all
// its threads have used, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3, state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// redisInfo returns a numeric field of a section of Redis's INFO: of the
// server, or summed over a cluster's masters (their replicas hold the
// same data again, and do none of the commands).
func (b *bench) redisInfo(ctx context.Context, section, field string) (float64, error) {
	c, ok := b.rdb.(*redis.ClusterClient)
	if !ok {
		return infoField(ctx, b.rdb, section, field)
	}
	var (
		mu  sync.Mutex
		sum float64
	)
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		v, err := infoField(ctx, node, section, field)
		mu.Lock()
		sum += v
		mu.Unlock()
		return err
	})
	return sum, err
}

// flushAll empties the server, or every master of a cluster.
func (b *bench) flushAll(ctx context.Context) error {
	if c, ok := b.rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return node.FlushAll(ctx).Err() })
	}
	return b.rdb.FlushAll(ctx).Err()
}

// infoField returns a numeric field of a section of one server's INFO.
func infoField(ctx context.Context, rdb redis.Cmdable, section, field string) (float64, error) {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO %s", field, section)
}

// usedMemory returns Redis's used_memory.
func (b *bench) usedMemory(ctx context.Context) (int64, error) {
	v, err := b.redisInfo(ctx, "memory", "used_memory")
	return int64(v), err
}

// replicationMemory is the memory Redis (every master of a cluster) holds
// for its replicas: the replication backlog and the replicas' output
// buffers, part of used_memory; 0 without replicas.
func (b *bench) replicationMemory(ctx context.Context) (int64, error) {
	backlog, err := b.redisInfo(ctx, "memory", "mem_replication_backlog")
	if err != nil {
		return 0, err
	}
	replicas, err := b.redisInfo(ctx, "memory", "mem_clients_slaves")
	return int64(backlog + replicas), err
}

// useMark is a reading of the stack's CPU and of Redis's commands, to
// measure their use over a window with useSince.
type useMark struct {
	at       time.Time
	cpu      cpuMark
	redisCmd float64 // commands processed; -1: unknown
}

func (b *bench) mark(ctx context.Context) useMark {
	m := useMark{at: time.Now(), cpu: b.cpuMark(ctx), redisCmd: -1}
	if b.rdb != nil {
		if n, err := b.redisInfo(ctx, "stats", "total_commands_processed"); err == nil {
			m.redisCmd = n
		}
	}
	return m
}

// useSince reports toc's CPU (% of one core), RSS and peak RSS, the task
// store's CPU, and Redis's CPU and commands a second, since m; "n/a" where
// unknown.
func (b *bench) useSince(ctx context.Context, m useMark) map[string]any {
	now := b.mark(ctx)
	wall := now.at.Sub(m.at).Seconds()
	pct := func(cpu time.Duration) float64 { return math.Round(1000*cpu.Seconds()/wall) / 10 }
	out := map[string]any{"toc_cpu_pct": "n/a", "mariadbd_cpu_pct": "n/a", "redis_cpu_pct": "n/a", "redis_cmds_per_s": "n/a",
		"toc_rss_mb": procStatusMB(b.tocPID, "VmRSS"), "toc_hwm_mb": procStatusMB(b.tocPID, "VmHWM")}
	if m.cpu.toc >= 0 && now.cpu.toc >= 0 {
		out["toc_cpu_pct"] = pct(now.cpu.toc - m.cpu.toc)
	}
	if m.cpu.store >= 0 && now.cpu.store >= 0 {
		out["mariadbd_cpu_pct"] = pct(now.cpu.store - m.cpu.store)
	}
	if m.cpu.redis >= 0 && now.cpu.redis >= 0 {
		out["redis_cpu_pct"] = pct(now.cpu.redis - m.cpu.redis)
	}
	if m.redisCmd >= 0 && now.redisCmd >= 0 {
		out["redis_cmds_per_s"] = math.Round((now.redisCmd - m.redisCmd) / wall)
	}
	return out
}

// cpuMark is a reading of the CPU time each part of the stack has used,
// and of the machine's, to share a scenario's CPU out per job with
// cpuPerJob. The bench's own process counts: its load generator and its
// receiver share the machine with the toc they measure.
type cpuMark struct {
	toc, store, redis, bench, broker time.Duration // -1: unknown
	machine                          machineCPU
}

func (b *bench) cpuMark(ctx context.Context) cpuMark {
	m := cpuMark{toc: -1, store: -1, bench: -1, redis: -1, broker: -1, machine: readMachineCPU()}
	if b.brokerPID != 0 {
		if cpu, err := cpuTime(b.brokerPID); err == nil {
			m.broker = cpu
		}
	}
	if b.tocPID != 0 {
		if cpu, err := cpuTime(b.tocPID); err == nil {
			m.toc = cpu
		}
	}
	if len(b.storePIDs) > 0 {
		m.store = 0
		for _, pid := range b.storePIDs {
			cpu, err := cpuTime(pid)
			if err != nil {
				m.store = -1
				break
			}
			m.store += cpu
		}
	}
	if cpu, err := cpuTime(os.Getpid()); err == nil {
		m.bench = cpu
	}
	if b.rdb != nil {
		user, err1 := b.redisInfo(ctx, "cpu", "used_cpu_user")
		sys, err2 := b.redisInfo(ctx, "cpu", "used_cpu_sys")
		if err1 == nil && err2 == nil {
			m.redis = time.Duration((user + sys) * float64(time.Second))
		}
	}
	return m
}

// cpuPerJob reports what the jobs handled since m cost each part of the
// stack in CPU, in µs a job: toc, the mariadbds the bench started, Redis
// (every master of a cluster), the bench itself, and the whole machine;
// and how busy the machine's cores were. A part it cannot read is left
// out. The figures say where a scenario's time goes and what is left of
// the machine (BENCHMARKS.md, "Where a job's CPU goes").
func (b *bench) cpuPerJob(ctx context.Context, m cpuMark, jobs int) map[string]any {
	now := b.cpuMark(ctx)
	return perJobCPU(jobs, m.machine, now.machine, map[string][2]time.Duration{
		"toc": {m.toc, now.toc}, "mariadbd": {m.store, now.store}, "redis": {m.redis, now.redis}, "bench": {m.bench, now.bench}, "broker": {m.broker, now.broker},
	})
}

// perJobCPU is the CPU jobs cost each part, named "cpu_us_per_job_"+part,
// from the part's CPU before and after them (a negative one: unknown,
// left out), and the whole machine's, with how busy its cores were.
func perJobCPU(jobs int, m0, m machineCPU, parts map[string][2]time.Duration) map[string]any {
	out := map[string]any{}
	if jobs <= 0 {
		return out
	}
	per := func(d time.Duration) float64 {
		return math.Round(10*float64(d.Microseconds())/float64(jobs)) / 10
	}
	for name, v := range parts {
		if v[0] >= 0 && v[1] >= 0 {
			out["cpu_us_per_job_"+name] = per(v[1] - v[0])
		}
	}
	if busy, _, ok := m.since(m0); ok {
		out["machine_busy_pct"] = busy
		// The machine's counters are in USER_HZ ticks of all its cores.
		out["cpu_us_per_job_machine"] = per(time.Duration((m.busy - m0.busy) * float64(time.Second) / userHZ))
	}
	return out
}
