package client

import (
	"context"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// jobAnswer is a job as toc writes it.
const jobAnswer = `{"id":"4737258989562101760","topic":"orders","key":"k1","biz_id":"18446744073709551615","biz_type":"7",` +
	`"status":"pending","fire_at":"2026-11-21T20:00:02.000Z","attempts":1,"max_attempts":16,"priority":"high",` +
	`"last_error":"HTTP 503","last_status":503,"callback_url":"http://127.0.0.1:9001/hook","payload":{"order":42},` +
	`"created_at":"2026-11-21T20:00:00.000Z","updated_at":"2026-11-21T20:00:01.250Z","next_attempt_at":"2026-11-21T20:00:02.000Z","version":4,"window_ms":0,"concurrency_key":""}`

// deadAnswer is a dead letter as the API answers it.
const deadAnswer = `{"id":"4737258989562101761","topic":"orders","key":"","biz_id":"0","biz_type":"0",` +
	`"status":"dead","fire_at":"2026-11-21T20:00:02.000Z","attempts":16,"max_attempts":16,"priority":"normal",` +
	`"last_error":"HTTP 503","last_status":503,"callback_url":"http://127.0.0.1:9001/hook","payload":null,` +
	`"created_at":"2026-11-21T20:00:00.000Z","updated_at":"2026-11-21T20:10:01.250Z","version":33,"window_ms":0,"concurrency_key":"",` +
	`"died_at":"2026-11-21T20:10:01.250Z"}`

// fake is a client of srv whose waits are recorded, not slept.
type fake struct {
	*Client
	mu    sync.Mutex
	waits []time.Duration
}

func newFake(t *testing.T, h http.HandlerFunc, opts ...Option) *fake {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{Client: c}
	c.sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.waits = append(f.waits, d)
		f.mu.Unlock()
		return ctx.Err()
	}
	c.rand = func() float64 { return 0.5 }
	return f
}

// answer writes status and body as JSON.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

const unavailable = `{"error":{"code":"unavailable","message":"the service is unavailable; nothing was written"}}`

func TestRetriesA503HonouringRetryAfter(t *testing.T) {
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "2")
			answer(w, http.StatusServiceUnavailable, unavailable)
			return
		}
		answer(w, http.StatusOK, jobAnswer)
	})
	j, err := c.Get(t.Context(), 4737258989562101760)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != 4737258989562101760 || calls.Load() != 3 {
		t.Errorf("job %d after %d calls", j.ID, calls.Load())
	}
	if len(c.waits) != 2 {
		t.Fatalf("waits %v", c.waits)
	}
	for _, w := range c.waits {
		if w < 2*time.Second || w > 2200*time.Millisecond {
			t.Errorf("waited %v for a Retry-After of 2 s: want 2 s and up to a tenth more", w)
		}
	}
}

func TestRetriesA429WithAnHTTPDate(t *testing.T) {
	now := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			// A gateway's refusal: not toc's error body.
			w.Header().Set("Retry-After", now.Add(3*time.Second).Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "<html>slow down</html>")
			return
		}
		answer(w, http.StatusOK, `{"topics":[]}`)
	})
	c.now = func() time.Time { return now }
	topics, err := c.Topics(t.Context())
	if err != nil || len(topics) != 0 || calls.Load() != 2 {
		t.Fatalf("topics %v, %v after %d calls", topics, err, calls.Load())
	}
	if len(c.waits) != 1 || c.waits[0] < 3*time.Second {
		t.Errorf("waits %v, want one of 3 s or more", c.waits)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		answer(w, http.StatusServiceUnavailable, unavailable)
	}, WithRetry(RetryPolicy{MaxAttempts: 3, BaseDelay: 100 * time.Millisecond}))
	_, err := c.Cluster(t.Context())
	if !errors.Is(err, ErrUnavailable) || calls.Load() != 3 || !strings.HasSuffix(err.Error(), "(after 3 attempts)") {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	// Exponential with the upper half random (the draw is 0.5 here).
	if want := []time.Duration{75 * time.Millisecond, 150 * time.Millisecond}; !reflect.DeepEqual(c.waits, want) {
		t.Errorf("waits %v, want %v", c.waits, want)
	}
}

