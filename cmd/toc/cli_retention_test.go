package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

// toc topics retention against a real toc serve: it shows the retention
// in force (the topic's own over the --retain-* flags) and the storage of
// each ended status; its flags set durations, 0 keeping forever, and
// "default" or --reset go back to the flags.
func TestCLITopicRetention(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--retain-purged", "0", "--retain-expired", "2h")
	hook := newReceiver(t, e2eSecret).srv.URL + "/hook"
	run := func(t *testing.T, args ...string) cliRun {
		t.Helper()
		return cli(t, nil, append(args, "--server", p.url, "--token", p.token)...)
	}
	ok := func(t *testing.T, args ...string) string {
		t.Helper()
		r := run(t, args...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	type storage struct {
		Rows          int64  `json:"rows"`
		RowsEstimated bool   `json:"rows_estimated"`
		OldestEndedAt string `json:"oldest_ended_at"`
		PastRetention int64  `json:"past_retention"`
	}
	var stats struct {
		Retention map[string]int64   `json:"retention"`
		Storage   map[string]storage `json:"storage"`
	}
	read := func(t *testing.T, args ...string) {
		t.Helper()
		stats.Retention, stats.Storage = nil, nil
		out := ok(t, append([]string{"topics", "retention", "cli-ret", "--json"}, args...)...)
		if err := json.Unmarshal([]byte(out), &stats); err != nil {
			t.Fatalf("--json printed %q: %v", out, err)
		}
	}
	wantRetention := func(t *testing.T, want map[string]int64) {
		t.Helper()
		for st, ms := range want {
			if got, ok := stats.Retention[st+"_ms"]; !ok || got != ms {
				t.Errorf("retention of %s: %d (given: %v), want %d; all: %v", st, got, ok, ms, stats.Retention)
			}
		}
	}
	const day, month = 86_400_000, 2_592_000_000

	// A job cancelled is one cancelled row, ended now.
	var job map[string]any
	if err := json.Unmarshal([]byte(ok(t, "schedule", "--topic", "cli-ret", "--callback", hook, "--delay", "1h", "--json")), &job); err != nil {
		t.Fatal(err)
	}
	ok(t, "jobs", "cancel", job["id"].(string))

	read(t)
	wantRetention(t, map[string]int64{"done": day, "cancelled": day, "expired": 7_200_000, "dead": month, "purged": 0})
	if c := stats.Storage["cancelled"]; c.Rows != 1 || c.OldestEndedAt == "" || c.PastRetention != 0 {
		t.Errorf("cancelled storage %+v, want one row ended now", c)
	}
	if d := stats.Storage["done"]; d.Rows != 0 || d.OldestEndedAt != "" {
		t.Errorf("done storage %+v, want none", d)
	}
	if len(stats.Storage) != 5 {
		t.Errorf("storage of %d statuses, want 5: %v", len(stats.Storage), stats.Storage)
	}

	// The table: a row per status, its retention as a duration.
	table := ok(t, "topics", "retention", "cli-ret")
	for st, want := range map[string][]string{
		"done": {"24h0m0s", "0"}, "cancelled": {"24h0m0s", "1"}, "expired": {"2h0m0s"}, "dead": {"720h0m0s"}, "purged": {"forever"},
	} {
		line := ""
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == st {
				line = l
			}
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("row of %s %q lacks %q:\n%s", st, line, w, table)
			}
		}
	}

	// Flags set the topic's own; the rest stay with the server's.
	read(t, "--done", "1h", "--dead", "0", "--cancelled", "30m")
	wantRetention(t, map[string]int64{"done": 3_600_000, "cancelled": 1_800_000, "expired": 7_200_000, "dead": 0, "purged": 0})
	var topic map[string]any
	if err := json.Unmarshal([]byte(ok(t, "topics", "get", "cli-ret", "--json")), &topic); err != nil {
		t.Fatal(err)
	}
	if r, _ := topic["retention"].(map[string]any); r["done_ms"] != 3_600_000.0 || r["dead_ms"] != 0.0 {
		t.Errorf("topics get shows retention %v", topic["retention"])
	}
	read(t, "--purged", "90s", "--done", "default")
	wantRetention(t, map[string]int64{"done": day, "cancelled": 1_800_000, "dead": 0, "purged": 90_000})
	read(t, "--reset", "--expired", "1h")
	wantRetention(t, map[string]int64{"done": day, "cancelled": day, "expired": 3_600_000, "dead": month, "purged": 0})

	// A bad duration is a usage error, before any call; an unknown topic
	// is the API's 404.
	for _, args := range [][]string{{"--done", "-1h"}, {"--dead", "soon"}, {"--done", "1"}} {
		if r := run(t, append([]string{"topics", "retention", "cli-ret"}, args...)...); r.code != 2 || !strings.Contains(r.stderr, "usage:") {
			t.Errorf("toc topics retention %q: exit %d, stderr %q; want 2 and the usage", args, r.code, r.stderr)
		}
	}
	if r := run(t, "topics", "retention", "nowhere", "--done", "1h"); r.code != 1 {
		t.Errorf("an unknown topic: exit %d, stderr %q; want 1", r.code, r.stderr)
	}
}
