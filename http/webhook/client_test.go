package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toc-project/toc/http/metrics"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// testSecret is the example secret of the Standard Webhooks specification.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// testDue is 2026-01-02T15:04:05.250Z.
var testDue = time.UnixMilli(1767366245250)

// received is one request as a test server saw it.
type received struct {
	header http.Header
	body   []byte
	path   string
}

// recorder is a test receiver: it records each request and answers with
// the status of its reply func (200 when nil).
type recorder struct {
	mu    sync.Mutex
	reqs  []received
	reply func(w http.ResponseWriter, r *http.Request)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, received{header: r.Header.Clone(), body: body, path: r.URL.Path})
	rec.mu.Unlock()
	if rec.reply != nil {
		rec.reply(w, r)
	}
}

func (rec *recorder) all() []received {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]received(nil), rec.reqs...)
}

func (rec *recorder) last(t testing.TB) received {
	t.Helper()
	reqs := rec.all()
	if len(reqs) == 0 {
		t.Fatal("the receiver got no request")
	}
	return reqs[len(reqs)-1]
}

func newServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a Client allowed to reach the loopback test servers,
// signing with testSecret unless cfg says otherwise.
func newClient(t testing.TB, cfg webhook.Config) *webhook.Client {
	t.Helper()
	if cfg.Secrets == nil {
		cfg.Secrets = []string{testSecret}
	}
	cfg.AllowPrivate = true
	wh, err := webhook.NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(wh.CloseIdleConnections)
	return wh
}

func testJob(callbackURL string) *timer.Job {
	return &timer.Job{
		ID:          1234567890123,
		Topic:       "orders",
		Key:         "order-42",
		BizID:       42,
		BizType:     7,
		DueAt:       testDue,
		CallbackURL: callbackURL,
		Payload:     []byte(`{"order": 42, "note": "<a&b>"}`),
	}
}

func delivery(j *timer.Job, attempt int) timer.Delivery {
	return timer.Delivery{Job: j, Attempt: attempt, At: j.DueAt}
}

