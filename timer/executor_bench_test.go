package timer

import (
	"context"
	"testing"
	"time"
)

// BenchmarkExecute is the executor's step for one job whose handler does
// nothing: with no Tracer (what a worker without tracing runs: one nil
// check more than before tracing existed, no allocation), and with a
// Tracer that costs nothing of its own, which leaves what the executor
// adds when tracing is on.
//
//	go test -run '^$' -bench BenchmarkExecute -benchmem ./timer/
func BenchmarkExecute(b *testing.B) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name   string
		tracer Tracer
	}{{"off", nil}, {"on-nop-tracer", nopTracer{}}} {
		b.Run(tc.name, func(b *testing.B) {
			handler := HandlerFunc(func(context.Context, Delivery) error { return nil })
			w, err := NewWorker(nil, nil, nil, handler, &AllSlots{}, nil, WorkerConfig{Tracer: tc.tracer})
			if err != nil {
				b.Fatal(err)
			}
			j := &Job{ID: 1, Topic: "t", DueAt: time.Now(), MaxAttempts: 3, TraceParent: tp}
			t := task{lease: Lease{ID: 1, Slot: Slot{Topic: "t"}}, job: j}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if o := w.exec.execute(ctx, t); o.kind != outDone {
					b.Fatalf("outcome %v", o.kind)
				}
			}
		})
	}
}

// nopTracer is a Tracer whose span costs nothing.
type nopTracer struct{}

type nopSpan struct{}

var theNopSpan Span = nopSpan{}

func (nopTracer) Start(context.Context, string, string, time.Time) Span { return theNopSpan }
func (nopSpan) TraceParent() string                                     { return "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }
func (nopSpan) End(time.Time, SpanAttrs, error)                         {}
