package client

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The codes of the API's errors ({"error": {"code": ...}}), each with one
// HTTP status.
const (
	CodeInvalid          = "invalid_argument"   // 400
	CodeUnauthenticated  = "unauthenticated"    // 401
	CodeNotFound         = "not_found"          // 404
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeConflict         = "conflict"           // 409
	CodeInFlight         = "in_flight"          // 409: an attempt is under way
	CodeAlreadyFired     = "already_fired"      // 409: the job is done
	CodeLeaseEnded       = "lease_ended"        // 409: the lease was acked, nacked or expired
	CodeVersionMismatch  = "version_mismatch"   // 412: the job changed since it was read
	CodeTooLarge         = "payload_too_large"  // 413
	CodeUnavailable      = "unavailable"        // 503: nothing was written
)

// Sentinels to compare an *Error with errors.Is. Each matches the API's
// code, or, for an answer that is not the API's error (a proxy's 503, say),
// the HTTP status.
var (
	// ErrInvalid: 400 invalid_argument; Error.Field names the field.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnauthorized: 401 unauthenticated, no valid bearer token (see
	// WithToken).
	ErrUnauthorized = errors.New("unauthenticated")
	// ErrNotFound: 404 not_found, an unknown job, topic or path.
	ErrNotFound = errors.New("not found")
	// ErrMethodNotAllowed: 405 method_not_allowed.
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrConflict: any 409, the state of the job or topic forbids the
	// call: a job not pending, a topic still holding jobs, a slot count
	// that cannot change, a key reused with other content.
	ErrConflict = errors.New("conflict")
	// ErrInFlight: 409 in_flight, a cancel or reschedule that came too
	// late, while an attempt is under way; the job may still end done.
	// It is an ErrConflict too.
	ErrInFlight = errors.New("in flight")
	// ErrAlreadyFired: 409 already_fired, a cancel or reschedule of a job
	// that is done. It is an ErrConflict too.
	ErrAlreadyFired = errors.New("already fired")
	// ErrLeaseEnded: 409 lease_ended, an Ack, Nack or Extend of a lease
	// that was acked, nacked or has expired; nothing changed, and an
	// expired lease's job is offered again. It is an ErrConflict too.
	ErrLeaseEnded = errors.New("lease ended")
	// ErrVersionMismatch: 412 version_mismatch, a Cancel or Reschedule
	// with IfMatch of a job that changed since that version was read;
	// nothing changed. Error.CurrentVersion is the job's version now.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrTooLarge: 413 payload_too_large, a body over the server's limit.
	ErrTooLarge = errors.New("payload too large")
	// ErrRateLimited: 429, which toc does not send itself but a gateway in
	// front of it may; the call was refused and is retried (see Retries).
	ErrRateLimited = errors.New("rate limited")
	// ErrUnavailable: 503 unavailable, a dependency of toc is down or toc
	// is starting; toc wrote nothing.
	ErrUnavailable = errors.New("unavailable")
)

// kinds tie each sentinel to its code and status; a status of 0 matches
// by code only.
var kinds = []struct {
	err    error
	code   string
	status int
}{
	{ErrInvalid, CodeInvalid, http.StatusBadRequest},
	{ErrUnauthorized, CodeUnauthenticated, http.StatusUnauthorized},
	{ErrNotFound, CodeNotFound, http.StatusNotFound},
	{ErrMethodNotAllowed, CodeMethodNotAllowed, http.StatusMethodNotAllowed},
	{ErrConflict, CodeConflict, http.StatusConflict},
	{ErrInFlight, CodeInFlight, 0},
	{ErrAlreadyFired, CodeAlreadyFired, 0},
	{ErrLeaseEnded, CodeLeaseEnded, 0},
	{ErrVersionMismatch, CodeVersionMismatch, http.StatusPreconditionFailed},
	{ErrTooLarge, CodeTooLarge, http.StatusRequestEntityTooLarge},
	{ErrRateLimited, "", http.StatusTooManyRequests},
	{ErrUnavailable, CodeUnavailable, http.StatusServiceUnavailable},
}

// Error is an answer of 4xx or 5xx: the API's
// {"error": {"code", "message", "field", "items"}}, or, when the answer
// is not that (a proxy's), its status and the start of its body.
type Error struct {
	// Method and Path are the call's, the path without its query.
	Method string
	Path   string
	// Status is the HTTP status, 404 for instance.
	Status int
	// Code is the API's code, one of the Code constants; "" when the answer
	// was not the API's error.
	Code string
	// Field names the field or parameter at fault, when the API says.
	Field string
	// Message is the API's message, or the start of a foreign answer's
	// body.
	Message string
	// RetryAfter is how long the server asked the client to wait before
	// trying again (its Retry-After header), 0 when it did not say.
	RetryAfter time.Duration
	// CurrentVersion, of ErrVersionMismatch, is the job's version now.
	CurrentVersion int64
	// Items, for a refused ScheduleBatch, are the refused jobs, by their
	// index in the batch.
	Items []ItemError

	// body is the answer's body, for a caller that reads it further (the
	// readiness of a 503 from /readyz).
	body []byte
}

// ItemError is the error of one refused job of a batch.
type ItemError struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// Error reads "GET /v1/jobs/42: 404 not_found: job 42: not found", with
// the field when the API names one.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Field != "" {
		b.WriteString(" (field " + e.Field + ")")
	}
	return b.String()
}

// Is reports whether e is of the kind of target, one of the Err
// sentinels.
func (e *Error) Is(target error) bool {
	for _, k := range kinds {
		if k.err == target {
			return (k.code != "" && e.Code == k.code) || (k.status != 0 && e.Status == k.status)
		}
	}
	return false
}

// errorBody is the JSON of the API's error answers.
type errorBody struct {
	Error struct {
		Code    string      `json:"code"`
		Message string      `json:"message"`
		Field   string      `json:"field"`
		Items   []ItemError `json:"items"`
		// CurrentVersion is of a version_mismatch.
		CurrentVersion int64 `json:"current_version"`
	} `json:"error"`
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP date; 0 when absent, malformed or past.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return min(t.Sub(now), maxRetryAfter)
	}
	return 0
}

// maxRetryAfter bounds the Retry-After read, against overflow.
const maxRetryAfter = 24 * time.Hour
