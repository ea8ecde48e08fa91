package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

// statusRows returns how many job rows of each status the database at
// dsn holds.
func statusRows(t *testing.T, dsn string) map[int]int {
	t.Helper()
	out := map[int]int{}
	eachRow(t, dsn, "SELECT status, COUNT(*) FROM toc_jobs GROUP BY status", func(rows *sql.Rows) error {
		var st, n int
		err := rows.Scan(&st, &n)
		out[st] = n
		return err
	})
	return out
}

// Issue 33: toc serve over two shards, restarted with the retention of
// finished jobs at 1 s (the first process keeps them forever, so that
// the rows it leaves are past retention when the second starts),
// deletes the rows of the fired and cancelled jobs of both shards and
// leaves the pending jobs as they are; the deletions are counted in
// toc_retention_deleted_total.
func TestRetentionOverTwoShards(t *testing.T) {
	a, b := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	prefix := fmt.Sprintf("ret%d:", time.Now().UnixNano())
	serve := func(retain string) *proc {
		args := []string{"serve", "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", prefix,
			"--api-token", "tok3n", "--webhook-secret", e2eSecret, "--allow-private-callbacks",
			"--mysql-dsn", a, "--mysql-dsn", b, "--retention-interval", "500ms"}
		for _, st := range []string{"done", "cancelled", "dead"} {
			args = append(args, "--retain-"+st, retain)
		}
		return startToc(t, "tok3n", args...)
	}
	p := serve("0")
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"

	// 300 jobs due in a second, 40 in 4 s, cancelled at once (a
	// cancelled job's retention counts from its due time when that is
	// later), 60 in an hour, over 50 business ids, so both shards hold
	// some.
	due := time.Now().Add(time.Second)
	var jobs []map[string]any
	for i := range 400 {
		at := due
		switch {
		case i >= 340:
			at = due.Add(time.Hour)
		case i >= 300:
			at = due.Add(3 * time.Second)
		}
		jobs = append(jobs, map[string]any{"topic": "orders", "biz_id": i%50 + 1, "fire_at": at.Format(time.RFC3339Nano), "callback_url": hook})
	}
	var ids []string
	for lo := 0; lo < len(jobs); lo += 200 {
		status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs[lo : lo+200]})
		if status != http.StatusOK {
			t.Fatalf("batch: %d %v", status, body)
		}
		for _, item := range body["results"].([]any) {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
	}
	fired, later := ids[:300], ids[300:]
	for _, id := range later[:40] {
		if status, body := p.call(t, "DELETE", "/v1/jobs/"+id, nil); status != http.StatusOK && status != http.StatusNoContent {
			t.Fatalf("cancel %s: %d %v", id, status, body)
		}
	}
	r.wait(t, r.expect(fired), time.Minute)
	p.stop(t)
	for _, dsn := range []string{a, b} {
		if rows := statusRows(t, dsn); rows[2] == 0 {
			t.Fatalf("a shard holds no done rows before the restart: %v", rows)
		}
	}
	time.Sleep(time.Second) // past the second's retention
	p = serve("1s")
	deadline := time.Now().Add(time.Minute)
	for {
		ra, rb := statusRows(t, a), statusRows(t, b)
		if ra[2]+ra[3]+rb[2]+rb[3] == 0 {
			if ra[0]+rb[0] != 60 || ra[0] == 0 || rb[0] == 0 {
				t.Errorf("pending rows: %d and %d, want 60 over both shards", ra[0], rb[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after a restart, rows by status: %v and %v; want the done and cancelled ones deleted", ra, rb)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, id := range later[40:] {
		if status, body := p.call(t, "GET", "/v1/jobs/"+id, nil); status != http.StatusOK || body["status"] != "pending" {
			t.Errorf("pending job %s after retention: %d %v", id, status, body)
		}
	}
	if status, _ := p.call(t, "GET", "/v1/jobs/"+fired[0], nil); status != http.StatusNotFound {
		t.Errorf("a retired job's GET = %d, want 404", status)
	}
	for st, want := range map[string]int{"done": 300, "cancelled": 40} {
		if n, _ := strconv.Atoi(metricOf(t, p, `toc_retention_deleted_total{status="`+st+`",topic="orders"}`)); n != want {
			t.Errorf(`toc_retention_deleted_total{status=%q} = %d, want %d`, st, n, want)
		}
	}
	r.check(t)
}

// A retention flag out of range stops toc at its start, naming the flag;
// 0 keeps forever.
func TestRetentionFlags(t *testing.T) {
	for args, want := range map[string]string{
		"--retain-done -1s":        "--retain-done: -1s",
		"--retain-dead abc":        "-retain-dead",
		"--audit-retention -1h":    "--audit-retention: -1h0m0s",
		"--retention-duty 0":       "--retention-duty: 0",
		"--retention-interval 0s":  "--retention-interval: 0s",
		"--retention-yield -1ms":   "--retention-yield: -1ms",
		"--retention-batch 0":      "--retention-batch: 0",
		"--retention-batch 1001":   "--retention-batch: 1001",
		"--retain-purged 1000000h": "--retain-purged: 1000000h0m0s",
	} {
		out, err := runTocCmd(t, append([]string{"dev", "--addr", "127.0.0.1:0"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("toc dev %s = %v\n%s\nwant an error naming %q", args, err, out, want)
		}
	}
	fs := newFlagSet("serve", "")
	f := addServiceFlags(fs, "text")
	if err := fs.Parse([]string{"--retain-done", "0", "--retain-dead", "90s", "--retention-yield", "0", "--retention-batch", "50"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.retirer(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := timer.DefaultRetention()
	want.Done, want.Dead = timer.KeepForever, 90*time.Second
	if cfg.Retention != want || cfg.AuditRetention != timer.DefaultAuditRetention {
		t.Errorf("retention of --retain-done 0 --retain-dead 90s = %+v, audit %v; want %+v, %v", cfg.Retention, cfg.AuditRetention, want, timer.DefaultAuditRetention)
	}
	if cfg.YieldAbove >= 0 {
		t.Errorf("--retention-yield 0: YieldAbove = %v, want negative (never yields)", cfg.YieldAbove)
	}
	if cfg.Batch != 50 {
		t.Errorf("--retention-batch 50: Batch = %d", cfg.Batch)
	}
}

// A toc serve given no retention flag retires by the defaults: a day for
// done, cancelled, expired and purged jobs, 30 days for dead letters, as
// a topic shows them in force.
func TestRetentionDefaults(t *testing.T) {
	p := serveShards(t, fmt.Sprintf("rd%d:", time.Now().UnixNano()), testenv.MariaDB(t).NewDatabase(t))
	if status, body := p.call(t, "PUT", "/v1/topics/orders", map[string]any{}); status != http.StatusOK && status != http.StatusCreated {
		t.Fatalf("PUT topic: %d %v", status, body)
	}
	status, body := p.call(t, "GET", "/v1/topics/orders", nil)
	if status != http.StatusOK {
		t.Fatalf("GET topic: %d %v", status, body)
	}
	got, _ := body["retention"].(map[string]any)
	def := timer.DefaultRetention()
	for _, st := range timer.RetiredStatuses() {
		if ms, _ := got[st.String()+"_ms"].(float64); int64(ms) != def.Of(st).Milliseconds() {
			t.Errorf("retention.%s_ms = %v, want %d", st, got[st.String()+"_ms"], def.Of(st).Milliseconds())
		}
	}
}
