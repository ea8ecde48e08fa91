package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/metrics"
	"github.com/toc-project/toc/timer"
)

func TestMetrics(t *testing.T) {
	m := metrics.New()
	m.Scheduled("orders", 3)
	m.Fired("orders", 1, 2*time.Millisecond, time.Millisecond, nil)
	m.Fired("orders", 2, time.Second, time.Millisecond, io.EOF)
	m.Assigned(16)
	m.Assigned(12)
	m.Claimed(timer.Slot{Topic: "orders"}, 5)
	m.Unclaimed(timer.Slot{Topic: "orders"}, 4)
	m.OccurrencesSkipped("orders", timer.SkipPendingQuota, 2)
	m.OccurrencesSkipped("orders", timer.SkipPendingQuota, 1)
	for i := range metrics.MaxTopicLabels + 10 {
		m.Retried(strings.Repeat("t", 1+i%60) + string(rune('a'+i/60)))
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`toc_jobs_scheduled_total{topic="orders"} 3`,
		`toc_jobs_fired_total{outcome="success",topic="orders"} 1`,
		`toc_jobs_fired_total{outcome="failure",topic="orders"} 1`,
		`toc_slots_owned 12`,
		`toc_assignment_changes_total 2`,
		`toc_firing_lateness_seconds_count{topic="orders"} 2`,
		`toc_claim_batch_size_sum 5`,
		`toc_lost_claim_leases_total 4`,
		`toc_schedule_occurrences_skipped_total{reason="pending_quota",topic="orders"} 3`,
		`toc_jobs_retried_total{topic="_other"} 11`, // "orders" holds one of the 200 labels
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// Deliveries are counted by way and outcome, each way's series present
// from the start; a way outside timer.Ways is counted as well.
func TestDelivered(t *testing.T) {
	m := metrics.New()
	m.Delivered(timer.WayWebhook, 2*time.Millisecond, nil)
	m.Delivered(timer.WayWebhook, time.Millisecond, nil)
	m.Delivered(timer.WayWebhook, time.Second, io.EOF)
	m.Delivered(timer.WayNATS, time.Millisecond, &timer.NotSentError{})
	m.Delivered("carrier", time.Millisecond, nil)
	body := scrape(t, m)
	for _, want := range []string{
		`toc_delivery_attempts_total{outcome="done",way="webhook"} 2`,
		`toc_delivery_attempts_total{outcome="failed",way="webhook"} 1`,
		`toc_delivery_attempts_total{outcome="not_sent",way="webhook"} 0`,
		`toc_delivery_duration_seconds_count{way="webhook"} 3`,
		`toc_delivery_attempts_total{outcome="not_sent",way="nats"} 1`,
		`toc_delivery_attempts_total{outcome="done",way="pull"} 0`,
		`toc_delivery_attempts_total{outcome="done",way="carrier"} 1`,
		`toc_delivery_duration_seconds_count{way="carrier"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, `toc_delivery_duration_seconds_count{way="nats"} 1`) {
		t.Error("a delivery not sent has a duration")
	}
}

// toc_dependency_up runs the readiness checks at each scrape: 1 for one
// that passes, 0.5 for one degraded, 0 for one that fails or does not
// answer in time.
func TestDependencyUp(t *testing.T) {
	m := metrics.New()
	partly := errors.New("shard 1 of 2 down")
	redisUp := true
	m.WatchDependencies(map[string]func(context.Context) error{
		"task_store": func(context.Context) error { return partly },
		"redis": func(context.Context) error {
			if redisUp {
				return nil
			}
			return errors.New("connection refused")
		},
		"zookeeper": func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	}, func(err error) bool { return errors.Is(err, partly) }, 50*time.Millisecond)
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{`toc_dependency_up{dependency="task_store"} 0.5`, `toc_dependency_up{dependency="redis"} 1`, `toc_dependency_up{dependency="zookeeper"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("first scrape lacks %q", want)
		}
	}
	redisUp = false
	if body := scrape(); !strings.Contains(body, `toc_dependency_up{dependency="redis"} 0`) {
		t.Errorf("a scrape after redis failed lacks toc_dependency_up{dependency=\"redis\"} 0")
	}
}

// BenchmarkFireMetrics is what a fire's attempt costs the metrics: Fired
// and Delivered, from goroutines at once as the executor calls them.
func BenchmarkFireMetrics(b *testing.B) {
	m := metrics.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Fired("orders", 1, 2*time.Millisecond, time.Millisecond, nil)
			m.Delivered(timer.WayWebhook, time.Millisecond, nil)
		}
	})
}
