package timer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// fakeTracer records the spans the worker starts and ends; each span's
// traceparent keeps the parent's trace id and numbers the span.
type fakeTracer struct {
	mu    sync.Mutex
	spans []*fakeSpan
}

type fakeSpan struct {
	name, parent, self string
	start, end         time.Time
	attrs              timer.SpanAttrs
	err                error
	ended              bool
}

func (t *fakeTracer) Start(_ context.Context, name, parent string, at time.Time) timer.Span {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &fakeSpan{name: name, parent: parent, start: at,
		self: fmt.Sprintf("%s-%016x-01", parent[:35], len(t.spans)+1)}
	t.spans = append(t.spans, s)
	return s
}

func (t *fakeTracer) ended() []fakeSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []fakeSpan
	for _, s := range t.spans {
		if s.ended {
			out = append(out, *s)
		}
	}
	return out
}

func (s *fakeSpan) TraceParent() string { return s.self }
func (s *fakeSpan) End(at time.Time, attrs timer.SpanAttrs, err error) {
	s.end, s.attrs, s.err, s.ended = at, attrs, err, true
}

const testTraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// A traced job's attempts each make a claim, a delivery and a completion
// span, children of the job's traceparent; the delivery carries its
// span's traceparent; a failed attempt's spans say so.
func TestTracedAttempts(t *testing.T) {
	tr := &fakeTracer{}
	r := newRig(t, timer.WorkerConfig{Tracer: tr, Retry: timer.RetryPolicy{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	ctx := t.Context()
	r.handler.fail = func(d timer.Delivery) error {
		if d.Attempt == 1 {
			return &timer.StatusError{Code: 503, Err: errors.New("receiver said 503")}
		}
		return nil
	}
	res, err := r.sched.Schedule(ctx, timer.Request{Topic: "orders", CallbackURL: "http://localhost/hook", TraceParent: testTraceParent})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	if res.Job.TraceParent != testTraceParent {
		t.Fatalf("job traceparent %q, want %q", res.Job.TraceParent, testTraceParent)
	}
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatal("first attempt not fired")
	}
	r.clock.Advance(10 * time.Millisecond)
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatal("second attempt not fired")
	}
	if s := r.status(t, id); s != timer.StatusDone {
		t.Fatalf("job is %v, want done", s)
	}

	type want struct {
		name    string
		attempt int
		status  int
		outcome string
		failed  bool
	}
	wants := []want{
		{timer.SpanClaim, 1, 0, "fire", false},
		{timer.SpanDeliver, 1, 503, "", true},
		{timer.SpanComplete, 1, 503, "retry", false},
		{timer.SpanClaim, 2, 0, "fire", false},
		{timer.SpanDeliver, 2, 0, "", false},
		{timer.SpanComplete, 2, 0, "done", false},
	}
	spans := tr.ended()
	if len(spans) != len(wants) {
		t.Fatalf("%d spans ended, want %d: %+v", len(spans), len(wants), spans)
	}
	for i, w := range wants {
		s := spans[i]
		if s.name != w.name || s.parent != testTraceParent || s.attrs.Job != id || s.attrs.Topic != "orders" ||
			s.attrs.Attempt != w.attempt || s.attrs.Status != w.status || s.attrs.Outcome != w.outcome || (s.err != nil) != w.failed {
			t.Errorf("span %d: %s parent %s %+v err %v; want %+v", i, s.name, s.parent, s.attrs, s.err, w)
		}
		if s.end.Before(s.start) {
			t.Errorf("span %d (%s) ends at %v, before its start %v", i, s.name, s.end, s.start)
		}
	}
	ds := r.handler.deliveries(id)
	if len(ds) != 2 {
		t.Fatalf("%d deliveries, want 2", len(ds))
	}
	for i, d := range ds {
		deliver := spans[3*i+1]
		if d.TraceParent != deliver.self || !strings.HasPrefix(d.TraceParent, testTraceParent[:35]) {
			t.Errorf("delivery %d carries %q, want its span's %q", i+1, d.TraceParent, deliver.self)
		}
	}
}

// Without a tracer a delivery carries the job's traceparent as stored,
// and a job without one carries none; with a tracer, a job without a
// traceparent makes no span.
func TestUntracedDeliveryForwardsTraceParent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tracer *fakeTracer
		parent string
		want   string
	}{
		{"off", nil, testTraceParent, testTraceParent},
		{"off, none", nil, "", ""},
		{"on, none", &fakeTracer{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wc := timer.WorkerConfig{}
			if tc.tracer != nil {
				wc.Tracer = tc.tracer
			}
			r := newRig(t, wc)
			ctx := t.Context()
			res, err := r.sched.Schedule(ctx, timer.Request{Topic: "orders", CallbackURL: "http://localhost/hook", TraceParent: tc.parent})
			if err != nil {
				t.Fatal(err)
			}
			if _, fired := r.steps.Step(ctx); fired != 1 {
				t.Fatal("not fired")
			}
			ds := r.handler.deliveries(res.Job.ID)
			if len(ds) != 1 || ds[0].TraceParent != tc.want {
				t.Fatalf("deliveries %+v, want one carrying %q", ds, tc.want)
			}
			if tc.tracer != nil && len(tc.tracer.ended()) != 0 {
				t.Errorf("%d spans for a job without a traceparent", len(tc.tracer.ended()))
			}
		})
	}
}

