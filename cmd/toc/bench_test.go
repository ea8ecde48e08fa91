package main

import (
	"io"
	"os"
	"strings"
	"testing"
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
