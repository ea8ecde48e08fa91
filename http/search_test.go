package http_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
)

// GET /v1/jobs finds a topic's jobs by status, business id, key and due
// time, page by page; DELETE and PATCH /v1/jobs act on a business
// object's pending jobs and count them; bad filters name the field.
func TestFindAndActByBusinessID(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	later := time.Now().Add(time.Hour).UTC()
	ids := map[string]string{}
	for i := range 9 {
		key := ""
		if i == 0 {
			key = `, "key": "order-7"`
		}
		a := e.call(t, "POST", "/v1/jobs", fmt.Sprintf(`{"topic": "orders", "biz_id": %d, "fire_at": %q, %s%s}`,
			i%3+1, later.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), cb, key))
		if a.status != 201 {
			t.Fatalf("schedule %d: %d %s", i, a.status, a.raw)
		}
		ids[fmt.Sprint(i)] = a.body["id"].(string)
	}
	find := func(query string) ([]string, string) {
		t.Helper()
		a := e.call(t, "GET", "/v1/jobs?"+query, "")
		if a.status != 200 {
			t.Fatalf("GET /v1/jobs?%s: %d %s", query, a.status, a.raw)
		}
		var got []string
		for _, j := range a.body["jobs"].([]any) {
			got = append(got, j.(map[string]any)["id"].(string))
		}
		return got, a.body["next_cursor"].(string)
	}
	// Business id 2: jobs 1, 4, 7, in due order, two to a page.
	page, next := find("topic=orders&biz_id=2&limit=2")
	if len(page) != 2 || page[0] != ids["1"] || page[1] != ids["4"] || next == "" {
		t.Fatalf("first page %v next %q", page, next)
	}
	page, next = find("topic=orders&biz_id=2&limit=2&cursor=" + url.QueryEscape(next))
	if len(page) != 1 || page[0] != ids["7"] || next != "" {
		t.Fatalf("second page %v next %q", page, next)
	}
	if page, _ := find("topic=orders&key=order-7"); len(page) != 1 || page[0] != ids["0"] {
		t.Errorf("by key: %v", page)
	}
	if page, _ := find("topic=orders&status=pending&fire_after=" + url.QueryEscape(later.Add(5*time.Minute).Format(time.RFC3339))); len(page) != 4 {
		t.Errorf("pending due from minute 5: %v", page)
	}

	// Cancel business id 1 (jobs 0, 3, 6), then reschedule business id 3.
	a := e.call(t, "DELETE", "/v1/jobs?topic=orders&biz_id=1", "")
	if a.status != 200 || a.body["cancelled"] != float64(3) || a.body["too_late"] != float64(0) {
		t.Fatalf("cancel biz 1: %d %s", a.status, a.raw)
	}
	if page, _ := find("topic=orders&biz_id=1&status=cancelled"); len(page) != 3 {
		t.Errorf("cancelled jobs of biz 1: %v", page)
	}
	if a := e.call(t, "DELETE", "/v1/jobs?topic=orders&biz_id=1", ""); a.body["cancelled"] != float64(0) {
		t.Errorf("second cancel: %s", a.raw)
	}
	to := later.Add(24 * time.Hour).Truncate(time.Second)
	a = e.call(t, "PATCH", "/v1/jobs?topic=orders&biz_id=3", fmt.Sprintf(`{"fire_at": %q}`, to.Format(time.RFC3339)))
	if a.status != 200 || a.body["rescheduled"] != float64(3) {
		t.Fatalf("reschedule biz 3: %d %s", a.status, a.raw)
	}
	if page, _ := find("topic=orders&biz_id=3&fire_after=" + url.QueryEscape(to.Format(time.RFC3339))); len(page) != 3 {
		t.Errorf("rescheduled jobs of biz 3: %v", page)
	}

	for _, c := range []struct{ method, path, field string }{
		{"GET", "/v1/jobs", "topic"},
		{"GET", "/v1/jobs?topic=orders&status=sleeping", "status"},
		{"GET", "/v1/jobs?topic=orders&biz_id=-1", "biz_id"},
		{"GET", "/v1/jobs?topic=orders&limit=0", "limit"},
		{"GET", "/v1/jobs?topic=orders&cursor=x", "cursor"},
		{"GET", "/v1/jobs?topic=orders&fire_after=yesterday", "fire_after"},
		{"GET", "/v1/jobs?topic=orders&colour=red", "colour"},
		{"DELETE", "/v1/jobs?topic=orders", "biz_id"},
		{"DELETE", "/v1/jobs?biz_id=1", "topic"},
		{"DELETE", "/v1/jobs?topic=orders&biz_id=1&status=pending", "status"},
	} {
		e.call(t, c.method, c.path, "").wantError(t, 400, tochttp.CodeInvalid, c.field)
	}
	e.call(t, "PATCH", "/v1/jobs?topic=orders&biz_id=3", `{}`).wantError(t, 400, tochttp.CodeInvalid, "fire_at")
}

