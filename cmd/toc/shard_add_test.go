package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

// Issue 14, item 5: a shard added while jobs are pending. toc serve runs
// on two shards and schedules jobs of every kind of placement (business
// id, idempotency key, neither; one POST each and batches); it is stopped
// while they are pending, toc migrate records a map of three shards, and
// serve starts again on the three. Every old job stays in the shard its
// id names and reads back through its id; repeating an old job's request,
// key and all, answers that job (its key is found where the two-shard map
// put it) and writes nothing; new jobs are placed by the three-shard map,
// the new database among them; and every job, old and new, arrives once
// and none early.
func TestServeAddsAShard(t *testing.T) {
	a, b, c := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	prefix := fmt.Sprintf("sa%d:", time.Now().UnixNano())
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"
	const topic = "orders"
	// job is the body of request n (which makes its due time and payload
	// its own) of a job due from from on.
	job := func(n int, from time.Time, key string, biz int) map[string]any {
		m := map[string]any{"topic": topic, "callback_url": hook, "payload": map[string]int{"n": n},
			"fire_at": from.Add(time.Duration(n) * 10 * time.Millisecond).Format(time.RFC3339Nano)}
		if key != "" {
			m["key"] = key
		}
		if biz != 0 {
			m["biz_id"] = biz
		}
		return m
	}

	// Before: 200 jobs on two shards, due 8 to 10 s from now.
	p := serveShards(t, prefix, a, b)
	from := time.Now().Add(8 * time.Second)
	var (
		old placedJobs
		n   int // the next request's number
		via = map[bool]string{false: "single", true: "batch"}
	)
	add := func(jobs *placedJobs, p *proc, batch bool, count int, from time.Time, kind func(i int) (string, int)) {
		t.Helper()
		reqs := make([]map[string]any, count)
		for i := range reqs {
			key, biz := kind(i)
			reqs[i] = job(n, from, key, biz)
			n++
		}
		ids := postJobs(t, p, reqs, nil, batch)
		jobs.add(reqs, ids)
	}
	for _, batch := range []bool{true, false} {
		add(&old, p, batch, 40, from, func(i int) (string, int) { return "", 100*boolInt(batch) + i%20 + 1 })
		add(&old, p, batch, 30, from, func(int) (string, int) { return "", 0 })
		// Keyed, half with a business id too: the key places them.
		add(&old, p, batch, 30, from, func(i int) (string, int) {
			return fmt.Sprintf("old-%s-%d", via[batch], i), (i % 2) * (200 + i)
		})
	}
	old.checkPlaced(t, 2)
	for _, id := range old.ids {
		if k := r.count(id); k != 0 {
			t.Fatalf("job %s arrived before the shard was added; the test ran too slowly", id)
		}
	}
	keyed := old.keyed()
	moved := 0
	for _, i := range keyed {
		key := old.reqs[i]["key"].(string)
		if timer.PlaceShard(topic, key, 0, 3) != timer.PlaceShard(topic, key, 0, 2) {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("none of the %d old keys is placed elsewhere by three shards: the test shows nothing", len(keyed))
	}
	t.Logf("%d old jobs, %d of them keyed, %d of those keys placed in another shard by three shards", len(old.ids), len(keyed), moved)

	// The change: stopped while they are pending, migrated with c.
	p.stop(t)
	out, err := runTocCmd(t, "migrate", "--mysql-dsn", a, "--mysql-dsn", b, "--mysql-dsn", c)
	if err != nil {
		t.Fatalf("migrate with a third shard: %v\n%s", err, out)
	}
	p = serveShards(t, prefix, a, b, c)

	// Old jobs read back through their ids, and still have their rows
	// where their ids say.
	for _, id := range old.ids {
		status, body := p.call(t, "GET", "/v1/jobs/"+id, nil)
		if status != http.StatusOK || body["id"] != id {
			t.Errorf("GET old job %s after the change: %d %v", id, status, body)
		}
	}
	dsns := []string{a, b, c}
	old.checkRows(t, dsns)

	// Old keys repeated, one POST each and in one batch, answer their
	// jobs and write nothing.
	reqs, want := old.pick(keyed)
	postJobs(t, p, reqs, want, false)
	postJobs(t, p, reqs, want, true)

	// After: 180 jobs on three shards, due 3 to 5 s from now; a batch
	// of new keys carries ten old ones, repeated.
	var fresh placedJobs
	from = time.Now().Add(3 * time.Second)
	n = 0
	for _, batch := range []bool{true, false} {
		add(&fresh, p, batch, 30, from, func(i int) (string, int) { return "", 300*(1+boolInt(batch)) + i + 1 })
		add(&fresh, p, batch, 30, from, func(int) (string, int) { return "", 0 })
	}
	add(&fresh, p, false, 30, from, func(i int) (string, int) { return fmt.Sprintf("new-single-%d", i), 0 })
	reqs, want = old.pick(keyed[:10])
	for i := range 30 {
		reqs = append(reqs, job(n, from, fmt.Sprintf("new-batch-%d", i), i%3*(400+i)))
		want = append(want, "")
		n++
	}
	ids := postJobs(t, p, reqs, want, true)
	fresh.add(reqs[10:], ids[10:])
	fresh.checkPlaced(t, 3)
	perShard := make([]int, 3)
	for _, id := range fresh.ids {
		jid, _ := timer.ParseJobID(id)
		perShard[jid.Shard()]++
		if status, body := p.call(t, "GET", "/v1/jobs/"+id, nil); status != http.StatusOK || body["id"] != id {
			t.Errorf("GET new job %s: %d %v", id, status, body)
		}
	}
	if perShard[0] == 0 || perShard[1] == 0 || perShard[2] == 0 {
		t.Errorf("new jobs per shard: %v; want all three used", perShard)
	}
	t.Logf("%d new jobs, per shard %v", len(fresh.ids), perShard)
	var all placedJobs
	all.add(old.reqs, old.ids)
	all.add(fresh.reqs, fresh.ids)
	all.checkRows(t, dsns)

	// Every job, old and new, arrives once and none early.
	r.wait(t, r.expect(all.ids), 30*time.Second)
	time.Sleep(time.Second) // time for a duplicate to show
	r.check(t)
	for _, id := range all.ids {
		if k := r.count(id); k != 1 {
			t.Errorf("job %s arrived %d times", id, k)
		}
	}
	// Firing them added and lost no row.
	all.checkRows(t, dsns)
}

// placedJobs are jobs a test scheduled: the request of each and the id
// it was answered.
type placedJobs struct {
	reqs []map[string]any
	ids  []string
}

func (pj *placedJobs) add(reqs []map[string]any, ids []string) {
	pj.reqs = append(pj.reqs, reqs...)
	pj.ids = append(pj.ids, ids...)
}

// keyed returns the indexes of the jobs with an idempotency key.
func (pj *placedJobs) keyed() []int {
	var out []int
	for i, req := range pj.reqs {
		if _, ok := req["key"]; ok {
			out = append(out, i)
		}
	}
	return out
}

// pick returns the requests at the indexes is, and their ids.
func (pj *placedJobs) pick(is []int) ([]map[string]any, []string) {
	reqs := make([]map[string]any, len(is))
	ids := make([]string, len(is))
	for n, i := range is {
		reqs[n], ids[n] = pj.reqs[i], pj.ids[i]
	}
	return reqs, ids
}

// checkPlaced checks that each job's id names a shard of shards, and the
// one its key or else its business id places it in under that count.
func (pj *placedJobs) checkPlaced(t *testing.T, shards int) {
	t.Helper()
	for i, id := range pj.ids {
		jid, err := timer.ParseJobID(id)
		if err != nil {
			t.Fatalf("job id %q: %v", id, err)
		}
		key, _ := pj.reqs[i]["key"].(string)
		biz, _ := pj.reqs[i]["biz_id"].(int)
		want := timer.PlaceShard(pj.reqs[i]["topic"].(string), key, uint64(biz), shards)
		switch got := jid.Shard(); {
		case got >= shards:
			t.Fatalf("job %s (key %q, biz_id %d) is in shard %d of %d", id, key, biz, got, shards)
		case want >= 0 && got != want:
			t.Errorf("job %s (key %q, biz_id %d) is in shard %d; %d shards place it in %d", id, key, biz, got, shards, want)
		}
	}
}

// checkRows checks that the databases dsns, the shards in order, hold
// exactly one row for each job, in the shard its id names, and no other.
func (pj *placedJobs) checkRows(t *testing.T, dsns []string) {
	t.Helper()
	rows := make([]map[string]bool, len(dsns))
	total := 0
	for i, dsn := range dsns {
		rows[i] = jobRows(t, dsn)
		total += len(rows[i])
	}
	for _, id := range pj.ids {
		jid, _ := timer.ParseJobID(id)
		for i := range rows {
			if rows[i][id] != (i == jid.Shard()) {
				t.Errorf("job %s of shard %d: row in shard %d is %v", id, jid.Shard(), i, rows[i][id])
			}
		}
	}
	if total != len(pj.ids) {
		t.Errorf("%d rows in the %d databases, want %d", total, len(dsns), len(pj.ids))
	}
}

// jobRows returns the ids of the job rows the database at dsn holds.
func jobRows(t *testing.T, dsn string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	eachRow(t, dsn, "SELECT job_id FROM toc_jobs", func(rows *sql.Rows) error {
		var id uint64
		err := rows.Scan(&id)
		out[fmt.Sprint(id)] = true
		return err
	})
	return out
}

// postJobs schedules reqs, one POST each or in one batch, and returns
// the ids answered. want[i], when given and not empty, is the job request
// i must answer (its key repeated, with its request): 200 and not
// created; else request i must create a job.
func postJobs(t *testing.T, p *proc, reqs []map[string]any, want []string, batch bool) []string {
	t.Helper()
	wantOf := func(i int) string {
		if i < len(want) {
			return want[i]
		}
		return ""
	}
	ids := make([]string, len(reqs))
	if !batch {
		for i, req := range reqs {
			status, body := p.call(t, "POST", "/v1/jobs", req)
			id, _ := body["id"].(string)
			switch w := wantOf(i); {
			case w == "" && status != http.StatusCreated:
				t.Fatalf("schedule %v: %d %v; want 201", req, status, body)
			case w != "" && (status != http.StatusOK || id != w):
				t.Fatalf("repeat %v: %d %v; want 200 and job %s", req, status, body, w)
			}
			ids[i] = id
		}
		return ids
	}
	status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": reqs})
	results, _ := body["results"].([]any)
	if status != http.StatusOK || len(results) != len(reqs) {
		t.Fatalf("batch of %d: %d %v", len(reqs), status, body)
	}
	for i, res := range results {
		item := res.(map[string]any)
		id, _ := item["id"].(string)
		created, _ := item["created"].(bool)
		switch w := wantOf(i); {
		case w == "" && (!created || id == ""):
			t.Fatalf("batch item %d %v: %v; want created", i, reqs[i], item)
		case w != "" && (created || id != w):
			t.Fatalf("batch item %d %v: %v; want job %s, not created", i, reqs[i], item, w)
		}
		ids[i] = id
	}
	return ids
}
