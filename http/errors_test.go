package http_test

import (
	"net/http"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
)

// wantMessage checks an error answer's status, code and exact message.
func (a answer) wantMessage(t *testing.T, status int, code, message string) {
	t.Helper()
	a.wantError(t, status, code, "")
	if got := a.body["error"].(map[string]any)["message"]; got != message {
		t.Errorf("message %q, want %q", got, message)
	}
}

// A conflict's message says what the conflict is, without repeating the
// code ("job 5 is cancelled", not "job 5 is cancelled: conflict").
func TestConflictMessagesDoNotRepeatTheCode(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	id := e.call(t, "POST", "/v1/jobs", `{"topic": "m", "delay_ms": 3600000, `+cb+`}`).body["id"].(string)
	e.call(t, "DELETE", "/v1/deadletters/"+id, "").wantMessage(t, http.StatusConflict, tochttp.CodeConflict,
		"purge dead letter "+id+": job is pending")
	e.call(t, "POST", "/v1/deadletters/"+id+"/replay", `{}`).wantMessage(t, http.StatusConflict, tochttp.CodeConflict,
		"job "+id+" is pending")
	if c := e.call(t, "DELETE", "/v1/jobs/"+id, ""); c.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", c.status, c.raw)
	}
	e.call(t, "DELETE", "/v1/jobs/"+id, "").wantMessage(t, http.StatusConflict, tochttp.CodeConflict, "job "+id+" is cancelled")
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"delay_ms": 5}`).wantMessage(t, http.StatusConflict, tochttp.CodeConflict, "job "+id+" is cancelled")

	// A done job: already_fired, said once.
	e.run(t)
	done := e.call(t, "POST", "/v1/jobs", `{"topic": "m", "delay_ms": 0, `+cb+`}`).body["id"].(string)
	for deadline := time.Now().Add(10 * time.Second); e.call(t, "GET", "/v1/jobs/"+done, "").body["status"] != "done"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("job %s never done", done)
		}
	}
	e.call(t, "DELETE", "/v1/jobs/"+done, "").wantMessage(t, http.StatusConflict, tochttp.CodeAlreadyFired, "job "+done+" is done: already fired")
}
