package http

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/toc-project/toc/http/auth"
)

// Values of a check in /readyz's "checks".
const (
	checkOK       = "ok"
	checkFailing  = "failing"
	checkDegraded = "degraded"
)

// ready: GET /readyz, running every check of Ready at once, each within
// readyTimeout; 503 when any of them fails. "checks" names each check with
// "ok", "failing" or "degraded" (see ErrDegraded; 200 with status
// "degraded" when none fails), to anyone: a probe needs no token. Only a caller with
// an admin's bearer token (or any caller when auth is off) also gets
// "errors", the failing checks' error text, which may name addresses.
func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	serveReady(w, r, a.cfg.Ready, a.cfg.tokenSet())
}

func serveReady(w http.ResponseWriter, r *http.Request, ready map[string]func(context.Context) error, tokens *auth.Set) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := make(map[string]string, len(ready))
	errs := map[string]string{}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for name, check := range ready {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			checks[name] = checkOK
			switch {
			case errors.Is(err, ErrDegraded):
				checks[name], errs[name] = checkDegraded, err.Error()
			case err != nil:
				checks[name], errs[name] = checkFailing, err.Error()
			}
		})
	}
	wg.Wait()
	status, code := "ok", http.StatusOK
	for _, c := range checks {
		switch {
		case c == checkFailing:
			status, code = "unavailable", http.StatusServiceUnavailable
		case c == checkDegraded && code == http.StatusOK:
			status = "degraded"
		}
	}
	body := map[string]any{"status": status, "checks": checks}
	if len(errs) > 0 && isAdmin(r, tokens) {
		body["errors"] = errs
	}
	writeJSON(w, code, body)
}

// Starting returns what answers on the API's address while the service
// starts, before its API exists (toc serve waits for the task store):
// /healthz, /readyz with cfg.Ready and cfg.Tokens, and /metrics when
// cfg.Metrics is set, as the API serves them; 503 unavailable, with
// Retry-After, to everything else. Nothing is written by a call it answers.
func Starting(cfg APIConfig) http.Handler {
	_ = cfg.setTokens() // NewAPI reports an empty token
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		serveReady(w, r, cfg.Ready, cfg.tokenSet())
	})
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", metricsFor(&cfg))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorDetail{
			Code: CodeUnavailable, Message: "toc is starting: it serves once the task store answers (GET /readyz); nothing was written"}})
	})
	return mux
}

// cluster: GET /v1/cluster.
func (a *API) cluster(w http.ResponseWriter, r *http.Request, _ *struct{}, _ *admission) {
	if a.cfg.Cluster == nil {
		writeJSON(w, http.StatusOK, map[string]any{"mode": "standalone", "members": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"mode": "cluster", "status": a.cfg.Cluster()})
}

// ErrDegraded, wrapped by a readiness check's error, says the dependency
// serves in part: one task store shard of several is down. /readyz
// answers 200 with status "degraded" and the check "degraded", so that a
// load balancer keeps sending the requests the other shards can serve.
var ErrDegraded = errors.New("degraded")
