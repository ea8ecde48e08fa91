package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/deadletter"
	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/contract"
	"github.com/toc-project/toc/internal/deliver/pull"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/cron"
)

// apiEnv is the API over a real engine: SQLite task store, miniredis.
type apiEnv struct {
	srv *httptest.Server
	// client checks every exchange against the OpenAPI document.
	client *http.Client
	eng    *timer.Engine
	store  *taskdb.Store
	api    *tochttp.API
	stats  *fakeStats
	mr     *miniredis.Miniredis
	// pull holds the pull topics' leases; its Fire is not the engine's
	// handler: a test offers a job by calling it.
	pull *pull.Broker
}

type fakeStats struct {
	err error
	eng *timer.Engine
	// retention and storage are what TopicStats reports of them.
	retention timer.Retention
	storage   map[timer.Status]tochttp.StatusStorage
}

// TopicUsage reports the in-process worker's usage, as one member.
func (f *fakeStats) TopicUsage(_ context.Context, t timer.Topic) (timer.Usage, error) {
	if f.err != nil {
		return timer.Usage{}, f.err
	}
	u := f.eng.Worker.Usage()[t.Name]
	out := timer.Usage{InFlight: u.InFlight, Rate: u.Rate, Throttled: u.Throttled, Members: 1}
	out.AddLateness(u.Lateness)
	return out, nil
}

func (f *fakeStats) TopicStats(_ context.Context, topic string) (tochttp.TopicStats, error) {
	if f.err != nil {
		return tochttp.TopicStats{}, f.err
	}
	if topic == "unknown" {
		return tochttp.TopicStats{}, fmt.Errorf("topic %s: %w", topic, timer.ErrNotFound)
	}
	return tochttp.TopicStats{Topic: topic, Slots: 16, Pending: 3, InFlight: 1, Dead: 2, NextDue: time.UnixMilli(1000),
		CountedAt: time.UnixMilli(2000), CountsEstimated: true, Retention: f.retention, Storage: f.storage}, nil
}

