package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/toc-project/toc/internal/deliver/pull"
	"github.com/toc-project/toc/timer"
)

// Error codes of the API, each with one HTTP status.
const (
	CodeInvalid         = "invalid_argument"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodeInFlight        = "in_flight"
	CodeAlreadyFired    = "already_fired"
	CodeUnauthenticated = "unauthenticated"
	CodeTooLarge        = "payload_too_large"
	CodeUnavailable     = "unavailable"
	// CodeVersionMismatch answers a change whose If-Match names another
	// version than the job's (412, with the job's version and ETag).
	CodeVersionMismatch = "version_mismatch"
	// CodeMethodNotAllowed answers a method the path does not serve (405,
	// with an Allow header).
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeForbidden answers a call the token's role or topics do not
	// allow (403).
	CodeForbidden = "forbidden"
	// CodeRateLimited answers a token scheduling faster than its rate
	// (429, with Retry-After).
	CodeRateLimited = "rate_limited"
	// CodePendingQuota answers a token whose topics hold its max_pending
	// jobs (429, with Retry-After).
	CodePendingQuota = "pending_quota"
	// CodeTopicQuota answers a token creating a topic past its
	// max_topics (409).
	CodeTopicQuota = "topic_quota"
	// CodeLeaseEnded answers an ack, nack or extend of a pull lease that
	// was acked, nacked or has expired (409).
	CodeLeaseEnded = "lease_ended"
)

// errMethodNotAllowed answers a method the path does not serve.
var errMethodNotAllowed = errors.New("method not allowed")

// errUnauthenticated answers a /v1 call without a valid bearer token.
var errUnauthenticated = errors.New("a valid bearer token is required")

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// CurrentVersion, of a version_mismatch, is the job's version.
	CurrentVersion int64 `json:"current_version,omitempty"`
	// Items, in a refused batch, has the error of each refused item.
	Items []itemDetail `json:"items,omitempty"`
}

// itemDetail is the error of one item of a batch, by its index.
type itemDetail struct {
	Index   int    `json:"index"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// toDetail maps an error to its code, status and message: the one place
// where errors become HTTP.
func toDetail(err error) (int, errorDetail) {
	var (
		fe  *timer.FieldError
		mbe *http.MaxBytesError
		ve  *timer.VersionError
	)
	if be, ok := errors.AsType[*timer.BatchError](err); ok {
		return batchDetail(be)
	}
	if fi, ok := errors.AsType[*forbiddenItems](err); ok {
		d := errorDetail{Code: CodeForbidden, Message: fi.Error(), Field: "jobs", Items: make([]itemDetail, len(fi.items))}
		for i, it := range fi.items {
			d.Items[i] = itemDetail{Index: it.Index, Code: CodeForbidden, Message: it.Err.Error(), Field: "topic"}
		}
		return http.StatusForbidden, d
	}
	if qe, ok := errors.AsType[*quotaError](err); ok {
		return qe.status, errorDetail{Code: qe.code, Message: qe.msg, Field: qe.field}
	}
	switch {
	case errors.As(err, &fe):
		return http.StatusBadRequest, errorDetail{Code: CodeInvalid, Message: fe.Message, Field: fe.Field}
	case errors.Is(err, timer.ErrInvalid):
		return http.StatusBadRequest, errorDetail{Code: CodeInvalid, Message: err.Error()}
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, errorDetail{Code: CodeTooLarge, Message: "request body larger than " + itoa(mbe.Limit) + " bytes"}
	case errors.As(err, &ve):
		return http.StatusPreconditionFailed, errorDetail{Code: CodeVersionMismatch, Message: err.Error(), CurrentVersion: ve.Have}
	case errors.Is(err, pull.ErrEnded):
		return http.StatusConflict, errorDetail{Code: CodeLeaseEnded, Message: without(err, pull.ErrEnded)}
	case errors.Is(err, timer.ErrNotFound):
		return http.StatusNotFound, errorDetail{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, timer.ErrInFlight):
		return http.StatusConflict, errorDetail{Code: CodeInFlight, Message: without(err, timer.ErrConflict)}
	case errors.Is(err, timer.ErrAlreadyFired):
		return http.StatusConflict, errorDetail{Code: CodeAlreadyFired, Message: without(err, timer.ErrConflict)}
	case errors.Is(err, timer.ErrConflict):
		return http.StatusConflict, errorDetail{Code: CodeConflict, Message: without(err, timer.ErrConflict)}
	case errors.Is(err, errMethodNotAllowed):
		return http.StatusMethodNotAllowed, errorDetail{Code: CodeMethodNotAllowed, Message: err.Error()}
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, errorDetail{Code: CodeForbidden, Message: err.Error()}
	case errors.Is(err, errUnauthenticated):
		return http.StatusUnauthorized, errorDetail{Code: CodeUnauthenticated, Message: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, errorDetail{Code: CodeUnavailable, Message: "the request timed out; nothing was written"}
	}
	// Everything else is a dependency failing (task store or Redis down):
	// nothing was written, and the caller may retry.
	return http.StatusServiceUnavailable, errorDetail{Code: CodeUnavailable, Message: "the service is unavailable; nothing was written"}
}

// without is the message of err without the text of the sentinel it
// wraps at its end: "job 5 is cancelled", not "job 5 is cancelled:
// conflict", whose code already says it is a conflict. A sentinel's text
// that is the whole message stays.
func without(err, sentinel error) string {
	msg := err.Error()
	if m, ok := strings.CutSuffix(msg, ": "+sentinel.Error()); ok && m != "" {
		return m
	}
	return msg
}

// batchDetail answers a refused batch: 400 invalid_argument, or 409
// conflict when every refused item reused an idempotency key with other
// content, with each refused item's own code and field.
func batchDetail(be *timer.BatchError) (int, errorDetail) {
	status := http.StatusConflict
	d := errorDetail{Field: "jobs", Items: make([]itemDetail, len(be.Items))}
	for i, it := range be.Items {
		s, id := toDetail(it.Err)
		if s != http.StatusConflict {
			status = http.StatusBadRequest
		}
		d.Items[i] = itemDetail{Index: it.Index, Code: id.Code, Message: id.Message, Field: id.Field}
	}
	d.Code = CodeConflict
	if status == http.StatusBadRequest {
		d.Code = CodeInvalid
	}
	d.Message = fmt.Sprintf("%d of the batch's jobs refused (see items); nothing was stored", len(be.Items))
	return status, d
}

// writeError answers err, logging the ones that are the service's fault.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, d := toDetail(err)
	d.Message = shownMessage(r.Context(), d.Message)
	if status == http.StatusServiceUnavailable {
		a.log.LogAttrs(r.Context(), slog.LevelWarn, "request failed", slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toc"`)
	}
	if ve, ok := errors.AsType[*timer.VersionError](err); ok {
		w.Header().Set("ETag", etag(ve.Have))
	}
	if qe, ok := errors.AsType[*quotaError](err); ok && qe.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", itoa(retryAfterSeconds(qe.retryAfter)))
	}
	writeJSON(w, status, errorBody{Error: d})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}
