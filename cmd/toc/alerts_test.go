package main

import (
	"os/exec"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 37: the alerting rules shipped in deploy/prometheus are valid,
// and each fires on the synthetic series that should make it and on no
// other (promtool, of the Debian package prometheus).
func TestAlertingRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if testenv.Required() {
			t.Fatal("promtool not found: apt-get install prometheus")
		}
		t.Skip("promtool not found (apt-get install prometheus; TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	for _, args := range [][]string{{"check", "rules", "toc-alerts.yml"}, {"test", "rules", "toc-alerts.test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
