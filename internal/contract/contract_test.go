package contract

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// doc is a small OpenAPI 3.1 document: GET /things/{id} answers 200 with
// a thing or 404.
const doc = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {
    "/things/{id}": {
      "get": {
        "operationId": "getThing",
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {
          "200": {"description": "a thing", "content": {"application/json": {"schema": {
            "type": "object", "required": ["id"], "additionalProperties": false,
            "properties": {"id": {"type": "string"}}}}}},
          "404": {"description": "none", "content": {"application/json": {"schema": {"type": "object"}}}}
        }
      }
    }
  }
}`

func TestCheck(t *testing.T) {
	c, err := New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	check := func(path string, status int, body string) error {
		req := httptest.NewRequest("GET", path, nil)
		resp := &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}}
		return c.Check(req, nil, resp, []byte(body))
	}
	for _, tc := range []struct {
		name, path string
		status     int
		body, want string // want: a part of the error, "" for none
	}{
		{"as documented", "/things/1", 200, `{"id": "1"}`, ""},
		{"an undocumented field", "/things/2", 200, `{"id": "2", "extra": 1}`, "extra"},
		{"a missing required field", "/things/3", 200, `{}`, "id"},
		{"an undocumented status", "/things/4", 409, `{}`, "409"},
		{"a path the document lacks", "/nowhere", 404, `{}`, ""},
		{"the dashboard", "/ui/app.js", 200, `x`, ""},
	} {
		err := check(tc.path, tc.status, tc.body)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	// A kind checked perKind times is not checked again (three of this
	// kind were checked above).
	for i := range perKind - 3 {
		if err := check("/things/5", 200, `{"id": "5", "extra": 1}`); err == nil {
			t.Fatalf("check %d of a bad answer passed", i)
		}
	}
	if err := check("/things/6", 200, `{"id": "6", "extra": 1}`); err != nil {
		t.Errorf("the %dth exchange of one kind was checked: %v", perKind+1, err)
	}
}

// Transport reports a bad answer as the test's error and passes the
// answer on whole.
func TestTransport(t *testing.T) {
	c, err := New([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id": "1", "extra": true}`))
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	resp, err := (&http.Client{Transport: c.Transport(rec, nil)}).Get(srv.URL + "/things/1")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if body.String() != `{"id": "1", "extra": true}` {
		t.Errorf("body passed on as %q", body.String())
	}
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "extra") {
		t.Errorf("reported %q, want one error naming the extra field", rec.errs)
	}
}

// recorder keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
