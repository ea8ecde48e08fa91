package testenv

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A cluster of three masters and three replicas serves keys of different
// hash tags from different masters; a SIGKILLed master's replica takes
// over and a cluster client keeps writing; the killed node comes back as
// a replica.
func TestRedisClusterFailover(t *testing.T) {
	start := time.Now()
	c := NewRedisCluster(t, RedisClusterOptions{})
	t.Logf("cluster of %d nodes ok in %v", len(c.Nodes()), time.Since(start).Round(time.Millisecond))
	if got := len(c.Masters()); got != 3 {
		t.Fatalf("%d masters, want 3", got)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	for i := range 300 {
		if err := rdb.Set(ctx, fmt.Sprintf("{k%d}", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range c.Masters() {
		if n, err := m.Do("DBSIZE"); err != nil || n == "0" {
			t.Errorf("master %s holds %q keys (%v)", m.Addr, n, err)
		}
	}

	victim := c.MasterWithMostKeys()
	killed := time.Now()
	c.KillMaster(t, victim)
	c.WaitFailover(t, victim)
	t.Logf("failover in %v (cluster-node-timeout %v)", time.Since(killed).Round(time.Millisecond), DefaultClusterNodeTimeout)
	if got := len(c.Masters()); got != 3 {
		t.Errorf("%d masters after the failover, want 3", got)
	}
	for _, m := range c.Masters() {
		if m == victim {
			t.Error("the killed node is still a master")
		}
	}
	// Every key reads back through the promoted replica. A client whose
	// slot map was reloaded before the cluster agreed on the new master
	// keeps failing until it reloads again: reload at each error, within
	// one deadline for all the keys (a wait a key made this test take up
	// to 25 minutes in one CI run).
	rdb.ReloadState(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for i := range 300 {
		key := fmt.Sprintf("{k%d}", i)
		var v int
		for {
			err := rdb.Get(ctx, key).Scan(&v)
			if err == nil || err == redis.Nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s after the failover: %v", key, err)
			}
			rdb.ReloadState(ctx)
			time.Sleep(100 * time.Millisecond)
		}
	}

	victim.Start(t)
	c.WaitOK(t)
	if info, err := victim.Do("INFO", "replication"); err != nil || !strings.Contains(info, "role:slave") {
		t.Errorf("the restarted node: %v\n%s", err, info)
	}
}

// The shared cluster is the same for every caller and healthy.
func TestSharedRedisCluster(t *testing.T) {
	a, b := SharedRedisCluster(t), SharedRedisCluster(t)
	if a != b {
		t.Fatal("two shared clusters")
	}
	if err := a.healthy(); err != nil {
		t.Fatal(err)
	}
}

// A failover client writes through the sentinels' master, the master is
// killed, and the client writes to the promoted replica.
func TestRedisSentinelFailover(t *testing.T) {
	s := NewRedisSentinel(t)
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: s.SentinelAddrs()})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	if err := rdb.Set(ctx, "before", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := s.Master()
	killed := time.Now()
	s.KillMaster(t)
	s.WaitFailover(t, old)
	t.Logf("sentinel failover in %v", time.Since(killed).Round(time.Millisecond))
	var err error
	for try := 0; try < 50; try++ {
		if err = rdb.Set(ctx, "after", 1, 0).Err(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("write after the failover: %v", err)
	}
	if s.Master() == old {
		t.Error("the master did not change")
	}
}
