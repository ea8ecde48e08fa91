package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/toc-project/toc/internal/testenv"
)

// serveShards starts toc serve over the shards dsns, in order, on the
// package's redis-server with prefix.
func serveShards(t *testing.T, prefix string, dsns ...string) *proc {
	t.Helper()
	args := []string{"serve", "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", prefix,
		"--api-token", "tok3n", "--webhook-secret", e2eSecret, "--allow-private-callbacks"}
	for _, d := range dsns {
		args = append(args, "--mysql-dsn", d)
	}
	return startToc(t, "tok3n", args...)
}

// bizRows returns, for each business id, how many job rows the database
// at dsn holds.
func bizRows(t *testing.T, dsn string) map[int]int {
	t.Helper()
	out := map[int]int{}
	eachRow(t, dsn, "SELECT biz_id, COUNT(*) FROM toc_jobs GROUP BY biz_id", func(rows *sql.Rows) error {
		var biz, n int
		err := rows.Scan(&biz, &n)
		out[biz] = n
		return err
	})
	return out
}

// eachRow runs query on the database at dsn and calls scan for each row.
func eachRow(t *testing.T, dsn, query string, scan func(*sql.Rows) error) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// Issue 14: with two DSNs, 2,000 jobs over 200 business ids, scheduled in
// batches that span both shards, all arrive once and none early; both
// databases hold rows and each business id's rows are in one of them; a
// restart on the same two DSNs, while most are still pending, keeps
// working.
func TestServeOnTwoShards(t *testing.T) {
	a, b := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	prefix := fmt.Sprintf("sh%d:", time.Now().UnixNano())
	p := serveShards(t, prefix, a, b)
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"

	const n, bizIDs = 2000, 200
	start := time.Now().Add(4 * time.Second)
	var ids []string
	for lo := 0; lo < n; lo += 100 {
		var jobs []map[string]any
		for i := lo; i < lo+100; i++ {
			due := start.Add(time.Duration(i) * 4 * time.Second / n)
			jobs = append(jobs, map[string]any{"topic": "orders", "biz_id": i%bizIDs + 1,
				"fire_at": due.Format(time.RFC3339Nano), "callback_url": hook})
		}
		status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
		if status != http.StatusOK {
			t.Fatalf("batch: %d %v", status, body)
		}
		for _, item := range body["results"].([]any) {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
	}
	// Each job reads back through its id, which names its shard.
	for _, id := range ids[:50] {
		if status, body := p.call(t, "GET", "/v1/jobs/"+id, nil); status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", id, status, body)
		}
	}
	rowsA, rowsB := bizRows(t, a), bizRows(t, b)
	if len(rowsA) == 0 || len(rowsB) == 0 {
		t.Fatalf("business ids per database: %d and %d; want both used", len(rowsA), len(rowsB))
	}
	total := 0
	for biz, k := range rowsA {
		if rowsB[biz] > 0 {
			t.Errorf("business id %d has rows in both databases", biz)
		}
		total += k
	}
	for _, k := range rowsB {
		total += k
	}
	if total != n {
		t.Errorf("%d rows in the two databases, want %d", total, n)
	}

	p.stop(t)
	p = serveShards(t, prefix, a, b)
	r.wait(t, r.expect(ids), time.Minute)
	time.Sleep(time.Second) // time for a duplicate to show
	r.check(t)
	for _, id := range ids {
		if c := r.count(id); c != 1 {
			t.Errorf("job %s arrived %d times", id, c)
		}
	}
	// And the restarted service schedules and cancels by id in both.
	for biz := 1; biz <= 4; biz++ {
		status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "orders", "biz_id": biz,
			"delay_ms": 3_600_000, "callback_url": hook})
		if status != http.StatusCreated {
			t.Fatalf("schedule after restart: %d %v", status, body)
		}
		if status, body := p.call(t, "DELETE", "/v1/jobs/"+body["id"].(string), nil); status != http.StatusOK {
			t.Fatalf("cancel after restart: %d %v", status, body)
		}
	}
}

// toc serve refuses to start when the shards it is given are not the
// map the store recorded: swapped, one missing, or one added without toc
// migrate. toc migrate records a map with the added shard.
func TestServeChecksShardMap(t *testing.T) {
	a, b, c := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	if out, err := runTocCmd(t, "migrate", "--mysql-dsn", a, "--mysql-dsn", b); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	refused := func(why string, dsns ...string) {
		t.Helper()
		args := []string{"serve", "--redis-addr", testenv.Redis(t).Addr, "--api-token", "t", "--webhook-secret", e2eSecret, "--addr", testenv.FreeAddr(t)}
		for _, d := range dsns {
			args = append(args, "--mysql-dsn", d)
		}
		out, err := runTocCmd(t, args...)
		if err == nil {
			t.Fatalf("%s: serve started", why)
		}
		if !strings.Contains(out, "task store shard") || !strings.Contains(out, "toc migrate") {
			t.Errorf("%s: the refusal does not name the shard and the fix:\n%s", why, tail(out, 5))
		}
	}
	refused("swapped", b, a)
	refused("one missing", a)
	refused("one added", a, b, c)
	out, err := runTocCmd(t, "migrate", "--mysql-dsn", a, "--mysql-dsn", b, "--mysql-dsn", c)
	if err != nil || !strings.Contains(out, "shard map of 3 recorded") {
		t.Fatalf("migrate with a third shard: %v\n%s", err, out)
	}
	serveShards(t, fmt.Sprintf("sm%d:", time.Now().UnixNano()), a, b, c)
}
