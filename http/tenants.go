// Tenants: who a bearer token is (http/auth), what each route needs of
// it, and the scope of its topics.

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// routeRoles is the least role each /v1 route needs, by "METHOD pattern":
// the one table of permissions. What a token may see or change within a
// route is further bounded by its topics (see allowTopic and visibleJob).
// A route missing here needs admin; TestRouteRoles checks that every
// route is listed.
var routeRoles = map[string]auth.Role{
	"POST /v1/jobs":                    auth.Write,
	"POST /v1/jobs/batch":              auth.Write,
	"GET /v1/jobs":                     auth.Read,
	"DELETE /v1/jobs":                  auth.Write,
	"PATCH /v1/jobs":                   auth.Write,
	"GET /v1/jobs/{id}":                auth.Read,
	"GET /v1/jobs/{id}/attempts":       auth.Read,
	"DELETE /v1/jobs/{id}":             auth.Write,
	"PATCH /v1/jobs/{id}":              auth.Write,
	"GET /v1/deadletters":              auth.Read,
	"GET /v1/deadletters/summary":      auth.Read,
	"POST /v1/deadletters/replay":      auth.Write,
	"POST /v1/deadletters/purge":       auth.Write,
	"POST /v1/deadletters/{id}/replay": auth.Write,
	"DELETE /v1/deadletters/{id}":      auth.Write,
	"GET /v1/topics":                   auth.Read,
	"GET /v1/topics/{topic}":           auth.Read,
	"PUT /v1/topics/{topic}":           auth.Admin,
	"PATCH /v1/topics/{topic}":         auth.Admin,
	"DELETE /v1/topics/{topic}":        auth.Admin,
	"POST /v1/topics/{topic}/pause":    auth.Admin,
	"POST /v1/topics/{topic}/resume":   auth.Admin,
	"GET /v1/topics/{topic}/stats":     auth.Read,
	"GET /v1/topics/{topic}/forecast":  auth.Read,
	"POST /v1/schedules":               auth.Write,
	"GET /v1/schedules":                auth.Read,
	"GET /v1/schedules/{id}":           auth.Read,
	"DELETE /v1/schedules/{id}":        auth.Write,
	"POST /v1/schedules/{id}/pause":    auth.Write,
	"POST /v1/schedules/{id}/resume":   auth.Write,
	"GET /v1/cluster":                  auth.Admin,
	"POST /v1/groups":                  auth.Write,
	"GET /v1/groups/{id}":              auth.Read,
	"POST /v1/groups/{id}/seal":        auth.Write,
	"GET /v1/audit":                    auth.Admin,
}

// errForbidden answers a call the token's role or topics do not allow.
var errForbidden = errors.New("forbidden")

// PrincipalName returns the name of the token that made the request of
// ctx ("" when auth is off): for logs and the audit log.
func PrincipalName(ctx context.Context) string {
	if p := auth.From(ctx); p != nil {
		return p.Name
	}
	return ""
}

// principalFrom returns who made the request of ctx; nil when auth is off.
func principalFrom(ctx context.Context) *auth.Principal { return auth.From(ctx) }

// tokenSet returns the tokens in force: the file's (TokenSet) or the
// --api-token ones; nil when auth is off.
func (c *APIConfig) tokenSet() *auth.Set {
	if c.TokenSet != nil {
		return c.TokenSet()
	}
	return c.staticTokens
}

// bearer returns the principal of r's bearer token, or false.
func bearer(r *http.Request, s *auth.Set) (*auth.Principal, bool) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, false
	}
	return s.Lookup(got)
}

// authenticate puts the principal of the request's token in its context
// (401 without a known token) and refuses a route its role does not
// allow (403).
func (a *API) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := a.cfg.tokenSet()
		if set == nil {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := bearer(r, set)
		if !ok {
			a.writeError(w, r, errUnauthenticated)
			return
		}
		ctx := auth.With(r.Context(), p)
		if p.Role != auth.Admin {
			rctx := chi.NewRouteContext()
			if a.router.Match(rctx, r.Method, r.URL.Path) {
				route := r.Method + " " + rctx.RoutePattern()
				need, listed := routeRoles[route]
				if !listed {
					need = auth.Admin
				}
				if !p.Role.Allows(need) {
					a.writeError(w, r, fmt.Errorf("token %s (role %s) may not %s: it needs the role %s: %w", p.Name, p.Role, route, need, errForbidden))
					return
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// allowTopic returns a 403 error when the request's token may not use
// topic. The answer depends only on the name and the token's patterns,
// never on whether the topic exists.
func allowTopic(ctx context.Context, topic string) error {
	if p := principalFrom(ctx); p != nil && !p.Allows(topic) {
		return fmt.Errorf("token %s may not use topic %s (its topics: %s): %w", p.Name, shownTopic(topic), strings.Join(p.Topics, ", "), errForbidden)
	}
	return nil
}

// jobNotFound is the error of a job that does not exist, as the task
// store words it; a job of a topic the token may not use gets the same.
func jobNotFound(id timer.JobID) error {
	return fmt.Errorf("get job %d: %w", id, timer.ErrNotFound)
}

// visibleJob returns nil when the request's token may see job id: auth
// off, an admin, or a job of one of its topics. A job it may not see is
// answered as a missing one, word for word, so that no token learns
// whether another tenant's job exists.
func (a *API) visibleJob(ctx context.Context, id timer.JobID) error {
	p := principalFrom(ctx)
	if p == nil || p.AllTopics() {
		return nil
	}
	j, err := a.jobs.Get(ctx, id)
	if err != nil {
		return err
	}
	if !p.Allows(j.Topic) {
		return jobNotFound(id)
	}
	return nil
}

// visibleTopics keeps the topics the request's token may use.
func visibleTopics(ctx context.Context, topics []timer.Topic) []timer.Topic {
	p := principalFrom(ctx)
	if p == nil || p.AllTopics() {
		return topics
	}
	out := topics[:0:0]
	for _, t := range topics {
		if p.Allows(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// forbiddenItems refuses a batch some of whose jobs are of topics the
// token may not use: 403 naming them, nothing stored.
type forbiddenItems struct {
	principal string
	items     []timer.ItemError
}

func (e *forbiddenItems) Error() string {
	return fmt.Sprintf("%d of the batch's jobs are of topics token %s may not use (see items); nothing was stored", len(e.items), e.principal)
}

func (e *forbiddenItems) Unwrap() error { return errForbidden }

// allowBatch returns a *forbiddenItems when any of reqs is of a topic
// the token may not use.
func allowBatch(ctx context.Context, topics []string) error {
	p := principalFrom(ctx)
	if p == nil || p.AllTopics() {
		return nil
	}
	var refused []timer.ItemError
	for i, t := range topics {
		if err := allowTopic(ctx, t); err != nil {
			refused = append(refused, timer.ItemError{Index: i, Err: err})
		}
	}
	if refused != nil {
		return &forbiddenItems{principal: p.Name, items: refused}
	}
	return nil
}

// isAdmin reports whether r may see everything: auth off or an admin's
// token (for /readyz's errors and /metrics).
func isAdmin(r *http.Request, s *auth.Set) bool {
	if s == nil {
		return true
	}
	p, ok := bearer(r, s)
	return ok && p.Role == auth.Admin
}
