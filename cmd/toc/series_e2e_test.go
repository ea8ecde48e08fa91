package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/timer"
)

// seriesSums adds up the buckets of a series answer.
type seriesSums struct {
	fires, failed5xx, dead int64
	members                int
}

func sumSeries(t *testing.T, body map[string]any) seriesSums {
	t.Helper()
	s := seriesSums{members: int(body["members"].(float64))}
	for _, b := range body["buckets"].([]any) {
		b := b.(map[string]any)
		s.fires += int64(b["fires"].(float64))
		s.dead += int64(b["dead"].(float64))
		s.failed5xx += int64(b["failures"].(map[string]any)["5xx"].(float64))
	}
	return s
}

// The series over real Redis and MariaDB: a member counts its own fires,
// failures and dead jobs, publishes them to Redis within about 10 s, and
// answers GET /v1/topics/{topic}/series and GET /v1/series with its own
// added to another member's, which that member published.
func TestSeriesMergesMembers(t *testing.T) {
	rs := testenv.Redis(t)
	prefix := fmt.Sprintf("ser%d:", time.Now().UnixNano())
	p := serveOn(t, "--redis-addr", rs.Addr, "--redis-prefix", prefix)
	r := newReceiver(t, e2eSecret)
	var ids, failing []string
	for range 6 {
		ids = append(ids, postJob(t, p, map[string]any{"topic": "charts", "delay_ms": 0, "callback_url": r.srv.URL}))
	}
	for range 2 {
		failing = append(failing, postJob(t, p, map[string]any{"topic": "charts", "delay_ms": 0, "callback_url": r.srv.URL + "?fail=1", "max_attempts": 1}))
	}
	for _, id := range ids {
		waitJob(t, p, id, "done")
	}
	for _, id := range failing {
		waitJob(t, p, id, "dead")
	}

	// Another member's bucket of this 10 s, as it publishes it.
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	t.Cleanup(func() { rdb.Close() })
	q, err := prepare.New(rdb, prepare.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	other := timer.SeriesBucket{Fires: 5, Failures: [4]int64{0, 1}, InFlight: 3}
	other.Lateness[2] = 5
	var records []prepare.SeriesRecord
	for _, label := range []string{"charts", timer.SeriesAll} {
		records = append(records, prepare.SeriesRecord{Label: label, Res: timer.SeriesFine, Start: now.Truncate(timer.SeriesFine), Bucket: other},
			prepare.SeriesRecord{Label: label, Res: timer.SeriesCoarse, Start: now.Truncate(timer.SeriesCoarse), Bucket: other})
	}
	if err := q.NewSeriesPublisher("other").Publish(t.Context(), records, now); err != nil {
		t.Fatal(err)
	}

	from := now.Add(-5 * time.Minute).UTC().Format(time.RFC3339)
	for _, path := range []string{"/v1/topics/charts/series?step=1m&from=" + from, "/v1/series?from=" + from, "/v1/topics/charts/series?from=" + from} {
		status, body := p.call(t, "GET", path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		if got, want := sumSeries(t, body), (seriesSums{fires: 13, failed5xx: 3, dead: 2, members: 2}); got != want {
			t.Errorf("GET %s: sums %+v, want %+v (this member's 8 attempts, 2 failed and dead, and the other's 5, 1 failed)", path, got, want)
		}
	}

	// This member's own buckets reach Redis, for the others.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		end := time.Now().Truncate(timer.SeriesFine).Add(timer.SeriesFine)
		got, members, err := q.ReadSeries(t.Context(), "charts", timer.SeriesFine, end.Add(-10*time.Minute), end, "other")
		var fires int64
		for _, b := range got {
			fires += b.Fires
		}
		if err == nil && fires == 8 && len(members) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("this member's buckets in Redis: %d fires by %v (%v), want 8 by one member", fires, members, err)
		}
	}

	status, body := p.call(t, "GET", "/v1/topics/charts/series?step=15s", nil)
	if e, _ := body["error"].(map[string]any); status != http.StatusBadRequest || e["field"] != "step" {
		t.Fatalf("a step of 15s: %d %v", status, body)
	}
}

// Two members of a ZooKeeper cluster on one task store and Redis split a
// topic's slots and fire its jobs between them: each answers the series
// with the whole load, its own share from memory and the other's from
// Redis, and names two members.
func TestSeriesTwoMembers(t *testing.T) {
	zkAddr := testenv.ZooKeeper(t).Addr
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	prefix := fmt.Sprintf("ser2%d:", time.Now().UnixNano())
	root := fmt.Sprintf("/toc-series-%d", time.Now().UnixNano())
	r := newReceiver(t, e2eSecret)
	var ps []*proc
	for i := range 2 {
		ps = append(ps, startToc(t, "tok3n", "serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--redis-prefix", prefix,
			"--api-token", "tok3n", "--webhook-secret", e2eSecret, "--allow-private-callbacks",
			"--zk", zkAddr, "--zk-root", root, "--member-id", fmt.Sprintf("m%d", i+1)))
	}
	if status, body := ps[0].call(t, "PUT", "/v1/topics/shared", map[string]any{"slots": 16}); status/100 != 2 {
		t.Fatalf("PUT /v1/topics/shared: %d %v", status, body)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v := ps[0].cluster(t)
		if v.Status.Connected && len(v.Status.Members) == 2 && v.Status.Members[0].Slots > 0 && v.Status.Members[1].Slots > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the two members did not share the slots: %+v", v)
		}
	}
	const n = 40
	var last string
	for i := range n {
		last = postJob(t, ps[0], map[string]any{"topic": "shared", "delay_ms": i * 50, "callback_url": r.srv.URL, "biz_id": i + 1})
	}
	waitJob(t, ps[0], last, "done")
	for i, p := range ps {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			status, body := p.call(t, "GET", "/v1/topics/shared/series?step=1m", nil)
			if status != http.StatusOK {
				t.Fatalf("member %d: %d %v", i+1, status, body)
			}
			got := sumSeries(t, body)
			if got.fires == n && got.members == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %d answers %+v, want %d fires from 2 members", i+1, got, n)
			}
		}
	}
}
