package main

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 12: two toc dev on one data file both fired every pending job. The
// second one now exits 1 at once, naming the file and the first one's pid;
// once the first stops, a new one starts on the file.
func TestDevOneProcessPerDataFile(t *testing.T) {
	data := filepath.Join(t.TempDir(), "one.db")
	first := startToc(t, "", "dev", "--data", data)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, tocBin, "dev", "--data", data, "--addr", testenv.FreeAddr(t))
	out, err := second.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("second toc dev: %v, want exit code 1\n%s", err, out)
	}
	pid := "pid " + strconv.Itoa(first.cmd.Process.Pid)
	if !strings.Contains(string(out), data) || !strings.Contains(string(out), pid) {
		t.Errorf("second toc dev said %q, want the data file %s and %s", out, data, pid)
	}
	if code, _ := first.call(t, "GET", "/healthz", nil); code != 200 {
		t.Errorf("the first toc dev answers %d after the second tried", code)
	}

	first.stop(t)
	third := startToc(t, "", "dev", "--data", data)
	third.stop(t)
}
