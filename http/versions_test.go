package http_test

import (
	"net/http"
	"strconv"
	"sync"
	"testing"

	tochttp "github.com/toc-project/toc/http"
)

// wantVersion checks a job answer's version, in its body and its ETag.
func (a answer) wantVersion(t *testing.T, version int) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", a.status, a.raw)
	}
	if got := a.body["version"]; got != float64(version) {
		t.Fatalf("version %v, want %d: %s", got, version, a.raw)
	}
	if got, want := a.header.Get("ETag"), `"`+strconv.Itoa(version)+`"`; got != want {
		t.Fatalf("ETag %q, want %q", got, want)
	}
}

// wantMismatch checks a 412 answer naming the job's version now.
func (a answer) wantMismatch(t *testing.T, current int) {
	t.Helper()
	a.wantError(t, http.StatusPreconditionFailed, tochttp.CodeVersionMismatch, "")
	if got := a.body["error"].(map[string]any)["current_version"]; got != float64(current) {
		t.Fatalf("current_version %v, want %d: %s", got, current, a.raw)
	}
	if got, want := a.header.Get("ETag"), `"`+strconv.Itoa(current)+`"`; got != want {
		t.Fatalf("ETag of the 412 %q, want %q", got, want)
	}
}

func TestJobVersions(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	a := e.call(t, "POST", "/v1/jobs", `{"topic": "v", "fire_at": "2035-01-01T00:00:00Z", `+cb+`}`)
	if a.status != http.StatusCreated || a.body["version"] != float64(1) {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	e.call(t, "GET", "/v1/jobs/"+id, "").wantVersion(t, 1)

	e.call(t, "PATCH", "/v1/jobs/"+id, `{"fire_at": "2036-01-01T00:00:00Z"}`, "If-Match", `"1"`).wantVersion(t, 2)
	// A stale version: 412, and nothing changes.
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"fire_at": "2037-01-01T00:00:00Z"}`, "If-Match", `"1"`).wantMismatch(t, 2)
	e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"1"`).wantMismatch(t, 2)
	e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"3"`).wantMismatch(t, 2)
	g := e.call(t, "GET", "/v1/jobs/"+id, "")
	g.wantVersion(t, 2)
	if g.body["status"] != "pending" || g.body["fire_at"] != "2036-01-01T00:00:00.000Z" {
		t.Fatalf("after refused changes: %s", g.raw)
	}
	// Listings show it too.
	l := e.call(t, "GET", "/v1/jobs?topic=v", "")
	if jobs, _ := l.body["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["version"] != float64(2) {
		t.Fatalf("listing: %s", l.raw)
	}

	// Malformed: 400 naming the header, and nothing changes.
	for _, bad := range []string{`2`, `W/"2"`, `"2", "3"`, `"0"`, `"02"`, `""`, `"-2"`, `"abc"`, `"99999999999999999999"`, ` `} {
		e.call(t, "PATCH", "/v1/jobs/"+id, `{"delay_ms": 5}`, "If-Match", bad).wantError(t, 400, tochttp.CodeInvalid, "If-Match")
		e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", bad).wantError(t, 400, tochttp.CodeInvalid, "If-Match")
	}
	e.call(t, "GET", "/v1/jobs/"+id, "").wantVersion(t, 2)

	// * and no If-Match: any version.
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"fire_at": "2036-06-01T00:00:00Z"}`, "If-Match", "*").wantVersion(t, 3)
	e.call(t, "PATCH", "/v1/jobs/"+id, `{"fire_at": "2036-07-01T00:00:00Z"}`).wantVersion(t, 4)

	c := e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"4"`)
	c.wantVersion(t, 5)
	if c.body["status"] != "cancelled" {
		t.Fatalf("cancel: %s", c.raw)
	}
	// The version is checked before the status: stale is 412, current 409.
	e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"4"`).wantMismatch(t, 5)
	e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"5"`).wantError(t, 409, tochttp.CodeConflict, "")
	e.call(t, "DELETE", "/v1/jobs/12345", "", "If-Match", `"1"`).wantError(t, 404, tochttp.CodeNotFound, "")
}

// TestIfMatchRace: of PATCHes and DELETEs racing with the job's version,
// exactly one succeeds and the others get 412.
func TestIfMatchRace(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	id := e.call(t, "POST", "/v1/jobs", `{"topic": "v", "delay_ms": 3600000, `+cb+`}`).body["id"].(string)
	const racers = 8
	statuses := make(chan int, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				statuses <- e.call(t, "PATCH", "/v1/jobs/"+id, `{"delay_ms": 7200000}`, "If-Match", `"1"`).status
			} else {
				statuses <- e.call(t, "DELETE", "/v1/jobs/"+id, "", "If-Match", `"1"`).status
			}
		})
	}
	close(start)
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[http.StatusOK] != 1 || count[http.StatusPreconditionFailed] != racers-1 {
		t.Fatalf("answers %v, want one 200 and %d 412", count, racers-1)
	}
	e.call(t, "GET", "/v1/jobs/"+id, "").wantVersion(t, 2)
}