func TestDoesNotRetryA400(t *testing.T) {
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		answer(w, http.StatusBadRequest, `{"error":{"code":"invalid_argument","message":"must be within 1..64","field":"max_attempts"}}`)
	})
	_, _, err := c.Schedule(t.Context(), JobRequest{Topic: "orders", Key: "k", CallbackURL: "http://x/h", MaxAttempts: 99})
	e, ok := errors.AsType[*Error](err)
	if !ok || calls.Load() != 1 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	if e.Status != 400 || e.Code != CodeInvalid || e.Field != "max_attempts" || !errors.Is(err, ErrInvalid) || errors.Is(err, ErrConflict) {
		t.Errorf("error %+v", e)
	}
	if got, want := err.Error(), "POST /v1/jobs: 400 invalid_argument: must be within 1..64 (field max_attempts)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestTypedErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		is     []error
		isNot  []error
	}{
		{404, `{"error":{"code":"not_found","message":"job 1: not found"}}`, []error{ErrNotFound}, []error{ErrConflict, ErrInvalid}},
		{409, `{"error":{"code":"in_flight","message":"an attempt is under way: conflict"}}`, []error{ErrInFlight, ErrConflict}, []error{ErrAlreadyFired}},
		{409, `{"error":{"code":"already_fired","message":"done"}}`, []error{ErrAlreadyFired, ErrConflict}, []error{ErrInFlight}},
		{409, `{"error":{"code":"conflict","message":"3 pending, 1 dead"}}`, []error{ErrConflict}, []error{ErrInFlight, ErrAlreadyFired}},
		{412, `{"error":{"code":"version_mismatch","message":"job 1 is at version 3, not 2","current_version":3}}`, []error{ErrVersionMismatch}, []error{ErrConflict}},
		{401, `{"error":{"code":"unauthenticated","message":"a valid bearer token is required"}}`, []error{ErrUnauthorized}, []error{ErrNotFound}},
		{413, `{"error":{"code":"payload_too_large","message":"request body larger than 262144 bytes"}}`, []error{ErrTooLarge}, nil},
		{405, `{"error":{"code":"method_not_allowed","message":"method PUT not allowed"}}`, []error{ErrMethodNotAllowed}, nil},
		{503, `<html>502 bad gateway</html>`, []error{ErrUnavailable}, []error{ErrRateLimited}},
		{429, ``, []error{ErrRateLimited}, []error{ErrUnavailable}},
		{502, `<html><body>Bad   gateway</body></html>`, nil, []error{ErrUnavailable, ErrInvalid}},
	} {
		c := newFake(t, func(w http.ResponseWriter, r *http.Request) { answer(w, tc.status, tc.body) },
			WithRetry(RetryPolicy{MaxAttempts: 1}))
		_, err := c.Get(t.Context(), 1)
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Status != tc.status || e.Method != "GET" || e.Path != "/v1/jobs/1" {
			t.Errorf("%d %s: %#v", tc.status, tc.body, err)
			continue
		}
		for _, s := range tc.is {
			if !errors.Is(err, s) {
				t.Errorf("%d %s: not %v", tc.status, tc.body, s)
			}
		}
		for _, s := range tc.isNot {
			if errors.Is(err, s) {
				t.Errorf("%d %s: is %v", tc.status, tc.body, s)
			}
		}
	}
	// A foreign answer: its status text and its body on one line.
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		answer(w, http.StatusBadGateway, "<html>\n  <body>Bad   gateway</body>\n</html>")
	})
	_, err := c.Get(t.Context(), 1)
	if want := "GET /v1/jobs/1: 502 Bad Gateway: <html> <body>Bad gateway</body> </html>"; err == nil || err.Error() != want {
		t.Errorf("foreign error %q, want %q", err, want)
	}
}

func TestBatchErrorItems(t *testing.T) {
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		answer(w, http.StatusBadRequest, `{"error":{"code":"invalid_argument","message":"2 of the batch's jobs refused (see items); nothing was stored","field":"jobs",`+
			`"items":[{"index":1,"code":"invalid_argument","message":"required","field":"callback_url"},{"index":3,"code":"conflict","message":"key reused"}]}}`)
	})
	_, err := c.ScheduleBatch(t.Context(), []JobRequest{{Topic: "a", CallbackURL: "http://x"}, {Topic: "a"}})
	e, ok := errors.AsType[*Error](err)
	want := []ItemError{{Index: 1, Code: CodeInvalid, Message: "required", Field: "callback_url"}, {Index: 3, Code: CodeConflict, Message: "key reused"}}
	if !ok || !reflect.DeepEqual(e.Items, want) || e.Field != "jobs" {
		t.Fatalf("%#v", err)
	}
}

func TestDeadlineStopsRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusServiceUnavailable, unavailable)
	}))
	t.Cleanup(srv.Close)
	c, err := New(srv.URL) // real waits
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Get(ctx, 1)
	if !errors.Is(err, ErrUnavailable) || calls.Load() != 1 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	if e := time.Since(start); e > 800*time.Millisecond {
		t.Errorf("took %v: a wait of 1 s past the deadline was begun", e)
	}

	// Cancelled while it waits: the context's error, and the last answer.
	ctx, cancel = context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, err = c.Get(ctx, 1)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("cancelled during the wait: %v", err)
	}
	if e := time.Since(start); e > 900*time.Millisecond {
		t.Errorf("took %v after the cancel", e)
	}
}

func TestRetryAfterBeyondMaxDelayEndsRetries(t *testing.T) {
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "120")
		answer(w, http.StatusServiceUnavailable, unavailable)
	})
	_, err := c.Topic(t.Context(), "orders")
	e, ok := errors.AsType[*Error](err)
	if !ok || e.RetryAfter != 2*time.Minute || calls.Load() != 1 || len(c.waits) != 0 {
		t.Errorf("%v (retry after %v) after %d calls, waits %v", err, e.RetryAfter, calls.Load(), c.waits)
	}
}

