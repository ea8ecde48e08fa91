package tracing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/tracing"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// The whole path in one process, as cmd/toc wires it: the API (behind
// the tracing middleware when tracing is on), the engine over the
// in-memory store and index, the webhook client, and a receiver.

const (
	incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingSpan  = "00f067aa0ba902b7"
	incoming      = "00-" + incomingTrace + "-" + incomingSpan + "-01"
)

// receiver is a webhook receiver that keeps the traceparent of each call
// by job id, and answers 500 to the first call of a job when failFirst.
type receiver struct {
	*httptest.Server
	failFirst bool

	mu    sync.Mutex
	calls map[string][]string // job id → the traceparent of each call ("-": none)
}

func newReceiver(t *testing.T, failFirst bool) *receiver {
	t.Helper()
	r := &receiver{failFirst: failFirst, calls: map[string][]string{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		id := req.Header.Get("webhook-id")
		tp := "-"
		if v := req.Header.Values("traceparent"); len(v) == 1 {
			tp = v[0]
		}
		r.mu.Lock()
		r.calls[id] = append(r.calls[id], tp)
		n := len(r.calls[id])
		r.mu.Unlock()
		if r.failFirst && n == 1 {
			http.Error(w, "not yet", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) of(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls[id]...)
}

// stack is toc in one process.
type stack struct {
	api  *httptest.Server
	recv *receiver
}

// newStack runs toc with tr (nil: tracing off) until the test ends.
func newStack(t *testing.T, tr *tracing.Tracer, recv *receiver) *stack {
	t.Helper()
	hook, err := webhook.NewClient(webhook.Config{Secrets: []string{webhook.NewSecret()}, AllowPrivate: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wc := timer.WorkerConfig{Retry: timer.RetryPolicy{Base: 20 * time.Millisecond, Max: 20 * time.Millisecond}}
	if tr != nil {
		wc.Tracer = tr
	}
	eng, err := timer.New(timertest.NewStore(), timertest.NewIndex(), hook, timer.Config{Worker: wc})
	if err != nil {
		t.Fatal(err)
	}
	api, err := tochttp.NewAPI(eng, nil, nil, tochttp.APIConfig{AllowPrivateCallbacks: true})
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = api
	if tr != nil {
		h = tr.Middleware(api)
	}
	srv := httptest.NewServer(h)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("engine: %v", err)
		}
	})
	return &stack{api: srv, recv: recv}
}

// post sends body to path with the traceparent header tp ("" for none)
// and returns the answer's status and body.
func (s *stack) post(t *testing.T, path, tp, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.api.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tp != "" {
		req.Header.Set("traceparent", tp)
		req.Header.Set("tracestate", "vendor=value")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func (s *stack) schedule(t *testing.T, tp string) string {
	t.Helper()
	code, out := s.post(t, "/v1/jobs", tp, fmt.Sprintf(`{"topic": "orders", "delay_ms": 0, "callback_url": %q}`, s.recv.URL+"/hook"))
	if code != http.StatusCreated {
		t.Fatalf("schedule: %d %v", code, out)
	}
	return out["id"].(string)
}

// waitDone waits until job id is done.
func (s *stack) waitDone(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(s.api.URL + "/v1/jobs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Status string }
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err == nil && v.Status == "done" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %q, not done; calls %v", id, v.Status, s.recv.of(id))
		}
	}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// With tracing on, a job scheduled with a traceparent makes one trace:
// the schedule span, a child of the request's span, and for each attempt
// a claim, a deliver and a complete span, children of the schedule span;
// the webhook carries the deliver span's traceparent; a failed attempt
// is an error.
func TestTraceOfAJob(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(t.Context(), tracing.Config{Exporter: exp, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.WithoutCancel(t.Context())) })
	recv := newReceiver(t, true)
	s := newStack(t, tr, recv)

	id := s.schedule(t, incoming)
	s.waitDone(t, id)
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, sp := range spans {
		if sp.SpanContext.TraceID().String() != incomingTrace {
			t.Errorf("span %s in trace %s, want %s", sp.Name, sp.SpanContext.TraceID(), incomingTrace)
		}
		byName[sp.Name] = append(byName[sp.Name], sp)
	}
	if len(byName[tracing.SpanSchedule]) != 1 || len(byName[timer.SpanClaim]) != 2 ||
		len(byName[timer.SpanDeliver]) != 2 || len(byName[timer.SpanComplete]) != 2 {
		t.Fatalf("spans %v, want one schedule and two each of claim, deliver, complete", names(spans))
	}

	sched := byName[tracing.SpanSchedule][0]
	if !sched.Parent.IsRemote() || sched.Parent.SpanID().String() != incomingSpan || sched.SpanKind != trace.SpanKindServer {
		t.Errorf("schedule span's parent %v (remote %t), kind %v; want the request's span %s, server", sched.Parent.SpanID(), sched.Parent.IsRemote(), sched.SpanKind, incomingSpan)
	}
	if a := attrs(sched); a[tracing.AttrJobID].AsString() != id || a[tracing.AttrTopic].AsString() != "orders" || a[tracing.AttrStatus].AsInt64() != 201 {
		t.Errorf("schedule span attributes %v", sched.Attributes)
	}
	if got := sched.SpanContext.TraceState().String(); got != "vendor=value" {
		t.Errorf("schedule span's tracestate %q, want the request's", got)
	}

	for _, name := range []string{timer.SpanClaim, timer.SpanDeliver, timer.SpanComplete} {
		for i, sp := range byName[name] {
			a := attrs(sp)
			attempt := int64(i + 1)
			if sp.Parent.SpanID() != sched.SpanContext.SpanID() || a[tracing.AttrJobID].AsString() != id ||
				a[tracing.AttrTopic].AsString() != "orders" || a[tracing.AttrAttempt].AsInt64() != attempt {
				t.Errorf("%s %d: parent %s, attributes %v; want a child of the schedule span %s of job %s attempt %d",
					name, i, sp.Parent.SpanID(), sp.Attributes, sched.SpanContext.SpanID(), id, attempt)
			}
			if sp.StartTime.After(sp.EndTime) {
				t.Errorf("%s %d ends before it starts", name, i)
			}
		}
	}
	deliver := byName[timer.SpanDeliver]
	for i, want := range []struct {
		status int64
		code   codes.Code
	}{{500, codes.Error}, {204, codes.Unset}} {
		a := attrs(deliver[i])
		if a[tracing.AttrStatus].AsInt64() != want.status || deliver[i].Status.Code != want.code || deliver[i].SpanKind != trace.SpanKindClient {
			t.Errorf("deliver %d: status code %d, span status %v %q, kind %v; want %d, %v, client",
				i+1, a[tracing.AttrStatus].AsInt64(), deliver[i].Status.Code, deliver[i].Status.Description, deliver[i].SpanKind, want.status, want.code)
		}
	}
	for i, want := range []string{"retry", "done"} {
		if got := attrs(byName[timer.SpanComplete][i])[tracing.AttrOutcome].AsString(); got != want {
			t.Errorf("complete %d: outcome %q, want %q", i+1, got, want)
		}
	}
	for i, sp := range byName[timer.SpanClaim] {
		if got := attrs(sp)[tracing.AttrOutcome].AsString(); got != "fire" {
			t.Errorf("claim %d: outcome %q, want fire", i+1, got)
		}
	}

	// The receiver saw, on each attempt, the traceparent of that
	// attempt's deliver span: its own span joins the trace.
	calls := recv.of(id)
	if len(calls) != 2 {
		t.Fatalf("receiver saw %d calls, want 2", len(calls))
	}
	for i, tp := range calls {
		want := "00-" + incomingTrace + "-" + deliver[i].SpanContext.SpanID().String() + "-01"
		if tp != want {
			t.Errorf("call %d carried traceparent %q, want %q", i+1, tp, want)
		}
	}
}

// With tracing on, a malformed traceparent is ignored, not refused: the
// schedule span begins a trace of its own, which the job's webhook joins.
func TestTraceWithoutValidTraceParent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(t.Context(), tracing.Config{Exporter: exp, SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.WithoutCancel(t.Context())) })
	recv := newReceiver(t, false)
	s := newStack(t, tr, recv)

	id := s.schedule(t, "00-"+incomingTrace+"-"+incomingSpan) // no flags
	s.waitDone(t, id)
	if err := tr.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	var sched tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == tracing.SpanSchedule {
			sched = sp
		}
	}
	if sched.Parent.IsValid() || sched.SpanContext.TraceID().String() == incomingTrace {
		t.Fatalf("schedule span %+v: want a root of a new trace", sched)
	}
	calls := recv.of(id)
	if len(calls) != 1 || !strings.HasPrefix(calls[0], "00-"+sched.SpanContext.TraceID().String()+"-") {
		t.Fatalf("receiver saw %v, want one call in the schedule span's trace %s", calls, sched.SpanContext.TraceID())
	}
}

