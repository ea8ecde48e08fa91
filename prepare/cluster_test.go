package prepare

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

func testenvNewRedis(t *testing.T) *testenv.RedisServer { return testenv.NewRedis(t) }

// TestCluster runs the Index through a ClusterClient against a one-node
// Redis Cluster that serves all 16384 slots. A real cluster refuses a
// script whose keys span slots (CROSSSLOT), and go-redis routes every
// command and pipeline by key.
func TestCluster(t *testing.T) {
	srv := testenv.NewRedisWith(t, testenv.RedisOptions{Args: []string{"--cluster-enabled", "yes"}})
	if _, err := srv.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitFor)
	for {
		info, err := srv.Do("CLUSTER", "INFO")
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok after %v: %q, %v", waitFor, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}})
	t.Cleanup(func() { c.Close() })
	c.AddHook(luatest.NewCalls(t))
	ctx := t.Context()

	// The cluster does enforce what our hash tags guarantee.
	_, err := srv.Do("EVAL", "return 1", "2", "{a}x", "{b}x")
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot EVAL = %v, want CROSSSLOT", err)
	}

	q, err := New(c, Config{Prefix: "c:"})
	if err != nil {
		t.Fatal(err)
	}
	w := startWakes(t, q)
	w.waitSubscribed(t)
	var timers []timer.Timer
	for id := timer.JobID(1); id <= 64; id++ {
		tt := tm(id, "orders", 16, at(int64(id)))
		tt.Priority = timer.Priority(int(id%3) - 1) // all three due sets
		timers = append(timers, tt)
	}
	wakes, err := q.Add(ctx, timers)
	if err != nil || len(wakes) != 16 {
		t.Fatalf("Add = %d wakes, %v", len(wakes), err)
	}
	got := map[timer.Wake]bool{}
	for range 16 {
		got[w.next(t)] = true
	}
	for _, wk := range wakes {
		if !got[wk] {
			t.Errorf("wake %+v not delivered", wk)
		}
	}
	if n, _, err := q.Restore(ctx, timers); err != nil || n != 0 {
		t.Errorf("Restore = %d, %v", n, err)
	}
	var leases []timer.Lease
	var calls []timer.ClaimCall // half the slots one by one, half in one pipeline
	for i := range 16 {
		s := timer.Slot{Topic: "orders", Index: i}
		if i%2 == 1 {
			calls = append(calls, timer.ClaimCall{Slot: s, Limit: 100, Lease: time.Second})
			continue
		}
		cl, err := q.Claim(ctx, s, at(64), 100, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, cl.Leases...)
	}
	cls, errs := q.ClaimEach(ctx, at(64), calls)
	for i, cl := range cls {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		leases = append(leases, cl.Leases...)
	}
	if len(leases) != 64 {
		t.Fatalf("claimed %d, want 64", len(leases))
	}
	if n, err := q.Ack(ctx, leases[:60]); err != nil || n != 60 {
		t.Errorf("Ack = %d, %v", n, err)
	}
	if o, err := q.Retry(ctx, leases[60], at(100), 1, at(65)); err != nil || o != timer.Buried {
		t.Errorf("Retry = %v, %v", o, err)
	}
	if o, err := q.Retry(ctx, leases[61], at(100), 5, at(65)); err != nil || o != timer.Retried {
		t.Errorf("Retry = %v, %v", o, err)
	}
	if ok, err := q.Defer(ctx, leases[63], at(100)); err != nil || !ok {
		t.Errorf("Defer = %v, %v", ok, err)
	}
	// Every slot swept in one pipeline over the three masters: only
	// leases[62]'s lease is left, ended at 1064.
	var sweeps []timer.SweepCall
	for i := range 16 {
		sweeps = append(sweeps, timer.SweepCall{Slot: timer.Slot{Topic: "orders", Index: i}, Limit: 10})
	}
	sws, errs := q.SweepEach(ctx, at(2000), sweeps)
	returned := 0
	for i, sw := range sws {
		returned += sw.Returned
		if errs[i] != nil {
			t.Errorf("SweepEach slot %d: %v", i, errs[i])
		}
	}
	if returned != 1 {
		t.Errorf("SweepEach returned %d leases, want leases[62]'s", returned)
	}
	if ok, _, err := q.Revive(ctx, timer.Timer{ID: leases[60].ID, Topic: "orders", Slots: 16, Basis: uint64(leases[60].ID),
		DueAt: at(5), Priority: leases[60].Priority}); err != nil || !ok {
		t.Errorf("Revive = %v, %v", ok, err)
	}
	stored, leased, dead, next, err := q.Stats(ctx, "orders", 16)
	if err != nil || stored+leased != 4 || dead != 0 || next != at(5) {
		t.Errorf("Stats = %d %d %d %v %v", stored, leased, dead, next, err)
	}
	var back []timer.Timer
	for _, l := range leases[60:] {
		tt := tm(l.ID, "orders", 16, t0)
		tt.Priority = l.Priority
		back = append(back, tt)
	}
	if n, err := q.Remove(ctx, back); err != nil || int64(n) != stored {
		t.Errorf("Remove = %d, %v; want %d", n, err, stored)
	}
	if slices.ContainsFunc(leases, func(l timer.Lease) bool { return l.Slot.Topic != "orders" }) {
		t.Error("lease of another topic")
	}

	// Ready and the loss detector, on the cluster and through a client
	// built for one server, which must not pass for ready.
	if err := q.Ready(ctx); err != nil {
		t.Errorf("Ready = %v", err)
	}
	one := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { one.Close() })
	single, err := New(one, Config{Prefix: "c:"})
	if err != nil {
		t.Fatal(err)
	}
	if err := single.Ready(ctx); !errors.Is(err, ErrClusterNode) {
		t.Errorf("Ready through a one-server client = %v, want ErrClusterNode", err)
	}
	if err := q.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	if lost, err := q.Lost(ctx); err != nil || lost {
		t.Errorf("Lost after Mark = %v, %v", lost, err)
	}
	srv.FlushAll(t)
	if lost, err := q.Lost(ctx); err != nil || !lost {
		t.Errorf("Lost after FLUSHALL = %v, %v; want lost", lost, err)
	}
}

// A server that comes back from a restart kept its data (append-only
// file) and the mark with it, but is another run of redis-server: what it
// acknowledged last may not be on disk, so Lost says to restore.
func TestLostAfterRestart(t *testing.T) {
	srv := testenv.NewRedisWith(t, testenv.RedisOptions{AppendOnly: true})
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	q, err := New(c, Config{Prefix: "r:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := q.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	if lost, err := q.Lost(ctx); err != nil || lost {
		t.Fatalf("Lost after Mark = %v, %v", lost, err)
	}
	srv.Kill(t)
	srv.Start(t)
	if n, err := srv.Do("EXISTS", "r:mark"); err != nil || n != "1" {
		t.Fatalf("the mark did not survive the restart: %q, %v", n, err)
	}
	if lost, err := q.Lost(ctx); err != nil || !lost {
		t.Errorf("Lost after a restart = %v, %v; want lost", lost, err)
	}
	if err := q.Mark(ctx); err != nil {
		t.Fatal(err)
	}
	if lost, err := q.Lost(ctx); err != nil || lost {
		t.Errorf("Lost after marking the new run = %v, %v", lost, err)
	}
}