// Which calls are repeated after a 503 and after a transport error.
func TestRetrySafety(t *testing.T) {
	type call struct {
		name string
		do   func(c *Client) error
		// on503 and onDrop: the attempts made when every answer is a
		// 503, and when every connection is dropped without an answer.
		on503, onDrop int32
	}
	ctx := t.Context()
	for _, tc := range []call{
		{"schedule without a key", func(c *Client) error {
			_, _, err := c.Schedule(ctx, JobRequest{Topic: "t", CallbackURL: "http://x"})
			return err
		}, 1, 1},
		{"schedule with a key", func(c *Client) error {
			_, _, err := c.Schedule(ctx, JobRequest{Topic: "t", Key: "k", CallbackURL: "http://x"})
			return err
		}, 4, 4},
		{"batch with a keyless job", func(c *Client) error {
			_, err := c.ScheduleBatch(ctx, []JobRequest{{Topic: "t", Key: "k"}, {Topic: "t"}})
			return err
		}, 1, 1},
		{"batch of keyed jobs", func(c *Client) error {
			_, err := c.ScheduleBatch(ctx, []JobRequest{{Topic: "t", Key: "k"}, {Topic: "t", Key: "l"}})
			return err
		}, 4, 4},
		{"get", func(c *Client) error { _, err := c.Get(ctx, 1); return err }, 4, 4},
		{"cancel", func(c *Client) error { _, err := c.Cancel(ctx, 1); return err }, 4, 4},
		// A lost answer to a conditional change may hide its success: a
		// repeat would find the job at the next version.
		{"cancel if match", func(c *Client) error { _, err := c.Cancel(ctx, 1, IfMatch(2)); return err }, 4, 1},
		{"reschedule if match", func(c *Client) error { _, err := c.Reschedule(ctx, 1, After(0), IfMatch(2)); return err }, 4, 1},
		{"pause", func(c *Client) error { _, err := c.PauseTopic(ctx, "t"); return err }, 4, 4},
		{"replay", func(c *Client) error { _, err := c.ReplayDead(ctx, 1, When{}); return err }, 4, 1},
		{"replay matching", func(c *Client) error { _, err := c.ReplayMatching(ctx, DeadBulk{Topic: "t"}); return err }, 4, 1},
		{"purge matching", func(c *Client) error { _, err := c.PurgeMatching(ctx, DeadBulk{Topic: "t"}); return err }, 4, 1},
		{"health", func(c *Client) error { return c.Health(ctx) }, 1, 1},
	} {
		var calls atomic.Int32
		c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			answer(w, http.StatusServiceUnavailable, unavailable)
		})
		if err := tc.do(c.Client); !errors.Is(err, ErrUnavailable) || calls.Load() != tc.on503 {
			t.Errorf("%s on 503: %v after %d attempts, want %d", tc.name, err, calls.Load(), tc.on503)
		}
		calls.Store(0)
		c = newFake(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // no answer at all
			}
		})
		if err := tc.do(c.Client); err == nil || calls.Load() != tc.onDrop {
			t.Errorf("%s on a dropped connection: %v after %d attempts, want %d", tc.name, err, calls.Load(), tc.onDrop)
		}
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{}.withDefaults()
	for n := 1; n < 100; n++ {
		for _, r := range []float64{0, 0.999} {
			d := p.backoff(n, 0, r)
			full := min(DefaultRetryBase<<min(n-1, 20), DefaultRetryMax)
			if d < full/2 || d > full {
				t.Errorf("backoff(%d, %v) = %v, want within %v..%v", n, r, d, full/2, full)
			}
		}
	}
	if d := p.backoff(1, 5*time.Second, 0); d != 5*time.Second {
		t.Errorf("a Retry-After of 5 s waits %v", d)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"":            0,
		"0":           0,
		"-3":          0,
		"7":           7 * time.Second,
		" 7 ":         7 * time.Second,
		"soon":        0,
		"99999999999": maxRetryAfter,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := parseRetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", h, got, want)
		}
	}
}

// biz_id and the other 64-bit ids are read as strings or numbers, and
// written as strings.
func TestDecimalIDs(t *testing.T) {
	for _, body := range []string{
		`{"id":"12","biz_id":"18446744073709551615","biz_type":"3","payload":null}`,
		`{"id":12,"biz_id":18446744073709551615,"biz_type":3,"payload":null}`,
	} {
		var j Job
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if j.ID != 12 || j.BizID != 1<<64-1 || j.BizType != 3 || j.Payload != nil {
			t.Errorf("%s: %+v", body, j)
		}
		out, _ := json.Marshal(j)
		if !strings.Contains(string(out), `"biz_id":"18446744073709551615"`) || !strings.Contains(string(out), `"id":"12"`) {
			t.Errorf("written back: %s", out)
		}
	}
	for _, bad := range []string{`{"biz_id":"-1"}`, `{"biz_id":"1e3"}`, `{"biz_id":""}`, `{"biz_id":"18446744073709551616"}`, `{"biz_id":1.5}`, `{"biz_id":true}`} {
		var j Job
		if err := json.Unmarshal([]byte(bad), &j); err == nil {
			t.Errorf("%s read as %d", bad, j.BizID)
		}
	}
	var g DeadGroup
	if err := json.Unmarshal([]byte(`{"example_id":"9"}`), &g); err != nil || g.ExampleID != 9 {
		t.Errorf("example_id: %v %+v", err, g)
	}
}

