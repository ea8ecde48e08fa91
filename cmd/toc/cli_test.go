package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// cliRun is what one run of the client printed and its exit code.
type cliRun struct {
	stdout, stderr string
	code           int
}

// cli runs toc with args and no TOC_* variable but env. The race
// detector's wait of a second at exit is off: every command would take it.
func cli(t *testing.T, env []string, args ...string) cliRun {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), tocBin, args...)
	cmd.Env = append(withoutTocEnv(), append(env, "GORACE=atexit_sleep_ms=0")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := cliRun{}
	if err := cmd.Run(); err != nil {
		ee, ok := errors.AsType[*exec.ExitError](err)
		if !ok {
			t.Fatalf("toc %q: %v", args, err)
		}
		r.code = ee.ExitCode()
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	return r
}

// The client commands against a real toc serve: each prints a table, or
// the API's JSON with --json; flags go before or after the positional
// arguments; an API error prints the API's message and exits 1, a usage
// error exits 2.
func TestCLI(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr)
	hook := newReceiver(t, e2eSecret).srv.URL + "/hook"
	// run runs a command that must succeed, its flags to the server last.
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		r := cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	// row returns the table row of out that holds word, after its header.
	row := func(t *testing.T, out, word string) string {
		t.Helper()
		lines := strings.Split(out, "\n")
		for _, l := range lines[1:] {
			if slices.Contains(strings.Fields(l), word) {
				return l
			}
		}
		t.Fatalf("no row with %q in\n%s", word, out)
		return ""
	}
	// object runs a command with --json, first, and decodes what it printed.
	object := func(t *testing.T, args ...string) map[string]any {
		t.Helper()
		var v map[string]any
		out := run(t, append([]string{args[0], "--json"}, args[1:]...)...)
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("toc %q --json printed no JSON object: %v\n%s", args, err, out)
		}
		return v
	}
	schedule := func(t *testing.T, topic, callback string, extra ...string) string {
		t.Helper()
		args := append([]string{"schedule", "--topic", topic, "--callback", callback}, extra...)
		return object(t, args...)["id"].(string)
	}

	t.Run("jobs", func(t *testing.T) {
		id := schedule(t, "cli", hook, "--delay", "1h", "--payload", `{"n":1}`)
		if r := row(t, run(t, "jobs", "get", id), id); !strings.Contains(r, "cli") || !strings.Contains(r, "pending") {
			t.Errorf("jobs get: row %q", r)
		}
		if j := object(t, "get", id); j["id"] != id || j["status"] != "pending" {
			t.Errorf("get --json (the short form): %v", j)
		}
		at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		if j := object(t, "jobs", "reschedule", "--fire-at", at.Format(time.RFC3339), id); j["fire_at"] != at.Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("reschedule --fire-at %v: %v", at, j)
		}
		before := time.Now()
		if r := row(t, run(t, "jobs", "reschedule", id, "--delay", "3h"), id); !strings.Contains(r, "pending") {
			t.Errorf("reschedule --delay 3h: row %q", r)
		}
		due, err := time.Parse(time.RFC3339, object(t, "jobs", "get", id)["fire_at"].(string))
		if want := before.Add(3 * time.Hour).Truncate(time.Millisecond); err != nil || due.Before(want) || due.After(time.Now().Add(3*time.Hour)) {
			t.Errorf("reschedule --delay 3h at %v: due %v (%v)", before, due, err)
		}
		if r := row(t, run(t, "jobs", "cancel", id), id); !strings.Contains(r, "cancelled") {
			t.Errorf("jobs cancel: row %q", r)
		}
		id = schedule(t, "cli", hook, "--delay", "1h")
		if j := object(t, "cancel", id); j["status"] != "cancelled" {
			t.Errorf("cancel --json (the short form): %v", j)
		}
	})

	t.Run("concurrency key", func(t *testing.T) {
		id := schedule(t, "cli", hook, "--delay", "1h", "--concurrency-key", "account-7")
		if j := object(t, "jobs", "get", id); j["concurrency_key"] != "account-7" {
			t.Errorf("jobs get after schedule --concurrency-key: %v", j)
		}
		long := strings.Repeat("k", 129)
		r := cli(t, nil, "schedule", "--topic", "cli", "--callback", hook, "--delay", "1h", "--concurrency-key", long, "--server", p.url, "--token", p.token)
		if r.code != 1 || !strings.Contains(r.stderr, "concurrency_key") {
			t.Errorf("schedule with a 129-byte concurrency key: exit %d, stderr %q; want 1 naming concurrency_key", r.code, r.stderr)
		}
	})

	t.Run("if-match", func(t *testing.T) {
		id := schedule(t, "cli", hook, "--delay", "1h")
		if f := strings.Fields(row(t, run(t, "jobs", "get", id), id)); f[slices.Index(jobFields, "version")] != "1" {
			t.Errorf("jobs get: row %q, want version 1 in its column", f)
		}
		if j := object(t, "jobs", "reschedule", id, "--delay", "2h", "--if-match", "1"); j["version"] != float64(2) {
			t.Errorf("reschedule --if-match 1: %v", j)
		}
		for _, args := range [][]string{{"jobs", "cancel", id, "--if-match", "1"}, {"jobs", "reschedule", id, "--delay", "1s", "--if-match", "1"}} {
			r := cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
			if r.code != 1 || !strings.Contains(r.stderr, "version_mismatch") || r.stdout != "" {
				t.Errorf("toc %q: exit %d, stdout %q, stderr %q; want 1 and version_mismatch", args, r.code, r.stdout, r.stderr)
			}
		}
		if j := object(t, "jobs", "get", id); j["status"] != "pending" || j["version"] != float64(2) {
			t.Errorf("after stale changes: %v", j)
		}
		if j := object(t, "jobs", "cancel", id, "--if-match", "2"); j["status"] != "cancelled" || j["version"] != float64(3) {
			t.Errorf("cancel --if-match 2: %v", j)
		}
	})

	t.Run("missing job", func(t *testing.T) {
		const missing = "999999999"
		status, body := p.call(t, "GET", "/v1/jobs/"+missing, nil)
		e, _ := body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != http.StatusNotFound || msg == "" {
			t.Fatalf("GET a missing job: %d %v", status, body)
		}
		for _, args := range [][]string{{"jobs", "get", missing}, {"get", "--json", missing}} {
			r := cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
			if r.code != 1 || !strings.Contains(r.stderr, msg) || r.stdout != "" {
				t.Errorf("toc %q: exit %d, stdout %q, stderr %q; want 1 and the API's message %q", args, r.code, r.stdout, r.stderr, msg)
			}
		}
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"jobs", "get"},
			{"jobs", "get", "1", "2"},
			{"jobs", "get", "1", "--no-such-flag"},
			{"jobs", "reschedule", "1"},
			{"jobs", "cancel", "1", "--if-match", "first"},
			{"jobs", "reschedule", "1", "--delay", "1s", "--fire-at", "2030-01-01T00:00:00Z"},
			{"jobs", "frobnicate", "1"},
			{"topics", "set", "cli"},
			{"topics", "set", "cli", "--weight", "heavy"},
			{"dead"},
			// Read by the client before any call: an id, a time, a business id.
			{"jobs", "get", "abc"},
			{"dead", "list", "--topic", "cli", "--from", "yesterday"},
			{"jobs", "list", "--topic", "cli", "--biz-id", "-1"},
		} {
			r := cli(t, nil, append(args, "--server", p.url)...)
			if r.code != 2 || !strings.Contains(r.stderr, "usage:") {
				t.Errorf("toc %q: exit %d, stderr %q; want 2 and the usage", args, r.code, r.stderr)
			}
		}
		if r := cli(t, []string{"TOC_SERVER=127.0.0.1:8080"}, "cluster"); r.code != 2 || !strings.Contains(r.stderr, "--server") {
			t.Errorf("a --server without a scheme: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("topics", func(t *testing.T) {
		schedule(t, "cli-topic", hook, "--delay", "1h")
		if r := row(t, run(t, "topics", "list"), "cli-topic"); !strings.Contains(r, "false") {
			t.Errorf("topics list: row %q", r)
		}
		var list struct {
			Items []struct {
				Name string `json:"name"`
			} `json:"topics"`
		}
		if err := json.Unmarshal([]byte(run(t, "topics", "list", "--json")), &list); err != nil || !slices.ContainsFunc(list.Items, func(it struct {
			Name string `json:"name"`
		}) bool {
			return it.Name == "cli-topic"
		}) {
			t.Errorf("topics list --json: %v %+v", err, list)
		}
		run(t, "topics", "set", "cli-topic", "--rate-limit", "50", "--max-in-flight", "3")
		// Only the flags given are sent: max_in_flight stays.
		if tp := object(t, "topics", "set", "--weight", "2", "cli-topic", "--retry-base-ms", "500"); tp["rate_limit"] != 50.0 ||
			tp["max_in_flight"] != 3.0 || tp["weight"] != 2.0 || tp["retry"].(map[string]any)["base_ms"] != 500.0 {
			t.Errorf("topics set: %v", tp)
		}
		if tp := object(t, "topics", "set", "cli-topic", "--rate-limit", "default"); tp["rate_limit"] != 0.0 || tp["max_in_flight"] != 3.0 {
			t.Errorf("topics set --rate-limit default: %v", tp)
		}
		out := run(t, "topics", "get", "cli-topic")
		if r := row(t, out, "cli-topic"); !strings.Contains(r, "false") || !strings.Contains(out, "DUE_WAITING") {
			t.Errorf("topics get:\n%s", out)
		}
		if tp := object(t, "topics", "get", "cli-topic"); tp["usage"] == nil {
			t.Errorf("topics get --json: no usage: %v", tp)
		}
		if r := row(t, run(t, "topics", "pause", "cli-topic"), "cli-topic"); !strings.Contains(r, "true") {
			t.Errorf("topics pause: row %q", r)
		}
		if tp := object(t, "topics", "resume", "cli-topic"); tp["paused"] != false {
			t.Errorf("topics resume: %v", tp)
		}
		r := cli(t, nil, "topics", "get", "no-such-topic", "--server", p.url, "--token", p.token)
		if r.code != 1 || !strings.Contains(r.stderr, "404 not_found") {
			t.Errorf("topics get of an unknown topic: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("dead letters", func(t *testing.T) {
		// Each dies at its first attempt: the callback answers 500.
		var ids []string
		for range 2 {
			ids = append(ids, schedule(t, "cli-dead", hook+"?fail=1", "--max-attempts", "1"))
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, a := p.call(t, "GET", "/v1/jobs/"+ids[0], nil)
			_, b := p.call(t, "GET", "/v1/jobs/"+ids[1], nil)
			if a["status"] == "dead" && b["status"] == "dead" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("jobs not dead: %v %v", a, b)
			}
		}
		// A table with when each died, the time of its last change.
		out := run(t, "dead", "list", "--topic", "cli-dead")
		if h := strings.Fields(out); len(h) < 3 || h[2] != "DIED_AT" {
			t.Errorf("dead list: header of\n%s", out)
		}
		for _, id := range ids {
			_, j := p.call(t, "GET", "/v1/jobs/"+id, nil)
			if r := row(t, out, id); !strings.Contains(r, "dead") || !strings.Contains(r, "500") || strings.Fields(r)[2] != j["updated_at"] {
				t.Errorf("dead list: row %q, want it dead at %v", r, j["updated_at"])
			}
		}
		// Without --topic: those of every topic.
		if out := run(t, "dead", "list"); !strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) {
			t.Errorf("dead list without --topic:\n%s", out)
		}
		page := object(t, "dead", "list", "--topic", "cli-dead", "--limit", "1", "--from", time.Now().Add(-time.Hour).Format(time.RFC3339))
		items, _ := page["jobs"].([]any)
		next, _ := page["next_cursor"].(string)
		if len(items) != 1 || next == "" || items[0].(map[string]any)["died_at"] == nil {
			t.Fatalf("dead list --limit 1: %v", page)
		}
		first := items[0].(map[string]any)["id"]
		for _, flag := range []string{"--cursor", "--after"} { // --after: its name before
			rest := object(t, "dead", "list", "--topic", "cli-dead", flag, next)
			if items, _ := rest["jobs"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] == first {
				t.Errorf("dead list %s: %v", flag, rest)
			}
		}
		if none := object(t, "dead", "list", "--topic", "cli-dead", "--error", "no such error text"); len(none["jobs"].([]any)) != 0 {
			t.Errorf("dead list --error: %v", none)
		}
		if none := object(t, "dead", "list", "--topic", "cli-dead", "--to", time.Now().Add(-time.Hour).Format(time.RFC3339)); len(none["jobs"].([]any)) != 0 {
			t.Errorf("dead list --to: %v", none)
		}
		if r := row(t, run(t, "dead", "replay", ids[0], "--delay", "1h"), ids[0]); !strings.Contains(r, "pending") {
			t.Errorf("dead replay: row %q", r)
		}
		if r := row(t, run(t, "dead", "purge", ids[1]), ids[1]); !strings.Contains(r, "true") {
			t.Errorf("dead purge: row %q", r)
		}
		if left := object(t, "dead", "list", "--topic", "cli-dead"); len(left["jobs"].([]any)) != 0 {
			t.Errorf("dead list after replay and purge: %v", left)
		}
		r := cli(t, nil, "dead", "purge", ids[1], "--server", p.url, "--token", p.token)
		if r.code != 1 || !strings.Contains(r.stderr, "toc: DELETE /v1/deadletters/"+ids[1]) {
			t.Errorf("dead purge of a purged job: exit %d, stderr %q", r.code, r.stderr)
		}
	})

	t.Run("cluster", func(t *testing.T) {
		if out := run(t, "cluster"); !slices.Equal(strings.Fields(out), []string{"MODE", "standalone"}) {
			t.Errorf("cluster:\n%s", out)
		}
		if c := object(t, "cluster"); c["mode"] != "standalone" {
			t.Errorf("cluster --json: %v", c)
		}
	})

	t.Run("server and token from the environment", func(t *testing.T) {
		r := cli(t, []string{"TOC_SERVER=" + p.url, "TOC_TOKEN=" + p.token}, "cluster")
		if r.code != 0 || !strings.Contains(r.stdout, "standalone") {
			t.Errorf("cluster with TOC_SERVER, TOC_TOKEN: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		r = cli(t, []string{"TOC_SERVER=" + p.url}, "cluster")
		if r.code != 1 || !strings.Contains(r.stderr, "401") {
			t.Errorf("cluster without a token: exit %d, stderr %q", r.code, r.stderr)
		}
	})
}