// Every job of a batch keeps the batch's traceparent; an idempotent
// retry with another one answers the same job.
func TestScheduleKeepsTraceParent(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	reqs := []timer.Request{
		{Topic: "orders", CallbackURL: "http://localhost/hook", TraceParent: testTraceParent},
		{Topic: "orders", CallbackURL: "http://localhost/hook", TraceParent: testTraceParent, Key: "k"},
	}
	res, err := r.sched.ScheduleBatch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range res {
		j, err := r.store.Get(ctx, rs.Job.ID)
		if err != nil || j.TraceParent != testTraceParent {
			t.Fatalf("job %v: %+v, %v; want traceparent %s", rs.Job.ID, j, err, testTraceParent)
		}
	}
	again := reqs[1]
	again.TraceParent = "00-11111111111111111111111111111111-2222222222222222-01"
	res2, err := r.sched.Schedule(ctx, again)
	if err != nil || res2.Created || res2.Job.ID != res[1].Job.ID {
		t.Fatalf("retry with another traceparent = %+v, %v; want the same job", res2, err)
	}
	bad := reqs[0]
	bad.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"
	if _, err := r.sched.Schedule(ctx, bad); !errors.Is(err, timer.ErrInvalid) {
		t.Fatalf("Schedule with a malformed traceparent = %v, want ErrInvalid", err)
	}
}

func TestValidTraceParent(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{testTraceParent, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-later", true},
		{"", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", false},                           // version 00 is 55 bytes
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", false},                           // a later version's fields follow a dash
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},                            // version ff is invalid
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},                            // zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},                            // zero parent id
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},                            // upper case
		{"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},                            // dash misplaced
		{"00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01", false},                            // not dashes
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", false},                            // not hex
		{"0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},                             // short
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-\x00", false},                       // control byte
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-" + strings.Repeat("a", 80), false}, // too long
	} {
		if got := timer.ValidTraceParent(tc.s); got != tc.want {
			t.Errorf("ValidTraceParent(%q) = %t, want %t", tc.s, got, tc.want)
		}
	}
}

func FuzzValidTraceParent(f *testing.F) {
	f.Add(testTraceParent)
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
	f.Fuzz(func(t *testing.T, s string) {
		if !timer.ValidTraceParent(s) {
			return
		}
		if len(s) < 55 || len(s) > timer.MaxTraceParentBytes || s[2] != '-' || s[35] != '-' || s[52] != '-' {
			t.Fatalf("ValidTraceParent(%q) holds", s)
		}
		if s[:2] == "00" && len(s) != 55 {
			t.Fatalf("ValidTraceParent(%q) holds for a version 00 of %d bytes", s, len(s))
		}
	})
}