// GET /v1/jobs reads a list of statuses repeated (status=a&status=b, the
// form OpenAPI clients such as openapi-fetch and oapi-codegen send by
// default), comma separated (status=a,b), or both; status stays a 400
// where it is not a parameter, and other parameters may still be given
// only once.
func TestFindJobsStatusRepeated(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	later := time.Now().Add(time.Hour).UTC()
	statusOf := map[string]string{}
	for i := range 4 {
		a := e.call(t, "POST", "/v1/jobs", fmt.Sprintf(`{"topic": "orders", "biz_id": "%d", "fire_at": %q, %s}`,
			i+1, later.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), cb))
		if a.status != 201 {
			t.Fatalf("schedule %d: %d %s", i, a.status, a.raw)
		}
		id := a.body["id"].(string)
		statusOf[id] = "pending"
		if i%2 == 1 {
			if a := e.call(t, "DELETE", "/v1/jobs/"+id, ""); a.status != 200 {
				t.Fatalf("cancel %s: %d %s", id, a.status, a.raw)
			}
			statusOf[id] = "cancelled"
		}
	}
	for _, c := range []struct {
		query string
		want  []string // statuses the page must hold, each job once
	}{
		{"status=pending", []string{"pending"}},
		{"status=cancelled", []string{"cancelled"}},
		{"status=pending&status=cancelled", []string{"pending", "cancelled"}},
		{"status=cancelled&status=pending", []string{"pending", "cancelled"}},
		{"status=pending,cancelled", []string{"pending", "cancelled"}},
		{"status=pending&status=firing,cancelled", []string{"pending", "cancelled"}},
		{"status=done&status=firing", nil},
	} {
		a := e.call(t, "GET", "/v1/jobs?topic=orders&"+c.query, "")
		if a.status != 200 {
			t.Errorf("%s: %d %s", c.query, a.status, a.raw)
			continue
		}
		got := map[string]bool{}
		for _, j := range a.body["jobs"].([]any) {
			job := j.(map[string]any)
			id, st := job["id"].(string), job["status"].(string)
			if got[id] || st != statusOf[id] {
				t.Errorf("%s: job %s twice or %s, want %s once: %s", c.query, id, st, statusOf[id], a.raw)
			}
			got[id] = true
		}
		want := 0
		for _, st := range statusOf {
			if slices.Contains(c.want, st) {
				want++
			}
		}
		if len(got) != want {
			t.Errorf("%s: %d jobs, want %d: %s", c.query, len(got), want, a.raw)
		}
	}
	for _, c := range []struct{ method, path, field string }{
		{"GET", "/v1/jobs?topic=orders&status=pending&status=sleeping", "status"},
		{"GET", "/v1/jobs?topic=orders&status=pending&status=cancelled&limit=1&limit=2", "limit"},
		{"GET", "/v1/jobs?topic=orders&topic=orders&status=pending&status=cancelled", "topic"},
		{"DELETE", "/v1/jobs?topic=orders&biz_id=1&status=pending&status=cancelled", "status"},
	} {
		e.call(t, c.method, c.path, "").wantError(t, 400, tochttp.CodeInvalid, c.field)
	}
}

