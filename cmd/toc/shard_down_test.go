package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

// Issue 14: one shard down. Shard 1 is a mariadbd of the test's own,
// SIGKILLed while jobs of both shards fall due: shard 0's keep being
// scheduled and fired; a schedule that routes to shard 1 answers 503
// unavailable and writes nothing; /readyz stays 200, degraded, naming
// shard 1. Once it is back, its due jobs fire, late but none lost.
func TestServeOneShardDown(t *testing.T) {
	second := testenv.NewMariaDB(t)
	a, b := testenv.MariaDB(t).NewDatabase(t), second.NewDatabase(t)
	p := serveShards(t, fmt.Sprintf("sd%d:", time.Now().UnixNano()), a, b)
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"

	// bizOf returns n business ids from 'from' on that place in shard.
	bizOf := func(shard, from, n int) []int {
		var out []int
		for biz := from; len(out) < n; biz++ {
			if timer.PlaceShard("orders", "", uint64(biz), 2) == shard {
				out = append(out, biz)
			}
		}
		return out
	}
	schedule := func(biz int, due time.Time) (int, map[string]any) {
		return p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "orders", "biz_id": biz,
			"fire_at": due.Format(time.RFC3339Nano), "callback_url": hook})
	}
	// Jobs of both shards, due from 3 s on: those of shard 1 fall due
	// while it is down.
	start := time.Now().Add(3 * time.Second)
	var ids, ids1 []string
	for shard := range 2 {
		for i, biz := range bizOf(shard, 1, 50) {
			status, body := schedule(biz, start.Add(time.Duration(i)*40*time.Millisecond))
			if status != http.StatusCreated {
				t.Fatalf("schedule: %d %v", status, body)
			}
			ids = append(ids, body["id"].(string))
			if shard == 1 {
				ids1 = append(ids1, body["id"].(string))
			}
		}
	}

	second.Kill(t)
	down := time.Now()
	// Shard 0 takes new jobs and fires them on time; shard 1 refuses.
	var during []string
	for _, biz := range bizOf(0, 1000, 20) {
		status, body := schedule(biz, time.Now().Add(500*time.Millisecond))
		if status != http.StatusCreated {
			t.Fatalf("schedule to shard 0 while shard 1 is down: %d %v", status, body)
		}
		during = append(during, body["id"].(string))
	}
	refused := bizOf(1, 1000, 5)
	for _, biz := range refused {
		status, body := schedule(biz, time.Now().Add(time.Second))
		errBody, _ := body["error"].(map[string]any)
		if status != http.StatusServiceUnavailable || errBody["code"] != "unavailable" {
			t.Fatalf("schedule to the down shard: %d %v; want 503 unavailable", status, body)
		}
	}
	status, body := p.call(t, "GET", "/readyz", nil)
	checks, _ := body["checks"].(map[string]any)
	errs, _ := body["errors"].(map[string]any)
	if status != http.StatusOK || body["status"] != "degraded" || checks["task_store"] != "degraded" ||
		!strings.Contains(fmt.Sprint(errs["task_store"]), "shard 1") {
		t.Errorf("/readyz with shard 1 down: %d %v", status, body)
	}
	r.wait(t, r.expect(during), 30*time.Second)
	for _, id := range during {
		if late := r.lateness([]string{id})[0]; late > 2*time.Second {
			t.Errorf("shard 0's job %s arrived %v late while shard 1 was down", id, late)
		}
	}

	// Shard 1 comes back after its jobs fell due: they fire.
	time.Sleep(time.Until(start.Add(3 * time.Second)))
	if n := arrivedOf(r, ids1); n != 0 {
		t.Errorf("%d of shard 1's jobs arrived while it was down", n)
	}
	second.Start(t)
	t.Logf("shard 1 down for %v", time.Since(down).Round(time.Millisecond))
	r.wait(t, r.expect(ids), time.Minute)
	r.check(t)
	for _, id := range append(ids, during...) {
		if c := r.count(id); c != 1 {
			t.Errorf("job %s arrived %d times", id, c)
		}
	}
	// The refused schedules wrote nothing.
	rows := bizRows(t, b)
	for _, biz := range refused {
		if rows[biz] != 0 {
			t.Errorf("the refused schedule of business id %d left %d rows", biz, rows[biz])
		}
	}
	if status, body := p.call(t, "GET", "/readyz", nil); status != http.StatusOK || body["status"] != "ok" {
		t.Errorf("/readyz after shard 1 came back: %d %v", status, body)
	}
}

// arrivedOf counts the ids that arrived at r.
func arrivedOf(r *receiver, ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if len(r.arrived[id]) > 0 {
			n++
		}
	}
	return n
}
