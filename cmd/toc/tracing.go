// Tracing: OpenTelemetry spans over OTLP/HTTP, when an endpoint is
// configured (--otlp-endpoint, or OpenTelemetry's own environment).

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toc-project/toc/internal/tracing"
)

// tracesPath is the path of the OTLP/HTTP traces endpoint under a base
// URL.
const tracesPath = "/v1/traces"

// tracingShutdown bounds how long the spans left at exit may take to be
// sent.
const tracingShutdown = 5 * time.Second

// otlpEndpoint is where spans go, and which setting said so ("" when
// tracing is off): --otlp-endpoint (or TOC_OTLP_ENDPOINT), else
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else
// OTEL_EXPORTER_OTLP_ENDPOINT, a base URL. A base URL gets /v1/traces
// added, as OpenTelemetry's exporters do, unless its path already ends
// with it. OTEL_SDK_DISABLED=true turns the environment's endpoints off.
func otlpEndpoint(flagValue string, lookup func(string) (string, bool)) (endpoint, from string) {
	if flagValue != "" {
		return tracesURL(flagValue), "--otlp-endpoint"
	}
	if v, _ := lookup("OTEL_SDK_DISABLED"); strings.EqualFold(strings.TrimSpace(v), "true") {
		return "", ""
	}
	if v, ok := lookup("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	}
	if v, ok := lookup("OTEL_EXPORTER_OTLP_ENDPOINT"); ok && strings.TrimSpace(v) != "" {
		return tracesURL(strings.TrimSpace(v)), "OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	return "", ""
}

// tracesURL is the traces URL under base: base itself when its path
// ends with /v1/traces.
func tracesURL(base string) string {
	u, err := url.Parse(base)
	if err != nil || strings.HasSuffix(u.Path, tracesPath) {
		return base // a bad URL is reported by tracing.Config.Validate
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	return u.String()
}

// tracer returns the tracer the flags and the environment ask for, nil
// when tracing is off: then nothing of OpenTelemetry is set up.
func (f *serviceFlags) tracer(ctx context.Context, log *slog.Logger) (*tracing.Tracer, error) {
	if r := *f.traceSampleRatio; r < 0 || r > 1 || r != r {
		return nil, fmt.Errorf("--trace-sample-ratio: %v is not within 0..1", r)
	}
	endpoint, from := otlpEndpoint(*f.otlpEndpoint, os.LookupEnv)
	if endpoint == "" {
		return nil, nil
	}
	tr, err := tracing.New(ctx, tracing.Config{
		Endpoint:       endpoint,
		SampleRatio:    *f.traceSampleRatio,
		ServiceVersion: version,
		Logger:         log,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	log.Info("tracing: exporting spans over OTLP/HTTP", "endpoint", redactURL(endpoint), "from", from, "sample_ratio", *f.traceSampleRatio)
	return tr, nil
}

// redactURL is u without its query, which may hold a token, for the log.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(invalid)"
	}
	p.RawQuery, p.Fragment, p.User = "", "", nil
	return p.String()
}

// stopTracer sends the spans left, within tracingShutdown.
func stopTracer(ctx context.Context, tr *tracing.Tracer, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdown)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans left at exit not all sent", "dep", "otlp", "err", err)
	}
}
