// Package http is toc's REST API (chi), and only that: jobs, dead
// letters, topics, and the health, readiness and cluster endpoints.
//
// It shadows net/http; import it as tochttp. Webhook delivery lives in
// package webhook (http/webhook) and the Prometheus metrics in package
// metrics (http/metrics); the API uses the webhook Guard to refuse
// callback URLs at scheduling, and serves the metrics handler it is given.
//
// # Files
//
// api.go holds the interfaces the API needs of the engine (Jobs,
// DeadLetters, Stats), its APIConfig, the router and the middleware (auth,
// body and time limits, panics). jobs.go, deadletters.go, topics.go and
// ops.go hold the handlers of each resource; json.go the request and
// response bodies; openapi.json the OpenAPI 3 document, which a test
// keeps in step with the router.
//
// # Errors
//
// The API maps the engine's errors to status codes in one function
// (toDetail, errors.go): invalid input is a 400 naming the field, an
// unknown job a 404, a state conflict a 409, and a failing dependency a
// 503 that means nothing was written. Every error answer is the same JSON
// object, {"error": {"code", "message", "field"}}.
package http
