package main

// http/contract/worker.ts, a TypeScript worker of a pull topic written
// against the types generated from openapi.json, run against a fake toc.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestWorkTypeScript runs worker.ts as its users would, with TOC_MAX_JOBS
// so that it ends: it leases the fake's jobs two at a time, prints each
// and acks it, and leases no more than asked. Its first lease call waits
// longer than a lease lasts, and the lease still holds: it starts when
// the job is handed, not when the call was sent.
func TestWorkTypeScript(t *testing.T) {
	dir := needContractTools(t)
	p, url := newPullTopic(t, 4)
	p.mu.Lock()
	p.hold, p.short = 1200*time.Millisecond, time.Second
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npx", "--no-install", "tsx", "worker.ts")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOC_URL="+url, "TOC_TOKEN=", "TOC_TOPIC=orders", "TOC_CONCURRENCY=2", "TOC_MAX_JOBS=3", "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npx tsx worker.ts: %v\n%s", err, out)
	}
	for id := 1; id <= 3; id++ {
		if want := fmt.Sprintf(`job %d attempt 2: {"id":"%d","topic":"orders"`, id, id); !strings.Contains(string(out), want) {
			t.Errorf("worker.ts did not print %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "lease expired") {
		t.Errorf("worker.ts lost a lease it held:\n%s", out)
	}
	if strings.Contains(string(out), "Warning") { // a setTimeout of Infinity was one
		t.Errorf("node warned:\n%s", out)
	}
	if !strings.HasSuffix(string(out), "worked 3 job(s)\n") {
		t.Errorf("worker.ts did not end with its count:\n%s", out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.acked) != 3 || len(p.nacks) != 0 || p.next != 4 {
		t.Errorf("acked %v, nacked %v, leased up to job %d: want jobs 1 to 3 leased and acked", p.acked, p.nacks, p.next-1)
	}
}
