package main

import (
	"io"
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
	} {
		err := runBench(t.Context(), args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("toc bench %v: %v, want an error naming %s", args, err, args[0])
		}
	}
}
