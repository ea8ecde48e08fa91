package http_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/deadletter"
	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// stackOpts shape a real-stack API.
type stackOpts struct {
	// attemptTimeout is the worker's callback timeout (--callback-timeout)
	// and the webhook client's (default 10 s).
	attemptTimeout time.Duration
	maxCallback    time.Duration
	noAutoCreate   bool
	maxTopics      int
	// receive answers each webhook call (default: 200 at once).
	receive func(w http.ResponseWriter, r *http.Request)
}

// arrival is one webhook call the receiver got.
type arrival struct {
	id    string
	topic string
	at    time.Time
}

// stackEnv is the API over the real stack: MariaDB, redis-server, the
// webhook client calling a local receiver, the engine running.
type stackEnv struct {
	*apiEnv
	receiver string // its URL
	mu       sync.Mutex
	arrived  []arrival
}

func newStackEnv(t *testing.T, o stackOpts) *stackEnv {
	t.Helper()
	ctx := t.Context()
	store, err := taskdb.OpenMySQL(ctx, testenv.MariaDB(t).NewDatabase(t), taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	prefix := fmt.Sprintf("t%d:", time.Now().UnixNano())
	queue, err := prepare.New(rdb, prepare.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	e := &stackEnv{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ID    string `json:"id"`
			Topic string `json:"topic"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		e.mu.Lock()
		e.arrived = append(e.arrived, arrival{id: body.ID, topic: body.Topic, at: time.Now()})
		e.mu.Unlock()
		if o.receive != nil {
			o.receive(w, r)
		}
	}))
	t.Cleanup(recv.Close)
	e.receiver = recv.URL + "/hook"
	timeout := o.attemptTimeout
	if timeout == 0 {
		timeout = webhook.DefaultTimeout
	}
	key := make([]byte, 32)
	rand.Read(key)
	wh, err := webhook.NewClient(webhook.Config{
		Secrets:      []string{"whsec_" + base64.StdEncoding.EncodeToString(key)},
		Timeout:      timeout,
		AllowPrivate: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	lease := timer.LeaseFor(0, timeout)
	eng, err := timer.New(store, queue, wh, timer.Config{
		Scheduler: timer.SchedulerConfig{NoAutoCreate: o.noAutoCreate, MaxTopics: o.maxTopics},
		Worker:    timer.WorkerConfig{AttemptTimeout: timeout, Lease: lease},
	})
	if err != nil {
		t.Fatal(err)
	}
	box, err := deadletter.New(rdb, deadletter.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	api := mustAPI(t, eng, deadletter.NewLetters(box, store), nil, tochttp.APIConfig{
		AllowPrivateCallbacks: true,
		MaxCallbackTimeout:    o.maxCallback,
		Logger:                slog.New(slog.NewTextHandler(t.Output(), nil)), // shown when the test fails,
		TopicDefaults: timer.Limits{
			Retry:           timer.RetryPolicy{Base: timer.DefaultRetryBase, Max: timer.DefaultRetryMax},
			Lease:           lease,
			CallbackTimeout: timeout,
		},
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	e.apiEnv = &apiEnv{srv: srv, eng: eng, store: store, api: api}
	e.run(t)
	return e
}

// arrivals returns the calls received so far.
func (e *stackEnv) arrivals() []arrival {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]arrival(nil), e.arrived...)
}

// waitArrived waits until the receiver got n calls of topic.
func (e *stackEnv) waitArrived(t *testing.T, topic string, n int, limit time.Duration) []arrival {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var got []arrival
		for _, a := range e.arrivals() {
			if a.topic == topic {
				got = append(got, a)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls of %s arrived within %v, want %d", len(got), topic, limit, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *stackEnv) schedule(t *testing.T, topic string, fireAt time.Time, extra string) string {
	t.Helper()
	a := e.call(t, "POST", "/v1/jobs", fmt.Sprintf(`{"topic": %q, "fire_at": %q, "callback_url": %q%s}`,
		topic, fireAt.UTC().Format(time.RFC3339Nano), e.receiver, extra))
	if a.status != http.StatusCreated {
		t.Fatalf("schedule into %s: %d %s", topic, a.status, a.raw)
	}
	return a.body["id"].(string)
}

// ok checks a 2xx answer and returns it.
func ok(t *testing.T, a answer, status int) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.raw)
	}
	return a
}

// want checks the fields of a topic's JSON.
func want(t *testing.T, a answer, fields map[string]any) {
	t.Helper()
	for k, v := range fields {
		got := a.body[k]
		if k == "retry.base_ms" || k == "retry.max_ms" {
			r, _ := a.body["retry"].(map[string]any)
			got = r[strings.TrimPrefix(k, "retry.")]
		}
		if got != v {
			t.Errorf("%s = %v, want %v: %s", k, got, v, a.raw)
		}
	}
}

// PATCH merges, PUT replaces, null resets; every value given is stored
// as given or refused naming its field; the resulting whole is checked
// with the worker's defaults (callback timeout 10 s, lease 30 s).
func TestTopicPatchAndValidation(t *testing.T) {
	e := newStackEnv(t, stackOpts{maxCallback: time.Minute})
	ok(t, e.call(t, "PUT", "/v1/topics/pay", `{"slots": 8, "rate_limit": 100, "max_in_flight": 5}`), 201)

	// What is in force reads back: burst is rate_limit/10, weight 1.
	want(t, ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200), map[string]any{
		"burst": 10.0, "weight": 1.0, "lease_ms": 30000.0, "callback_timeout_ms": 10000.0, "max_attempts": 16.0,
		"retry.base_ms": 1000.0, "retry.max_ms": 600000.0, "paused": false, "lateness_slo_ms": 0.0,
	})
	// A lateness objective is set, kept by a PATCH of another field, and
	// dropped with null.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"lateness_slo_ms": 10}`), 200), map[string]any{"lateness_slo_ms": 10.0})
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"max_in_flight": 6}`), 200), map[string]any{"lateness_slo_ms": 10.0})
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"lateness_slo_ms": null, "max_in_flight": 5}`), 200), map[string]any{"lateness_slo_ms": 0.0})
	// PATCH merges: what is left out is unchanged.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"weight": 3}`), 200), map[string]any{
		"weight": 3.0, "rate_limit": 100.0, "max_in_flight": 5.0, "slots": 8.0,
	})
	// null goes back to the default.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"max_in_flight": null, "weight": null}`), 200), map[string]any{
		"weight": 1.0, "max_in_flight": 0.0, "rate_limit": 100.0,
	})
	// retry merges field by field; null resets both.
	ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retry": {"base_ms": 500}}`), 200)
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retry": {"max_ms": 9000}}`), 200), map[string]any{
		"retry.base_ms": 500.0, "retry.max_ms": 9000.0,
	})
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"retry": null}`), 200), map[string]any{
		"retry.base_ms": 1000.0, "retry.max_ms": 600000.0,
	})
	// A burst given reads back as given; a low rate's default is 1.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"burst": 30}`), 200), map[string]any{"burst": 30.0})
	want(t, ok(t, e.call(t, "PUT", "/v1/topics/slow", `{"rate_limit": 5}`), 201), map[string]any{"burst": 1.0})
	want(t, ok(t, e.call(t, "PUT", "/v1/topics/slow", `{"rate_limit": 15}`), 200), map[string]any{"burst": 1.5})
	want(t, ok(t, e.call(t, "PUT", "/v1/topics/slow", `{}`), 200), map[string]any{"burst": 0.0, "rate_limit": 0.0})

	// A callback timeout set lengthens the default lease, and shows it.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/slow", `{"callback_timeout_ms": 45000}`), 200), map[string]any{
		"callback_timeout_ms": 45000.0, "lease_ms": 47000.0,
	})

	refused := []struct{ method, body, field string }{
		// The case: one field, checked against the default 10 s.
		{"PUT", `{"lease_ms": 5000}`, "lease_ms"},
		{"PUT", `{"lease_ms": 15000, "callback_timeout_ms": 14000}`, "lease_ms"},
		{"PUT", `{"burst": 10}`, "burst"},
		{"PUT", `{"rate_limit": 100, "burst": 0}`, "burst"},
		{"PUT", `{"weight": 0}`, "weight"},
		{"PUT", `{"weight": 1001}`, "weight"},
		{"PUT", `{"max_attempts": 0}`, "max_attempts"},
		{"PUT", `{"lease_ms": 0}`, "lease_ms"},
		{"PUT", `{"callback_timeout_ms": 0}`, "callback_timeout_ms"},
		{"PUT", `{"callback_timeout_ms": 60001}`, "callback_timeout_ms"},
		{"PUT", `{"retry": {"base_ms": 0}}`, "retry.base_ms"},
		{"PUT", `{"retry": {"base_ms": 700000}}`, "retry.base_ms"},
		{"PUT", `{"retry": {"max_ms": 500}}`, "retry.max_ms"},
		{"PUT", `{"rate_limit": -1}`, "rate_limit"},
		{"PUT", `{"max_in_flight": -1}`, "max_in_flight"},
		{"PUT", `{"lateness_slo_ms": 0}`, "lateness_slo_ms"},
		{"PUT", `{"lateness_slo_ms": 3600001}`, "lateness_slo_ms"},
		{"PUT", `{"lateness_slo_ms": "10"}`, "lateness_slo_ms"},
		// PATCH: the result is checked, not the fields alone. pay has a
		// burst of 30, so dropping its rate limit leaves a burst alone.
		{"PATCH", `{"rate_limit": 0}`, "burst"},
		{"PATCH", `{"rate_limit": null}`, "burst"},
		{"PATCH", `{"lease_ms": 9000}`, "lease_ms"},
		{"PATCH", `{"slots": null}`, "slots"},
		{"PATCH", `{"colour": 1}`, "colour"},
	}
	before := ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200)
	for _, r := range refused {
		t.Run(r.method+" "+r.body, func(t *testing.T) {
			e.call(t, r.method, "/v1/topics/pay", r.body).wantError(t, 400, tochttp.CodeInvalid, r.field)
		})
	}
	if after := ok(t, e.call(t, "GET", "/v1/topics/pay", ""), 200); string(after.raw) != string(before.raw) {
		t.Errorf("a refused change changed the topic:\n%s\n%s", before.raw, after.raw)
	}
	// With both changed together the result is fine.
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"rate_limit": 0, "burst": null}`), 200), map[string]any{"burst": 0.0})
	want(t, ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"lease_ms": 15000, "callback_timeout_ms": 13000}`), 200), map[string]any{
		"lease_ms": 15000.0, "callback_timeout_ms": 13000.0,
	})
	// Then a longer timeout alone breaks the lease set before.
	e.call(t, "PATCH", "/v1/topics/pay", `{"callback_timeout_ms": 14000}`).wantError(t, 400, tochttp.CodeInvalid, "lease_ms")
	// The maximum itself is allowed.
	ok(t, e.call(t, "PATCH", "/v1/topics/slow", `{"callback_timeout_ms": 60000}`), 200)

	// Slots: the same count is fine, another one a conflict.
	ok(t, e.call(t, "PATCH", "/v1/topics/pay", `{"slots": 8}`), 200)
	e.call(t, "PATCH", "/v1/topics/pay", `{"slots": 16}`).wantError(t, 409, tochttp.CodeConflict, "")
	// PATCH does not create.
	e.call(t, "PATCH", "/v1/topics/nope", `{"weight": 2}`).wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "PATCH", "/v1/topics/Bad", `{}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
}

// A topic's callback timeout is honoured as set, above the worker's own:
// a receiver taking 700 ms answers within a topic's 3 s although the
// worker's (and the webhook client's) timeout is 200 ms.
func TestTopicCallbackTimeoutHonoured(t *testing.T) {
	e := newStackEnv(t, stackOpts{attemptTimeout: 200 * time.Millisecond, maxCallback: 5 * time.Second,
		receive: func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.RawQuery, "slow") {
				select {
				case <-time.After(700 * time.Millisecond):
				case <-r.Context().Done():
				}
			}
		}})
	e.receiver += "?slow"
	ok(t, e.call(t, "PUT", "/v1/topics/patient", `{"callback_timeout_ms": 3000, "max_attempts": 1}`), 201)
	ok(t, e.call(t, "PUT", "/v1/topics/hasty", `{"max_attempts": 1}`), 201)
	e.call(t, "PUT", "/v1/topics/hasty", `{"callback_timeout_ms": 5001}`).wantError(t, 400, tochttp.CodeInvalid, "callback_timeout_ms")

	patient := e.schedule(t, "patient", time.Now(), "")
	hasty := e.schedule(t, "hasty", time.Now(), "")
	for id, status := range map[string]string{patient: "done", hasty: "dead"} {
		deadline := time.Now().Add(15 * time.Second)
		for {
			a := ok(t, e.call(t, "GET", "/v1/jobs/"+id, ""), 200)
			if a.body["status"] == status {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s: %s, want status %s", id, a.raw, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A paused topic accepts jobs and fires none; resumed, all its due jobs
// fire, none before its due time. Another topic fires meanwhile.
func TestTopicPauseResume(t *testing.T) {
	e := newStackEnv(t, stackOpts{})
	ok(t, e.call(t, "PUT", "/v1/topics/held", `{}`), 201)
	want(t, ok(t, e.call(t, "POST", "/v1/topics/held/pause", ""), 200), map[string]any{"paused": true})
	want(t, ok(t, e.call(t, "GET", "/v1/topics/held", ""), 200), map[string]any{"paused": true})
	// Pausing twice changes nothing; a PUT of the settings keeps it paused.
	ok(t, e.call(t, "POST", "/v1/topics/held/pause", ""), 200)
	want(t, ok(t, e.call(t, "PUT", "/v1/topics/held", `{"max_attempts": 3}`), 200), map[string]any{"paused": true})
	if l := ok(t, e.call(t, "GET", "/v1/topics", ""), 200); !strings.Contains(string(l.raw), `"paused":true`) {
		t.Errorf("list does not show paused: %s", l.raw)
	}
	e.call(t, "POST", "/v1/topics/nope/pause", "").wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "POST", "/v1/topics/nope/resume", "").wantError(t, 404, tochttp.CodeNotFound, "")

	now := time.Now()
	due := map[string]time.Time{}
	for i := range 20 {
		at := now.Add(time.Duration(i*10) * time.Millisecond)
		due[e.schedule(t, "held", at, "")] = at
	}
	// The control topic fires while held waits: the worker is running.
	e.schedule(t, "free", time.Now(), "")
	e.waitArrived(t, "free", 1, 10*time.Second)
	time.Sleep(1500 * time.Millisecond)
	for _, a := range e.arrivals() {
		if a.topic == "held" {
			t.Fatalf("job %s of the paused topic fired", a.id)
		}
	}
	// Jobs due after the resume wait for their own time.
	resumeAt := time.Now()
	later := resumeAt.Add(700 * time.Millisecond)
	for range 5 {
		due[e.schedule(t, "held", later, "")] = later
	}
	want(t, ok(t, e.call(t, "POST", "/v1/topics/held/resume", ""), 200), map[string]any{"paused": false})
	got := e.waitArrived(t, "held", len(due), 15*time.Second)
	seen := map[string]bool{}
	for _, a := range got {
		at, known := due[a.id]
		if !known {
			t.Errorf("unknown job %s arrived", a.id)
			continue
		}
		seen[a.id] = true
		if a.at.Before(at) {
			t.Errorf("job %s arrived %v before its due time", a.id, at.Sub(a.at))
		}
		if a.at.Before(resumeAt) {
			t.Errorf("job %s arrived before the resume", a.id)
		}
	}
	if len(seen) != len(due) {
		t.Errorf("%d distinct jobs arrived, want %d", len(seen), len(due))
	}
	want(t, ok(t, e.call(t, "GET", "/v1/topics/held", ""), 200), map[string]any{"paused": false})
}

// DELETE removes a topic no job holds; pending, in-flight and dead jobs
// hold it (409, counted). A job scheduled into a deleted topic creates it
// anew with the defaults, or is refused without auto-creation.
func TestTopicDelete(t *testing.T) {
	release := make(chan struct{})
	e := newStackEnv(t, stackOpts{receive: func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.Contains(r.URL.RawQuery, "block"):
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case strings.Contains(r.URL.RawQuery, "fail"):
			w.WriteHeader(http.StatusInternalServerError)
		}
	}})
	base := e.receiver
	e.call(t, "DELETE", "/v1/topics/nope", "").wantError(t, 404, tochttp.CodeNotFound, "")
	e.call(t, "DELETE", "/v1/topics/Bad", "").wantError(t, 400, tochttp.CodeInvalid, "topic")

	// Pending jobs hold it.
	ok(t, e.call(t, "PUT", "/v1/topics/gone", `{"rate_limit": 7}`), 201)
	ids := []string{e.schedule(t, "gone", time.Now().Add(time.Hour), ""), e.schedule(t, "gone", time.Now().Add(time.Hour), "")}
	a := e.call(t, "DELETE", "/v1/topics/gone", "")
	a.wantError(t, 409, tochttp.CodeConflict, "")
	if msg := a.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "2 pending") {
		t.Errorf("409 message %q does not count the pending jobs", msg)
	}
	for _, id := range ids {
		ok(t, e.call(t, "DELETE", "/v1/jobs/"+id, ""), 200)
	}
	ok(t, e.call(t, "DELETE", "/v1/topics/gone", ""), 204)
	e.call(t, "GET", "/v1/topics/gone", "").wantError(t, 404, tochttp.CodeNotFound, "")
	if l := ok(t, e.call(t, "GET", "/v1/topics", ""), 200); strings.Contains(string(l.raw), `"gone"`) {
		t.Errorf("the list still has the deleted topic: %s", l.raw)
	}
	// A cancelled job's row stays.
	want(t, ok(t, e.call(t, "GET", "/v1/jobs/"+ids[0], ""), 200), map[string]any{"status": "cancelled"})
	// Scheduled into again: created anew, with the defaults.
	e.schedule(t, "gone", time.Now().Add(time.Hour), "")
	want(t, ok(t, e.call(t, "GET", "/v1/topics/gone", ""), 200), map[string]any{"rate_limit": 0.0})

	// A job whose call is under way holds it.
	ok(t, e.call(t, "PUT", "/v1/topics/busy", `{}`), 201)
	e.receiver = base + "?block"
	e.schedule(t, "busy", time.Now(), "")
	e.waitArrived(t, "busy", 1, 10*time.Second)
	a = e.call(t, "DELETE", "/v1/topics/busy", "")
	a.wantError(t, 409, tochttp.CodeConflict, "")
	if msg := a.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "1 firing") {
		t.Errorf("409 message %q does not count the job in flight", msg)
	}
	close(release)

	// A dead job holds it.
	ok(t, e.call(t, "PUT", "/v1/topics/dying", `{"max_attempts": 1}`), 201)
	e.receiver = base + "?fail"
	id := e.schedule(t, "dying", time.Now(), "")
	deadline := time.Now().Add(10 * time.Second)
	for ok(t, e.call(t, "GET", "/v1/jobs/"+id, ""), 200).body["status"] != "dead" {
		if time.Now().After(deadline) {
			t.Fatal("the job never died")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a = e.call(t, "DELETE", "/v1/topics/dying", "")
	a.wantError(t, 409, tochttp.CodeConflict, "")
	if msg := a.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "1 dead") {
		t.Errorf("409 message %q does not count the dead job", msg)
	}
}

// Without auto-creation, a job scheduled into a deleted topic is refused
// like one of any unknown topic.
func TestTopicDeleteNoAutoCreate(t *testing.T) {
	e := newStackEnv(t, stackOpts{noAutoCreate: true})
	ok(t, e.call(t, "PUT", "/v1/topics/once", `{}`), 201)
	e.schedule(t, "once", time.Now(), "")
	e.waitArrived(t, "once", 1, 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for e.call(t, "DELETE", "/v1/topics/once", "").status != http.StatusNoContent {
		if time.Now().After(deadline) {
			t.Fatal("the topic was never deletable after its one job fired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.call(t, "POST", "/v1/jobs", `{"topic": "once", "delay_ms": 0, "callback_url": "`+e.receiver+`"}`).
		wantError(t, 400, tochttp.CodeInvalid, "topic")
}

// Past --max-topics, a job that would create a topic, a batch with such
// jobs and a PUT of a new topic are 400s naming topic, and nothing is
// written; the topics there are keep working.
func TestMaxTopicsAPI(t *testing.T) {
	e := newStackEnv(t, stackOpts{maxTopics: 2})
	cb := `"callback_url": "` + e.receiver + `"`
	ok(t, e.call(t, "PUT", "/v1/topics/first", `{}`), 201)
	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "second", "delay_ms": 0, `+cb+`}`), 201)

	e.call(t, "POST", "/v1/jobs", `{"topic": "third", "delay_ms": 0, `+cb+`}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "PUT", "/v1/topics/third", `{}`).wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "first", "delay_ms": 0, `+cb+`}, {"topic": "third", "delay_ms": 0, `+cb+`}]}`).
		wantItems(t, 400, tochttp.CodeInvalid, itemWant{1, tochttp.CodeInvalid, "topic"})
	e.call(t, "GET", "/v1/topics/third", "").wantError(t, 404, tochttp.CodeNotFound, "")

	ok(t, e.call(t, "POST", "/v1/jobs", `{"topic": "first", "delay_ms": 0, `+cb+`}`), 201)
	e.waitArrived(t, "first", 1, 10*time.Second)
	e.waitArrived(t, "second", 1, 10*time.Second)
}

