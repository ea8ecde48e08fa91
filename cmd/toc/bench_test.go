package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// toc bench refuses a count or rate that is not positive, naming the
// flag, before it starts anything.
func TestBenchRefusesBadNumbers(t *testing.T) {
	for _, args := range [][]string{
		{"--flood-jobs", "-5"},
		{"--flood-rate", "0"},
		{"--drain-jobs", "-1"},
		{"--memory-jobs", "-3"},
		{"--recover-jobs", "-2"},
		{"--topics", "-1"},
		{"--topic-slots", "-16"},
		{"--topics-rate", "-1"},
		{"--hostile-topics", "-10"},
		{"--store-shards", "-1"},
		{"--aged-rows", "-1"},
		{"--aged-phase", "old"},
		{"--soak-rate", "-5"},
		{"--soak-retention", "-1s"},
		{"--soak-window", "-1m"},
		{"--coalesce-in-flight", "-1"},
		{"--coalesce-linger", "-1ms"},
	} {
		err := runBench(t.Context(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("toc bench %v: %v, want an error naming %s", args, err, args[0])
		}
	}
}

// cpuTime reads this process's CPU time from /proc, and it grows as the
// process works.
func TestCPUTime(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for after := before; after <= before; {
		for i := range 1 << 20 {
			_ = strings.Repeat("x", i%64)
		}
		if after, err = cpuTime(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if procStatusMB(os.Getpid(), "VmHWM") == "n/a" || procStatusMB(0, "VmRSS") != "n/a" {
		t.Errorf("VmHWM of this process: %v; of pid 0: %v, want n/a", procStatusMB(os.Getpid(), "VmHWM"), procStatusMB(0, "VmRSS"))
	}
}

// cpuPerJob shares the CPU used since a mark out per job, for each part
// of the stack it can read; here every part is this process, which burns
// at least 50 ms over 10 "jobs", and Redis is out of reach.
func TestCPUPerJob(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	b := &bench{tocPID: os.Getpid(), storePIDs: []int{os.Getpid()}}
	m := b.cpuMark(t.Context())
	for {
		for i := range 1 << 20 {
			_ = strings.Repeat("x", i%64)
		}
		if cpu, err := cpuTime(os.Getpid()); err != nil || cpu-m.bench >= 50*time.Millisecond {
			break
		}
	}
	got := b.cpuPerJob(t.Context(), m, 10)
	for _, part := range []string{"toc", "mariadbd", "bench", "machine"} {
		if us, ok := got["cpu_us_per_job_"+part].(float64); !ok || us < 5000 {
			t.Errorf("cpu_us_per_job_%s = %v, want 5,000 µs or more (50 ms over 10 jobs)", part, got["cpu_us_per_job_"+part])
		}
	}
	if _, ok := got["cpu_us_per_job_redis"]; ok {
		t.Errorf("cpu_us_per_job_redis = %v without a Redis to read", got["cpu_us_per_job_redis"])
	}
	if busy, ok := got["machine_busy_pct"].(float64); !ok || busy <= 0 || busy > 100 {
		t.Errorf("machine_busy_pct = %v, want a share in (0, 100]", got["machine_busy_pct"])
	}
	if got := b.cpuPerJob(t.Context(), m, 0); len(got) != 0 {
		t.Errorf("no jobs: %v, want nothing", got)
	}
}

// Issue 14: toc bench --scenarios shards measures schedule single over one
// shard and over two, on two mariadbd it starts, and states the ratio.
func TestBenchShards(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && !testenv.Required() {
		t.Skip("toc bench needs redis-server and mariadbd (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	// The bench's own toc, idle here, runs on the package's mariadbd, so
	// that only the two the scenario needs are started.
	dsn := testenv.MariaDB(t).NewDatabase(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(tocBin, "bench", "--short", "--scenarios", "shards", "--duration", "1s",
		"--mysql-dsn", dsn, "--json", out)
	report, _, output := runBenchCmd(t, cmd, out)
	rate := map[string]float64{}
	for _, r := range report.Results {
		if r.Scenario != "shards" {
			t.Errorf("%s: scenario %q, want shards", r.Name, r.Scenario)
		}
		rate[r.Name] = r.Rate
		if r.Name == "schedule single c=64 shards=2" {
			if ratio, ok := r.Extra["rate_vs_shards1"].(float64); !ok || ratio <= 0 {
				t.Errorf("%s: rate_vs_shards1 %v, want a positive number", r.Name, r.Extra["rate_vs_shards1"])
			}
		}
	}
	for _, name := range []string{"schedule single c=64 shards=1", "schedule single c=64 shards=2"} {
		if rate[name] <= 0 {
			t.Errorf("%s: rate %v, want > 0\n%s", name, rate[name], output)
		}
	}
	if !strings.Contains(string(output), "rate_vs_shards1=") {
		t.Errorf("no ratio line in the report:\n%s", output)
	}
}

// Issue 35: toc bench --scenarios coalesce runs the Go client from 64
// goroutines and from one, coalescing and not, and counts the requests:
// with 64 callers at once the coalescing client sends fewer requests than
// calls, some of them batches; without, one POST /v1/jobs a call.
func TestBenchCoalesce(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(tocBin, "bench", "--short", "--stack", "embedded", "--scenarios", "coalesce", "--duration", "2s", "--json", out)
	report, _, output := runBenchCmd(t, cmd, out)
	runs := map[string]result{}
	for _, r := range report.Results {
		runs[r.Name] = r
		if r.Errors != 0 || r.Count == 0 {
			t.Errorf("%s: %d calls, %d errors; want calls and no error\n%s", r.Name, r.Count, r.Errors, output)
		}
	}
	co, alone := runs["client schedule c=64 coalescing"], runs["client schedule c=64"]
	if len(runs) != 4 || co.Extra == nil || alone.Extra == nil {
		t.Fatalf("runs %v, want 4 named client schedule c=64|c=1[ coalescing]\n%s", runs, output)
	}
	singles, _ := co.Extra["requests_single"].(float64)
	batches, _ := co.Extra["requests_batch"].(float64)
	if batches == 0 || singles+batches >= float64(co.Count) {
		t.Errorf("coalescing: %d calls made %.0f singles and %.0f batches; want fewer requests than calls", co.Count, singles, batches)
	}
	if s, b := alone.Extra["requests_single"].(float64), alone.Extra["requests_batch"].(float64); b != 0 || s != float64(alone.Count) {
		t.Errorf("not coalescing: %d calls made %.0f singles and %.0f batches; want a single each", alone.Count, s, b)
	}
}

// Issue 35: toc bench --scenarios inout posts single jobs at a steady
// rate and reports, beside their lateness, the schedule call's latency
// and what each job cost; every job fires, none early.
func TestBenchInout(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(tocBin, "bench", "--short", "--stack", "embedded", "--scenarios", "inout", "--rates", "300",
		"--pending", "2000", "--duration", "2s", "--json", out)
	report, _, output := runBenchCmd(t, cmd, out)
	if len(report.Results) != 1 {
		t.Fatalf("%d results, want the one --rates asks for\n%s", len(report.Results), output)
	}
	r := report.Results[0]
	if r.Name != "inout 300/s" || r.Count < 500 || r.Errors != 0 || r.Lost == nil || *r.Lost != 0 || *r.Early != 0 || *r.Dups != 0 {
		t.Errorf("%s: %d sent, %d errors, lost %v early %v twice %v; want about 600, none lost, early or twice\n%s", r.Name, r.Count, r.Errors, r.Lost, r.Early, r.Dups, output)
	}
	if p99, _ := r.Extra["schedule_p99_ms"].(float64); p99 <= 0 || r.Latency == nil || r.Extra["pending"] != 2000.0 {
		t.Errorf("schedule p99 %v, lateness %v, pending %v: want both p99s and the pending count\n%s", r.Extra["schedule_p99_ms"], r.Latency, r.Extra["pending"], output)
	}
}

// Issue 35: toc bench --scenarios bullmq runs the peer toc's CPU a job is
// read against, BullMQ, on its own redis-server: 64 callers adding
// delayed jobs, then a Worker draining jobs due at once, each with the
// CPU a job cost BullMQ, Redis and the machine.
func TestBenchBullMQ(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s is not on PATH (apt-get install nodejs npm): %v", tool, err)
			if testenv.Required() {
				t.Fatal(msg)
			}
			t.Skip(msg + " (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
		}
	}
	testenv.Redis(t) // redis-server is at hand, or the test skips (fails in CI)
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(tocBin, "bench", "--short", "--stack", "embedded", "--scenarios", "bullmq", "--duration", "2s", "--drain-jobs", "3000", "--json", out)
	report, _, output := runBenchCmd(t, cmd, out)
	if len(report.Results) != 2 {
		t.Fatalf("%d results, want add and drain\n%s", len(report.Results), output)
	}
	for i, want := range []string{"bullmq add c=64", "bullmq drain 3000 due at once"} {
		r := report.Results[i]
		if r.Name != want || r.Count == 0 || r.Errors != 0 || r.Rate <= 0 || r.Latency == nil {
			t.Errorf("result %d: %s, %d jobs, %d errors, %.0f/s, latency %v; want %s with jobs, a rate and no error\n%s", i, r.Name, r.Count, r.Errors, r.Rate, r.Latency, want, output)
		}
		for _, part := range []string{"bullmq", "redis", "machine"} {
			if v, _ := r.Extra["cpu_us_per_job_"+part].(float64); v <= 0 {
				t.Errorf("%s: CPU a job of %s %v, want more than 0\n%s", r.Name, part, r.Extra["cpu_us_per_job_"+part], output)
			}
		}
	}
	if d := report.Results[1]; d.Count != 3000 || d.Latency.N != 3000 {
		t.Errorf("drain: %d jobs, %d handled; want all 3000\n%s", d.Count, d.Latency.N, output)
	}
}
