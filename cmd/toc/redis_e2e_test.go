package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

const e2eSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// serveOn starts toc serve on a fresh database with redisArgs.
func serveOn(t *testing.T, redisArgs ...string) *proc {
	t.Helper()
	return serveWith(t, testenv.MariaDB(t).NewDatabase(t), redisArgs...)
}

// serveWith starts toc serve on database dsn with redisArgs.
func serveWith(t *testing.T, dsn string, redisArgs ...string) *proc {
	t.Helper()
	args := append([]string{"serve", "--mysql-dsn", dsn, "--api-token", "tok3n", "--webhook-secret", e2eSecret,
		"--allow-private-callbacks"}, redisArgs...)
	return startToc(t, "tok3n", args...)
}

// The service flow of TestServeEndToEnd, on a Redis Cluster of three
// masters and three replicas: scripts, wake-ups, dead letters and the
// backstop keep to one hash slot each, and the jobs spread over every
// master.
func TestServeEndToEndOnRedisCluster(t *testing.T) {
	cl := testenv.SharedRedisCluster(t)
	prefix := fmt.Sprintf("e2e%d:", time.Now().UnixNano())
	dsn := testenv.MariaDB(t).NewDatabase(t)
	start := func() *proc {
		return serveWith(t, dsn, "--redis-addr", strings.Join(cl.Addrs(), ","), "--redis-prefix", prefix)
	}
	flow(t, e2eSecret, start)
	for _, m := range cl.Masters() {
		n, err := m.Do("DBSIZE")
		if err != nil || n == "0" {
			t.Errorf("master %s holds %s keys (%v): the slots did not spread", m.Addr, n, err)
		}
	}
}

// A one-server --redis-addr that reaches a cluster node would fire only
// that node's jobs: serve refuses to go on, naming the flag to use.
func TestServeRefusesClusterNodeAsOneServer(t *testing.T) {
	cl := testenv.SharedRedisCluster(t)
	dsn := testenv.MariaDB(t).NewDatabase(t)
	out, err := runTocCmd(t, "serve", "--mysql-dsn", dsn, "--redis-addr", cl.Nodes()[0].Addr,
		"--api-token", "t", "--webhook-secret", e2eSecret, "--addr", testenv.FreeAddr(t))
	if err == nil {
		t.Fatalf("serve on a cluster node as one server started:\n%s", out)
	}
	if !strings.Contains(out, "Redis Cluster node") || !strings.Contains(out, "--redis-cluster") {
		t.Errorf("the error does not say what to do:\n%s", tail(out, 10))
	}
}

// Issue 13's failover acceptance: 3,000 jobs due over 12 s across 20
// topics, each scheduled 3 s before it is due, and the master holding
// most keys SIGKILLed halfway. Every job arrives, none early, none later
// than the failover (kill to the replica serving its slots) plus 5 s;
// /readyz says Redis is unready while the slots lack a master.
func TestServeRedisClusterFailover(t *testing.T) {
	cl := testenv.NewRedisCluster(t, testenv.RedisClusterOptions{})
	p := serveOn(t, "--redis-addr", strings.Join(cl.Addrs(), ","))
	failoverRun(t, p, 3000, 20, 12*time.Second, func() time.Duration {
		for _, m := range cl.Masters() {
			if n, err := m.Do("DBSIZE"); err != nil || n == "0" {
				t.Errorf("master %s holds %s keys (%v) before the kill", m.Addr, n, err)
			}
		}
		victim := cl.MasterWithMostKeys()
		killed := time.Now()
		cl.KillMaster(t, victim)
		cl.WaitFailover(t, victim)
		return time.Since(killed)
	})
}

// The same on Sentinel: one master, one replica, three sentinels.
func TestServeSentinelFailover(t *testing.T) {
	s := testenv.NewRedisSentinel(t)
	p := serveOn(t, "--redis-addr", strings.Join(s.SentinelAddrs(), ","), "--redis-sentinel-master", s.MasterName)
	failoverRun(t, p, 1500, 10, 10*time.Second, func() time.Duration {
		old := s.Master()
		killed := time.Now()
		s.KillMaster(t)
		s.WaitFailover(t, old)
		return time.Since(killed)
	})
}

// failoverRun schedules n jobs over topics, due evenly over window from 3
// s on, each 3 s before its due time, so that those scheduled during the
// failover are acknowledged while their Redis cannot be written. Halfway
// through the window it calls kill, which returns how long the failover
// took. It then checks that every job arrived (signature verified, none
// early) and none later than that failover time plus 5 s, and that
// /readyz said Redis was unready at some point after the kill and is
// ready again.
func failoverRun(t *testing.T, p *proc, n, topics int, window time.Duration, kill func() time.Duration) {
	t.Helper()
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"
	t0 := time.Now()
	first := t0.Add(3 * time.Second)

	ids := make([]string, n)
	errs := make(chan string, n)
	var wg sync.WaitGroup
	wg.Go(func() {
		sem := make(chan struct{}, 32)
		var posts sync.WaitGroup
		for i := range n {
			offset := time.Duration(i) * window / time.Duration(n)
			time.Sleep(time.Until(t0.Add(offset)))
			sem <- struct{}{}
			posts.Go(func() {
				defer func() { <-sem }()
				status, body := p.call(t, "POST", "/v1/jobs", map[string]any{
					"topic": fmt.Sprintf("fo%02d", i%topics), "fire_at": first.Add(offset).Format(time.RFC3339Nano),
					"callback_url": hook,
				})
				if status != http.StatusCreated {
					errs <- fmt.Sprintf("schedule %d: %d %v", i, status, body)
					return
				}
				ids[i] = body["id"].(string)
			})
		}
		posts.Wait()
	})

	// /readyz, polled from the kill on.
	var (
		readyMu    sync.Mutex
		sawUnready bool
	)
	stopPoll := make(chan struct{})
	var poll sync.WaitGroup

	time.Sleep(time.Until(first.Add(window / 2)))
	poll.Go(func() {
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(50 * time.Millisecond):
			}
			resp, err := http.Get(p.url + "/readyz")
			if err != nil {
				continue
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				readyMu.Lock()
				sawUnready = true
				readyMu.Unlock()
			}
		}
	})
	failover := kill()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	r.wait(t, r.expect(ids), 2*time.Minute)
	close(stopPoll)
	poll.Wait()
	r.check(t)

	late := r.lateness(ids)
	worst := late[len(late)-1]
	t.Logf("failover %v; %d jobs arrived; lateness p50 %v p99 %v max %v",
		failover.Round(time.Millisecond), n, percentile(late, .50), percentile(late, .99), worst)
	if limit := failover + 5*time.Second; worst > limit {
		t.Errorf("a job arrived %v late, more than the failover (%v) plus 5 s", worst, failover)
	}
	readyMu.Lock()
	defer readyMu.Unlock()
	if !sawUnready {
		t.Error("/readyz never said unready while a master was dead")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz not ready after the failover: %v", err)
		}
	}
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}