// With tracing off, the traceparent of the scheduling request is stored
// and forwarded unchanged, for each job of a batch too; a malformed one
// is ignored, and a job scheduled without one is delivered without one.
func TestTraceParentForwardedWhenOff(t *testing.T) {
	recv := newReceiver(t, false)
	s := newStack(t, nil, recv)

	one := s.schedule(t, incoming)
	bad := s.schedule(t, strings.ToUpper(incoming))
	none := s.schedule(t, "")
	code, out := s.post(t, "/v1/jobs/batch", incoming, fmt.Sprintf(`{"jobs": [
		{"topic": "orders", "delay_ms": 0, "callback_url": %[1]q},
		{"topic": "orders", "delay_ms": 0, "callback_url": %[1]q, "biz_id": "7"}]}`, recv.URL+"/hook"))
	if code != http.StatusOK {
		t.Fatalf("batch: %d %v", code, out)
	}
	want := map[string]string{one: incoming, bad: "-", none: "-"}
	for _, r := range out["results"].([]any) {
		want[r.(map[string]any)["id"].(string)] = incoming
	}
	for id, tp := range want {
		s.waitDone(t, id)
		if calls := recv.of(id); len(calls) != 1 || calls[0] != tp {
			t.Errorf("job %s: calls carried %v, want one with %q", id, calls, tp)
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