// GET /v1/jobs/search finds a job by id and by key in every topic, and
// refuses a search of nothing.
func TestJobSearch(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	var made []string
	for _, topic := range []string{"a", "b", "c"} {
		a := e.call(t, "POST", "/v1/jobs", `{"topic": "`+topic+`", "key": "shared key", "delay_ms": 3600000, `+cb+`}`)
		made = append(made, a.body["id"].(string))
	}
	numeric := e.call(t, "POST", "/v1/jobs", `{"topic": "b", "key": "`+made[0]+`", "delay_ms": 3600000, `+cb+`}`).body["id"].(string)
	search := func(q string) answer {
		t.Helper()
		a := e.call(t, "GET", "/v1/jobs/search?q="+q, "")
		if a.status != http.StatusOK {
			t.Fatalf("search %q: %d %s", q, a.status, a.raw)
		}
		return a
	}
	a := search("shared+key")
	if js := a.body["jobs"].([]any); len(js) != 3 || a.body["topics_searched"] != float64(3) {
		t.Errorf("by a key of three topics: %s", a.raw)
	}
	// A number is an id and a key: the job of that id, and the job whose
	// key it is.
	a = search("+" + made[0] + "+")
	if js := a.body["jobs"].([]any); len(js) != 2 || js[0].(map[string]any)["id"] != made[0] || js[1].(map[string]any)["id"] != numeric {
		t.Errorf("by id: %s", a.raw)
	}
	e.call(t, "GET", "/v1/jobs/search", "").wantError(t, 400, tochttp.CodeInvalid, "q")
	e.call(t, "GET", "/v1/jobs/search?q=+", "").wantError(t, 400, tochttp.CodeInvalid, "q")
	e.call(t, "GET", "/v1/jobs/search?q=a&q=b", "").wantError(t, 400, tochttp.CodeInvalid, "q")
	e.call(t, "GET", "/v1/jobs/search?q=a&topic=b", "").wantError(t, 400, tochttp.CodeInvalid, "topic")
	e.call(t, "GET", "/v1/jobs/search?q="+strings.Repeat("x", 129), "").wantError(t, 400, tochttp.CodeInvalid, "q")
}

// A tenant finds its own jobs by id and by key, never another tenant's:
// one of a topic it may not see is not found, as a missing one.
func TestJobSearchAcrossTenants(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing, viewer, ops := bearerOf("orders"), bearerOf("billing"), bearerOf("viewer"), bearerOf("ops")
	theirs, mine := e.keyInTwoTenants(t)
	const missing = "4611686018427387904"
	found := func(q string, tok []string) []string {
		t.Helper()
		a := e.call(t, "GET", "/v1/jobs/search?q="+q, "", tok...)
		if a.status != http.StatusOK || a.body["truncated"] != false {
			t.Fatalf("search %q: %d %s", q, a.status, a.raw)
		}
		var out []string
		for _, j := range a.body["jobs"].([]any) {
			out = append(out, j.(map[string]any)["id"].(string))
		}
		return out
	}
	for _, c := range []struct {
		q    string
		tok  []string
		want string
	}{
		{theirs, billing, ""},
		{theirs, orders, theirs},
		{theirs, viewer, theirs},
		{mine, billing, mine},
		{mine, orders, ""},
		{"order-42", billing, mine},
		{"order-42", orders, theirs},
		{"order-42", ops, mine + "," + theirs},
		{"nothing", ops, ""},
		{missing, ops, ""},
	} {
		if got := strings.Join(found(c.q, c.tok), ","); got != c.want {
			t.Errorf("search %q as %s: %q, want %q", c.q, c.tok[1], got, c.want)
		}
	}
}

// A token that sees more topics than one search reads: the key is looked
// for in the first MaxSearchTopics by name, and the answer says the rest
// were not read; a job found by its id is found whatever its topic.
func TestJobSearchBounded(t *testing.T) {
	e := newAPIEnv(t, tochttp.APIConfig{}, nil)
	// One batch makes the topics t0000..t0999, a job each, the first with
	// the key; t1000's job has it too.
	var batch []string
	for i := range tochttp.MaxSearchTopics {
		key := ""
		if i == 0 {
			key = `"key": "k", `
		}
		batch = append(batch, fmt.Sprintf(`{"topic": "t%04d", %s"delay_ms": 3600000, %s}`, i, key, cb))
	}
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+strings.Join(batch, ", ")+`]}`)
	if b.status != http.StatusOK {
		t.Fatalf("batch: %d %.300s", b.status, b.raw)
	}
	first := b.body["results"].([]any)[0].(map[string]any)["id"].(string)
	last := e.call(t, "POST", "/v1/jobs", `{"topic": "t1000", "key": "k", "delay_ms": 3600000, `+cb+`}`).body["id"].(string)
	ids := func(a answer) string {
		var out []string
		for _, j := range a.body["jobs"].([]any) {
			out = append(out, j.(map[string]any)["id"].(string))
		}
		return strings.Join(out, ",")
	}
	a := e.call(t, "GET", "/v1/jobs/search?q=k", "")
	if a.status != 200 || ids(a) != first || a.body["truncated"] != true || a.body["topics_searched"] != float64(tochttp.MaxSearchTopics) {
		t.Errorf("a key past the bound: %d %s; want %s only, truncated", a.status, a.raw, first)
	}
	if a := e.call(t, "GET", "/v1/jobs/search?q="+last, ""); ids(a) != last {
		t.Errorf("by the id of a job of a topic past the bound: %s", a.raw)
	}
}
