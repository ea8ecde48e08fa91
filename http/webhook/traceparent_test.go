package webhook_test

import (
	"testing"

	"github.com/toc-project/toc/http/webhook"
)

// A delivery's traceparent goes out as the traceparent header, exactly
// as given; a delivery without one sends none.
func TestWebhookTraceParent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := &recorder{}
	srv := newServer(t, rec)
	wh := newClient(t, webhook.Config{})
	j := testJob(srv.URL + "/hook")
	for _, want := range []string{tp, ""} {
		d := delivery(j, 1)
		d.TraceParent = want
		if err := wh.Fire(t.Context(), d); err != nil {
			t.Fatalf("Fire: %v", err)
		}
		if got := rec.last(t).header.Values("traceparent"); (want == "" && len(got) != 0) || (want != "" && (len(got) != 1 || got[0] != want)) {
			t.Errorf("traceparent headers %q, want %q", got, want)
		}
	}
}