func TestWebhookRequest(t *testing.T) {
	rec := &recorder{}
	srv := newServer(t, rec)
	now := testDue.Add(1500 * time.Millisecond)
	wh := newClient(t, webhook.Config{UserAgent: "toc/1.2.3", Now: func() time.Time { return now }})

	j := testJob(srv.URL + "/hook?token=abc")
	if err := wh.Fire(t.Context(), delivery(j, 3)); err != nil {
		t.Fatalf("Fire: %v", err)
	}
	got := rec.last(t)

	const wantBody = `{"id":"1234567890123","topic":"orders","key":"order-42","biz_id":"42","biz_type":"7",` +
		`"fire_at":"2026-01-02T15:04:05.250Z","attempt":3,"payload":{"order":42,"note":"<a&b>"}}`
	if string(got.body) != wantBody {
		t.Errorf("body\n got %s\nwant %s", got.body, wantBody)
	}
	for name, want := range map[string]string{
		"Content-Type":      "application/json",
		"User-Agent":        "toc/1.2.3",
		"Idempotency-Key":   "1234567890123",
		"webhook-id":        "1234567890123",
		"webhook-timestamp": strconv.FormatInt(now.Unix(), 10),
		"toc-attempt":       "3",
		"toc-due-at":        "2026-01-02T15:04:05.250Z",
		"toc-lateness-ms":   "1500",
	} {
		if v := got.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	if got.path != "/hook" {
		t.Errorf("path %q, want /hook", got.path)
	}

	// The timestamp is fixed in the past, so the library's tolerance check
	// is left out here; TestWebhookSecretRotation runs the full Verify.
	lib, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.VerifyIgnoringTimestamp(got.body, got.header); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	if err := lib.VerifyIgnoringTimestamp(append(got.body, ' '), got.header); err == nil {
		t.Error("a changed body verifies")
	}
}

func TestWebhookBody(t *testing.T) {
	tests := []struct {
		name string
		job  timer.Job
		want string
	}{
		{
			name: "minimal",
			job:  timer.Job{ID: 5, Topic: "t", DueAt: time.UnixMilli(1000)},
			want: `{"id":"5","topic":"t","fire_at":"1970-01-01T00:00:01.000Z","attempt":1,"payload":null}`,
		},
		{
			name: "payload kept as given, biz_id beyond 2^53",
			job:  timer.Job{ID: 6, Topic: "t", BizID: 1<<63 + 1, DueAt: time.UnixMilli(1), Payload: []byte(`[1,"é",null]`)},
			want: `{"id":"6","topic":"t","biz_id":"9223372036854775809","fire_at":"1970-01-01T00:00:00.001Z","attempt":1,"payload":[1,"é",null]}`,
		},
		{
			name: "due time in another zone",
			job:  timer.Job{ID: 7, Topic: "t", DueAt: testDue.In(time.FixedZone("X", 3600)), Payload: []byte(`"s"`)},
			want: `{"id":"7","topic":"t","fire_at":"2026-01-02T15:04:05.250Z","attempt":1,"payload":"s"}`,
		},
	}
	rec := &recorder{}
	srv := newServer(t, rec)
	wh := newClient(t, webhook.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := tt.job
			j.CallbackURL = srv.URL
			if err := wh.Fire(t.Context(), delivery(&j, 1)); err != nil {
				t.Fatalf("Fire: %v", err)
			}
			if got := rec.last(t).body; string(got) != tt.want {
				t.Errorf("body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// Each attempt is signed afresh, under the same webhook-id.
func TestWebhookIDStableAcrossAttempts(t *testing.T) {
	rec := &recorder{}
	srv := newServer(t, rec)
	now := testDue
	wh := newClient(t, webhook.Config{Now: func() time.Time { return now }})
	j := testJob(srv.URL)
	for attempt := 1; attempt <= 3; attempt++ {
		now = now.Add(time.Minute)
		if err := wh.Fire(t.Context(), delivery(j, attempt)); err != nil {
			t.Fatalf("attempt %d: %v", attempt, err)
		}
	}
	lib, _ := standardwebhooks.NewWebhook(testSecret)
	reqs := rec.all()
	for i, r := range reqs {
		if id := r.header.Get("webhook-id"); id != "1234567890123" {
			t.Errorf("attempt %d: webhook-id %q", i+1, id)
		}
		if a := r.header.Get("toc-attempt"); a != strconv.Itoa(i+1) {
			t.Errorf("attempt %d: toc-attempt %q", i+1, a)
		}
		if err := lib.VerifyIgnoringTimestamp(r.body, r.header); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
	}
	if len(reqs) == 3 && reqs[0].header.Get("webhook-timestamp") == reqs[2].header.Get("webhook-timestamp") {
		t.Error("every attempt has the same webhook-timestamp")
	}
}

// While a secret is rotated both sign, and either alone verifies.
func TestWebhookSecretRotation(t *testing.T) {
	rec := &recorder{}
	srv := newServer(t, rec)
	next := webhook.NewSecret()
	wh := newClient(t, webhook.Config{Secrets: []string{testSecret, next}})
	if err := wh.Fire(t.Context(), delivery(testJob(srv.URL), 1)); err != nil {
		t.Fatalf("Fire: %v", err)
	}
	got := rec.last(t)
	if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 2 {
		t.Errorf("webhook-signature has %d entries, want 2", n)
	}
	for i, secret := range []string{testSecret, next} {
		lib, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := lib.Verify(got.body, got.header); err != nil {
			t.Errorf("secret %d does not verify: %v", i, err)
		}
	}
	other, _ := standardwebhooks.NewWebhook(webhook.NewSecret())
	if err := other.Verify(got.body, got.header); err == nil {
		t.Error("an unrelated secret verifies")
	}
}

func TestWebhookNamespaceSecrets(t *testing.T) {
	rec := &recorder{}
	srv := newServer(t, rec)
	sandbox := webhook.NewSecret()
	wh := newClient(t, webhook.Config{Secrets: []string{testSecret}, NamespaceSecrets: map[string][]string{"sandbox": {sandbox}}})
	verifies := func(secret string, got received) bool {
		lib, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		return lib.Verify(got.body, got.header) == nil
	}
	for _, c := range []struct {
		topic, secret, other string
	}{
		{"sandbox.orders", sandbox, testSecret},
		{"orders", testSecret, sandbox},
		{"staging.orders", testSecret, sandbox}, // a namespace without secrets of its own
	} {
		j := testJob(srv.URL)
		j.Topic = c.topic
		if err := wh.Fire(t.Context(), delivery(j, 1)); err != nil {
			t.Fatalf("Fire: %v", err)
		}
		got := rec.last(t)
		if !verifies(c.secret, got) || verifies(c.other, got) {
			t.Errorf("a call of %s: verifies with its namespace's secret %v, with the other's %v; want true, false", c.topic, verifies(c.secret, got), verifies(c.other, got))
		}
		var body struct{ Topic string }
		if err := json.Unmarshal(got.body, &body); err != nil || body.Topic != timer.TopicName(c.topic) {
			t.Errorf("a call of %s: body topic %q (%v), want %q: the name its namespace knows", c.topic, body.Topic, err, timer.TopicName(c.topic))
		}
	}
	for _, bad := range []map[string][]string{{"sandbox": nil}, {"sandbox": {"not-a-secret"}}} {
		if _, err := webhook.NewClient(webhook.Config{Secrets: []string{testSecret}, NamespaceSecrets: bad}); err == nil || !strings.Contains(err.Error(), "NamespaceSecrets[sandbox]") {
			t.Errorf("NamespaceSecrets %v: %v, want an error naming NamespaceSecrets[sandbox]", bad, err)
		}
	}
}

func TestSignMatchesLibrary(t *testing.T) {
	key, err := webhook.ParseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	lib, _ := standardwebhooks.NewWebhook(testSecret)
	body := []byte(`{"test": 2432232314}`)
	want, _ := lib.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), body)
	if got := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body); got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
	// The specification's own example.
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; want != webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body) {
		t.Errorf("Sign differs from the specification's example %s", want)
	}
}

// A Signer signs as Sign does, call after call and from many goroutines
// at once, with ids and bodies of every length: it reuses its HMAC
// states and their buffers.
func TestSignerMatchesSign(t *testing.T) {
	key, err := webhook.ParseSecret(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	s := webhook.NewSigner(key)
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; want != s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)) {
		t.Errorf("Signer.Sign differs from the specification's example %s", want)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				id := strings.Repeat("m", (g*300+i)%150)
				body := []byte(strings.Repeat("b", i*7))
				if got, want := s.Sign(id, int64(i), body), webhook.Sign(key, id, int64(i), body); got != want {
					t.Errorf("Signer.Sign(%d-byte id, %d, %d-byte body) = %s, want %s", len(id), i, len(body), got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParseSecret(t *testing.T) {
	key, err := webhook.ParseSecret(webhook.NewSecret())
	if err != nil || len(key) != 24 {
		t.Errorf("ParseSecret(NewSecret()) = %d bytes, %v", len(key), err)
	}
	if a, b := webhook.NewSecret(), webhook.NewSecret(); a == b {
		t.Error("NewSecret repeats itself")
	}
	for _, bad := range []string{
		"",
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",        // no prefix
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",  // not base64
		"whsec_c2hvcnQ=",                          // 5 bytes
		"whsec_" + strings.Repeat("QUFB", 22),     // 66 bytes
		"whsec_ MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", // stray space
	} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) succeeded", bad)
		} else if len(bad) > 8 && strings.Contains(err.Error(), bad[6:]) {
			t.Errorf("ParseSecret error quotes the secret: %v", err)
		}
	}
}

func TestWebhookConfigValidate(t *testing.T) {
	const leaked = "whsec_notbase64!!secretvalue"
	tests := []struct {
		name  string
		cfg   webhook.Config
		field string
	}{
		{"no secrets", webhook.Config{}, "Secrets"},
		{"bad second secret", webhook.Config{Secrets: []string{testSecret, leaked}}, "Secrets[1]"},
		{"negative timeout", webhook.Config{Secrets: []string{testSecret}, Timeout: -1}, "Timeout"},
		{"negative idle conns", webhook.Config{Secrets: []string{testSecret}, MaxIdleConnsPerHost: -1}, "MaxIdleConnsPerHost"},
		{"negative response cap", webhook.Config{Secrets: []string{testSecret}, MaxResponseBytes: -1}, "MaxResponseBytes"},
		{"negative breaker cooldown", webhook.Config{Secrets: []string{testSecret}, BreakerCooldown: -1}, "BreakerCooldown"},
		{"negative breaker max cooldown", webhook.Config{Secrets: []string{testSecret}, BreakerMaxCooldown: -1}, "BreakerMaxCooldown"},
		{"breaker cooldown above its max", webhook.Config{Secrets: []string{testSecret}, BreakerCooldown: time.Minute, BreakerMaxCooldown: time.Second}, "BreakerCooldown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			fe, ok := errors.AsType[*timer.FieldError](err)
			if !ok || fe.Field != tt.field {
				t.Fatalf("Validate = %v, want a FieldError on %s", err, tt.field)
			}
			if _, err := webhook.NewClient(tt.cfg); err == nil || strings.Contains(err.Error(), "secretvalue") {
				t.Errorf("NewClient = %v", err)
			}
		})
	}
	if err := (webhook.Config{Secrets: []string{testSecret}}).Validate(); err != nil {
		t.Errorf("a minimal config is refused: %v", err)
	}
	for i, cfg := range []webhook.Config{
		{Secrets: []string{testSecret}, BreakerThreshold: -1},
		{Secrets: []string{testSecret}, BreakerCooldown: 5 * time.Minute}, // the max follows it
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate(breaker config %d) = %v", i, err)
		}
	}
}

