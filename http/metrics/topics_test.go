package metrics_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/metrics"
	"github.com/toc-project/toc/timer"
)

func scrape(t *testing.T, m *metrics.Observer) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// The lateness histogram carries a topic label under the same bound as
// every other topic label, and MaxTopics sets the bound.
func TestLatenessByTopicBounded(t *testing.T) {
	m, err := metrics.NewWith(metrics.Config{MaxTopics: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		m.Fired(fmt.Sprintf("t%d", i), 1, time.Duration(i+1)*time.Millisecond, time.Millisecond, nil)
	}
	m.Fired("t0", 2, 4*time.Millisecond, time.Millisecond, nil)
	m.Fired("t9", 1, time.Second, time.Millisecond, &timer.NotSentError{}) // not an attempt
	m.Retried("t7")
	body := scrape(t, m)
	for _, want := range []string{
		`toc_firing_lateness_seconds_count{topic="t0"} 2`,
		`toc_firing_lateness_seconds_count{topic="t2"} 1`,
		`toc_firing_lateness_seconds_count{topic="_other"} 2`,
		`toc_jobs_retried_total{topic="_other"} 1`,
		"scheduled already past due",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, leak := range []string{`topic="t3"`, `topic="t4"`, `topic="t7"`, `topic="t9"`} {
		if strings.Contains(body, leak) {
			t.Errorf("metrics name a topic past the bound: %s", leak)
		}
	}
	if m.MaxTopics() != 3 {
		t.Errorf("MaxTopics %d", m.MaxTopics())
	}
	if metrics.New().MaxTopics() != metrics.MaxTopicLabels {
		t.Error("the default bound is not MaxTopicLabels")
	}
	if _, err := metrics.NewWith(metrics.Config{MaxTopics: -1}); err == nil || !strings.Contains(err.Error(), "MaxTopics") {
		t.Errorf("MaxTopics -1: %v", err)
	}
}

// A topic's lateness objective is exported as two counters, the calls
// started under it and those within it, summed under the label bound; a
// topic without one exports neither.
func TestLatenessObjectiveCounters(t *testing.T) {
	m, err := metrics.NewWith(metrics.Config{MaxTopics: 2})
	if err != nil {
		t.Fatal(err)
	}
	m.Scheduled("a", 1) // labels go to the first topics seen
	m.Scheduled("plain", 1)
	m.WatchUsage(func() map[string]timer.TopicUsage {
		return map[string]timer.TopicUsage{
			"a":     {SLOCalls: 10, WithinSLO: 9},
			"plain": {},
			"b":     {SLOCalls: 5, WithinSLO: 5},
			"c":     {SLOCalls: 1},
		}
	}, nil)
	body := scrape(t, m)
	for _, want := range []string{
		`toc_topic_slo_calls_total{topic="a"} 10`,
		`toc_topic_slo_within_total{topic="a"} 9`,
		`toc_topic_slo_calls_total{topic="_other"} 6`,
		`toc_topic_slo_within_total{topic="_other"} 5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, `toc_topic_slo_calls_total{topic="plain"}`) {
		t.Error("a topic without an objective exports its counters")
	}
}

// The series count what the metrics count, under the same topic labels:
// topics past the bound go to _other in both.
func TestSeriesFollowMetrics(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	series := timer.NewSeries(2, func() time.Time { return now })
	m, err := metrics.NewWith(metrics.Config{MaxTopics: 2, Series: series})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b", "c", "a"} {
		m.Fired(topic, 1, time.Millisecond, time.Millisecond, nil)
	}
	m.Fired("a", 1, 0, 0, &timer.NotSentError{Err: fmt.Errorf("breaker open")})
	m.Buried("c")
	m.Throttled("b")
	read := func(label string) timer.SeriesBucket {
		return series.Buckets(label, timer.SeriesCoarse, now, now.Add(time.Minute))[0]
	}
	if a, other, all := read("a"), read(metrics.OtherTopic), read(timer.SeriesAll); a.Fires != 2 || other.Fires != 1 || other.Dead != 1 ||
		all.Fires != 4 || all.Throttled != 1 || read("c").Fires != 0 || m.Label("c") != metrics.OtherTopic {
		t.Fatalf("a %+v, _other %+v, _all %+v", a, other, all)
	}
}