func newAPIEnv(t testing.TB, cfg tochttp.APIConfig, handler timer.Handler) *apiEnv {
	t.Helper()
	ctx := t.Context()
	store, err := taskdb.OpenSQLite(ctx, filepath.Join(t.TempDir(), "toc.db"), taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	queue, err := prepare.New(rdb, prepare.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if handler == nil {
		handler = timer.HandlerFunc(func(context.Context, timer.Delivery) error { return nil })
	}
	eng, err := timer.New(store, queue, handler, timer.Config{Worker: timer.WorkerConfig{Retry: timer.RetryPolicy{Base: 10 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.AllowPrivateCallbacks = true
	if cfg.Schedules == nil {
		cfg.Schedules = timer.NewSchedules(store, 0, cron.Parse, nil, nil)
	}
	if cfg.Audit == nil {
		cfg.Audit = store
	}
	if cfg.Pull == nil {
		sign := func(d timer.Delivery, _ time.Time) (webhook.Message, error) {
			return webhook.Message{ID: d.Job.ID.String(), Body: fmt.Appendf(nil, `{"id":"%s","topic":"%s","fire_at":"2026-11-25T03:35:21.359Z","attempt":%d,"payload":null}`, d.Job.ID, d.Job.Topic, d.Attempt)}, nil
		}
		if cfg.Pull, err = pull.New(rdb, pull.Config{Sign: sign}); err != nil {
			t.Fatal(err)
		}
	}
	stats := &fakeStats{eng: eng}
	dead, err := deadletter.New(rdb, deadletter.Config{Prefix: slots.DefaultPrefix})
	if err != nil {
		t.Fatal(err)
	}
	api := mustAPI(t, eng, deadletter.NewLetters(dead, store), stats, cfg)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	// Every exchange of these tests is held to the OpenAPI document.
	client := &http.Client{Transport: contract.Shared(t).Transport(t, srv.Client().Transport)}
	return &apiEnv{srv: srv, client: client, eng: eng, store: store, api: api, stats: stats, mr: mr, pull: cfg.Pull}
}

// run starts the engine (worker and backstop) until the test ends.
func (e *apiEnv) run(t testing.TB) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { e.eng.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

type answer struct {
	status int
	body   map[string]any
	raw    []byte
	header http.Header
}

func (e *apiEnv) call(t *testing.T, method, path, body string, header ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := e.client
	if c == nil {
		c = &http.Client{Transport: contract.Shared(t).Transport(t, e.srv.Client().Transport)}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, raw: raw, header: resp.Header}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("%s %s: answer is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return a
}

// wantError checks an error answer's status, code and field.
func (a answer) wantError(t *testing.T, status int, code, field string) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.raw)
	}
	e, _ := a.body["error"].(map[string]any)
	if e == nil || e["code"] != code || e["message"] == "" {
		t.Fatalf("error body %s, want code %s", a.raw, code)
	}
	if got, _ := e["field"].(string); got != field {
		t.Fatalf("error field %q, want %q: %s", got, field, a.raw)
	}
}

const cb = `"callback_url": "http://127.0.0.1:9/hook"`

func TestCreateAndGetJob(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "biz_id": 18446744073709551615, "biz_type": 7,
		"fire_at": "2030-01-02T03:04:05.678+01:00", `+cb+`, "payload": {"order": 1, "items": [1, 2]}, "max_attempts": 3}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	if a.body["status"] != "pending" || a.body["topic"] != "orders" || a.body["fire_at"] != "2030-01-02T02:04:05.678Z" {
		t.Errorf("create answer: %s", a.raw)
	}
	g := e.call(t, "GET", "/v1/jobs/"+id, "")
	if g.status != http.StatusOK {
		t.Fatalf("get: %d %s", g.status, g.raw)
	}
	var job struct {
		ID          string          `json:"id"`
		BizID       string          `json:"biz_id"`
		BizType     string          `json:"biz_type"`
		MaxAttempts int             `json:"max_attempts"`
		Payload     json.RawMessage `json:"payload"`
		Status      string          `json:"status"`
		CallbackURL string          `json:"callback_url"`
		CreatedAt   string          `json:"created_at"`
	}
	if err := json.Unmarshal(g.raw, &job); err != nil {
		t.Fatal(err)
	}
	// 64-bit integers are written as decimal strings.
	if job.ID != id || job.BizID != "18446744073709551615" || job.BizType != "7" || job.MaxAttempts != 3 ||
		string(job.Payload) != `{"order":1,"items":[1,2]}` || job.Status != "pending" ||
		job.CallbackURL != "http://127.0.0.1:9/hook" || job.CreatedAt == "" {
		t.Errorf("get answer: %s", g.raw)
	}
	// A decimal string is read as well as a number.
	s := e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "biz_id": "18446744073709551614", "biz_type": "0", "delay_ms": 1, `+cb+`}`)
	if s.status != http.StatusCreated || s.body["biz_id"] != "18446744073709551614" || s.body["biz_type"] != "0" {
		t.Errorf("create with string ids: %d %s", s.status, s.raw)
	}

	// delay_ms, the default max_attempts, a payload that is not an object.
	a = e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "delay_ms": 0, `+cb+`, "payload": "text"}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create with delay: %d %s", a.status, a.raw)
	}
	g = e.call(t, "GET", "/v1/jobs/"+a.body["id"].(string), "")
	if g.body["max_attempts"] != float64(timer.DefaultMaxAttempts) || g.body["payload"] != "text" || g.body["window_ms"] != float64(0) {
		t.Errorf("defaults: %s", g.raw)
	}

	// A flexible window is kept and shown.
	a = e.call(t, "POST", "/v1/jobs", `{"topic": "orders", "delay_ms": 1000, "window_ms": 60000, `+cb+`}`)
	if a.status != http.StatusCreated || a.body["window_ms"] != float64(60000) {
		t.Fatalf("create with a window: %d %s", a.status, a.raw)
	}
	if g = e.call(t, "GET", "/v1/jobs/"+a.body["id"].(string), ""); g.body["window_ms"] != float64(60000) {
		t.Errorf("get with a window: %s", g.raw)
	}
}

func TestCreateJobRejectsBadInput(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{MaxBodyBytes: 100 << 10}, nil)
	big := `"` + strings.Repeat("x", timer.MaxPayloadBytes) + `"`
	tests := []struct {
		name, body, field string
		status            int
		code              string
	}{
		{"empty body", ``, "", 400, tochttp.CodeInvalid},
		{"malformed", `{"topic": `, "", 400, tochttp.CodeInvalid},
		{"not an object", `[1, 2]`, "", 400, tochttp.CodeInvalid},
		{"trailing data", `{"topic": "a", "delay_ms": 1, ` + cb + `} {}`, "", 400, tochttp.CodeInvalid},
		{"unknown field", `{"topic": "a", "delay_ms": 1, ` + cb + `, "colour": "red"}`, "colour", 400, tochttp.CodeInvalid},
		{"no topic", `{"delay_ms": 1, ` + cb + `}`, "topic", 400, tochttp.CodeInvalid},
		{"bad topic", `{"topic": "Upper", "delay_ms": 1, ` + cb + `}`, "topic", 400, tochttp.CodeInvalid},
		{"topic wrong type", `{"topic": 5, "delay_ms": 1, ` + cb + `}`, "topic", 400, tochttp.CodeInvalid},
		{"negative biz_id", `{"topic": "a", "biz_id": -1, "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id too big", `{"topic": "a", "biz_id": 18446744073709551616, "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id fraction", `{"topic": "a", "biz_id": 1.5, "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id string too big", `{"topic": "a", "biz_id": "18446744073709551616", "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id string signed", `{"topic": "a", "biz_id": "+1", "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id string padded", `{"topic": "a", "biz_id": " 1", "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id string empty", `{"topic": "a", "biz_id": "", "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_id string leading zero", `{"topic": "a", "biz_id": "007", "delay_ms": 1, ` + cb + `}`, "biz_id", 400, tochttp.CodeInvalid},
		{"biz_type object", `{"topic": "a", "biz_type": {}, "delay_ms": 1, ` + cb + `}`, "biz_type", 400, tochttp.CodeInvalid},
		{"no time", `{"topic": "a", ` + cb + `}`, "fire_at", 400, tochttp.CodeInvalid},
		{"both times", `{"topic": "a", "delay_ms": 1, "fire_at": "2030-01-01T00:00:00Z", ` + cb + `}`, "fire_at", 400, tochttp.CodeInvalid},
		{"bad fire_at", `{"topic": "a", "fire_at": "tomorrow", ` + cb + `}`, "fire_at", 400, tochttp.CodeInvalid},
		{"negative delay", `{"topic": "a", "delay_ms": -5, ` + cb + `}`, "delay_ms", 400, tochttp.CodeInvalid},
		{"huge delay", `{"topic": "a", "delay_ms": 9223372036854775807, ` + cb + `}`, "delay_ms", 400, tochttp.CodeInvalid},
		{"no callback", `{"topic": "a", "delay_ms": 1}`, "callback_url", 400, tochttp.CodeInvalid},
		{"ftp callback", `{"topic": "a", "delay_ms": 1, "callback_url": "ftp://x/y"}`, "callback_url", 400, tochttp.CodeInvalid},
		{"max_attempts 0", `{"topic": "a", "delay_ms": 1, ` + cb + `, "max_attempts": 0}`, "max_attempts", 400, tochttp.CodeInvalid},
		{"max_attempts 65", `{"topic": "a", "delay_ms": 1, ` + cb + `, "max_attempts": 65}`, "max_attempts", 400, tochttp.CodeInvalid},
		{"long key", `{"topic": "a", "delay_ms": 1, ` + cb + `, "key": "` + strings.Repeat("k", 129) + `"}`, "key", 400, tochttp.CodeInvalid},
		{"payload over 64 KiB", `{"topic": "a", "delay_ms": 1, ` + cb + `, "payload": ` + big + `}`, "payload", 400, tochttp.CodeInvalid},
		{"body over the limit", `{"topic": "a", "delay_ms": 1, ` + cb + `, "payload": "` + strings.Repeat("x", 120<<10) + `"}`, "", 413, tochttp.CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.call(t, "POST", "/v1/jobs", tt.body).wantError(t, tt.status, tt.code, tt.field)
		})
	}
	if n, err := e.store.CountByStatus(t.Context(), "a"); err != nil || n[timer.StatusPending] != 0 {
		t.Errorf("bad requests wrote jobs: %v %v", n, err)
	}
}

func TestCreateJobRefusesPrivateCallbacks(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	// newAPIEnv allows private callbacks; build one that does not.
	api := mustAPI(t, e.eng, nil, nil, tochttp.APIConfig{})
	srv := httptest.NewServer(api)
	defer srv.Close()
	strict := &apiEnv{srv: srv}
	strict.call(t, "POST", "/v1/jobs", `{"topic": "a", "delay_ms": 1, `+cb+`}`).wantError(t, 400, tochttp.CodeInvalid, "callback_url")
	strict.call(t, "POST", "/v1/jobs", `{"topic": "a", "delay_ms": 1, "callback_url": "http://10.1.2.3/x"}`).wantError(t, 400, tochttp.CodeInvalid, "callback_url")
}

func TestIdempotencyKey(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	body := `{"topic": "pay", "key": "order-1", "delay_ms": 60000, ` + cb + `, "payload": {"a": 1}}`
	first := e.call(t, "POST", "/v1/jobs", body)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.raw)
	}
	again := e.call(t, "POST", "/v1/jobs", body)
	if again.status != http.StatusOK || again.body["id"] != first.body["id"] {
		t.Fatalf("same key and content: %d %s, want 200 with id %v", again.status, again.raw, first.body["id"])
	}
	e.call(t, "POST", "/v1/jobs", `{"topic": "pay", "key": "order-1", "delay_ms": 60000, `+cb+`, "payload": {"a": 2}}`).
		wantError(t, http.StatusConflict, tochttp.CodeConflict, "")
	// The same key in another topic is another job.
	other := e.call(t, "POST", "/v1/jobs", `{"topic": "ship", "key": "order-1", "delay_ms": 60000, `+cb+`, "payload": {"a": 1}}`)
	if other.status != http.StatusCreated || other.body["id"] == first.body["id"] {
		t.Fatalf("other topic: %d %s", other.status, other.raw)
	}
	// An absolute fire_at is part of the content.
	at := `{"topic": "pay", "key": "k2", "fire_at": "2031-01-01T00:00:00Z", ` + cb + `}`
	if a := e.call(t, "POST", "/v1/jobs", at); a.status != http.StatusCreated {
		t.Fatalf("k2: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/jobs", strings.Replace(at, "2031", "2032", 1)).wantError(t, http.StatusConflict, tochttp.CodeConflict, "")
}

func TestBatch(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	// All or nothing: see batch_test.go for refused batches.
	a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [
		{"topic": "b", "delay_ms": 1000, `+cb+`},
		{"topic": "b", "key": "x", "delay_ms": 1000, `+cb+`},
		{"topic": "b", "key": "x", "delay_ms": 1000, `+cb+`}
	]}`)
	if a.status != http.StatusOK {
		t.Fatalf("batch: %d %s", a.status, a.raw)
	}
	res := a.body["results"].([]any)
	if len(res) != 3 {
		t.Fatalf("%d results: %s", len(res), a.raw)
	}
	item := func(i int) map[string]any { return res[i].(map[string]any) }
	if item(0)["id"] == nil || item(0)["status"] != "pending" || item(0)["created"] != true {
		t.Errorf("item 0: %v", item(0))
	}
	if item(1)["id"] == nil || item(2)["id"] != item(1)["id"] || item(2)["created"] != false {
		t.Errorf("items 1 and 2 share a key: %v %v", item(1), item(2))
	}

	var many []string
	for range tochttp.MaxBatchJobs + 1 {
		many = append(many, `{"topic": "b", "delay_ms": 1, `+cb+`}`)
	}
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+strings.Join(many, ",")+`]}`).wantError(t, 400, tochttp.CodeInvalid, "jobs")
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": []}`).wantError(t, 400, tochttp.CodeInvalid, "jobs")
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": {}}`).wantError(t, 400, tochttp.CodeInvalid, "jobs")

	full := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+strings.Join(many[:tochttp.MaxBatchJobs], ",")+`]}`)
	if full.status != http.StatusOK || len(full.body["results"].([]any)) != tochttp.MaxBatchJobs {
		t.Fatalf("batch of %d: %d", tochttp.MaxBatchJobs, full.status)
	}
}