func TestWebhookOutcomes(t *testing.T) {
	now := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name  string
		reply func(w http.ResponseWriter, r *http.Request)
		check func(t *testing.T, err error)
	}{
		{
			name:  "200",
			reply: func(w http.ResponseWriter, r *http.Request) {},
			check: wantNil,
		},
		{
			name:  "204",
			reply: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) },
			check: wantNil,
		},
		{
			name:  "410 discards",
			reply: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) },
			check: func(t *testing.T, err error) {
				if !errors.Is(err, timer.ErrDiscard) {
					t.Errorf("err = %v, want ErrDiscard", err)
				}
			},
		},
		{
			name: "429 with delta-seconds",
			reply: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			check: wantRetryAfter(7*time.Second, "429 Too Many Requests"),
		},
		{
			name: "503 with an HTTP-date",
			reply: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			check: wantRetryAfter(90*time.Second, "503 Service Unavailable"),
		},
		{
			name: "503 with a date in the past",
			reply: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", now.Add(-time.Hour).Format(http.TimeFormat))
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			check: wantRetryAfter(0, "503"),
		},
		{
			name:  "503 without Retry-After",
			reply: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
			check: wantRetryAfter(0, "503"),
		},
		{
			name: "429 with a bad Retry-After",
			reply: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "soon")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			check: wantRetryAfter(0, "429"),
		},
		{
			name: "429 asking for a century",
			reply: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "3155760000")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			check: wantRetryAfter(webhook.MaxRetryAfter, "429"),
		},
		{
			name: "500 names the status and the body, not the query",
			reply: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "boom\nstack trace", http.StatusInternalServerError)
			},
			check: func(t *testing.T, err error) {
				msg := wantPlainError(t, err)
				if !strings.HasSuffix(msg, `/hook: 500 Internal Server Error: "boom\nstack trace"`) {
					t.Errorf("err = %q", msg)
				}
			},
		},
		{
			name: "400 with a long body",
			reply: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, strings.Repeat("x", 10_000), http.StatusBadRequest)
			},
			check: func(t *testing.T, err error) {
				msg := wantPlainError(t, err)
				if !strings.Contains(msg, "400 Bad Request") || len(msg) > 300 {
					t.Errorf("err has %d bytes: %.80q…", len(msg), msg)
				}
			},
		},
		{
			name:  "unknown status",
			reply: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(599) },
			check: func(t *testing.T, err error) {
				if msg := wantPlainError(t, err); !strings.HasSuffix(msg, ": 599") {
					t.Errorf("err = %q", msg)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, &recorder{reply: tt.reply})
			wh := newClient(t, webhook.Config{Now: func() time.Time { return now }})
			err := wh.Fire(t.Context(), delivery(testJob(srv.URL+"/hook?token=s3cr3t"), 1))
			if err != nil && strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("err quotes the query: %v", err)
			}
			tt.check(t, err)
		})
	}
}

func wantNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("err = %v, want nil", err)
	}
}

func wantRetryAfter(after time.Duration, status string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		ra, ok := errors.AsType[*timer.RetryAfterError](err)
		if !ok {
			t.Fatalf("err = %v, want a RetryAfterError", err)
		}
		if ra.After != after {
			t.Errorf("After = %v, want %v", ra.After, after)
		}
		if !strings.Contains(err.Error(), status) {
			t.Errorf("err = %q, want it to name %q", err, status)
		}
	}
}

// wantPlainError checks err is a failed attempt: neither a discard nor a
// request for a later retry. It returns the message.
func wantPlainError(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("err = nil")
	}
	if errors.Is(err, timer.ErrDiscard) {
		t.Errorf("err = %v discards the job", err)
	}
	if _, ok := errors.AsType[*timer.RetryAfterError](err); ok {
		t.Errorf("err = %v asks for Retry-After", err)
	}
	return err.Error()
}

func TestWebhookNoRedirect(t *testing.T) {
	target := &recorder{}
	targetSrv := newServer(t, target)
	srv := newServer(t, &recorder{reply: func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, targetSrv.URL, http.StatusFound)
	}})
	wh := newClient(t, webhook.Config{})
	err := wh.Fire(t.Context(), delivery(testJob(srv.URL), 1))
	if msg := wantPlainError(t, err); !strings.Contains(msg, "302 Found") {
		t.Errorf("err = %q, want it to name 302 Found", msg)
	}
	if n := len(target.all()); n != 0 {
		t.Errorf("the redirect was followed (%d requests)", n)
	}
}

