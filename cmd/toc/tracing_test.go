package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

func TestOTLPEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flag     string
		env      map[string]string
		want     string
		wantFrom string
	}{
		{name: "off"},
		{name: "flag, base URL", flag: "http://127.0.0.1:4318", want: "http://127.0.0.1:4318/v1/traces", wantFrom: "--otlp-endpoint"},
		{name: "flag, base URL with a slash", flag: "http://127.0.0.1:4318/", want: "http://127.0.0.1:4318/v1/traces", wantFrom: "--otlp-endpoint"},
		{name: "flag, prefix", flag: "https://otlp.example/ingest", want: "https://otlp.example/ingest/v1/traces", wantFrom: "--otlp-endpoint"},
		{name: "flag, traces URL", flag: "http://c:4318/v1/traces", want: "http://c:4318/v1/traces", wantFrom: "--otlp-endpoint"},
		{name: "flag wins", flag: "http://a:4318", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"},
			want: "http://a:4318/v1/traces", wantFrom: "--otlp-endpoint"},
		{name: "env base", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"},
			want: "http://b:4318/v1/traces", wantFrom: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "env traces URL as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"},
			want: "http://c:4318/custom", wantFrom: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{name: "env empty", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": " "}},
		{name: "SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, from := otlpEndpoint(tc.flag, lookup)
			if got != tc.want || from != tc.wantFrom {
				t.Errorf("otlpEndpoint = %q from %q, want %q from %q", got, from, tc.want, tc.wantFrom)
			}
		})
	}
}

// collector is a fake OTLP/HTTP traces endpoint that keeps the spans it
// receives.
type collector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []collected
}

type collected struct {
	service, name, trace, parent, self string
	attrs                              map[string]string
}

func newCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			var service string
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := collected{service: service, name: s.Name, trace: hex.EncodeToString(s.TraceId),
						parent: hex.EncodeToString(s.ParentSpanId), self: hex.EncodeToString(s.SpanId), attrs: map[string]string{}}
					for _, a := range s.Attributes {
						v := a.GetValue()
						if _, isInt := v.GetValue().(*commonpb.AnyValue_IntValue); isInt {
							sp.attrs[a.Key] = fmt.Sprint(v.GetIntValue())
						} else {
							sp.attrs[a.Key] = v.GetStringValue()
						}
					}
					c.spans = append(c.spans, sp)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) all() []collected {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]collected(nil), c.spans...)
}

// toc dev with --otlp-endpoint exports the spans of a job to an OTLP/HTTP
// collector, by the time it has stopped: one trace from the scheduling
// request's span to the webhook, whose receiver gets the deliver span's
// traceparent.
func TestDevExportsSpans(t *testing.T) {
	col := newCollector(t)
	var (
		mu  sync.Mutex
		got []string
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)

	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"), "--otlp-endpoint", col.URL)
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
	)
	body := fmt.Sprintf(`{"topic": "orders", "delay_ms": 0, "callback_url": %q}`, recv.URL+"/hook")
	req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/jobs", strings.NewReader(body))
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("schedule: %d", resp.StatusCode)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the webhook was not called")
		}
	}
	time.Sleep(100 * time.Millisecond) // the completion, after the answer
	p.stop(t)                          // sends the spans left

	byName := map[string]collected{}
	for _, s := range col.all() {
		if s.trace != traceID || s.service != "toc" {
			t.Errorf("span %s in trace %s of %q, want trace %s of toc", s.name, s.trace, s.service, traceID)
		}
		byName[s.name] = s
	}
	sched := byName["toc.schedule"]
	if sched.parent != parentID {
		t.Errorf("schedule span's parent %q, want the request's %s; spans %v", sched.parent, parentID, col.all())
	}
	for _, name := range []string{"toc.claim", "toc.deliver", "toc.complete"} {
		if s, ok := byName[name]; !ok || s.parent != sched.self || s.attrs["toc.topic"] != "orders" {
			t.Errorf("%s: %+v, want a child of the schedule span %s of topic orders", name, s, sched.self)
		}
	}
	if want := "00-" + traceID + "-" + byName["toc.deliver"].self + "-01"; len(got) != 1 || got[0] != want {
		t.Errorf("the webhook carried %q, want %q", got, want)
	}
}
