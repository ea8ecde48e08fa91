package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// The forecast of toc serve over two MariaDB shards is the sum of both:
// a spike of 40 jobs at one instant and one job in every bucket, spread
// over the shards by business id, and none of another topic's or of the
// cancelled ones.
func TestForecastOnTwoShards(t *testing.T) {
	a, b := testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)
	p := serveShards(t, fmt.Sprintf("fc%d:", time.Now().UnixNano()), a, b)
	from := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Hour)
	const step, buckets, spike = 15 * time.Minute, 8, 3
	want := make([]int64, buckets)
	var jobs []map[string]any
	add := func(topic string, at time.Time) {
		jobs = append(jobs, map[string]any{"topic": topic, "biz_id": len(jobs) + 1, "fire_at": at.Format(time.RFC3339Nano),
			"callback_url": "http://127.0.0.1:9/hook"})
	}
	for range 40 {
		add("spiky", from.Add(spike*step))
	}
	want[spike] += 40
	for i := range buckets {
		add("spiky", from.Add(time.Duration(i)*step+time.Duration(i)*time.Second))
		want[i]++
	}
	for range 6 {
		add("calm", from.Add(spike*step))
	}
	status, body := p.call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs})
	if status != http.StatusOK {
		t.Fatalf("batch: %d %v", status, body)
	}
	// Three more of the spike, cancelled.
	for i := range 3 {
		id := postJob(t, p, map[string]any{"topic": "spiky", "biz_id": 1000 + i, "fire_at": from.Add(spike * step).Format(time.RFC3339Nano),
			"callback_url": "http://127.0.0.1:9/hook"})
		if status, body := p.call(t, "DELETE", "/v1/jobs/"+id, nil); status != http.StatusOK {
			t.Fatalf("cancel %s: %d %v", id, status, body)
		}
	}
	// Both shards hold pending jobs of the topic.
	for _, dsn := range []string{a, b} {
		var n int
		eachRow(t, dsn, "SELECT COUNT(*) FROM toc_jobs WHERE topic = 'spiky' AND status = 0", func(rows *sql.Rows) error { return rows.Scan(&n) })
		if n == 0 {
			t.Fatalf("a shard holds no pending job of the topic: the test would not sum two")
		}
	}

	q := url.Values{"from": {from.Format(time.RFC3339)}, "to": {from.Add(buckets * step).Format(time.RFC3339)}, "step": {"15m"}}
	status, got := p.call(t, "GET", "/v1/topics/spiky/forecast?"+q.Encode(), nil)
	if status != http.StatusOK || got["complete"] != true {
		t.Fatalf("forecast: %d %v", status, got)
	}
	bs, _ := got["buckets"].([]any)
	if len(bs) != buckets {
		t.Fatalf("forecast: %d buckets, want %d: %v", len(bs), buckets, got)
	}
	for i, x := range bs {
		bucket := x.(map[string]any)
		start := from.Add(time.Duration(i) * step).Format("2006-01-02T15:04:05.000Z")
		if bucket["start"] != start || bucket["count"] != float64(want[i]) {
			t.Errorf("bucket %d = %v, want %d from %s", i, bucket, want[i], start)
		}
	}
}
