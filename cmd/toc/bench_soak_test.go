package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 33: a 2-minute soak at 1,000 jobs/s with a 20 s retention loses
// no job, fires none early or twice, and its store stays bounded: toc
// deletes ended rows meanwhile, and the rows left at the end are well
// below the jobs scheduled.
func TestBenchSoakShort(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && !testenv.Required() {
		t.Skip("toc bench needs redis-server and mariadbd (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	// Parallel: two minutes of a steady 1,000 jobs/s leave the machine
	// half idle, and the other bench runs that check no figure (aged
	// migrating and upgrading, TestBenchRuns) take the rest.
	t.Parallel()
	// Built without -race: the soak measures toc at a steady rate, beside
	// the other packages' tests, on two cores.
	bin := tocFastBin(t)
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(bin, "bench", "--scenarios", "soak", "--duration", "2m", "--soak-retention", "20s",
		"--soak-window", "20s", "--json", out)
	report, data, output := runBenchCmd(t, cmd, out)
	var sum *result
	windows := 0
	for i, r := range report.Results {
		if r.Scenario != "soak" {
			t.Errorf("%s: scenario %q, want soak", r.Name, r.Scenario)
		}
		if _, ok := r.Extra["scheduled"]; ok {
			sum = &report.Results[i]
		} else {
			windows++
		}
	}
	if sum == nil || windows != 6 {
		t.Fatalf("%d windows and summary %v, want 6 windows and a summary\n%s\n%s", windows, sum, data, output)
	}
	if sum.Lost == nil || *sum.Lost != 0 || *sum.Dups != 0 || *sum.Early != 0 || sum.Extra["cancelled_arrived"] != 0.0 {
		t.Errorf("lost %v, twice %v, early %v, fired though cancelled %v: want 0 each", *sum.Lost, *sum.Dups, *sum.Early, sum.Extra["cancelled_arrived"])
	}
	scheduled, _ := sum.Extra["scheduled"].(float64)
	rowsEnd, _ := sum.Extra["rows_end"].(float64)
	attemptsEnd, _ := sum.Extra["attempt_rows_end"].(float64)
	deleted, _ := sum.Extra["deleted_total"].(float64)
	// 2 minutes at 1,000/s; with 20 s of retention and the retirer's
	// pace, about 30 to 40 s of jobs are left, and the attempts of those
	// that fired: a job's attempts go with it.
	jobsEnd := rowsEnd - attemptsEnd
	t.Logf("%.0f jobs scheduled; at the end %.0f jobs and %.0f attempt rows held, %.0f jobs deleted", scheduled, jobsEnd, attemptsEnd, deleted)
	if scheduled < 60000 || rowsEnd < 0 || attemptsEnd <= 0 || jobsEnd > scheduled/2 || attemptsEnd > scheduled/2 {
		t.Errorf("%.0f jobs and %.0f attempts at the end of %.0f jobs scheduled: want some attempts, and at most half as many of each\n%s",
			jobsEnd, attemptsEnd, scheduled, output)
	}
	if deleted <= 0 {
		t.Errorf("toc_retention_deleted_total grew by %.0f during the soak, want > 0\n%s", deleted, output)
	}
	for _, st := range []string{"done", "cancelled", "dead"} {
		if n, _ := sum.Extra["deleted_"+st].(float64); n <= 0 {
			t.Errorf("no %s row deleted (%v)", st, sum.Extra["deleted_"+st])
		}
	}
}