// Errors before any response name the endpoint but never its query,
// which may hold the receiver's token.
func TestWebhookNoResponse(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name, url, want string
	}{
		{"no callback_url", "", "no callback_url"},
		{"invalid URL", "http://[::1/hook?token=s3cr3t", "not a valid URL"},
		{"connection refused", closed.URL + "/hook?token=s3cr3t", "POST " + closed.URL + "/hook: dial tcp"},
	}
	wh := newClient(t, webhook.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wh.Fire(t.Context(), delivery(testJob(tt.url), 1))
			msg := wantPlainError(t, err)
			if !strings.Contains(msg, tt.want) || strings.Contains(msg, "s3cr3t") {
				t.Errorf("err = %q, want it to contain %q and not the query", msg, tt.want)
			}
		})
	}
}

func TestWebhookTimeout(t *testing.T) {
	// The receiver answers only when the client gives up (or at the end).
	release := make(chan struct{})
	srv := newServer(t, &recorder{reply: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}})
	t.Cleanup(func() { close(release) }) // runs before srv.Close

	tests := []struct {
		name    string
		timeout time.Duration // Config.Timeout
		ctx     time.Duration // the caller's deadline (0: none)
		least   time.Duration // Fire must not give up sooner
	}{
		{"config timeout without a deadline", 100 * time.Millisecond, 0, 100 * time.Millisecond},
		{"shorter ctx deadline", time.Minute, 100 * time.Millisecond, 100 * time.Millisecond},
		// The worker's deadline is the topic's callback timeout: honoured
		// as set, not capped by the client's default.
		{"longer ctx deadline", 50 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wh := newClient(t, webhook.Config{Timeout: tt.timeout})
			ctx := t.Context()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			start := time.Now()
			err := wh.Fire(ctx, delivery(testJob(srv.URL), 1))
			if elapsed := time.Since(start); elapsed > 5*time.Second || elapsed < tt.least {
				t.Errorf("Fire took %v, want %v or a little more", elapsed, tt.least)
			}
			wantPlainError(t, err)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want DeadlineExceeded", err)
			}
		})
	}
}

// Bodies are drained, so 20 calls in a row share one connection, whether
// they succeed or fail.
func TestWebhookReusesConnections(t *testing.T) {
	big := strings.Repeat("y", 32<<10)
	for _, tc := range []struct {
		status int
		body   string
	}{{http.StatusOK, big}, {http.StatusInternalServerError, big}, {http.StatusOK, ""}, {http.StatusNoContent, ""}} {
		status := tc.status
		t.Run(fmt.Sprintf("%d_%d_bytes", status, len(tc.body)), func(t *testing.T) {
			srv := httptest.NewUnstartedServer(&recorder{reply: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				io.WriteString(w, tc.body)
			}})
			var mu sync.Mutex
			conns := 0
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					conns++
					mu.Unlock()
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)

			wh := newClient(t, webhook.Config{})
			for i := range 20 {
				d := delivery(testJob(srv.URL), 1)
				if i%2 == 1 {
					d.Response = new(timer.Response) // the excerpt read first
				}
				err := wh.Fire(t.Context(), d)
				if (err == nil) != (status < 300) {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if conns != 1 {
				t.Errorf("20 calls opened %d connections, want 1", conns)
			}
		})
	}
}

