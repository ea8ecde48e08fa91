package tracing

import (
	"bytes"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The scheduling routes, whose requests have a schedule span.
const (
	routeJobs  = "/v1/jobs"
	routeBatch = "/v1/jobs/batch"
)

// peekBytes is how much of a scheduled job's answer the middleware reads
// for its id and topic, which come first.
const peekBytes = 512

// Middleware wraps the API: a scheduling request (POST /v1/jobs, POST
// /v1/jobs/batch) gets a schedule span, a child of the request's own
// traceparent when it has a valid one (a malformed one is ignored, as
// the Trace Context specification says), and next sees the request with
// the span's traceparent instead: the one its jobs keep. The span records
// the answer's status (5xx: an error) and, for one job, its id and
// topic. Other requests pass through untouched.
func (t *Tracer) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (r.URL.Path != routeJobs && r.URL.Path != routeBatch) {
			next.ServeHTTP(w, r)
			return
		}
		var prop propagation.TraceContext
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, SpanSchedule, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String(AttrMethod, r.Method), attribute.String(AttrRoute, r.URL.Path)))
		defer span.End()
		r = r.WithContext(ctx)
		r.Header = r.Header.Clone()
		r.Header.Del("traceparent")
		r.Header.Del("tracestate")
		prop.Inject(ctx, propagation.HeaderCarrier(r.Header))

		rec := &recorder{ResponseWriter: w, peek: span.IsRecording() && r.URL.Path == routeJobs}
		next.ServeHTTP(rec, r)
		if !span.IsRecording() {
			return
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int(AttrStatus, status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		if rec.peek && status < 300 {
			if id, topic := jobOf(rec.body); id != "" {
				span.SetAttributes(attribute.String(AttrJobID, id), attribute.String(AttrTopic, topic))
			}
		}
	})
}

// recorder keeps the status of an answer and, when peek is set, the
// start of its body.
type recorder struct {
	http.ResponseWriter
	status int
	peek   bool
	body   []byte
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.peek && len(r.body) < peekBytes {
		r.body = append(r.body, p[:min(len(p), peekBytes-len(r.body))]...)
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer beneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// jobOf reads the id and topic of a job from the start of its JSON view,
// where they come first; "" when they are not there.
func jobOf(body []byte) (id, topic string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", ""
	}
	for dec.More() && (id == "" || topic == "") {
		k, err := dec.Token()
		if err != nil {
			break
		}
		v, err := dec.Token()
		if err != nil {
			break
		}
		if _, nested := v.(json.Delim); nested {
			break
		}
		switch k {
		case "id":
			id, _ = v.(string)
		case "topic":
			topic, _ = v.(string)
		}
	}
	return id, topic
}
