package webhook_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// A receiver's non-2xx answer comes back as a timer.StatusError with its
// code, whatever else the error says (retry after, discard), so that the
// task store keeps it with the attempt and dead letters group by it.
func TestFailureCarriesStatus(t *testing.T) {
	for _, code := range []int{302, 400, 410, 429, 500, 503} {
		srv := newServer(t, &recorder{reply: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }})
		err := newClient(t, webhook.Config{}).Fire(t.Context(), delivery(testJob(srv.URL+"/hook"), 1))
		se, ok := errors.AsType[*timer.StatusError](err)
		if !ok || se.Code != code {
			t.Errorf("answer %d: error %v, want a StatusError of %d", code, err, code)
		}
	}
}