// Each type reads the API's JSON and writes it back as the API wrote it.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		v    any
		body string
	}{
		{new(Job), jobAnswer},
		{new(Topic), `{"name":"flood","slots":16,"max_attempts":16,"rate_limit":15,"burst":1.5,"max_in_flight":50,"weight":1,` +
			`"retry":{"base_ms":1000,"max_ms":600000},"lease_ms":30000,"callback_timeout_ms":10000,"lateness_slo_ms":0,"paused":true,` +
			`"created_at":"2026-11-21T20:00:00.000Z","usage":{"due_waiting":29804,"in_flight":3,"rate":12.5,"throttled":4,"members":3,` +
			`"lateness_p50_ms":5,"lateness_p99_ms":25,"lateness_calls":1200},"expire_after_ms":30000,"retention":{"done_ms":86400000,"cancelled_ms":86400000,"expired_ms":86400000,"dead_ms":0,"purged_ms":1000}}`},
		{new(Topic), `{"name":"idle","slots":1,"max_attempts":3,"rate_limit":0,"burst":0,"max_in_flight":0,"weight":1,` +
			`"retry":{"base_ms":1000,"max_ms":600000},"lease_ms":30000,"callback_timeout_ms":10000,"lateness_slo_ms":0,"paused":false,` +
			`"created_at":"2026-11-21T20:00:00.000Z","usage":{"due_waiting":0,"in_flight":0,"rate":0,"throttled":0,"members":0,"lateness_calls":0},"expire_after_ms":null,"retention":{"done_ms":86400000,"cancelled_ms":86400000,"expired_ms":86400000,"dead_ms":0,"purged_ms":1000}}`},
		{new(Job), `{"id":"4737258989562101761","topic":"otp","key":"","biz_id":"0","biz_type":"0","status":"expired",` +
			`"fire_at":"2026-11-21T20:00:02.000Z","attempts":0,"max_attempts":16,"priority":"normal","last_error":"deadline passed",` +
			`"last_status":0,"callback_url":"http://127.0.0.1:9001/hook","payload":null,"created_at":"2026-11-21T20:00:00.000Z",` +
			`"updated_at":"2026-11-21T20:00:08.000Z","version":2,"expire_after_ms":5000,"expire_at":"2026-11-21T20:00:07.000Z","window_ms":0,"concurrency_key":""}`},
		{new(TopicStats), `{"topic":"orders","slots":16,"pending":10,"in_flight":1,"dead":2,"counted_at":"2026-11-21T20:00:00.000Z",` +
			`"counts_estimated":false,"next_due_at":"","oldest_overdue_ms":0,` + `"retention":{"done_ms":86400000,"cancelled_ms":86400000,"expired_ms":86400000,"dead_ms":0,"purged_ms":1000},"storage":{` +
			`"done":{"rows":2500000,"rows_estimated":true,"oldest_ended_at":"2026-11-20T17:03:08.551Z","past_retention":12000,"past_retention_estimated":true},` +
			`"cancelled":{"rows":3,"rows_estimated":false,"oldest_ended_at":"2026-11-21T19:00:00.000Z","past_retention":0,"past_retention_estimated":false},` +
			`"expired":{"rows":0,"rows_estimated":false,"oldest_ended_at":"","past_retention":0,"past_retention_estimated":false},` +
			`"dead":{"rows":0,"rows_estimated":false,"oldest_ended_at":"","past_retention":0,"past_retention_estimated":false},` +
			`"purged":{"rows":0,"rows_estimated":false,"oldest_ended_at":"","past_retention":0,"past_retention_estimated":false}}}`},
		{new(Forecast), `{"topic":"orders","from":"2026-11-21T20:00:00.000Z","to":"2026-11-21T22:00:00.000Z","step":"1h0m0s",` +
			`"complete":true,"buckets":[{"start":"2026-11-21T20:00:00.000Z","count":3},{"start":"2026-11-21T21:00:00.000Z","count":0}]}`},
		{new(Forecast), `{"topic":"flood","from":"2026-11-21T20:00:00.000Z","to":"2026-11-21T20:00:02.500Z","step":"1.5s",` +
			`"complete":false,"counted_to":"2026-11-21T20:00:01.000Z","buckets":[{"start":"2026-11-21T20:00:00.000Z","count":1000001},` +
			`{"start":"2026-11-21T20:00:01.500Z","count":0}]}`},
		{new(Series), `{"topic":"orders","from":"2026-11-21T20:00:00.000Z","to":"2026-11-21T20:00:20.000Z","step":"10s","resolution":"10s","members":2,` +
			`"buckets":[{"start":"2026-11-21T20:00:00.000Z","fires":5,"failures":{"4xx":0,"5xx":1,"other":0,"timeout":2},"dead":1,"throttled":3,` +
			`"in_flight":4,"lateness_p50_ms":5,"lateness_p99_ms":200},{"start":"2026-11-21T20:00:10.000Z","fires":0,` +
			`"failures":{"4xx":0,"5xx":0,"other":0,"timeout":0},"dead":0,"throttled":0,"in_flight":0,"lateness_p50_ms":null,"lateness_p99_ms":null}]}`},
		{new(Series), `{"from":"2026-11-20T20:00:00.000Z","to":"2026-11-21T20:00:00.000Z","step":"24h0m0s","resolution":"1m0s","members":1,` +
			`"buckets":[{"start":"2026-11-20T20:00:00.000Z","fires":0,"failures":{"4xx":0,"5xx":0,"other":0,"timeout":0},"dead":0,"throttled":0,` +
			`"in_flight":0,"lateness_p50_ms":null,"lateness_p99_ms":null}]}`},
		{new(Attempt), `{"attempt":1,"started_at":"2026-11-21T20:00:00.000Z","duration_ms":12,"status_code":502,"error":"HTTP 502","response_excerpt":"bad"}`},
		{new(Attempt), `{"attempt":2,"started_at":"2026-11-21T20:00:00.000Z","duration_ms":10000,"error":"timeout","response_excerpt":""}`},
		{new(DeadSummary), `{"groups":[{"signature":"HTTP 502","count":4,"first_seen":"2026-11-21T20:00:00.000Z",` +
			`"last_seen":"2026-11-21T20:00:01.000Z","example_id":"77"}],"truncated":false}`},
		{new(DeadPage), `{"jobs":[` + deadAnswer + `],"next_cursor":"abc"}`},
		{new(JobPage), `{"jobs":[],"next_cursor":""}`},
		{new(Cluster), `{"mode":"standalone","members":[]}`},
		{new(Cluster), `{"mode":"cluster","status":{"self":"a","connected":true,"leader":"a","version":3,` +
			`"members":[{"id":"a","addr":"10.0.0.1:8080","capacity":1,"slots":8,"shards":[0]},{"id":"b","capacity":1,"slots":8}]}}`},
		{new(BatchResult), `{"id":"5","status":"pending","created":true}`},
		{new(CancelResult), `{"cancelled":3,"too_late":1}`},
		{new(ReplayResult), `{"replayed":3,"more":true}`},
	} {
		if err := json.Unmarshal([]byte(tc.body), tc.v); err != nil {
			t.Errorf("%T: %v", tc.v, err)
			continue
		}
		out, err := json.Marshal(tc.v)
		if err != nil {
			t.Errorf("%T: %v", tc.v, err)
			continue
		}
		var want, got any
		json.Unmarshal([]byte(tc.body), &want)
		json.Unmarshal(out, &got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T:\nread  %s\nwrote %s", tc.v, tc.body, out)
		}
	}
}