func TestGetCancelReschedule(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	id := e.call(t, "POST", "/v1/jobs", `{"topic": "c", "delay_ms": 60000, `+cb+`}`).body["id"].(string)

	e.call(t, "GET", "/v1/jobs/abc", "").wantError(t, 400, tochttp.CodeInvalid, "id")
	e.call(t, "GET", "/v1/jobs/0", "").wantError(t, 400, tochttp.CodeInvalid, "id")
	e.call(t, "GET", "/v1/jobs/99999999999999999999", "").wantError(t, 400, tochttp.CodeInvalid, "id")
	e.call(t, "GET", "/v1/jobs/12345", "").wantError(t, 404, tochttp.CodeNotFound, "")

	p := e.call(t, "PATCH", "/v1/jobs/"+id, `{"fire_at": "2035-05-05T05:05:05.5Z"}`)
	if p.status != http.StatusOK || p.body["fire_at"] != "2035-05-05T05:05:05.500Z" {
		t.Fatalf("reschedule: %d %s", p.status, p.raw)
	}
	e.call(t, "PATCH", "/v1/jobs/"+id, `{}`).wantError(t, 400, tochttp.CodeInvalid, "fire_at")
	e.call(t, "PATCH", "/v1/jobs/"+id, ``).wantError(t, 400, tochttp.CodeInvalid, "")
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"delay_ms": "soon"}`).wantError(t, 400, tochttp.CodeInvalid, "delay_ms")
	e.call(t, "PATCH", "/v1/jobs/12345", `{"delay_ms": 5}`).wantError(t, 404, tochttp.CodeNotFound, "")

	c := e.call(t, "DELETE", "/v1/jobs/"+id, "")
	if c.status != http.StatusOK || c.body["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", c.status, c.raw)
	}
	e.call(t, "DELETE", "/v1/jobs/"+id, "").wantError(t, 409, tochttp.CodeConflict, "")
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"delay_ms": 5}`).wantError(t, 409, tochttp.CodeConflict, "")
	e.call(t, "DELETE", "/v1/jobs/12345", "").wantError(t, 404, tochttp.CodeNotFound, "")
}

