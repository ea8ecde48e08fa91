package timer

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Handler fires jobs. It must be safe for concurrent use. A nil error
// means the job is done; any other error is a failed attempt that is
// retried with backoff, except ErrDiscard. Fire must return when ctx is
// done (the attempt timeout, or the end of a shutdown's grace period).
type Handler interface {
	Fire(ctx context.Context, d Delivery) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, d Delivery) error

// Fire calls f.
func (f HandlerFunc) Fire(ctx context.Context, d Delivery) error { return f(ctx, d) }

// Delivery is one attempt at firing a job.
type Delivery struct {
	Job *Job
	// Attempt is 1 on the first dispatch.
	Attempt int
	// At is when the worker dispatched it; At.Sub(Job.DueAt) is the lateness.
	At time.Time
	// TraceParent is the W3C traceparent the delivery carries ("" for
	// none): that of the worker's delivery span when it traces (see
	// Tracer), else the job's as stored.
	TraceParent string
	// Destination is where the job's topic delivers, as the worker last
	// read the topic's settings: a Handler that serves several ways
	// dispatches on its Way.
	Destination Destination
	// Response, when not nil, is for the handler to fill with the
	// receiver's answer: its status becomes the job's LastStatus, and the
	// attempt history keeps it when the store implements AttemptLog. The
	// worker always sets it.
	Response *Response
}

// ErrDiscard, returned (or wrapped) by a Handler, ends the job as cancelled
// without further attempts: the receiver said it no longer wants it
// (a webhook's 410 Gone).
var ErrDiscard = errors.New("discard job")

// NotSentError, returned (or wrapped) by a Handler, says the job was not
// delivered at all, so no attempt is counted: the job goes back to the
// index due at Until (a callback host whose circuit breaker is open).
type NotSentError struct {
	Until time.Time
	Err   error
}

func (e *NotSentError) Error() string { return "not sent: " + e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }

// StatusError, returned (or wrapped) by a Handler, says the receiver
// answered with HTTP status Code; the task store keeps it with the
// attempt's error.
type StatusError struct {
	Code int
	Err  error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// statusOf is the HTTP status a failed attempt's receiver answered, 0
// when there was no answer.
func statusOf(err error) int {
	if se, ok := errors.AsType[*StatusError](err); ok {
		return se.Code
	}
	return 0
}

// RetryAfterError asks for the next attempt no sooner than After (a
// webhook's 429 or 503 with Retry-After), or, when Exact, after After
// whatever the backoff (a pull worker's nack with its delay).
type RetryAfterError struct {
	After time.Duration
	Exact bool
	Err   error
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// Defaults of the retry policy.
const (
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 10 * time.Minute
)

// RetryPolicy spaces out failed attempts: after attempt n the next one is
// due after min(Max, Base·2^(n-1)), of which the upper half is jitter (so
// the delay lies in [d/2, d]), which spreads a failing receiver's retries.
type RetryPolicy struct {
	Base time.Duration
	Max  time.Duration
}

// Delay returns the wait after failed attempt n (1-based).
func (p RetryPolicy) Delay(n int) time.Duration {
	base, ceiling := p.Base, p.Max
	if base <= 0 {
		base = DefaultRetryBase
	}
	if ceiling <= 0 {
		ceiling = DefaultRetryMax
	}
	d := ceiling
	if n < 1 {
		n = 1
	}
	if n <= 40 && base<<(n-1) > 0 && base<<(n-1) < ceiling {
		d = base << (n - 1)
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// delayAfter is the wait before the next attempt after err.
func (p RetryPolicy) delayAfter(n int, err error) time.Duration {
	ra, ok := errors.AsType[*RetryAfterError](err)
	if ok && ra.Exact {
		return max(ra.After, 0)
	}
	d := p.Delay(n)
	if ok && ra.After > d {
		d = ra.After
	}
	return d
}