// What the calls send: method, path, query and body.
func TestRequests(t *testing.T) {
	type sent struct{ method, uri, body, auth, agent string }
	var got sent
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = sent{r.Method, r.URL.RequestURI(), string(b), r.Header.Get("Authorization"), r.Header.Get("User-Agent")}
		switch {
		case strings.HasSuffix(r.URL.Path, "/stats"):
			answer(w, 200, `{"topic":"t"}`)
		case strings.HasPrefix(r.URL.Path, "/v1/topics/"):
			answer(w, 200, `{"name":"t"}`)
		default:
			answer(w, 200, jobAnswer)
		}
	}, WithToken("s3cret"), WithUserAgent("tests/1"))
	ctx := t.Context()
	at := time.Date(2026, 11, 21, 20, 0, 2, 250e6, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		do   func() error
		want sent
	}{
		{func() error {
			_, _, err := c.Schedule(ctx, JobRequest{Topic: "orders", CallbackURL: "http://h/x", Delay: 1500 * time.Microsecond,
				BizID: 1<<64 - 1, Payload: json.RawMessage(`{"n":1}`), Priority: PriorityLow})
			return err
		}, sent{"POST", "/v1/jobs", `{"topic":"orders","biz_id":"18446744073709551615","delay_ms":2,"callback_url":"http://h/x","payload":{"n":1},"priority":"low"}`, "", ""}},
		{func() error {
			_, _, err := c.Schedule(ctx, JobRequest{Topic: "orders", CallbackURL: "http://h/x", FireAt: at, Key: "k"})
			return err
		}, sent{"POST", "/v1/jobs", `{"topic":"orders","key":"k","fire_at":"2026-11-21T19:00:02.25Z","callback_url":"http://h/x"}`, "", ""}},
		{func() error { _, err := c.Reschedule(ctx, 7, After(0)); return err }, sent{"PATCH", "/v1/jobs/7", `{"delay_ms":0}`, "", ""}},
		{func() error { _, err := c.Reschedule(ctx, 7, At(at)); return err }, sent{"PATCH", "/v1/jobs/7", `{"fire_at":"2026-11-21T19:00:02.25Z"}`, "", ""}},
		{func() error { _, err := c.Cancel(ctx, 7); return err }, sent{"DELETE", "/v1/jobs/7", "", "", ""}},
		{func() error {
			_, err := c.Search(ctx, SearchQuery{Topic: "orders", Statuses: []Status{StatusPending, StatusDead}, BizID: 42, Limit: 5, Cursor: "c"})
			return err
		}, sent{"GET", "/v1/jobs?biz_id=42&cursor=c&limit=5&status=pending%2Cdead&topic=orders", "", "", ""}},
		{func() error { _, err := c.CancelMatching(ctx, Match{Topic: "orders", Key: "a b"}); return err },
			sent{"DELETE", "/v1/jobs?key=a+b&topic=orders", "", "", ""}},
		{func() error {
			_, err := c.RescheduleMatching(ctx, Match{Topic: "orders", BizID: 3}, After(time.Hour))
			return err
		},
			sent{"PATCH", "/v1/jobs?biz_id=3&topic=orders", `{"delay_ms":3600000}`, "", ""}},
		{func() error {
			_, _, err := c.PutTopic(ctx, "t", TopicSettings{RateLimit: 200, MaxInFlight: 50, Retry: Backoff{Base: 500 * time.Millisecond}})
			return err
		}, sent{"PUT", "/v1/topics/t", `{"rate_limit":200,"max_in_flight":50,"retry":{"base_ms":500}}`, "", ""}},
		{func() error {
			_, _, err := c.PutTopic(ctx, "t", TopicSettings{Retain: map[string]time.Duration{"done": 90 * time.Minute, "dead": 0}})
			return err
		}, sent{"PUT", "/v1/topics/t", `{"retention":{"dead_ms":0,"done_ms":5400000}}`, "", ""}},
		{func() error {
			_, err := c.PatchTopic(ctx, "t", TopicPatch{RateLimit: Set(0.0), Burst: Reset[int](), RetryMax: Set(time.Minute), Weight: Set(2)})
			return err
		}, sent{"PATCH", "/v1/topics/t", `{"burst":null,"rate_limit":0,"retry":{"max_ms":60000},"weight":2}`, "", ""}},
		{func() error {
			_, err := c.PatchTopic(ctx, "t", TopicPatch{Retain: map[string]Patch[time.Duration]{
				"done": Set(time.Hour), "dead": Set(time.Duration(0)), "expired": Reset[time.Duration]()}})
			return err
		}, sent{"PATCH", "/v1/topics/t", `{"retention":{"dead_ms":0,"done_ms":3600000,"expired_ms":null}}`, "", ""}},
		{func() error { _, err := c.TopicStats(ctx, "t"); return err }, sent{"GET", "/v1/topics/t/stats", "", "", ""}},
		{func() error { _, err := c.Forecast(ctx, ForecastQuery{Topic: "t"}); return err }, sent{"GET", "/v1/topics/t/forecast", "", "", ""}},
		{func() error {
			_, err := c.Forecast(ctx, ForecastQuery{Topic: "t", From: at, To: at.Add(time.Hour), Step: 90 * time.Second})
			return err
		}, sent{"GET", "/v1/topics/t/forecast?from=2026-11-21T19%3A00%3A02.25Z&step=1m30s&to=2026-11-21T20%3A00%3A02.25Z", "", "", ""}},
		{func() error { _, err := c.Series(ctx, SeriesQuery{}); return err }, sent{"GET", "/v1/series", "", "", ""}},
		{func() error {
			_, err := c.Series(ctx, SeriesQuery{Topic: "t", From: at, Step: time.Minute})
			return err
		}, sent{"GET", "/v1/topics/t/series?from=2026-11-21T19%3A00%3A02.25Z&step=1m0s", "", "", ""}},
		{func() error {
			_, err := c.DeadLetters(ctx, DeadQuery{Topic: "t", From: at, Error: "503", Cursor: "x"})
			return err
		}, sent{"GET", "/v1/deadletters?cursor=x&error=503&from=2026-11-21T19%3A00%3A02.25Z&topic=t", "", "", ""}},
		{func() error { _, err := c.DeadLetters(ctx, DeadQuery{}); return err }, sent{"GET", "/v1/deadletters", "", "", ""}},
		{func() error { _, err := c.ReplayDead(ctx, 9, When{}); return err }, sent{"POST", "/v1/deadletters/9/replay", `{"delay_ms":0}`, "", ""}},
		{func() error { _, err := c.CancelSelected(ctx, []uint64{7, 1<<63 - 1}); return err },
			sent{"POST", "/v1/jobs/bulk", `{"action":"cancel","ids":["7","9223372036854775807"]}`, "", ""}},
		{func() error { _, err := c.RescheduleSelected(ctx, []uint64{7}, At(at)); return err },
			sent{"POST", "/v1/jobs/bulk", `{"action":"reschedule","ids":["7"],"fire_at":"2026-11-21T19:00:02.25Z"}`, "", ""}},
		{func() error { _, err := c.FireNowSelected(ctx, []uint64{7}); return err },
			sent{"POST", "/v1/jobs/bulk", `{"action":"fire_now","ids":["7"]}`, "", ""}},
		{func() error { _, err := c.ReplaySelected(ctx, []uint64{9}, When{}); return err },
			sent{"POST", "/v1/deadletters/bulk", `{"action":"replay","ids":["9"],"delay_ms":0}`, "", ""}},
		{func() error { _, err := c.PurgeSelected(ctx, []uint64{9}); return err },
			sent{"POST", "/v1/deadletters/bulk", `{"action":"purge","ids":["9"]}`, "", ""}},
		{func() error { _, err := c.Find(ctx, "order 42"); return err }, sent{"GET", "/v1/jobs/search?q=order+42", "", "", ""}},
		{func() error {
			_, err := c.ReplayMatching(ctx, DeadBulk{Topic: "t", Signature: "HTTP 503", Limit: 3, Rate: 200, Delay: time.Minute})
			return err
		}, sent{"POST", "/v1/deadletters/replay", `{"topic":"t","signature":"HTTP 503","limit":3,"rate":200,"delay_ms":60000}`, "", ""}},
	} {
		got = sent{}
		if err := tc.do(); err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got.auth != "Bearer s3cret" || got.agent != "tests/1" {
			t.Errorf("%s %s: Authorization %q, User-Agent %q", got.method, got.uri, got.auth, got.agent)
		}
		got.auth, got.agent = "", ""
		if got != tc.want {
			t.Errorf("sent   %+v\nwanted %+v", got, tc.want)
		}
	}
}

