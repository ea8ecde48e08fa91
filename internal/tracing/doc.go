// Package tracing records toc's spans with OpenTelemetry and exports them
// over OTLP/HTTP: the schedule span of each scheduling request
// ([Tracer.Middleware], wrapped around the API) and the worker's claim,
// deliver and complete spans of each attempt ([Tracer] is a
// timer.Tracer). It is the only package that imports OpenTelemetry:
// timer declares what it needs, and package http and package webhook
// see only traceparent strings.
//
// cmd/toc sets it up only when an OTLP endpoint is configured; without
// one nothing of OpenTelemetry runs, and the worker's tracer is nil.
//
// # One trace per job
//
//	order service ──traceparent──► POST /v1/jobs      toc.schedule (server span, child of the request's traceparent)
//	                                 the job keeps toc.schedule's traceparent
//	worker, each attempt:            toc.claim         claim in Redis → row loaded (children of toc.schedule)
//	                                 toc.deliver       the webhook call (client span); its traceparent goes with it
//	                                 toc.complete      the outcome recorded
//	receiver ◄──traceparent── webhook                its span is a child of toc.deliver
//
// Spans carry toc.job.id, toc.topic, toc.attempt, toc.outcome and
// http.response.status_code; a failed delivery, or an outcome that could
// not be recorded, has an error status.
//
// # Sampling
//
// A request whose traceparent says sampled is recorded, and one that says
// not sampled is not (parent-based); of the requests without one,
// Config.SampleRatio are. The worker's spans follow their job's stored
// traceparent, so a job is recorded whole or not at all.
package tracing
