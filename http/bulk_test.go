package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// selectionAnswer is a bulk call's answer: the count changed, and each
// failed id's code.
func selectionAnswer(t *testing.T, a answer) (int, map[string]string) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("bulk call: %d %s", a.status, a.raw)
	}
	failed := map[string]string{}
	for _, f := range a.body["failed"].([]any) {
		f := f.(map[string]any)
		failed[f["id"].(string)] = f["error"].(map[string]any)["code"].(string)
	}
	return int(a.body["changed"].(float64)), failed
}

// failing fails every delivery.
var failing = timer.HandlerFunc(func(context.Context, timer.Delivery) error { return errors.New("nope") })

// deadJobs schedules n jobs of topic due now with one attempt, as the
// caller of header, and waits until the engine (running, with a failing
// handler) has made each dead.
func deadJobs(t *testing.T, e *apiEnv, topic string, n int, header ...string) []string {
	t.Helper()
	var dead []string
	for range n {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "`+topic+`", "delay_ms": 0, "max_attempts": 1, `+cb+`}`, header...)
		if a.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
		dead = append(dead, a.body["id"].(string))
	}
	for _, id := range dead {
		waitStatus(t, e, id, "dead", header...)
	}
	return dead
}

// keyInTwoTenants schedules a job of key order-42 as each of two tenants
// of tenantsFile: in orders-eu as orders (theirs, to billing) and in
// billing as billing (mine).
func (e *apiEnv) keyInTwoTenants(t *testing.T) (theirs, mine string) {
	t.Helper()
	for _, c := range []struct {
		topic, token string
		id           *string
	}{{"orders-eu", "orders", &theirs}, {"billing", "billing", &mine}} {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "`+c.topic+`", "key": "order-42", "delay_ms": 3600000, `+cb+`}`, bearerOf(c.token)...)
		if a.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
		*c.id = a.body["id"].(string)
	}
	return theirs, mine
}

// ids is a JSON list of ids.
func ids(id ...string) string { return `["` + strings.Join(id, `", "`) + `"]` }