func TestDeadLetters(t *testing.T) {
	fail := timer.HandlerFunc(func(context.Context, timer.Delivery) error { return errors.New("nope") })
	e := newAPIEnv(t, tochttp.APIConfig{}, fail)
	e.run(t)
	var ids []string
	for range 3 {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "d", "delay_ms": 0, "max_attempts": 1, `+cb+`}`)
		ids = append(ids, a.body["id"].(string))
	}
	// Wait until all three are listed as dead letters.
	var items []any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		l := e.call(t, "GET", "/v1/deadletters?topic=d", "")
		if l.status != http.StatusOK {
			t.Fatalf("list: %d %s", l.status, l.raw)
		}
		if items, _ = l.body["jobs"].([]any); len(items) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead letters: %s", l.raw)
		}
	}
	// Each with when it died: its last change, in the API's time format.
	for _, it := range items {
		j := it.(map[string]any)
		if j["status"] != "dead" || j["last_error"] != "nope" || !slices.Contains(ids, j["id"].(string)) {
			t.Errorf("dead letter %v", j)
		}
		if died, _ := j["died_at"].(string); died != j["updated_at"] || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(died) {
			t.Errorf("dead letter %v died_at %q, want its updated_at, RFC 3339 in ms", j["id"], died)
		}
	}
	// Paging: one at a time, each once, by cursor or by after, its former
	// name.
	for _, param := range []string{"cursor", "after"} {
		var seen []string
		for cursor := ""; ; {
			l := e.call(t, "GET", "/v1/deadletters?topic=d&limit=1&"+param+"="+cursor, "")
			for _, it := range l.body["jobs"].([]any) {
				seen = append(seen, it.(map[string]any)["id"].(string))
			}
			if cursor = l.body["next_cursor"].(string); cursor == "" {
				break
			}
		}
		slices.Sort(seen)
		sorted := slices.Sorted(slices.Values(ids))
		if !slices.Equal(seen, sorted) {
			t.Errorf("paged by %s %v, want %v", param, seen, sorted)
		}
	}
	e.call(t, "GET", "/v1/deadletters?topic=D", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "GET", "/v1/deadletters?topic=ghost", "").wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "GET", "/v1/deadletters?topic=d&limit=0", "").wantError(t, 400, tochttp.CodeInvalid, "limit")
	e.call(t, "GET", "/v1/deadletters?topic=d&limit=x", "").wantError(t, 400, tochttp.CodeInvalid, "limit")
	e.call(t, "GET", "/v1/deadletters?topic=d&cursor=garbage", "").wantError(t, 400, tochttp.CodeInvalid, "cursor")
	e.call(t, "GET", "/v1/deadletters?topic=d&after=garbage", "").wantError(t, 400, tochttp.CodeInvalid, "after")
	e.call(t, "GET", "/v1/deadletters?topic=d&after=&cursor=", "").wantError(t, 400, tochttp.CodeInvalid, "after")
	// A parameter given twice or not one of the route's is refused, not
	// ignored.
	e.call(t, "GET", "/v1/deadletters?topic=d&topic=e", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "GET", "/v1/deadletters?topic=d&limit=1&limit=2", "").wantError(t, 400, tochttp.CodeInvalid, "limit")
	e.call(t, "GET", "/v1/deadletters?topic=d&status=dead", "").wantError(t, 400, tochttp.CodeInvalid, "status")
	e.call(t, "GET", "/v1/deadletters?topics=d", "").wantError(t, 400, tochttp.CodeInvalid, "topics")

	// Filters: error text (case ignored) and time of death.
	if l := e.call(t, "GET", "/v1/deadletters?topic=d&error=NOPE", ""); len(l.body["jobs"].([]any)) != 3 {
		t.Errorf("error filter: %s", l.raw)
	}
	if l := e.call(t, "GET", "/v1/deadletters?topic=d&error=other", ""); len(l.body["jobs"].([]any)) != 0 {
		t.Errorf("error filter matching none: %s", l.raw)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	if l := e.call(t, "GET", "/v1/deadletters?topic=d&from="+future, ""); len(l.body["jobs"].([]any)) != 0 {
		t.Errorf("from an hour ahead: %s", l.raw)
	}
	e.call(t, "GET", "/v1/deadletters?topic=d&from=yesterday", "").wantError(t, 400, tochttp.CodeInvalid, "from")

	// Without a topic: the dead letters of every topic, in the order they
	// died, paged the same way; a topic without any adds none.
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "e", "delay_ms": 0, "max_attempts": 1, `+cb+`}`)
	e.call(t, "POST", "/v1/jobs", `{"topic": "quiet", "delay_ms": 3600000, `+cb+`}`)
	other := a.body["id"].(string)
	waitStatus(t, e, other, "dead")
	var seen, died []string
	for cursor := ""; ; {
		l := e.call(t, "GET", "/v1/deadletters?limit=2&cursor="+cursor, "")
		if l.status != http.StatusOK {
			t.Fatalf("list without topic: %d %s", l.status, l.raw)
		}
		for _, it := range l.body["jobs"].([]any) {
			seen = append(seen, it.(map[string]any)["id"].(string))
			died = append(died, it.(map[string]any)["died_at"].(string))
		}
		if cursor = l.body["next_cursor"].(string); cursor == "" {
			break
		}
	}
	if want := append(slices.Clone(ids), other); !slices.Equal(slices.Sorted(slices.Values(seen)), slices.Sorted(slices.Values(want))) || !slices.IsSorted(died) {
		t.Errorf("without topic listed %v dead at %v; want %v in the order they died", seen, died, want)
	}
	if l := e.call(t, "GET", "/v1/deadletters?error=nope", ""); len(l.body["jobs"].([]any)) != 4 {
		t.Errorf("without topic, filtered by error: %s", l.raw)
	}

	// Purge one: gone from the list, its row purged (a record, not dead).
	p := e.call(t, "DELETE", "/v1/deadletters/"+ids[0], "")
	if p.status != http.StatusOK {
		t.Fatalf("purge: %d %s", p.status, p.raw)
	}
	e.call(t, "DELETE", "/v1/deadletters/"+ids[0], "").wantError(t, 409, tochttp.CodeConflict, "")
	if g := e.call(t, "GET", "/v1/jobs/"+ids[0], ""); g.body["status"] != "purged" {
		t.Errorf("purged job: %s", g.raw)
	}
	// Replay one into the future: pending, attempts reset.
	r := e.call(t, "POST", "/v1/deadletters/"+ids[1]+"/replay", `{"delay_ms": 3600000}`)
	if r.status != http.StatusOK || r.body["status"] != "pending" || r.body["attempts"] != float64(0) {
		t.Fatalf("replay: %d %s", r.status, r.raw)
	}
	e.call(t, "POST", "/v1/deadletters/"+ids[1]+"/replay", ``).wantError(t, 409, tochttp.CodeConflict, "")
	e.call(t, "POST", "/v1/deadletters/12345/replay", ``).wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "POST", "/v1/deadletters/"+ids[2]+"/replay", `{"delay_ms": -1}`).wantError(t, 400, tochttp.CodeInvalid, "delay_ms")
	// A replay without a body is due now.
	if r := e.call(t, "POST", "/v1/deadletters/"+ids[2]+"/replay", ``); r.status != http.StatusOK {
		t.Fatalf("replay without body: %d %s", r.status, r.raw)
	}
	if l := e.call(t, "GET", "/v1/deadletters?topic=d", ""); len(l.body["jobs"].([]any)) > 1 {
		t.Errorf("after purge and replays: %s", l.raw)
	}
}