func TestSearchAllFollowsCursors(t *testing.T) {
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			answer(w, 200, `{"jobs":[{"id":"1"},{"id":"2"}],"next_cursor":"p2"}`)
		case "p2":
			answer(w, 200, `{"jobs":[{"id":"3"}],"next_cursor":""}`)
		default:
			answer(w, 400, `{"error":{"code":"invalid_argument","message":"bad cursor","field":"cursor"}}`)
		}
	})
	var ids []uint64
	for j, err := range c.SearchAll(t.Context(), SearchQuery{Topic: "t"}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if !reflect.DeepEqual(ids, []uint64{1, 2, 3}) {
		t.Errorf("ids %v", ids)
	}
	var errs int
	for _, err := range c.SearchAll(t.Context(), SearchQuery{Topic: "t", Cursor: "bad"}) {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("bad cursor: %v", err)
		}
		errs++
	}
	if errs != 1 {
		t.Errorf("%d errors yielded", errs)
	}
}

// Dead letters come in pages of the API's one shape, followed by cursor;
// Items and Next, their names before, say the same.
func TestDeadLettersAllFollowsCursors(t *testing.T) {
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			answer(w, 200, `{"jobs":[{"id":"1","died_at":"2026-11-21T20:00:01.250Z"},{"id":"2"}],"next_cursor":"p2"}`)
		case "p2":
			answer(w, 200, `{"jobs":[{"id":"3"}],"next_cursor":""}`)
		default:
			answer(w, 400, `{"error":{"code":"invalid_argument","message":"bad cursor","field":"cursor"}}`)
		}
	})
	var ids []uint64
	for j, err := range c.DeadLettersAll(t.Context(), DeadQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if !reflect.DeepEqual(ids, []uint64{1, 2, 3}) {
		t.Errorf("ids %v", ids)
	}
	p, err := c.DeadLetters(t.Context(), DeadQuery{})
	if err != nil || len(p.Jobs) != 2 || p.NextCursor != "p2" || !reflect.DeepEqual(p.Items, p.Jobs) || p.Next != "p2" ||
		!p.Jobs[0].DiedAt.Equal(time.Date(2026, 11, 21, 20, 0, 1, 250e6, time.UTC)) || !p.Jobs[1].DiedAt.IsZero() {
		t.Errorf("page %+v, %v", p, err)
	}
}

