// Package http is toc's REST API (chi) and its webhook sender.
//
// It shadows net/http; import it as tochttp. The API maps the engine's
// errors to status codes in one function (toDetail): invalid input is a
// 400 naming the field, an unknown job a 404, a state conflict a 409, and
// a failing dependency a 503 that means nothing was written. The webhook
// sender signs each call per the Standard Webhooks specification and
// refuses private addresses at scheduling and again at dial time.
package http