func TestAuth(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{Tokens: []string{"s3cret", "other"}}, nil)
	e.call(t, "GET", "/v1/jobs/1", "").wantError(t, 401, tochttp.CodeUnauthenticated, "")
	a := e.call(t, "GET", "/v1/jobs/1", "", "Authorization", "Bearer wrong")
	a.wantError(t, 401, tochttp.CodeUnauthenticated, "")
	if a.header.Get("WWW-Authenticate") == "" {
		t.Error("401 without WWW-Authenticate")
	}
	e.call(t, "GET", "/v1/jobs/1", "", "Authorization", "s3cret").wantError(t, 401, tochttp.CodeUnauthenticated, "")
	e.call(t, "GET", "/v1/jobs/1", "", "Authorization", "Bearer s3cret").wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "GET", "/v1/jobs/1", "", "Authorization", "Bearer other").wantError(t, 404, tochttp.CodeNotFound, "")
	for _, path := range []string{"/healthz", "/readyz", "/v1/openapi.json"} {
		if a := e.call(t, "GET", path, ""); a.status != http.StatusOK {
			t.Errorf("%s without a token: %d", path, a.status)
		}
	}
	// Without tokens, auth is off.
	open := newAPIEnv(t, tochttp.APIConfig{}, nil)
	open.call(t, "GET", "/v1/jobs/1", "").wantError(t, 404, tochttp.CodeNotFound, "")
}