// POST /v1/jobs/bulk cancels, reschedules and fires now each job of a
// selection as the single call would, and answers the count changed and
// each other job's error with the single call's code.
func TestJobsBulk(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	var jobs []string
	for i := range 5 {
		a := e.call(t, "POST", "/v1/jobs", fmt.Sprintf(`{"topic": "b", "key": "k%d", "delay_ms": 3600000, %s}`, i, cb))
		jobs = append(jobs, a.body["id"].(string))
	}
	const missing = "4611686018427387904"

	// Cancel two, and a missing one: 2 changed, 1 not_found.
	n, failed := selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "cancel", "ids": `+ids(jobs[0], missing, jobs[1])+`}`))
	if n != 2 || len(failed) != 1 || failed[missing] != tochttp.CodeNotFound {
		t.Errorf("cancel: changed %d, failed %v", n, failed)
	}
	for _, id := range jobs[:2] {
		if g := e.call(t, "GET", "/v1/jobs/"+id, ""); g.body["status"] != "cancelled" {
			t.Errorf("job %s after the cancel: %s", id, g.raw)
		}
	}
	// Again: each is a conflict, as DELETE /v1/jobs/{id} answers.
	n, failed = selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "cancel", "ids": `+ids(jobs[0], jobs[1])+`}`))
	if n != 0 || failed[jobs[0]] != tochttp.CodeConflict || failed[jobs[1]] != tochttp.CodeConflict {
		t.Errorf("cancel again: changed %d, failed %v", n, failed)
	}

	// Reschedule two to a time; a cancelled one is a conflict.
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	n, failed = selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk",
		`{"action": "reschedule", "ids": `+ids(jobs[2], jobs[3], jobs[0])+`, "fire_at": "`+at.Format(time.RFC3339)+`"}`))
	if n != 2 || len(failed) != 1 || failed[jobs[0]] != tochttp.CodeConflict {
		t.Errorf("reschedule: changed %d, failed %v", n, failed)
	}
	for _, id := range jobs[2:4] {
		if g := e.call(t, "GET", "/v1/jobs/"+id, ""); g.body["fire_at"] != at.Format("2006-01-02T15:04:05.000Z") || g.body["status"] != "pending" {
			t.Errorf("job %s after the reschedule: %s", id, g.raw)
		}
	}
	n, _ = selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "reschedule", "ids": `+ids(jobs[4])+`, "delay_ms": 7200000}`))
	if g := e.call(t, "GET", "/v1/jobs/"+jobs[4], ""); n != 1 || g.body["fire_at"].(string) < time.Now().Add(119*time.Minute).UTC().Format(time.RFC3339) {
		t.Errorf("reschedule by delay: changed %d, job %s", n, g.raw)
	}

	// Fire now: due now, not before, and fired by the worker; a job that is
	// done is already_fired, as a reschedule of it answers.
	before := time.Now().UTC().Truncate(time.Millisecond)
	n, failed = selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "fire_now", "ids": `+ids(jobs[2], jobs[3])+`}`))
	if n != 2 || len(failed) != 0 {
		t.Errorf("fire now: changed %d, failed %v", n, failed)
	}
	for _, id := range jobs[2:4] {
		g := e.call(t, "GET", "/v1/jobs/"+id, "")
		due, err := time.Parse(time.RFC3339Nano, g.body["fire_at"].(string))
		if err != nil || due.Before(before) || due.After(time.Now()) {
			t.Errorf("job %s after fire now: due %v (%v), want within [%v, now]", id, g.body["fire_at"], err, before)
		}
	}
	e.run(t)
	waitStatus(t, e, jobs[2], "done")
	waitStatus(t, e, jobs[3], "done")
	n, failed = selectionAnswer(t, e.call(t, "POST", "/v1/jobs/bulk", `{"action": "fire_now", "ids": `+ids(jobs[2])+`}`))
	if n != 0 || failed[jobs[2]] != tochttp.CodeAlreadyFired {
		t.Errorf("fire now of a done job: changed %d, failed %v", n, failed)
	}

	// The audit log has each call, with its ids and failures.
	entries := e.auditEntries(t, "action=jobs.cancel_selected", "")
	if len(entries) != 2 || entries[1]["jobs"] != float64(2) || entries[1]["topic"] != "b" ||
		entries[1]["target"] != "ids="+jobs[0]+","+missing+","+jobs[1] || entries[1]["details"].(map[string]any)["failed"] != float64(1) {
		t.Errorf("audit of the cancels: %v", entries)
	}
	if entries := e.auditEntries(t, "action=jobs.fire_now_selected", ""); len(entries) != 2 {
		t.Errorf("audit of fire now: %v", entries)
	}

	// Bad input: a 400 naming the field, nothing changed.
	many := make([]string, tochttp.MaxBulkIDs+1)
	for i := range many {
		many[i] = fmt.Sprint(i + 1)
	}
	for _, c := range []struct{ body, field string }{
		{`{"action": "delete", "ids": ["1"]}`, "action"},
		{`{"ids": ["1"]}`, "action"},
		{`{"action": "cancel"}`, "ids"},
		{`{"action": "cancel", "ids": []}`, "ids"},
		{`{"action": "cancel", "ids": ` + ids(many...) + `}`, "ids"},
		{`{"action": "cancel", "ids": ["1", "x"]}`, "ids[1]"},
		{`{"action": "cancel", "ids": ["1", "0"]}`, "ids[1]"},
		{`{"action": "cancel", "ids": ["7", "7"]}`, "ids[1]"},
		{`{"action": "cancel", "ids": [7]}`, "ids"},
		{`{"action": "cancel", "ids": ["1"], "fire_at": "2030-01-01T00:00:00Z"}`, "fire_at"},
		{`{"action": "fire_now", "ids": ["1"], "delay_ms": 0}`, "delay_ms"},
		{`{"action": "reschedule", "ids": ["1"]}`, "fire_at"},
		{`{"action": "reschedule", "ids": ["1"], "delay_ms": -1}`, "delay_ms"},
		{`{"action": "cancel", "ids": ["1"], "colour": "red"}`, "colour"},
	} {
		e.call(t, "POST", "/v1/jobs/bulk", c.body).wantError(t, 400, tochttp.CodeInvalid, c.field)
	}
	e.call(t, "POST", "/v1/jobs/bulk", "").wantError(t, 400, tochttp.CodeInvalid, "")
}

// POST /v1/deadletters/bulk replays and purges each dead letter of a
// selection; a job that is not dead is a conflict, a missing one
// not_found.
func TestDeadLettersBulk(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, failing)
	e.run(t)
	dead := deadJobs(t, e, "d", 4)
	pending := e.call(t, "POST", "/v1/jobs", `{"topic": "d", "delay_ms": 3600000, `+cb+`}`).body["id"].(string)

	n, failed := selectionAnswer(t, e.call(t, "POST", "/v1/deadletters/bulk", `{"action": "replay", "ids": `+ids(dead[0], dead[1], pending)+`, "delay_ms": 3600000}`))
	if n != 2 || len(failed) != 1 || failed[pending] != tochttp.CodeConflict {
		t.Errorf("replay: changed %d, failed %v", n, failed)
	}
	for _, id := range dead[:2] {
		if g := e.call(t, "GET", "/v1/jobs/"+id, ""); g.body["status"] != "pending" || g.body["attempts"] != float64(0) {
			t.Errorf("job %s after the replay: %s", id, g.raw)
		}
	}
	n, failed = selectionAnswer(t, e.call(t, "POST", "/v1/deadletters/bulk", `{"action": "purge", "ids": `+ids(dead[2], dead[3], dead[0], "12345")+`}`))
	if n != 2 || len(failed) != 2 || failed[dead[0]] != tochttp.CodeConflict || failed["12345"] != tochttp.CodeNotFound {
		t.Errorf("purge: changed %d, failed %v", n, failed)
	}
	for _, id := range dead[2:] {
		if g := e.call(t, "GET", "/v1/jobs/"+id, ""); g.body["status"] != "purged" {
			t.Errorf("job %s after the purge: %s", id, g.raw)
		}
	}
	if l := e.call(t, "GET", "/v1/deadletters?topic=d", ""); len(l.body["jobs"].([]any)) != 0 {
		t.Errorf("dead letters left: %s", l.raw)
	}
	if entries := e.auditEntries(t, "action=deadletter.purge_selected", ""); len(entries) != 1 || entries[0]["jobs"] != float64(2) || entries[0]["topic"] != "d" {
		t.Errorf("audit of the purge: %v", entries)
	}
	for _, c := range []struct{ body, field string }{
		{`{"action": "cancel", "ids": ["1"]}`, "action"},
		{`{"action": "purge", "ids": ["1"], "delay_ms": 5}`, "delay_ms"},
		{`{"action": "replay", "ids": ["1"], "delay_ms": -5}`, "delay_ms"},
		{`{"action": "replay", "ids": []}`, "ids"},
	} {
		e.call(t, "POST", "/v1/deadletters/bulk", c.body).wantError(t, 400, tochttp.CodeInvalid, c.field)
	}
}

