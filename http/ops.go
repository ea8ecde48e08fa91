package http

import (
	"context"
	"net/http"
	"sync"
)

// ready: GET /readyz, running every check of Ready at once, each within
// readyTimeout; 503 when any of them fails.
func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	checks := make(map[string]string, len(a.cfg.Ready))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
		ok = true
	)
	for name, check := range a.cfg.Ready {
		wg.Go(func() {
			err := check(ctx)
			mu.Lock()
			defer mu.Unlock()
			checks[name] = "ok"
			if err != nil {
				checks[name], ok = err.Error(), false
			}
		})
	}
	wg.Wait()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "checks": checks})
}

// cluster: GET /v1/cluster.
func (a *API) cluster(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Cluster == nil {
		writeJSON(w, http.StatusOK, map[string]any{"mode": "standalone", "members": []any{}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"mode": "cluster", "status": a.cfg.Cluster()})
}