// Deletes racing with schedules into the topic: every schedule accepted
// fires (into the topic, or into the topic created anew), and every
// delete answers 204, 409 or 404.
func TestTopicDeleteRace(t *testing.T) {
	e := newStackEnv(t, stackOpts{})
	ctx, cancel := context.WithCancel(t.Context())
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]bool{}
		deletes = map[int]int{}
	)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				a := e.call(t, "POST", "/v1/jobs", `{"topic": "race", "delay_ms": 0, "callback_url": "`+e.receiver+`"}`)
				if a.status != http.StatusCreated {
					t.Errorf("schedule: %d %s", a.status, a.raw)
					return
				}
				id := a.body["id"].(string)
				mu.Lock()
				ids[id] = true
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // let the topic empty now and then
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "DELETE", e.srv.URL+"/v1/topics/race", nil)
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				return
			}
			resp.Body.Close()
			mu.Lock()
			deletes[resp.StatusCode]++
			mu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	wg.Wait()
	cancel()
	<-done
	for status := range deletes {
		if status != http.StatusNoContent && status != http.StatusConflict && status != http.StatusNotFound {
			t.Errorf("a delete answered %d", status)
		}
	}
	got := e.waitArrived(t, "race", len(ids), 20*time.Second)
	for _, a := range got {
		delete(ids, a.id)
	}
	if len(ids) > 0 {
		t.Errorf("%d accepted jobs never fired", len(ids))
	}
	t.Logf("deletes: %v", deletes)
}