// A replay of a selection counts against max_pending: past it, each is
// pending_quota and stays dead.
func TestDeadLettersBulkPendingQuota(t *testing.T) {
	set, err := auth.Parse([]byte(tenantsFile))
	if err != nil {
		t.Fatal(err)
	}
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }}, failing)
	e.run(t)
	small := bearerOf("small")
	dead := deadJobs(t, e, "small", 2, small...)
	for full := false; !full; { // max_pending 3: fill it
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "small", "delay_ms": 3600000, `+cb+`}`, small...)
		switch a.status {
		case http.StatusCreated:
		case http.StatusTooManyRequests:
			full = true
		default:
			t.Fatalf("schedule: %d %s", a.status, a.raw)
		}
	}
	n, failed := selectionAnswer(t, e.call(t, "POST", "/v1/deadletters/bulk", `{"action": "replay", "ids": `+ids(dead...)+`}`, small...))
	if n != 0 || failed[dead[0]] != tochttp.CodePendingQuota || failed[dead[1]] != tochttp.CodePendingQuota {
		t.Errorf("replay past max_pending: changed %d, failed %v", n, failed)
	}
	if g := e.call(t, "GET", "/v1/jobs/"+dead[0], "", small...); g.body["status"] != "dead" {
		t.Errorf("a refused replay left %s", g.raw)
	}
}

// A tenant cannot act on another tenant's jobs: each is not_found in the
// answer, word for word as a missing job, and stays as it was; a read
// token may not act at all.
func TestBulkAcrossTenants(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing, viewer := bearerOf("orders"), bearerOf("billing"), bearerOf("viewer")
	theirs, mine := e.keyInTwoTenants(t)
	const missing = "4611686018427387904"

	message := func(a answer, id string) string {
		t.Helper()
		for _, f := range a.body["failed"].([]any) {
			if f := f.(map[string]any); f["id"] == id {
				return f["error"].(map[string]any)["message"].(string)
			}
		}
		t.Fatalf("%s not among the failed: %s", id, a.raw)
		return ""
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/jobs/bulk", `{"action": "cancel", "ids": ` + ids(theirs, missing, mine) + `}`},
		{"/v1/jobs/bulk", `{"action": "fire_now", "ids": ` + ids(theirs, missing, mine) + `}`},
		{"/v1/jobs/bulk", `{"action": "reschedule", "ids": ` + ids(theirs, missing, mine) + `, "delay_ms": 60000}`},
		{"/v1/deadletters/bulk", `{"action": "purge", "ids": ` + ids(theirs, missing) + `}`},
		{"/v1/deadletters/bulk", `{"action": "replay", "ids": ` + ids(theirs, missing) + `}`},
	} {
		a := e.call(t, "POST", c.path, c.body, billing...)
		_, failed := selectionAnswer(t, a)
		if failed[theirs] != tochttp.CodeNotFound || failed[missing] != tochttp.CodeNotFound {
			t.Errorf("%s %s by another tenant: failed %v", c.path, c.body, failed)
		}
		if got, want := message(a, theirs), strings.Replace(message(a, missing), missing, theirs, 1); got != want {
			t.Errorf("%s: another tenant's job says %q, a missing one %q", c.path, got, want)
		}
	}
	if g := e.call(t, "GET", "/v1/jobs/"+theirs, "", orders...); g.body["status"] != "pending" || g.body["version"] != float64(1) {
		t.Errorf("another tenant's bulk calls changed the job: %s", g.raw)
	}
	e.call(t, "POST", "/v1/jobs/bulk", `{"action": "cancel", "ids": `+ids(theirs)+`}`, viewer...).wantError(t, 403, tochttp.CodeForbidden, "")
	e.call(t, "POST", "/v1/deadletters/bulk", `{"action": "purge", "ids": `+ids(theirs)+`}`, viewer...).wantError(t, 403, tochttp.CodeForbidden, "")
}