// Topics reads the list as {"topics"}, and as {"items"} from a server
// older than the client.
func TestTopicsOfEitherShape(t *testing.T) {
	for _, body := range []string{`{"topics":[{"name":"a"},{"name":"b"}]}`, `{"items":[{"name":"a"},{"name":"b"}]}`} {
		c := newFake(t, func(w http.ResponseWriter, _ *http.Request) { answer(w, 200, body) })
		topics, err := c.Topics(t.Context())
		if err != nil || len(topics) != 2 || topics[1].Name != "b" {
			t.Errorf("from %s: %+v, %v", body, topics, err)
		}
	}
}

func TestReadyWhenNotReady(t *testing.T) {
	var calls atomic.Int32
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		answer(w, 503, `{"status":"unavailable","checks":{"redis":"failing","task_store":"ok"},"errors":{"redis":"dial tcp: refused"}}`)
	})
	r, err := c.Ready(t.Context())
	if !errors.Is(err, ErrUnavailable) || r == nil || r.Checks["redis"] != "failing" || r.Errors["redis"] == "" || calls.Load() != 1 {
		t.Fatalf("%+v, %v after %d calls", r, err, calls.Load())
	}
	if !strings.Contains(err.Error(), "not ready: redis failing") {
		t.Errorf("error %q", err)
	}
}

func TestNewRefusesABadBaseURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://h", "http://", "http://h/?q=1", "http://h/%zz"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) took it", u)
		}
	}
	c, err := New("https://gw.example/toc/")
	if err != nil || c.base != "https://gw.example/toc" {
		t.Errorf("prefix: %v %q", err, c.base)
	}
}

// An encoder that keeps <, > and & (as toc's does, and toc's CLI) finds
// them unescaped in what the types write.
func TestWritesNoHTMLEscapes(t *testing.T) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Job{CallbackURL: "http://h/?a=1&b=<2>", Payload: json.RawMessage(`"<&>"`)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"callback_url":"http://h/?a=1&b=<2>"`) || !strings.Contains(b.String(), `"payload":"<&>"`) {
		t.Errorf("written %s", b.String())
	}
}

// The client imports the standard library only, and internal/jsonw and
// internal/jsonscan, which import nothing else: a program that calls toc
// does not pull in its server.
func TestImportsTheStandardLibraryOnly(t *testing.T) {
	ours := map[string]bool{"github.com/toc-project/toc/internal/jsonw": true, "github.com/toc-project/toc/internal/jsonscan": true}
	for dir, allowed := range map[string]bool{".": true, "../../internal/jsonw": false, "../../internal/jsonscan": false} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path := strings.Trim(imp.Path.Value, `"`)
				if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !(allowed && ours[path]) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}

// IfMatch sends the job's version as the If-Match header, and a 412
// carries the job's version now.
func TestIfMatch(t *testing.T) {
	var ifMatch []string
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		ifMatch = append(ifMatch, r.Header.Get("If-Match"))
		if r.Header.Get("If-Match") == `"3"` {
			answer(w, http.StatusPreconditionFailed, `{"error":{"code":"version_mismatch","message":"job 7 is at version 4, not 3","current_version":4}}`)
			return
		}
		answer(w, 200, jobAnswer)
	})
	ctx := t.Context()
	j, err := c.Reschedule(ctx, 7, After(0), IfMatch(4))
	if err != nil || j.Version != 4 {
		t.Fatalf("Reschedule with IfMatch(4) = %+v, %v", j, err)
	}
	if _, err := c.Cancel(ctx, 7); err != nil {
		t.Fatal(err)
	}
	_, err = c.Cancel(ctx, 7, IfMatch(3))
	e, ok := errors.AsType[*Error](err)
	if !errors.Is(err, ErrVersionMismatch) || !ok || e.CurrentVersion != 4 || e.Status != http.StatusPreconditionFailed {
		t.Fatalf("Cancel with a stale IfMatch = %v", err)
	}
	if want := []string{`"4"`, "", `"3"`}; !reflect.DeepEqual(ifMatch, want) {
		t.Errorf("If-Match sent %q, want %q", ifMatch, want)
	}
}

