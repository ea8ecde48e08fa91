// Package webhook delivers jobs to their callback URLs: a Client that is a
// timer.Handler, the Standard Webhooks signing it uses, a circuit breaker
// per callback host, and the guard that refuses private addresses.
//
// It imports timer, the standard library and fasthttp, which parses the
// answers of http:// callbacks.
//
// # Delivery
//
// Client.Fire POSTs a job's JSON body to its callback URL within the
// deadline of its ctx (the topic's callback timeout), or Timeout without one,
// over a pool of kept-alive connections per host, with no proxy and no
// redirects. An https:// callback goes through net/http (HTTP/2 where the
// receiver offers it); an http:// one through a transport of this
// package's that reads and writes on the caller's goroutine, for about
// half of net/http's CPU a call. A 2xx answer is success, 410 Gone
// discards the job, 429 and 503 ask for the next attempt after
// Retry-After, and anything else is a failed attempt. The Client's doc
// comment lists the body and headers.
//
// # Signing
//
// Every request carries webhook-id (the job id, the same on every
// attempt), webhook-timestamp and webhook-signature, per the Standard
// Webhooks specification (https://www.standardwebhooks.com): one
// HMAC-SHA256 signature per secret, so that secrets can be rotated.
// Secrets have the form whsec_<base64 key>; NewSecret makes one,
// ParseSecret reads one, and Sign is exported for receivers and tests.
//
// # Circuit breaker
//
// A host that keeps failing (no response, or a 5xx) is left alone for a
// cooldown that doubles while it keeps failing; its jobs are deferred
// with a *timer.NotSentError, which costs them no attempt. A
// BreakerObserver (metrics.Observer is one) sees the breaker open.
//
// # Private addresses
//
// Unless allowed, callbacks may not reach loopback, private, link-local
// or otherwise reserved addresses (IsPrivate). A Guard checks a callback
// URL when its job is scheduled, so the caller hears of it at once; the
// Client checks the address again when it connects, after DNS, so a
// host that later resolves to a private address is refused too
// (ErrPrivateAddress).
package webhook