func TestReadyAndStats(t *testing.T) {
	down := errors.New("connection refused")
	var failing error
	e := newAPIEnv(t, tochttp.APIConfig{Ready: map[string]func(context.Context) error{
		"task_store": func(context.Context) error { return nil },
		"redis":      func(context.Context) error { return failing },
	}}, nil)
	if a := e.call(t, "GET", "/readyz", ""); a.status != http.StatusOK {
		t.Fatalf("ready: %d %s", a.status, a.raw)
	}
	failing = down
	a := e.call(t, "GET", "/readyz", "")
	if a.status != http.StatusServiceUnavailable || !bytes.Contains(a.raw, []byte("connection refused")) {
		t.Fatalf("not ready: %d %s", a.status, a.raw)
	}

	s := e.call(t, "GET", "/v1/topics/orders/stats", "")
	if s.status != http.StatusOK || s.body["pending"] != float64(3) || s.body["in_flight"] != float64(1) ||
		s.body["dead"] != float64(2) || s.body["oldest_overdue_ms"].(float64) <= 0 ||
		s.body["counted_at"] != "1970-01-01T00:00:02.000Z" || s.body["counts_estimated"] != true {
		t.Fatalf("stats: %d %s", s.status, s.raw)
	}
	e.call(t, "GET", "/v1/topics/unknown/stats", "").wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "GET", "/v1/topics/BAD/stats", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.stats.err = errors.New("redis: connection refused")
	e.call(t, "GET", "/v1/topics/orders/stats", "").wantError(t, 503, tochttp.CodeUnavailable, "")
	e.call(t, "GET", "/v1/nowhere", "").wantError(t, 404, tochttp.CodeNotFound, "")
	if c := e.call(t, "GET", "/v1/cluster", ""); c.status != http.StatusOK || c.body["mode"] != "standalone" {
		t.Errorf("cluster: %d %s", c.status, c.raw)
	}
	clustered := mustAPI(t, e.eng, nil, nil, tochttp.APIConfig{Cluster: func() any { return map[string]int{"version": 7} }})
	rec := httptest.NewRecorder()
	clustered.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/cluster", nil))
	if !strings.Contains(rec.Body.String(), `"mode":"cluster","status":{"version":7}`) {
		t.Errorf("cluster mode: %s", rec.Body)
	}
}

