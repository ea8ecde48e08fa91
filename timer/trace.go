package timer

import (
	"context"
	"time"
)

// Tracing. A job keeps the W3C traceparent of the request that scheduled
// it (Job.TraceParent); a worker given a Tracer records, as children of
// it, a span for each step of each attempt: the claim (from the claim in
// Redis to the row's load), the delivery (the handler call, whose
// Delivery.TraceParent is the span's own, so that the receiver's span is
// its child) and the completion (the outcome recorded in the task store
// and Redis). Without a Tracer the worker makes no span, and a delivery
// carries the job's traceparent as stored.

// Names of the spans the worker starts.
const (
	SpanClaim    = "toc.claim"
	SpanDeliver  = "toc.deliver"
	SpanComplete = "toc.complete"
)

// Tracer starts the worker's spans; internal/tracing implements it over
// OpenTelemetry. The worker calls it only for jobs that have a
// traceparent, and a nil Tracer (WorkerConfig's default) costs the worker
// one nil check per step, no allocation.
type Tracer interface {
	// Start starts the span name (SpanClaim, SpanDeliver or SpanComplete)
	// at at, as a child of parent, a valid W3C traceparent (see
	// ValidTraceParent). It must be safe for concurrent use and must not
	// block: it is called on the worker's hot path. Whether the span is
	// recorded (sampled) is the Tracer's business; the Span it returns is
	// usable either way.
	Start(ctx context.Context, name, parent string, at time.Time) Span
}

// Span is a span a Tracer started.
type Span interface {
	// TraceParent is the span's W3C traceparent: what a call made within
	// it carries, so that the callee's span is its child.
	TraceParent() string
	// End ends the span at at, with what it learnt of its job; a non-nil
	// err marks it failed.
	End(at time.Time, attrs SpanAttrs, err error)
}

// SpanAttrs are what a span records of its job.
type SpanAttrs struct {
	Job   JobID
	Topic string
	// Attempt is the attempt the span is part of, 1 on the first.
	Attempt int
	// Status is the HTTP status the receiver answered (SpanDeliver);
	// 0 for none.
	Status int
	// Outcome is what became of the job at the span's end: fire, ack,
	// dead or moved (SpanClaim: fired, acked as finished, buried, put
	// back at its rescheduled time); done, retry, dead, cancelled or
	// deferred (SpanComplete).
	Outcome string
}

// MaxTraceParentBytes bounds a traceparent: version 00 has 55 bytes, and
// a later version may append fields.
const MaxTraceParentBytes = 128

// ValidTraceParent reports whether s is a W3C traceparent
// (https://www.w3.org/TR/trace-context/#traceparent-header) that toc
// keeps: version-traceid-parentid-flags in lower-case hex, a version
// other than ff, a trace id and a parent id that are not all zeros; for
// version 00 exactly 55 bytes, for a later version, as the
// specification asks of a reader, the same 55 bytes followed by nothing
// or by "-" and printable ASCII, at most MaxTraceParentBytes in all.
func ValidTraceParent(s string) bool {
	if len(s) < 55 || len(s) > MaxTraceParentBytes ||
		s[2] != '-' || s[35] != '-' || s[52] != '-' ||
		!lowerHex(s[0:2]) || !lowerHex(s[3:35]) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) ||
		s[0:2] == "ff" || zeros(s[3:35]) || zeros(s[36:52]) {
		return false
	}
	if len(s) == 55 {
		return true
	}
	if s[0:2] == "00" || s[55] != '-' {
		return false
	}
	for i := 56; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func zeros(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}
