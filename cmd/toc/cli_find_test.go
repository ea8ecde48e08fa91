package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// The client's commands over many jobs against a real toc serve: jobs
// list by business id, cancel-all and reschedule-all, dead summary, and
// replay-all and purge-all of a group.
func TestCLIManyJobs(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr)
	run := func(args ...string) string {
		t.Helper()
		r := cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	runJSON := func(args ...string) map[string]any {
		t.Helper()
		var out map[string]any
		if err := json.Unmarshal([]byte(run(append(args, "--json")...)), &out); err != nil {
			t.Fatalf("toc %q --json: %v", args, err)
		}
		return out
	}
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(fail.Close)
	for i := range 6 {
		run("schedule", "--topic", "orders", "--callback", fail.URL+"/h", "--biz-id", fmt.Sprint(i%2+1), "--delay", "1h")
	}

	// A key found in any topic, and a job by its id.
	run("schedule", "--topic", "invoices", "--callback", fail.URL+"/h", "--key", "inv-7", "--delay", "1h")
	out := run("jobs", "find", "inv-7")
	if !strings.HasPrefix(out, "ID") || !strings.Contains(out, "invoices") || !strings.Contains(out, "inv-7") {
		t.Errorf("jobs find inv-7:\n%s", out)
	}
	found := runJSON("jobs", "find", "inv-7")["jobs"].([]any)
	if id := found[0].(map[string]any)["id"].(string); len(found) != 1 || !strings.Contains(run("jobs", "find", id), "inv-7") {
		t.Errorf("jobs find by key, then by its id: %v", found)
	}

	out = run("jobs", "list", "--topic", "orders", "--biz-id", "1")
	if n := strings.Count(out, "orders"); n != 3 || !strings.HasPrefix(out, "ID") {
		t.Errorf("jobs list --biz-id 1: %d rows\n%s", n, out)
	}
	if page := runJSON("jobs", "list", "--topic", "orders", "--limit", "2"); page["next_cursor"] == "" {
		t.Errorf("a page of 2 of 6 has no next cursor: %v", page)
	}
	if got := runJSON("jobs", "cancel-all", "--topic", "orders", "--biz-id", "1"); got["cancelled"] != float64(3) {
		t.Errorf("cancel-all: %v", got)
	}
	if got := runJSON("jobs", "reschedule-all", "--biz-id", "2", "--topic", "orders", "--delay", "2h"); got["rescheduled"] != float64(3) {
		t.Errorf("reschedule-all: %v", got)
	}
	if r := cli(t, nil, "jobs", "cancel-all", "--topic", "orders", "--server", p.url, "--token", p.token); r.code != 1 || !strings.Contains(r.stderr, "biz_id") {
		t.Errorf("cancel-all without a business object: exit %d\n%s", r.code, r.stderr)
	}

	// Four jobs die on the failing receiver; their group is replayed, then purged.
	for range 4 {
		run("schedule", "--topic", "bad", "--callback", fail.URL+"/h", "--max-attempts", "1")
	}
	var summary string
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(summary, "4  "); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dead summary never counted 4:\n%s", summary)
		}
		summary = run("dead", "summary", "--topic", "bad")
	}
	if !strings.Contains(summary, "HTTP 502") {
		t.Errorf("dead summary:\n%s", summary)
	}
	// A dead job's one attempt, with the status its receiver answered.
	dead := runJSON("dead", "list", "--topic", "bad", "--limit", "1")
	id := dead["jobs"].([]any)[0].(map[string]any)["id"].(string)
	if out := run("jobs", "attempts", id); !strings.Contains(out, "502") || strings.Count(out, "\n") != 2 {
		t.Errorf("jobs attempts %s:\n%s", id, out)
	}
	if got := runJSON("dead", "replay-all", "--topic", "bad", "--signature", "HTTP 502", "--limit", "3", "--delay", "1h"); got["replayed"] != float64(3) || got["more"] != true {
		t.Errorf("replay-all of 3: %v", got)
	}
	if got := runJSON("dead", "purge-all", "--topic", "bad"); got["purged"] != float64(1) || got["more"] != false {
		t.Errorf("purge-all: %v", got)
	}
}

// toc forecast against a real toc serve: a row per step with its count
// and a bar as long as its share of the largest, and a 400 naming the
// field as the error.
func TestCLIForecast(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr)
	run := func(args ...string) string {
		t.Helper()
		r := cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	from := time.Now().UTC().Truncate(time.Hour).Add(24 * time.Hour)
	for i, n := range []int{0, 4, 1} {
		for range n {
			at := from.Add(time.Duration(i)*time.Hour + 30*time.Minute).Format(time.RFC3339)
			run("schedule", "--topic", "nightly", "--callback", "http://127.0.0.1:9/h", "--fire-at", at)
		}
	}
	out := run("forecast", "nightly", "--from", from.Format(time.RFC3339), "--to", from.Add(3*time.Hour).Format(time.RFC3339), "--step", "1h")
	t.Logf("toc forecast:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "start") || !strings.Contains(lines[0], "nightly, by 1h0m0s") {
		t.Fatalf("toc forecast printed:\n%s", out)
	}
	for i, want := range []struct {
		count int
		bar   int
	}{{0, 0}, {4, 40}, {1, 10}} {
		fields := strings.Fields(lines[i+1])
		start := from.Add(time.Duration(i) * time.Hour).Format("2006-01-02T15:04:05.000Z")
		bar := ""
		if len(fields) > 2 {
			bar = fields[2]
		}
		if fields[0] != start || fields[1] != fmt.Sprint(want.count) || bar != strings.Repeat("#", want.bar) {
			t.Errorf("row %d = %q, want %s, %d and a bar of %d", i, lines[i+1], start, want.count, want.bar)
		}
	}
	if r := cli(t, nil, "forecast", "nightly", "--step", "10ms", "--server", p.url, "--token", p.token); r.code != 1 || !strings.Contains(r.stderr, "step") {
		t.Errorf("forecast --step 10ms: exit %d\n%s", r.code, r.stderr)
	}
	if r := cli(t, nil, "forecast", "nobody", "--server", p.url, "--token", p.token); r.code != 1 || !strings.Contains(r.stderr, "404") {
		t.Errorf("forecast of an unknown topic: exit %d\n%s", r.code, r.stderr)
	}
}
