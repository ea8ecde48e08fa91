package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// timers counts the members of every sorted set in Redis: the timer index.
func (e *apiEnv) timers(t *testing.T) int {
	t.Helper()
	n := 0
	for _, k := range e.mr.Keys() {
		if typ := e.mr.Type(k); typ == "zset" {
			m, err := e.mr.ZMembers(k)
			if err != nil {
				t.Fatal(err)
			}
			n += len(m)
		}
	}
	return n
}

// rows counts the jobs of topic in every status.
func (e *apiEnv) rows(t *testing.T, topic string) int64 {
	t.Helper()
	counts, err := e.store.CountByStatus(t.Context(), topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

type itemWant struct {
	index       int
	code, field string
}

// wantItems checks a refused batch's answer: its status and code, and the
// error of each refused item, in order.
func (a answer) wantItems(t *testing.T, status int, code string, want ...itemWant) {
	t.Helper()
	a.wantError(t, status, code, "jobs")
	items, _ := a.body["error"].(map[string]any)["items"].([]any)
	if len(items) != len(want) {
		t.Fatalf("%d item errors, want %d: %s", len(items), len(want), a.raw)
	}
	for i, w := range want {
		it := items[i].(map[string]any)
		field, _ := it["field"].(string)
		if it["index"] != float64(w.index) || it["code"] != w.code || field != w.field || it["message"] == "" {
			t.Errorf("item error %d = %v, want %+v", i, it, w)
		}
	}
}

// A batch with any refused item answers with an error per refused item
// and stores nothing: no row, no Redis timer, no topic of first use.
func TestBatchAllOrNothing(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	ok := `{"topic": "fresh", "delay_ms": 1000, ` + cb + `}`
	if a := e.call(t, "POST", "/v1/jobs", `{"topic": "used", "key": "k", "delay_ms": 1000, `+cb+`, "payload": 1}`); a.status != http.StatusCreated {
		t.Fatalf("prior job: %d %s", a.status, a.raw)
	}
	timers := e.timers(t)
	tests := []struct {
		name   string
		items  []string
		status int
		code   string
		want   []itemWant
	}{
		{"one bad of five", []string{ok, ok, ok, `{"topic": "fresh", "delay_ms": 1000}`, ok}, 400, tochttp.CodeInvalid,
			[]itemWant{{3, tochttp.CodeInvalid, "callback_url"}}},
		{"several bad", []string{`{"topic": "B!", "delay_ms": 1, ` + cb + `}`, ok, `{"topic": "fresh", "delay_ms": 1, ` + cb + `, "extra": 1}`, `5`},
			400, tochttp.CodeInvalid, []itemWant{{0, tochttp.CodeInvalid, "topic"}, {2, tochttp.CodeInvalid, "extra"}, {3, tochttp.CodeInvalid, ""}}},
		{"duplicate key in an item", []string{ok, `{"topic": "fresh", "topic": "used", "delay_ms": 1, ` + cb + `}`}, 400, tochttp.CodeInvalid,
			[]itemWant{{1, tochttp.CodeInvalid, "topic"}}},
		{"fire_at out of range", []string{`{"topic": "fresh", "fire_at": "9999-01-01T00:00:00Z", ` + cb + `}`, ok}, 400, tochttp.CodeInvalid,
			[]itemWant{{0, tochttp.CodeInvalid, "fire_at"}}},
		{"ftp callback", []string{ok, `{"topic": "fresh", "delay_ms": 1, "callback_url": "ftp://x/"}`}, 400, tochttp.CodeInvalid,
			[]itemWant{{1, tochttp.CodeInvalid, "callback_url"}}},
		{"key reused with other content", []string{ok, `{"topic": "used", "key": "k", "delay_ms": 1000, ` + cb + `, "payload": 2}`}, 409, tochttp.CodeConflict,
			[]itemWant{{1, tochttp.CodeConflict, ""}}},
		{"key repeated with other content", []string{`{"topic": "fresh", "key": "n", "delay_ms": 1, ` + cb + `}`, `{"topic": "fresh", "key": "n", "delay_ms": 1, "biz_id": 3, ` + cb + `}`},
			409, tochttp.CodeConflict, []itemWant{{1, tochttp.CodeConflict, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+strings.Join(tt.items, ",")+`]}`)
			a.wantItems(t, tt.status, tt.code, tt.want...)
			if n := e.rows(t, "fresh"); n != 0 {
				t.Errorf("%d rows stored", n)
			}
			if n := e.rows(t, "used"); n != 1 {
				t.Errorf("topic used: %d rows, want the prior one", n)
			}
			if n := e.timers(t); n != timers {
				t.Errorf("%d Redis timers, want %d", n, timers)
			}
			if g := e.call(t, "GET", "/v1/topics/fresh", ""); g.status != http.StatusNotFound {
				t.Errorf("topic of first use: %d %s", g.status, g.raw)
			}
		})
	}
}

// A batch that passes is committed whole, keys answering as for single
// jobs, and indexed.
func TestBatchCommitsWhole(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	prior := e.call(t, "POST", "/v1/jobs", `{"topic": "w", "key": "k", "delay_ms": 1000, `+cb+`}`)
	var items []string
	for i := range 10 {
		items = append(items, fmt.Sprintf(`{"topic": "w", "biz_id": %d, "delay_ms": 1000, %s}`, i, cb))
	}
	items = append(items, `{"topic": "w", "key": "k", "delay_ms": 1000, `+cb+`}`)
	a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+strings.Join(items, ",")+`]}`)
	if a.status != http.StatusOK {
		t.Fatalf("batch: %d %s", a.status, a.raw)
	}
	res := a.body["results"].([]any)
	if last := res[10].(map[string]any); last["id"] != prior.body["id"] || last["created"] != false {
		t.Errorf("a repeated key: %v, want job %v", last, prior.body["id"])
	}
	if n := e.rows(t, "w"); n != 11 {
		t.Errorf("%d rows, want 11", n)
	}
	if n := e.timers(t); n != 11 {
		t.Errorf("%d Redis timers, want 11", n)
	}
}

// A batch that sets with_jobs answers each job in full, as POST /v1/jobs
// and GET /v1/jobs/{id} show it; one that does not, by id and status.
func TestBatchWithJobs(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	prior := e.call(t, "POST", "/v1/jobs", `{"topic": "w", "key": "k", "delay_ms": 60000, "payload": {"n": 1}, `+cb+`}`)
	items := `{"topic": "w", "biz_id": "7", "delay_ms": 60000, "payload": {"n": 2}, ` + cb + `}, {"topic": "w", "key": "k", "delay_ms": 60000, "payload": {"n": 1}, ` + cb + `}`
	a := e.call(t, "POST", "/v1/jobs/batch", `{"with_jobs": true, "jobs": [`+items+`]}`)
	if a.status != http.StatusOK {
		t.Fatalf("batch: %d %s", a.status, a.raw)
	}
	res := a.body["results"].([]any)
	for i, created := range []bool{true, false} {
		r := res[i].(map[string]any)
		job, ok := r["job"].(map[string]any)
		if !ok || r["created"] != created || job["id"] != r["id"] {
			t.Fatalf("result %d: %v, want its job in full, created %v", i, r, created)
		}
		if got := e.call(t, "GET", "/v1/jobs/"+r["id"].(string), ""); !reflect.DeepEqual(got.body, job) {
			t.Errorf("result %d's job:\n%v\nGET answers:\n%v", i, job, got.body)
		}
	}
	if res[1].(map[string]any)["id"] != prior.body["id"] {
		t.Errorf("the repeated key answered %v, want job %v", res[1], prior.body["id"])
	}
	plain := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+items+`]}`)
	if r := plain.body["results"].([]any)[1].(map[string]any); plain.status != http.StatusOK || r["job"] != nil {
		t.Errorf("without with_jobs: %d %s, want no job", plain.status, plain.raw)
	}
	e.call(t, "POST", "/v1/jobs/batch", `{"with_jobs": "yes", "jobs": [`+items+`]}`).wantError(t, 400, tochttp.CodeInvalid, "with_jobs")
}

// With auto-creation off, an item of an unknown topic fails the batch
// with the item named.
func TestBatchUnknownTopic(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	sched, err := timer.NewScheduler(e.store, nil, timer.SchedulerConfig{NoAutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mustAPI(t, sched, nil, nil, tochttp.APIConfig{AllowPrivateCallbacks: true}))
	t.Cleanup(srv.Close)
	strict := &apiEnv{srv: srv}
	if a := e.call(t, "PUT", "/v1/topics/known", `{}`); a.status != http.StatusCreated {
		t.Fatalf("put: %d %s", a.status, a.raw)
	}
	strict.call(t, "POST", "/v1/jobs/batch", `{"jobs": [{"topic": "known", "delay_ms": 1, `+cb+`}, {"topic": "ghost", "delay_ms": 1, `+cb+`}]}`).
		wantItems(t, 400, tochttp.CodeInvalid, itemWant{1, tochttp.CodeInvalid, "topic"})
	if n := e.rows(t, "known"); n != 0 {
		t.Errorf("%d rows stored", n)
	}
}
