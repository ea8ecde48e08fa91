package main

import (
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// --gc-headroom: refused out of range, naming the flag; left alone at 0
// and when GOGC is set; otherwise it raises the collector's percent for
// toc's small heap until the returned stop sets back the old one.
func TestStartGCFloor(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("GOGC", "") // restored when the test ends
	os.Unsetenv("GOGC")
	old := debug.SetGCPercent(130)
	defer debug.SetGCPercent(old)
	percent := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}

	for _, mib := range []int{-1, maxGCHeadroom + 1} {
		if _, err := startGCFloor(mib, log); err == nil || !strings.Contains(err.Error(), "--gc-headroom") {
			t.Errorf("--gc-headroom %d: %v, want an error naming the flag", mib, err)
		}
	}

	stop, err := startGCFloor(0, log)
	if err != nil || percent() != 130 {
		t.Errorf("--gc-headroom 0: %v, percent %d; want no error and 130 left alone", err, percent())
	}
	stop()

	os.Setenv("GOGC", "130")
	stop, err = startGCFloor(defaultGCHeadroom, log)
	if err != nil || percent() != 130 {
		t.Errorf("with GOGC set: %v, percent %d; want no error and 130 left alone", err, percent())
	}
	stop()
	os.Unsetenv("GOGC")

	stop, err = startGCFloor(defaultGCHeadroom, log)
	if err != nil {
		t.Fatal(err)
	}
	if p := percent(); p <= 130 {
		t.Errorf("--gc-headroom %d on this test's small heap: percent %d, want it raised", defaultGCHeadroom, p)
	}
	stop()
	if p := percent(); p != 130 {
		t.Errorf("after stop: percent %d, want 130 back", p)
	}
}