// clock is a clock the breaker tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// flaky is a receiver that answers 500 while failing is set, else 204,
// and counts the requests it gets.
type flaky struct {
	failing atomic.Bool
	hits    atomic.Int32
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	if f.failing.Load() {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// notSent checks err defers the job because the breaker of srv's host is
// open, and returns it.
func notSent(t testing.TB, err error, srv *httptest.Server) *timer.NotSentError {
	t.Helper()
	ns, ok := errors.AsType[*timer.NotSentError](err)
	if !ok {
		t.Fatalf("err = %v, want a NotSentError", err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if !errors.Is(err, webhook.ErrBreakerOpen) || !strings.Contains(err.Error(), host) {
		t.Errorf("err = %q, want ErrBreakerOpen naming %s", err, host)
	}
	return ns
}

// A receiver that keeps failing is left alone for the cooldown, its jobs
// deferred without a call, then probed; once it recovers, calls flow.
func TestWebhookBreaker(t *testing.T) {
	recv := &flaky{}
	recv.failing.Store(true)
	srv := newServer(t, recv)
	other := newServer(t, &flaky{})
	clk := &clock{now: testDue}
	metrics := metrics.New()
	wh := newClient(t, webhook.Config{Now: clk.Now, BreakerThreshold: 3, BreakerCooldown: time.Second, Observer: metrics})
	fire := func(srv *httptest.Server) error {
		return wh.Fire(t.Context(), delivery(testJob(srv.URL+"/hook?token=s3cr3t"), 1))
	}
	wantHits := func(want int32) {
		t.Helper()
		if n := recv.hits.Load(); n != want {
			t.Fatalf("the receiver got %d requests, want %d", n, want)
		}
	}

	for range 3 {
		wantPlainError(t, fire(srv))
	}
	opened := clk.Now()
	for range 5 {
		err := fire(srv)
		ns := notSent(t, err, srv)
		// 1s ±10%, plus up to a quarter of it.
		if lo, hi := opened.Add(900*time.Millisecond), opened.Add(1375*time.Millisecond); ns.Until.Before(lo) || ns.Until.After(hi) {
			t.Errorf("Until = open +%v, want +0.9s to +1.375s", ns.Until.Sub(opened))
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("err quotes the query: %v", err)
		}
		metrics.Deferred("orders") // as the worker reports it
		metrics.Fired("orders", 1, 0, 0, err)
	}
	wantHits(3)
	if err := fire(other); err != nil {
		t.Fatalf("another host is refused: %v", err)
	}

	// The probe fails: open again, for about 2s.
	clk.Add(1200 * time.Millisecond)
	wantPlainError(t, fire(srv))
	wantHits(4)
	clk.Add(1500 * time.Millisecond)
	notSent(t, fire(srv), srv)
	wantHits(4)

	// The receiver recovers: the next probe closes the breaker.
	recv.failing.Store(false)
	clk.Add(time.Second)
	for i := range 5 {
		if err := fire(srv); err != nil {
			t.Fatalf("call %d after recovery: %v", i, err)
		}
	}
	wantHits(9)

	rec := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"toc_breaker_opened_total 2",
		`toc_breaker_rejected_total{topic="orders"} 5`,
		"toc_breaker_open_hosts 0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, "toc_jobs_fired_total{") {
		t.Error("jobs not sent are counted as attempts")
	}
}

// While the probe is in flight, other jobs for its host are deferred
// without a call.
func TestWebhookBreakerOneProbe(t *testing.T) {
	var hits atomic.Int32
	probing, release := make(chan struct{}), make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1:
			w.WriteHeader(http.StatusBadGateway)
		case 2:
			close(probing)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	clk := &clock{now: testDue}
	wh := newClient(t, webhook.Config{Now: clk.Now, BreakerThreshold: 1})
	fire := func() error { return wh.Fire(t.Context(), delivery(testJob(srv.URL), 1)) }

	wantPlainError(t, fire())
	clk.Add(2 * time.Second)
	probe := make(chan error, 1)
	go func() { probe <- fire() }()
	<-probing
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			ns := notSent(t, fire(), srv)
			if d := ns.Until.Sub(clk.Now()); d < time.Second || d > 1250*time.Millisecond {
				t.Errorf("deferred by %v while probing, want 1s to 1.25s", d)
			}
		})
	}
	wg.Wait()
	close(release)
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := fire(); err != nil {
		t.Fatalf("after the probe: %v", err)
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("the receiver got %d requests, want 3", n)
	}
}

// Answers that show the host is up never open the breaker, nor does the
// dial guard's refusal, nor anything when the breaker is disabled.
func TestWebhookBreakerNotOpened(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		threshold int
	}{
		{"302", http.StatusFound, 1},
		{"400", http.StatusBadRequest, 1},
		{"404", http.StatusNotFound, 1},
		{"410", http.StatusGone, 1},
		{"429", http.StatusTooManyRequests, 1},
		{"500 disabled", http.StatusInternalServerError, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				w.WriteHeader(tt.status)
			}))
			wh := newClient(t, webhook.Config{BreakerThreshold: tt.threshold})
			for i := range 10 {
				err := wh.Fire(t.Context(), delivery(testJob(srv.URL), 1))
				if _, ok := errors.AsType[*timer.NotSentError](err); ok {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if n := hits.Load(); n != 10 {
				t.Errorf("the receiver got %d requests, want 10", n)
			}
		})
	}
	t.Run("private address", func(t *testing.T) {
		srv := newServer(t, &recorder{})
		wh, err := webhook.NewClient(webhook.Config{Secrets: []string{testSecret}, BreakerThreshold: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := wh.Fire(t.Context(), delivery(testJob(srv.URL), 1)); !errors.Is(err, webhook.ErrPrivateAddress) {
				t.Fatalf("call %d: %v, want ErrPrivateAddress", i, err)
			}
		}
	})
}

