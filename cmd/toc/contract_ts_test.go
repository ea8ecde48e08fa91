package main

// http/contract/example.ts, a TypeScript client written against the types
// generated from openapi.json, run against toc dev as its users would run it.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// contractDir is http/contract, from cmd/toc where tests run.
const contractDir = "../../http/contract"

// TestContractTypeScript runs example.ts with tsx: it schedules a job whose
// biz_id is 2^64-1 as a string, reads it back and finds it by biz_id,
// checking the biz_id digit for digit, and cancels it, checking the
// answers and the status.
func TestContractTypeScript(t *testing.T) {
	dir := needContractTools(t)
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "--no-install", "tsx", "example.ts")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOC_URL="+p.url, "TOC_TOKEN=", "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npx tsx example.ts: %v\n%s", err, out)
	}
	for _, want := range []string{
		"biz_id 18446744073709551615 round-trips exactly",
		"found by biz_id: 1 pending job(s)",
		"cancelled: status cancelled",
		"cancel again: 409 conflict",
		"read after cancel: status cancelled",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("example.ts did not print %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(string(out), "ok\n") {
		t.Errorf("example.ts did not end with ok:\n%s", out)
	}
	// What it did, seen from Go: the job it scheduled is cancelled and
	// kept its biz_id.
	m := regexp.MustCompile(`scheduled job ([0-9]+) `).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("example.ts did not print the job it scheduled:\n%s", out)
	}
	status, job := p.call(t, "GET", "/v1/jobs/"+m[1], nil)
	if status != http.StatusOK || job["status"] != "cancelled" || job["biz_id"] != "18446744073709551615" {
		t.Errorf("job %s after example.ts: %d %v", m[1], status, job)
	}
}

// needContractTools returns the absolute path of http/contract once npx
// and the packages npm ci installs there (tsx) are at hand; without them
// it skips the test, or fails it when TOC_REQUIRE_INTEGRATION=1.
func needContractTools(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(contractDir)
	if err != nil {
		t.Fatal(err)
	}
	missing := func(msg string) {
		t.Helper()
		if testenv.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg + " (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		missing(fmt.Sprintf("npx is not on PATH (apt-get install nodejs npm, then npm ci in %s): %v", dir, err))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "tsx", "package.json")); err != nil {
		missing(fmt.Sprintf("the contract's packages are not installed (npm ci in %s): %v", dir, err))
	}
	return dir
}
