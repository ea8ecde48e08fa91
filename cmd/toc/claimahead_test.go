package main

import (
	"strings"
	"testing"
	"time"
)

// --claim-ahead takes 0..1s: 0 claims only once due (the worker's
// negative), a value out of range stops toc at start naming the flag.
func TestClaimAheadFlag(t *testing.T) {
	for args, want := range map[string]time.Duration{"": 50 * time.Millisecond, "--claim-ahead 2ms": 2 * time.Millisecond, "--claim-ahead 0": -1, "--claim-ahead 50ms": 50 * time.Millisecond, "--claim-ahead 1s": time.Second} {
		fs := newFlagSet("serve", "")
		f := addServiceFlags(fs, "text")
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if got, err := f.claimAheadOf(); err != nil || got != want {
			t.Errorf("%q: look-ahead %v, %v; want %v", args, got, err, want)
		}
	}
	for _, args := range []string{"--claim-ahead -1ms", "--claim-ahead 1001ms"} {
		out, err := runTocCmd(t, append([]string{"dev", "--addr", "127.0.0.1:0"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(out, "--claim-ahead: ") {
			t.Errorf("toc dev %s = %v\n%s\nwant an error naming --claim-ahead", args, err, out)
		}
	}
}
