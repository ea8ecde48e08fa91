package tracing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toc-project/toc/timer"
)

// SpanSchedule is the name of the span of a scheduling request.
const SpanSchedule = "toc.schedule"

// Attribute keys of toc's spans.
const (
	AttrJobID   = "toc.job.id"
	AttrTopic   = "toc.topic"
	AttrAttempt = "toc.attempt"
	AttrOutcome = "toc.outcome"
	AttrStatus  = "http.response.status_code"
	AttrMethod  = "http.request.method"
	AttrRoute   = "http.route"
)

// DefaultServiceName is the service.name of toc's spans, unless
// OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "toc"

// Config configures a Tracer.
type Config struct {
	// Endpoint is the URL spans are posted to over OTLP/HTTP, used as
	// it is: http://collector:4318/v1/traces. Required unless Exporter
	// is set.
	Endpoint string
	// SampleRatio is the share of the traces that begin at toc (a
	// scheduling request without a traceparent) that are recorded, 0 to
	// 1; a request's traceparent decides for its own trace.
	SampleRatio float64
	// ServiceName (default DefaultServiceName) and ServiceVersion name
	// the process in its spans; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES, as OpenTelemetry reads them, win.
	ServiceName    string
	ServiceVersion string
	// Exporter, when set, receives the spans instead of an OTLP/HTTP
	// exporter to Endpoint: a tracetest.InMemoryExporter in tests.
	Exporter sdktrace.SpanExporter
	// Logger hears of spans that could not be exported (default:
	// OpenTelemetry's, the standard log package).
	Logger *slog.Logger
}

// Validate reports the first field of c that is out of range, as a
// *timer.FieldError.
func (c Config) Validate() error {
	if c.SampleRatio < 0 || c.SampleRatio > 1 || c.SampleRatio != c.SampleRatio {
		return &timer.FieldError{Field: "SampleRatio", Message: "must be within 0..1"}
	}
	if c.Exporter != nil {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return &timer.FieldError{Field: "Endpoint", Message: "must be an http or https URL with a host and no user info"}
	}
	return nil
}

// Tracer records toc's spans; it is a timer.Tracer, and its Middleware
// starts the schedule spans. It is safe for concurrent use.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
}

var _ timer.Tracer = (*Tracer)(nil)

// New returns a Tracer that exports its spans in batches, in the
// background; Shutdown sends what is left. Setting it up sends nothing:
// an endpoint that does not answer costs dropped spans, logged, never a
// blocked worker.
func New(ctx context.Context, cfg Config) (*Tracer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracing config: %w", err)
	}
	exp := cfg.Exporter
	if exp == nil {
		var err error
		if exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint)); err != nil {
			return nil, fmt.Errorf("otlp exporter: %w", err)
		}
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cmp.Or(cfg.ServiceName, DefaultServiceName))}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	if cfg.Logger != nil {
		log := cfg.Logger
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing: spans dropped", "dep", "otlp", "err", err)
		}))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	return &Tracer{provider: tp, tracer: tp.Tracer("github.com/toc-project/toc")}, nil
}

// Flush exports the spans ended so far.
func (t *Tracer) Flush(ctx context.Context) error { return t.provider.ForceFlush(ctx) }

// Shutdown exports the spans ended so far and stops the Tracer; spans
// started later are not recorded.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }

// Start implements timer.Tracer: the span name of a job's attempt, a
// child of parent, the job's stored traceparent.
func (t *Tracer) Start(ctx context.Context, name, parent string, at time.Time) timer.Span {
	if sc, ok := parseTraceParent(parent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	kind := trace.SpanKindInternal
	if name == timer.SpanDeliver {
		kind = trace.SpanKindClient
	}
	_, s := t.tracer.Start(ctx, name, trace.WithTimestamp(at), trace.WithSpanKind(kind))
	tp := formatTraceParent(s.SpanContext())
	if tp == "" { // a stopped tracer's span: pass the job's on
		tp = parent
	}
	return &span{span: s, name: name, traceParent: tp}
}

// span is a timer.Span over an OpenTelemetry span.
type span struct {
	span        trace.Span
	name        string
	traceParent string
}

func (s *span) TraceParent() string { return s.traceParent }

func (s *span) End(at time.Time, a timer.SpanAttrs, err error) {
	if s.span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 6)
		attrs = append(attrs,
			attribute.String(AttrJobID, a.Job.String()),
			attribute.String(AttrTopic, a.Topic),
			attribute.Int(AttrAttempt, a.Attempt))
		if a.Outcome != "" {
			attrs = append(attrs, attribute.String(AttrOutcome, a.Outcome))
		}
		if a.Status != 0 {
			attrs = append(attrs, attribute.Int(AttrStatus, a.Status))
		}
		if s.name == timer.SpanDeliver {
			attrs = append(attrs, attribute.String(AttrMethod, "POST"))
		}
		s.span.SetAttributes(attrs...)
		if err != nil {
			s.span.SetStatus(codes.Error, err.Error())
		}
	}
	s.span.End(trace.WithTimestamp(at))
}

// parseTraceParent reads a W3C traceparent that timer.ValidTraceParent
// accepts. Of the flags only the sampled bit is kept, as OpenTelemetry's
// propagator does.
func parseTraceParent(s string) (trace.SpanContext, bool) {
	if !timer.ValidTraceParent(s) {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	flags, err := strconv.ParseUint(s[53:55], 16, 8)
	if err != nil {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    tid,
		SpanID:     sid,
		TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled,
		Remote:     true,
	}), true
}

// formatTraceParent is the version 00 traceparent of sc.
func formatTraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
