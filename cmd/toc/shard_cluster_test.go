package main

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
)

// shardOwners returns which member scans each shard, when every member
// of ps sees the same members and each of shards is one member's.
func shardOwners(t *testing.T, ps []*proc, shards int) (map[int]string, bool) {
	var owners map[int]string
	for _, p := range ps {
		v := p.cluster(t)
		if !v.Status.Connected || len(v.Status.Members) != len(ps) {
			return nil, false
		}
		seen := map[int]string{}
		for _, m := range v.Status.Members {
			for _, s := range m.Shards {
				if _, dup := seen[s]; dup {
					t.Fatalf("shard %d has two scanners in %+v", s, v.Status.Members)
				}
				seen[s] = m.ID
			}
		}
		if len(seen) != shards || (owners != nil && fmt.Sprint(owners) != fmt.Sprint(seen)) {
			return nil, false
		}
		owners = seen
	}
	return owners, true
}

func waitShardOwners(t *testing.T, ps []*proc, shards int, limit time.Duration) map[int]string {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		if owners, ok := shardOwners(t, ps, shards); ok {
			return owners
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members did not agree on one scanner per shard within %v: %+v", limit, ps[0].cluster(t))
		}
	}
}

// Issue 14: in a ZooKeeper cluster each shard's backstop scan is one
// member's, and moves when that member dies. Three members on two
// shards; the scanner of shard 1 is SIGKILLed; another takes shard 1;
// then Redis loses every key of the cluster, and the scanners restore
// both shards' jobs from their rows: every job arrives, none early.
func TestClusterShardScansMoveOnDeath(t *testing.T) {
	zkAddr := testenv.ZooKeeper(t).Addr
	a, b := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	prefix := fmt.Sprintf("cs%d:", time.Now().UnixNano())
	root := fmt.Sprintf("/toc-shards-%d", time.Now().UnixNano())
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"
	members := map[string]*proc{}
	var ps []*proc
	for i := range 3 {
		id := fmt.Sprintf("s%d", i+1)
		p := startToc(t, "tok3n", "serve", "--mysql-dsn", a, "--mysql-dsn", b, "--redis-addr", rds.Addr, "--redis-prefix", prefix,
			"--api-token", "tok3n", "--webhook-secret", e2eSecret, "--allow-private-callbacks",
			"--zk", zkAddr, "--zk-root", root, "--zk-session-timeout", "2s", "--member-id", id,
			"--lease", "5s", "--callback-timeout", "2s")
		members[id] = p
		ps = append(ps, p)
	}
	owners := waitShardOwners(t, ps, 2, 30*time.Second)

	start := time.Now().Add(8 * time.Second)
	var ids []string
	for lo := 0; lo < 400; lo += 100 {
		var jobs []map[string]any
		for i := lo; i < lo+100; i++ {
			jobs = append(jobs, map[string]any{"topic": "orders", "biz_id": i%100 + 1, "callback_url": hook,
				"fire_at": start.Add(time.Duration(i) * 2 * time.Second / 400).Format(time.RFC3339Nano)})
		}
		status, body := ps[0].call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
		if status != http.StatusOK {
			t.Fatalf("batch: %d %v", status, body)
		}
		for _, item := range body["results"].([]any) {
			ids = append(ids, item.(map[string]any)["id"].(string))
		}
	}

	victim := owners[1]
	members[victim].kill(t)
	ps = slices.DeleteFunc(ps, func(p *proc) bool { return p == members[victim] })
	moved := waitShardOwners(t, ps, 2, 30*time.Second)
	if moved[1] == victim {
		t.Fatalf("shard 1 still scanned by the dead member %s", victim)
	}
	t.Logf("shard 1's scan moved from %s to %s", victim, moved[1])

	// Redis loses every key of the cluster before the jobs are due.
	rdb := redis.NewClient(&redis.Options{Addr: rds.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(t.Context(), prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys of %s: %d, %v", prefix, len(keys), err)
	}
	if err := rdb.Del(t.Context(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	if time.Now().After(start) {
		t.Fatal("the jobs fell due before Redis lost them; the test proves nothing")
	}
	r.wait(t, r.expect(ids), time.Minute)
	r.check(t)
}