func BenchmarkSign(b *testing.B) {
	key, err := webhook.ParseSecret(testSecret)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(strings.Repeat("x", 1<<10))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		webhook.Sign(key, "1234567890123", 1767366245, body)
	}
}

func BenchmarkSigner(b *testing.B) {
	key, err := webhook.ParseSecret(testSecret)
	if err != nil {
		b.Fatal(err)
	}
	s := webhook.NewSigner(key)
	body := []byte(strings.Repeat("x", 1<<10))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		s.Sign("1234567890123", 1767366245, body)
	}
}

func BenchmarkWebhookFire(b *testing.B) {
	srv := newServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	wh := newClient(b, webhook.Config{})
	j := testJob(srv.URL + "/hook")
	j.Payload = []byte(`{"data":"` + strings.Repeat("x", 1<<10) + `"}`)

	fire := func(b *testing.B) error {
		d := delivery(j, 1)
		d.Response = new(timer.Response) // as the executor asks
		return wh.Fire(b.Context(), d)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := fire(b); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := fire(b); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// A delivery with a Response gets the status answered and the start of
// the body, on success and on failure, and a failure's error still
// quotes the body.
func TestWebhookResponseExcerpt(t *testing.T) {
	long := strings.Repeat("x", 3000)
	tests := []struct {
		name        string
		code        int
		body        string
		wantExcerpt string
		wantErr     string
	}{
		{"success", http.StatusOK, `{"ok":true}`, `{"ok":true}`, ""},
		{"failure", http.StatusInternalServerError, "database down", "database down", `"database down"`},
		{"long body", http.StatusOK, long, long[:timer.MaxExcerptBytes], ""},
		{"no body", http.StatusNoContent, "", "", ""},
		{"success with an empty body", http.StatusOK, "", "", ""},
		{"failure without a body", http.StatusServiceUnavailable, "", "", "503 Service Unavailable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, &recorder{reply: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				_, _ = io.WriteString(w, tc.body)
			}})
			d := delivery(testJob(srv.URL), 1)
			d.Response = new(timer.Response)
			err := newClient(t, webhook.Config{}).Fire(t.Context(), d)
			if d.Response.StatusCode != tc.code || string(d.Response.Excerpt) != tc.wantExcerpt {
				t.Errorf("Response = %d %q, want %d %q", d.Response.StatusCode, d.Response.Excerpt, tc.code, tc.wantExcerpt)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one quoting %s", err, tc.wantErr)
			}
		})
	}
}
