package main

// The clients that code generators make from http/openapi.json at their
// default settings, driven against toc dev: the Go client of oapi-codegen
// (http/contract/goclient, its own module) and openapi-fetch over the
// types of openapi-typescript (http/contract/fetch-example.ts).

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestContractGeneratedClients runs http/contract/goclient/example with
// go run and fetch-example.ts with tsx against one toc dev. Each
// schedules a job with biz_id 2^64-1, reads it back, finds it with a
// status list (which both send as the parameter repeated, status=a&status=b),
// cancels it, finds it cancelled and not pending, and meets the 409 of a
// second cancel; from Go the test then reads each job back.
func TestContractGeneratedClients(t *testing.T) {
	dir := needContractTools(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	env := append(os.Environ(), "TOC_URL="+p.url, "TOC_TOKEN=", "npm_config_update_notifier=false")
	for _, c := range []struct {
		name string
		dir  string
		args []string
	}{
		{"oapi-codegen", filepath.Join(dir, "goclient"), []string{goBin, "run", "./example"}},
		{"openapi-fetch", dir, []string{"npx", "--no-install", "tsx", "fetch-example.ts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
			cmd.Dir, cmd.Env = c.dir, env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(c.args, " "), err, out)
			}
			for _, want := range []*regexp.Regexp{
				regexp.MustCompile(`read back: status pending, biz_id 18446744073709551615 round-trips exactly`),
				regexp.MustCompile(`find pending or cancelled: GET /v1/jobs\?\S*status=pending&status=cancelled\S*: [1-9][0-9]* job\(s\)`),
				regexp.MustCompile(`cancelled: status cancelled`),
				regexp.MustCompile(`find pending or firing: GET /v1/jobs\?\S*status=pending&status=firing\S*: 0 job\(s\)`),
				regexp.MustCompile(`find cancelled or done: GET /v1/jobs\?\S*status=cancelled&status=done\S*: [1-9][0-9]* job\(s\)`),
				regexp.MustCompile(`cancel again: 409 conflict`),
			} {
				if !want.Match(out) {
					t.Errorf("did not print %q:\n%s", want, out)
				}
			}
			if !strings.HasSuffix(string(out), "ok\n") {
				t.Errorf("did not end with ok:\n%s", out)
			}
			// What it did, seen from Go: the job it scheduled is cancelled
			// and kept its biz_id.
			m := regexp.MustCompile(`scheduled job ([0-9]+) `).FindSubmatch(out)
			if m == nil {
				t.Fatalf("did not print the job it scheduled:\n%s", out)
			}
			status, job := p.call(t, "GET", "/v1/jobs/"+string(m[1]), nil)
			if status != http.StatusOK || job["status"] != "cancelled" || job["biz_id"] != "18446744073709551615" {
				t.Errorf("job %s afterwards: %d %v", m[1], status, job)
			}
		})
	}
}
