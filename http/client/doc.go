// Package client is a Go client of toc's REST API: schedule, find, cancel
// and reschedule jobs, manage topics, triage dead letters, read the
// cluster's state, and work the jobs of pull topics (Work).
//
//	c, err := client.New("http://127.0.0.1:8080", client.WithToken(os.Getenv("TOC_TOKEN")))
//	if err != nil {
//		return err
//	}
//	job, _, err := c.Schedule(ctx, client.JobRequest{
//		Topic:       "orders",
//		Key:         "close-order-42", // makes the call safe to repeat
//		BizID:       42,
//		Delay:       30 * time.Minute,
//		CallbackURL: "https://orders.internal/hooks/close",
//		Payload:     json.RawMessage(`{"order":42}`),
//	})
//	if err != nil {
//		return err
//	}
//	// Later: the order was paid; its timeouts must never fire.
//	res, err := c.CancelMatching(ctx, client.Match{Topic: "orders", BizID: 42})
//
// The package imports neither toc's server (package http) nor its domain
// (package timer): a client does not pull the server's dependencies. Its
// types mirror the API's JSON field for field, in Go types: times are
// time.Time, durations given in milliseconds are time.Duration, and the
// 64-bit ids (job ids, biz_id, biz_type) are uint64, which travel as
// decimal strings ("biz_id": "42") and are read as strings or numbers.
// Each type's MarshalJSON writes the JSON the API writes, so a value
// printed with encoding/json reads as the API's answer.
//
// # Why it is written by hand
//
// It is not generated from toc's OpenAPI document (GET /v1/openapi.json):
// oapi-codegen, the usual generator for Go, supports OpenAPI 3.0, not the
// 3.1 document toc serves, and a small hand-written client gives typed
// errors and retry semantics that read well in go doc.
//
// # Errors
//
// An answer of 4xx or 5xx is an *Error: the status, the API's code, the
// field it names, its message, and the Retry-After the server asked for.
// Compare with the sentinels: errors.Is(err, client.ErrNotFound),
// ErrConflict (any 409; ErrInFlight and ErrAlreadyFired say which, for a
// cancel or reschedule that came too late), ErrInvalid, ErrUnauthorized,
// ErrTooLarge, ErrRateLimited, ErrUnavailable. A refused batch lists each
// refused job in Error.Items.
//
// # Retries
//
// A call is repeated only when that is safe, at most RetryPolicy.MaxAttempts
// times in all, after a capped exponential backoff with jitter:
//
//   - after a 429 or 503 answer, which refused the request, honouring its
//     Retry-After (seconds or an HTTP date): every call but a Schedule
//     without a Key and a ScheduleBatch with a job without one. toc's 503
//     means nothing was written, but a 503 from a proxy whose wait for toc
//     ran out, or from a batch spanning task store shards that failed half
//     way, may follow a commit, and a job without a key would then be
//     scheduled twice: these are sent once, whatever happens, and the
//     caller decides.
//   - after a transport error (no answer: the request may or may not have
//     taken effect), the idempotent calls only: the reads, PutTopic,
//     PatchTopic, DeleteTopic, PauseTopic, ResumeTopic, Cancel, Reschedule,
//     CancelMatching, RescheduleMatching, PurgeDead, Ack, Nack, Extend,
//     and a Schedule or ScheduleBatch whose every job has a Key (toc
//     answers a repeated key with the job it made the first time). Not
//     ReplayDead, ReplayMatching or PurgeMatching, which would act anew,
//     nor Lease, which would lease other jobs.
//
// An idempotent call repeated after its first attempt took effect answers
// as toc does to the repeat: a Cancel or PurgeDead then reports
// ErrConflict (the job is already cancelled, or purged), a DeleteTopic
// ErrNotFound, a CancelMatching counts only what the repeat cancelled, a
// Reschedule given a Delay counts it from the repeat, and a Nack reports
// ErrLeaseEnded.
//
// Retries end with the context: a wait that would pass ctx's deadline is
// not begun (the last error is returned at once), and a Retry-After longer
// than RetryPolicy.MaxDelay is not waited for. Health and Ready are never
// repeated: they report the moment.
package client
