package main

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Dead letters are the task store's rows: after FLUSHALL and after a
// restart they are still listed, replayable and purgeable, and the
// topic's stats count them from the store.
func TestDeadLettersSurviveRedisLossAndRestart(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.NewRedis(t) // its own: the test flushes it
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	start := func() *proc {
		return startToc(t, "tok3n", "serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr,
			"--api-token", "tok3n", "--webhook-secret", secret, "--allow-private-callbacks")
	}
	r := newReceiver(t, secret)
	p := start()
	var ids []string
	for range 3 {
		status, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "d", "delay_ms": 0, "max_attempts": 1,
			"callback_url": r.srv.URL + "/hook?fail=1"})
		if status != http.StatusCreated {
			t.Fatalf("schedule: %d %v", status, body)
		}
		ids = append(ids, body["id"].(string))
	}
	listed := func(p *proc) []string {
		t.Helper()
		status, body := p.call(t, "GET", "/v1/deadletters?topic=d", nil)
		if status != http.StatusOK {
			t.Fatalf("list: %d %v", status, body)
		}
		var out []string
		for _, it := range body["jobs"].([]any) {
			j := it.(map[string]any)
			if j["status"] != "dead" {
				t.Errorf("listed %v", j)
			}
			out = append(out, j["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	want := slices.Sorted(slices.Values(ids))
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(listed(p), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("dead letters %v, want %v", listed(p), want)
		}
	}

	rds.FlushAll(t)
	if got := listed(p); !slices.Equal(got, want) {
		t.Fatalf("after FLUSHALL: listed %v, want %v", got, want)
	}
	p.stop(t)
	p = start()
	if got := listed(p); !slices.Equal(got, want) {
		t.Fatalf("after a restart: listed %v, want %v", got, want)
	}
	if status, stats := p.call(t, "GET", "/v1/topics/d/stats", nil); status != http.StatusOK || stats["dead"] != float64(3) {
		t.Errorf("stats: %d %v, want 3 dead", status, stats)
	}

	// Replayed after the flush, a dead letter fires; purged, one leaves
	// the list and its row says purged.
	r.mu.Lock()
	r.healed = true
	r.mu.Unlock()
	arrived := r.expect(ids[:1])
	if status, body := p.call(t, "POST", "/v1/deadletters/"+ids[0]+"/replay", nil); status != http.StatusOK || body["status"] != "pending" {
		t.Fatalf("replay: %d %v", status, body)
	}
	r.wait(t, arrived, 30*time.Second)
	if status, body := p.call(t, "DELETE", "/v1/deadletters/"+ids[1], nil); status != http.StatusOK {
		t.Fatalf("purge: %d %v", status, body)
	}
	if _, j := p.call(t, "GET", "/v1/jobs/"+ids[1], nil); j["status"] != "purged" {
		t.Errorf("purged job: %v", j)
	}
	if got := listed(p); !slices.Equal(got, ids[2:]) {
		t.Errorf("after replay and purge: listed %v, want %v", got, ids[2:])
	}
	p.stop(t)
	r.check(t)
}

// A batch with one bad item stores nothing, on MariaDB and redis-server:
// its good items, sent again alone with the same idempotency keys, are
// created (201), not found as repeats (200), and no Redis key of the topic
// was written.
func TestBatchStoresNothingOnOneBadItem(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.NewRedis(t)
	p := startToc(t, "tok3n", "serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--api-token", "tok3n",
		"--webhook-secret", "whsec_"+"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "--allow-private-callbacks")
	good := func(i int) map[string]any {
		return map[string]any{"topic": "batch", "key": fmt.Sprintf("k%d", i), "delay_ms": 60_000, "callback_url": "http://localhost:9/hook"}
	}
	jobs := []any{good(0), good(1), map[string]any{"topic": "batch", "delay_ms": 60_000}, good(2)} // item 2: no callback_url
	status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
	if status != http.StatusBadRequest {
		t.Fatalf("batch with a bad item: %d %v, want 400", status, body)
	}
	items, _ := body["error"].(map[string]any)["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["index"] != float64(2) || items[0].(map[string]any)["field"] != "callback_url" {
		t.Fatalf("item errors %v, want item 2's callback_url", items)
	}
	if keys, err := rds.Do("EVAL", "return #redis.call('KEYS', ARGV[1])", "0", "*{batch:*"); err != nil || keys != "0" {
		t.Errorf("Redis holds %s keys of the topic after the refused batch (%v), want 0", keys, err)
	}
	for i := range 3 {
		if status, body := p.call(t, "POST", "/v1/jobs", good(i)); status != http.StatusCreated {
			t.Errorf("job %d sent alone: %d %v, want 201 (the batch stored nothing)", i, status, body)
		}
	}
	p.stop(t)
}
