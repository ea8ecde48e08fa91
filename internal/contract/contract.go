// Package contract holds toc's API to its OpenAPI document in tests: a
// Checker validates each request a test sends and each answer toc gives
// against http/openapi.json, with pb33f/libopenapi-validator (JSON Schema
// 2020-12, as OpenAPI 3.1 needs), in strict mode, so that a field or a
// status the document does not have fails the test that met it.
//
// Each kind of exchange (method, path without its numbers, status) is
// checked its first 50 times, not in every repeat of a load loop.
//
// A request is checked only when toc accepted it (2xx): the tests send
// bad requests on purpose, and toc's answer to them, checked always, must
// be a documented error. A path or a method the document lacks is left
// alone: the tests ask for those on purpose too, and
// TestOpenAPIMatchesRouter holds every route to the document.
package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	tochttp "github.com/toc-project/toc/http"
)

// Checker validates exchanges against the document. It is safe for
// concurrent use.
type Checker struct {
	mu sync.Mutex // the validator's caches are not documented as safe
	v  validator.Validator
	// seen counts the exchanges checked of each kind (kindOf).
	seen map[string]int
}

// perKind is how many exchanges of one kind are checked. A load loop
// sends one kind thousands of times; checking each (milliseconds under
// -race, one at a time) slowed the load itself, and
// TestServeRedisClusterFailover measured the checker rather than toc.
const perKind = 50

// digits are the ids and numbers in a path, which kindOf leaves out.
var digits = regexp.MustCompile(`[0-9]+`)

// kindOf names an exchange's kind: method, path without its numbers, and
// status.
func kindOf(req *http.Request, status int) string {
	return fmt.Sprintf("%s %s %d", req.Method, digits.ReplaceAllString(req.URL.Path, "#"), status)
}

// free-form parts of bodies: a job's payload is the client's own JSON.
var free = []string{"$.body.payload", "$.body.payload.**", "$.body.jobs[*].payload", "$.body.jobs[*].payload.**",
	"$.body.job.payload", "$.body.job.payload.**", "$.body.results[*].job.payload", "$.body.results[*].job.payload.**", "$.body.schedules[*].job.payload", "$.body.schedules[*].job.payload.**",
	"$.body.on_complete.payload", "$.body.on_complete.payload.**", "$.body.group.on_complete.payload", "$.body.group.on_complete.payload.**"}

var shared = sync.OnceValues(func() (*Checker, error) { return New(tochttp.OpenAPI) })

// Shared returns a Checker of the embedded document, made once.
func Shared(tb testing.TB) *Checker {
	tb.Helper()
	c, err := shared()
	if err != nil {
		tb.Fatalf("contract: %v", err)
	}
	return c
}

// New returns a Checker of the OpenAPI document doc, or an error when the
// document is not valid OpenAPI.
func New(doc []byte) (*Checker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	// Without security validation: many tests run without tokens (as
	// toc dev does); TestAuth tests the bearer scheme.
	v, errs := validator.NewValidator(d, config.WithStrictMode(), config.WithStrictIgnorePaths(free...),
		config.WithFormatAssertions(), config.WithoutSecurityValidation())
	if len(errs) > 0 {
		return nil, fmt.Errorf("build the validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("the OpenAPI document is not valid: %s", describe(verrs))
	}
	return &Checker{v: v, seen: map[string]int{}}, nil
}

// Check validates one exchange: the answer always, the request when toc
// accepted it. Bodies are given whole, since both have been read.
func (c *Checker) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	if !checked(req.URL.Path) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := kindOf(req, resp.StatusCode)
	if c.seen[kind] >= perKind {
		return nil
	}
	c.seen[kind]++
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	a := *resp
	a.Body = io.NopCloser(bytes.NewReader(respBody))
	a.Request = r
	var errs []string
	if ok, verrs := c.v.ValidateHttpResponse(r, &a); !ok {
		if unrouted(verrs) {
			// A path or method the API does not have, sent on purpose
			// (404, 405): TestOpenAPIMatchesRouter keeps every route in
			// the document.
			return nil
		}
		errs = append(errs, "answer "+describe(verrs))
	}
	if resp.StatusCode/100 == 2 {
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		if ok, verrs := c.v.ValidateHttpRequest(r); !ok {
			errs = append(errs, "accepted request "+describe(verrs))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s → %d, not as http/openapi.json says: %s\nrequest: %s\nanswer: %s",
			req.Method, req.URL.RequestURI(), resp.StatusCode, strings.Join(errs, "; "), cut(reqBody), cut(respBody))
	}
	return nil
}

// checked reports whether path is the API's: the dashboard's pages are
// not, and the document is not held to itself (the linters check it).
func checked(path string) bool {
	return path != "/ui" && !strings.HasPrefix(path, "/ui/") && path != "/v1/openapi.json"
}

// Transport returns a RoundTripper over base (http.DefaultTransport when
// nil) that checks every exchange and reports a mismatch as tb's error.
func (c *Checker) Transport(tb testing.TB, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{c: c, tb: tb, base: base}
}

type roundTripper struct {
	c    *Checker
	tb   testing.TB
	base http.RoundTripper
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		var err error
		if reqBody, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err := t.c.Check(req, reqBody, resp, respBody); err != nil {
		t.tb.Errorf("contract: %v", err)
	}
	return resp, nil
}

// unrouted reports whether errs say only that the document has no such
// path or operation.
func unrouted(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if !e.IsPathMissingError() && !e.IsOperationMissingError() {
			return false
		}
	}
	return len(errs) > 0
}

// describe joins the validator's errors, with their schema failures.
func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": " + e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s: %s]", f.FieldPath, f.Reason)
		}
	}
	return b.String()
}

// cut shortens a body for a message.
func cut(b []byte) string {
	const most = 600
	if len(b) > most {
		return string(b[:most]) + "…"
	}
	return string(b)
}