// The OpenAPI document lists exactly the router's routes.
func TestOpenAPIMatchesRouter(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{Metrics: http.NotFoundHandler()}, nil)
	a := e.call(t, "GET", "/v1/openapi.json", "")
	if a.status != http.StatusOK {
		t.Fatalf("openapi: %d", a.status)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(a.raw, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi document: %v %q", err, doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	routed := map[string]bool{}
	err := chi.Walk(e.api.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed[method+" "+strings.TrimSuffix(route, "/")] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range routed {
		if !documented[r] {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for d := range documented {
		if !routed[d] {
			t.Errorf("openapi.json documents %s, which is not routed", d)
		}
	}
}

func TestPanicIsNot500(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	e.stats.err = nil
	api := mustAPI(t, e.eng, nil, panicStats{}, tochttp.APIConfig{})
	srv := httptest.NewServer(api)
	defer srv.Close()
	(&apiEnv{srv: srv}).call(t, "GET", "/v1/topics/x/stats", "").wantError(t, 503, tochttp.CodeUnavailable, "")
}

type panicStats struct{}

func (panicStats) TopicStats(context.Context, string) (tochttp.TopicStats, error) { panic("boom") }
func (panicStats) TopicUsage(context.Context, timer.Topic) (timer.Usage, error) {
	panic("boom")
}

func TestTopics(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	a := e.call(t, "PUT", "/v1/topics/pay", `{"slots": 64, "max_attempts": 3}`)
	if a.status != http.StatusCreated || a.body["slots"] != float64(64) || a.body["max_attempts"] != float64(3) {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	// PUT replaces the settings: an omitted max_attempts is the default.
	if a := e.call(t, "PUT", "/v1/topics/pay", `{"slots": 64}`); a.status != http.StatusOK || a.body["max_attempts"] != float64(timer.DefaultMaxAttempts) {
		t.Fatalf("same slots: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "PUT", "/v1/topics/pay", `{"max_attempts": 7}`); a.status != http.StatusOK || a.body["max_attempts"] != float64(7) || a.body["slots"] != float64(64) {
		t.Fatalf("update: %d %s", a.status, a.raw)
	}
	e.call(t, "PUT", "/v1/topics/pay", `{"slots": 128}`).wantError(t, 409, tochttp.CodeConflict, "")
	e.call(t, "PUT", "/v1/topics/pay", `{"slots": 3}`).wantError(t, 400, tochttp.CodeInvalid, "slots")
	e.call(t, "PUT", "/v1/topics/pay", `{"slots": 0}`).wantError(t, 400, tochttp.CodeInvalid, "slots")
	e.call(t, "PUT", "/v1/topics/pay", `{"max_attempts": 65}`).wantError(t, 400, tochttp.CodeInvalid, "max_attempts")
	e.call(t, "PUT", "/v1/topics/pay", `{"colour": 1}`).wantError(t, 400, tochttp.CodeInvalid, "colour")
	e.call(t, "PUT", "/v1/topics/Pay", `{}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
	// Without a body: created with the defaults.
	if a := e.call(t, "PUT", "/v1/topics/plain", ``); a.status != http.StatusCreated || a.body["slots"] != float64(timer.DefaultSlots) {
		t.Fatalf("create with defaults: %d %s", a.status, a.raw)
	}
	// A job takes its topic's max_attempts unless it gives its own.
	j := e.call(t, "POST", "/v1/jobs", `{"topic": "pay", "delay_ms": 60000, `+cb+`}`)
	if j.status != http.StatusCreated || j.body["max_attempts"] != float64(7) {
		t.Fatalf("job of pay: %d %s", j.status, j.raw)
	}
	if g := e.call(t, "GET", "/v1/topics/pay", ""); g.status != http.StatusOK || g.body["name"] != "pay" {
		t.Fatalf("get: %d %s", g.status, g.raw)
	}
	e.call(t, "GET", "/v1/topics/nope", "").wantError(t, 404, tochttp.CodeNotFound, "")
	l := e.call(t, "GET", "/v1/topics", "")
	if items, _ := l.body["topics"].([]any); l.status != http.StatusOK || len(items) != 2 {
		t.Fatalf("list: %d %s", l.status, l.raw)
	}
}

// PUT /v1/topics/{topic} sets every limit, replaces them all, refuses a
// bad one naming its field, and the worker applies them at once: a topic
// with max_in_flight 2 never has more than 2 calls running, and GET shows
// them as usage.
func TestTopicLimits(t *testing.T) {
	var running, most atomic.Int64
	release := make(chan struct{})
	e := newAPIEnv(t, tochttp.APIConfig{}, timer.HandlerFunc(func(ctx context.Context, d timer.Delivery) error {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	e.run(t)
	full := `{"slots": 4, "max_attempts": 5, "rate_limit": 2000.5, "burst": 100, "max_in_flight": 2, "weight": 3,
		"retry": {"base_ms": 250, "max_ms": 60000}, "lease_ms": 45000, "callback_timeout_ms": 20000}`
	a := e.call(t, "PUT", "/v1/topics/slow", full)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	want := map[string]any{"rate_limit": 2000.5, "burst": 100.0, "max_in_flight": 2.0, "weight": 3.0,
		"lease_ms": 45000.0, "callback_timeout_ms": 20000.0, "max_attempts": 5.0}
	for k, v := range want {
		if a.body[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, a.body[k], v, a.raw)
		}
	}
	if r, _ := a.body["retry"].(map[string]any); r["base_ms"] != 250.0 || r["max_ms"] != 60000.0 {
		t.Errorf("retry = %v", a.body["retry"])
	}

	for range 5 {
		if a := e.call(t, "POST", "/v1/jobs", `{"topic": "slow", "delay_ms": 0, "priority": "high", `+cb+`}`); a.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	g := e.call(t, "GET", "/v1/topics/slow", "")
	u, _ := g.body["usage"].(map[string]any)
	if g.status != http.StatusOK || u["in_flight"] != 2.0 {
		t.Fatalf("GET while 2 calls run: %d %s", g.status, g.raw)
	}
	// The two calls started are counted by how late they were: within
	// this test's clock, well under the 60 s bucket.
	if n, p99 := u["lateness_calls"], u["lateness_p99_ms"]; n == nil || n.(float64) < 2 || p99 == nil || p99.(float64) >= 60000 {
		t.Errorf("lateness of the calls started: %s", g.raw)
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong third call to start
	close(release)
	if m := most.Load(); m != 2 {
		t.Errorf("at most %d calls ran at once, want max_in_flight 2", m)
	}

	// PUT replaces: what is omitted goes back to the default.
	a = e.call(t, "PUT", "/v1/topics/slow", `{"rate_limit": 10}`)
	if a.status != http.StatusOK || a.body["max_in_flight"] != 0.0 || a.body["weight"] != 1.0 || a.body["rate_limit"] != 10.0 ||
		a.body["lease_ms"] != float64(timer.DefaultLease.Milliseconds()) {
		t.Fatalf("replace: %d %s", a.status, a.raw)
	}
	for body, field := range map[string]string{
		`{"rate_limit": -1}`:                              "rate_limit",
		`{"rate_limit": "fast"}`:                          "rate_limit",
		`{"burst": -2}`:                                   "burst",
		`{"max_in_flight": 100000000}`:                    "max_in_flight",
		`{"weight": 5000}`:                                "weight",
		`{"retry": {"base_ms": -1}}`:                      "retry.base_ms",
		`{"retry": {"base_ms": 5000, "max_ms": 100}}`:     "retry.base_ms",
		`{"retry": {"tries": 3}}`:                         "retry.tries",
		`{"lease_ms": 5000, "callback_timeout_ms": 4000}`: "lease_ms",
		`{"callback_timeout_ms": 999999999999}`:           "callback_timeout_ms",
	} {
		e.call(t, "PUT", "/v1/topics/slow", body).wantError(t, 400, tochttp.CodeInvalid, field)
	}
	if g := e.call(t, "GET", "/v1/topics/slow", ""); g.body["rate_limit"] != 10.0 {
		t.Errorf("a refused PUT changed the topic: %s", g.raw)
	}
}

// A job's priority is stored and shown; a bad one is refused by name.
func TestJobPriority(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	for in, want := range map[string]string{`"priority": "high", `: "high", `"priority": "low", `: "low", ``: "normal"} {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "p", "delay_ms": 60000, `+in+cb+`}`)
		if a.status != http.StatusCreated || a.body["priority"] != want {
			t.Fatalf("priority %q: %d %s", in, a.status, a.raw)
		}
		if g := e.call(t, "GET", "/v1/jobs/"+a.body["id"].(string), ""); g.body["priority"] != want {
			t.Fatalf("GET priority %q: %s", in, g.raw)
		}
	}
	e.call(t, "POST", "/v1/jobs", `{"topic": "p", "delay_ms": 1, "priority": "urgent", `+cb+`}`).wantError(t, 400, tochttp.CodeInvalid, "priority")
	e.call(t, "POST", "/v1/jobs", `{"topic": "p", "delay_ms": 1, "priority": 1, `+cb+`}`).wantError(t, 400, tochttp.CodeInvalid, "priority")
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "p", "delay_ms": 1, "priority": "top", `+cb+`}]}`)
	if b.status != http.StatusBadRequest || !strings.Contains(string(b.raw), `"field":"priority"`) {
		t.Fatalf("batch with a bad priority: %d %s", b.status, b.raw)
	}
}

// With auto-creation off, a job of an unknown topic is refused, naming
// the field, and written nowhere.
func TestNoAutoCreateTopics(t *testing.T) {
	ctx := t.Context()
	store, err := taskdb.OpenSQLite(ctx, filepath.Join(t.TempDir(), "toc.db"), taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	queue, err := prepare.New(rdb, prepare.Config{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := timer.New(store, queue, timer.HandlerFunc(func(context.Context, timer.Delivery) error { return nil }),
		timer.Config{Scheduler: timer.SchedulerConfig{NoAutoCreate: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mustAPI(t, eng, nil, nil, tochttp.APIConfig{AllowPrivateCallbacks: true}))
	defer srv.Close()
	e := &apiEnv{srv: srv}
	e.call(t, "POST", "/v1/jobs", `{"topic": "ghost", "delay_ms": 1, `+cb+`}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
	if _, err := store.Topic(ctx, "ghost"); !errors.Is(err, timer.ErrNotFound) {
		t.Fatalf("the topic was created: %v", err)
	}
	if a := e.call(t, "PUT", "/v1/topics/ghost", `{}`); a.status != http.StatusCreated {
		t.Fatalf("put: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/jobs", `{"topic": "ghost", "delay_ms": 1, `+cb+`}`); a.status != http.StatusCreated {
		t.Fatalf("after PUT: %d %s", a.status, a.raw)
	}
}

func mustAPI(t testing.TB, jobs tochttp.Jobs, dead tochttp.DeadLetters, stats tochttp.Stats, cfg tochttp.APIConfig) *tochttp.API {
	t.Helper()
	api, err := tochttp.NewAPI(jobs, dead, stats, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

func TestAPIConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg   tochttp.APIConfig
		field string
	}{
		{tochttp.APIConfig{MaxBodyBytes: -1}, "MaxBodyBytes"},
		{tochttp.APIConfig{MaxBatchBodyBytes: -1}, "MaxBatchBodyBytes"},
		{tochttp.APIConfig{Tokens: []string{"t0k3n", ""}}, "Tokens"},
		{tochttp.APIConfig{TopicDefaults: timer.Limits{Weight: -1}}, "TopicDefaults"},
	} {
		_, err := tochttp.NewAPI(nil, nil, nil, tt.cfg)
		var fe *timer.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("NewAPI(%+v) = %v, want a field error naming %s", tt.cfg, err, tt.field)
		}
	}
	if _, err := tochttp.NewAPI(nil, nil, nil, tochttp.APIConfig{}); err != nil {
		t.Errorf("the zero APIConfig: %v", err)
	}
}
