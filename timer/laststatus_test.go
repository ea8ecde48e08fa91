package timer_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// A job whose receiver answers 204 ends done with last_status 204, as its
// attempt shows, not 0: MariaDB, redis-server and the webhook client.
func TestEngineSuccessKeepsLastStatus(t *testing.T) {
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)
	hook, err := webhook.NewClient(webhook.Config{Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hook.CloseIdleConnections)
	s := newStack(t, sharedRedis)
	e, _ := s.start(t, hook, timer.Config{})
	ids := schedule(t, e, []timer.Request{{Topic: "hooks", FireAt: time.Now(), CallbackURL: receiver.URL + "/hook"}})
	waitStatus(t, s.store, ids, timer.StatusDone)
	j, err := s.store.Get(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if j.LastStatus != http.StatusNoContent || j.Attempts != 1 || j.LastError != "" {
		t.Errorf("done job: last status %d, %d attempts, last error %q; want 204, 1, none", j.LastStatus, j.Attempts, j.LastError)
	}
}