// A selection's answer reads with each failed id exact and its error's
// code, and writes back as the API wrote it.
func TestSelectionResult(t *testing.T) {
	const raw = `{"changed":2,"failed":[{"id":"9223372036854775807","error":{"code":"in_flight","message":"job 9223372036854775807 is firing"}}]}`
	c := newFake(t, func(w http.ResponseWriter, r *http.Request) { answer(w, 200, raw) })
	res, err := c.FireNowSelected(t.Context(), []uint64{1, 2, 1<<63 - 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed != 2 || len(res.Failed) != 1 || res.Failed[0].ID != 1<<63-1 || res.Failed[0].Code != CodeInFlight {
		t.Errorf("read %+v", res)
	}
	if b, err := json.Marshal(res); err != nil || string(b) != raw {
		t.Errorf("wrote %s (%v), want %s", b, err, raw)
	}
}

// TestAnswerCutShort: an answer that ends inside its value, or is empty,
// is a transport failure, which a safe request retries; one with
// something after its value cannot be decoded, and is not retried.
func TestAnswerCutShort(t *testing.T) {
	for _, tc := range []struct {
		name, first string
		retried     bool
	}{
		{"cut short", jobAnswer[:40], true},
		{"empty", "", true},
		{"blank", " \n", true},
		{"data after it", jobAnswer + "}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					answer(w, http.StatusOK, tc.first)
					return
				}
				answer(w, http.StatusOK, jobAnswer)
			})
			j, err := f.Get(t.Context(), 4737258989562101760)
			if !tc.retried {
				if err == nil || !strings.Contains(err.Error(), "decode the answer") || calls.Load() != 1 {
					t.Fatalf("%v after %d calls, want a decode error after one", err, calls.Load())
				}
				return
			}
			if err != nil || calls.Load() != 2 {
				t.Fatalf("%v after %d calls, want the job after two", err, calls.Load())
			}
			if j.Topic != "orders" || j.BizID != 18446744073709551615 || !j.NextAttemptAt.Equal(time.Date(2026, 11, 21, 20, 0, 2, 0, time.UTC)) {
				t.Errorf("decoded %+v", j)
			}
		})
	}
}

// jobRequestJSON is how encoding/json wrote a JobRequest before it was
// written by hand: the reference TestJobRequestJSON holds appendJSON to.
type jobRequestJSON struct {
	Topic          string          `json:"topic"`
	Key            string          `json:"key,omitempty"`
	BizID          decimal         `json:"biz_id,omitzero"`
	BizType        decimal         `json:"biz_type,omitzero"`
	FireAt         string          `json:"fire_at,omitempty"`
	DelayMS        *int64          `json:"delay_ms,omitempty"`
	CallbackURL    string          `json:"callback_url"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	MaxAttempts    int             `json:"max_attempts,omitempty"`
	Priority       Priority        `json:"priority,omitempty"`
	ExpireAfter    *int64          `json:"expire_after_ms,omitempty"`
	WindowMS       int64           `json:"window_ms,omitempty"`
	ConcurrencyKey string          `json:"concurrency_key,omitempty"`
	GroupID        string          `json:"group_id,omitempty"`
}

// TestJobRequestJSON: a request written by hand is the bytes
// encoding/json wrote of it, field for field, set and unset, and with
// strings that need escapes; a payload that is not JSON is refused.
func TestJobRequestJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	strs := []string{"", "orders", "a\"b\\c", "<&>", "\u2028é\x01", "\xff"}
	pick := func() string { return strs[rng.IntN(len(strs))] }
	payloads := []json.RawMessage{nil, json.RawMessage(`{"n":1}`), json.RawMessage(` [1, "<&>" , {}] `), json.RawMessage(`"x"`)}
	for i := range 2000 {
		r := JobRequest{Topic: pick(), CallbackURL: pick(), Key: pick(), ConcurrencyKey: pick(), GroupID: pick(),
			Priority: Priority(pick()), Payload: payloads[rng.IntN(len(payloads))]}
		if rng.IntN(2) == 0 {
			r.BizID, r.BizType = rng.Uint64(), uint64(rng.IntN(3))
		}
		switch rng.IntN(3) {
		case 0:
			r.FireAt = time.UnixMilli(rng.Int64N(4e12)).Add(time.Duration(rng.IntN(1e6)))
		case 1:
			r.Delay = time.Duration(rng.Int64N(int64(48 * time.Hour)))
		}
		if rng.IntN(2) == 0 {
			r.MaxAttempts = rng.IntN(3)
			r.Window = time.Duration(rng.IntN(3)) * time.Second / 3
			e := rng.Int64N(3) - 1
			r.ExpireAfterMS = &e
		}
		w := jobRequestJSON{
			Topic: r.Topic, Key: r.Key, BizID: decimal(r.BizID), BizType: decimal(r.BizType), CallbackURL: r.CallbackURL,
			Payload: r.Payload, MaxAttempts: r.MaxAttempts, Priority: r.Priority, ExpireAfter: r.ExpireAfterMS, WindowMS: ms(r.Window),
			ConcurrencyKey: r.ConcurrencyKey, GroupID: r.GroupID,
		}
		w.FireAt, w.DelayMS = When{FireAt: r.FireAt, Delay: r.Delay}.wire()
		want, err := marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.appendJSON(nil)
		if err != nil || string(got) != string(want) {
			t.Fatalf("request %d: %s, %v\nwant %s", i, got, err, want)
		}
	}
	_, err := JobRequest{Topic: "t", Payload: json.RawMessage(`{"n":`)}.appendJSON(nil)
	if err == nil || !strings.Contains(err.Error(), "payload: unexpected end of JSON input") {
		t.Errorf("a payload cut short: %v", err)
	}
}
