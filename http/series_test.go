package http_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// fakeSeries answers every query with a bucket of 3 fires per 10 s and
// remembers the queries.
type fakeSeries struct {
	mu      sync.Mutex
	queries []timer.SeriesQuery
}

func (f *fakeSeries) Series(_ context.Context, q timer.SeriesQuery) ([]timer.SeriesBucket, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	out := make([]timer.SeriesBucket, q.Buckets())
	for i := range out {
		n := int64(q.Step / timer.SeriesFine * 3)
		out[i] = timer.SeriesBucket{Fires: n, Failures: [4]int64{0, 1}, InFlight: 2}
		out[i].Lateness[3] = n // under 10 ms
	}
	return out, 2, nil
}

func (f *fakeSeries) last() timer.SeriesQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[len(f.queries)-1]
}

// The parameters: defaults, alignment to the step, and a 400 naming the
// field of each bad one.
func TestSeriesParameters(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	fs := &fakeSeries{}
	e := newAPIEnv(t, tochttp.APIConfig{Now: func() time.Time { return now }, Series: fs}, nil)

	a := e.call(t, "GET", "/v1/topics/orders/series", "")
	ok(t, a, http.StatusOK)
	if a.body["from"] != "2030-01-02T02:04:00.000Z" || a.body["to"] != "2030-01-02T03:04:10.000Z" || a.body["step"] != "10s" ||
		a.body["resolution"] != "10s" || a.body["topic"] != "orders" || a.body["members"] != 2.0 {
		t.Fatalf("default series: %s", a.raw)
	}
	buckets := a.body["buckets"].([]any)
	first := buckets[0].(map[string]any)
	if len(buckets) != 361 || first["fires"] != 3.0 || first["lateness_p99_ms"] != 10.0 || first["failures"].(map[string]any)["5xx"] != 1.0 {
		t.Fatalf("%d buckets, the first %v", len(buckets), first)
	}
	if q := fs.last(); q.Label != "orders" || q.Step != timer.SeriesFine {
		t.Fatalf("query %+v", q)
	}

	a = e.call(t, "GET", "/v1/series?from=2030-01-01T03:08:00Z&to=2030-01-02T03:08:00Z", "")
	ok(t, a, http.StatusOK)
	if a.body["step"] != "4m0s" || a.body["resolution"] != "1m0s" || a.body["topic"] != nil || len(a.body["buckets"].([]any)) != 360 {
		t.Fatalf("a day of every topic: step %v, resolution %v, topic %v", a.body["step"], a.body["resolution"], a.body["topic"])
	}
	if q := fs.last(); q.Label != timer.SeriesAll {
		t.Fatalf("query %+v", q)
	}

	for _, tc := range []struct {
		name, query, field string
	}{
		{"unknown parameter", "?since=1h", "since"},
		{"from not a time", "?from=yesterday", "from"},
		{"from too old", "?from=2029-12-31T00:00:00Z", "from"},
		{"to before from", "?from=2030-01-02T03:00:00Z&to=2030-01-02T02:00:00Z", "to"},
		{"to far ahead", "?to=2030-01-02T06:00:00Z", "to"},
		{"step not a duration", "?step=fast", "step"},
		{"step not 10 s", "?step=15s", "step"},
		{"step negative", "?step=-10s", "step"},
		{"10 s a day ago", "?from=2030-01-01T04:00:00Z&step=10s", "step"},
		{"too many buckets", "?from=2030-01-01T04:00:00Z&step=30s", "step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.call(t, "GET", "/v1/topics/orders/series"+tc.query, "").wantError(t, http.StatusBadRequest, "invalid_argument", tc.field)
		})
	}
	e.call(t, "GET", "/v1/topics/Not_A_Topic/series", "").wantError(t, http.StatusBadRequest, "invalid_argument", "topic")
}

// A token sees its own topics' series; only one that may see every topic
// sees the overall series.
func TestSeriesTenancy(t *testing.T) {
	set, err := auth.Parse([]byte(tenantsFile))
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeSeries{}
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }, Series: fs}, nil)
	ok(t, e.call(t, "GET", "/v1/topics/orders-eu/series", "", bearerOf("viewer")...), http.StatusOK)
	e.call(t, "GET", "/v1/topics/billing/series", "", bearerOf("viewer")...).wantError(t, http.StatusForbidden, "forbidden", "")
	e.call(t, "GET", "/v1/series", "", bearerOf("viewer")...).wantError(t, http.StatusForbidden, "forbidden", "")
	ok(t, e.call(t, "GET", "/v1/series", "", bearerOf("ops")...), http.StatusOK)
	e.call(t, "GET", "/v1/series", "").wantError(t, http.StatusUnauthorized, "unauthenticated", "")
	if n := len(fs.queries); n != 2 {
		t.Fatalf("%d queries reached the reader, want the 2 allowed", n)
	}
}
