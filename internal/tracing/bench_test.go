package tracing_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toc-project/toc/internal/tracing"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// BenchmarkWorkerPath runs the worker (claim, load, deliver to a handler
// that does nothing, complete) over the in-memory store and index, for
// b.N jobs due at once, each with a stored traceparent: with tracing off
// (no Tracer: the traceparent is forwarded as stored), and on (the
// OpenTelemetry SDK, spans sampled and exported in batches to an
// exporter that drops them; or a parent that says not sampled). One op
// is one job; the allocations of off are those of the worker without
// tracing.
//
//	go test -run '^$' -bench BenchmarkWorkerPath -benchmem -count 5 ./internal/tracing/
func BenchmarkWorkerPath(b *testing.B) {
	const (
		sampled   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
	)
	b.Run("off", func(b *testing.B) { benchWorker(b, nil, sampled) })
	b.Run("on", func(b *testing.B) { benchWorker(b, newBenchTracer(b), sampled) })
	b.Run("on-unsampled", func(b *testing.B) { benchWorker(b, newBenchTracer(b), unsampled) })
}

func newBenchTracer(b *testing.B) *tracing.Tracer {
	tr, err := tracing.New(b.Context(), tracing.Config{Exporter: tracetest.NewNoopExporter(), SampleRatio: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tr.Shutdown(context.WithoutCancel(b.Context())) })
	return tr
}

func benchWorker(b *testing.B, tr *tracing.Tracer, parent string) {
	ctx := b.Context()
	store, index := timertest.NewStore(), timertest.NewIndex()
	topic := timer.Topic{Name: "bench", Slots: 16}
	if _, err := store.EnsureTopic(ctx, topic); err != nil {
		b.Fatal(err)
	}
	n := int64(b.N)
	var fired atomic.Int64
	done := make(chan struct{})
	handler := timer.HandlerFunc(func(context.Context, timer.Delivery) error {
		if fired.Add(1) == n {
			close(done)
		}
		return nil
	})
	cat := timer.NewCatalog(store, 0, nil)
	wc := timer.WorkerConfig{Concurrency: 8}
	if tr != nil {
		wc.Tracer = tr
	}
	w, err := timer.NewWorker(store, index, index, handler, &timer.AllSlots{Catalog: cat}, cat, wc)
	if err != nil {
		b.Fatal(err)
	}
	due := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	jobs := make([]*timer.Job, b.N)
	timers := make([]timer.Timer, b.N)
	for i := range jobs {
		id := timer.JobID(i + 1)
		jobs[i] = &timer.Job{ID: id, Topic: topic.Name, Status: timer.StatusPending, DueAt: due, MaxAttempts: 3,
			CallbackURL: "http://127.0.0.1:9/hook", TraceParent: parent, CreatedAt: due}
		timers[i] = timer.Timer{ID: id, Topic: topic.Name, Slots: topic.Slots, Basis: uint64(id), DueAt: due}
	}
	if err := store.Insert(ctx, jobs); err != nil {
		b.Fatal(err)
	}
	if _, err := index.Add(ctx, timers); err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	b.ReportAllocs()
	b.ResetTimer()
	go func() { errc <- w.Run(runCtx) }()
	<-done
	b.StopTimer()
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}
