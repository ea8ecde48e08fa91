// Tenants: who a bearer token is (http/auth), what each route needs of
// it, and the scope of its topics.

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

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

// enter is the way into every /v1 route. It puts the principal of the
// request's token in its context (401 without a known token; the op of
// the route then checks its role (serveOp), and the gate its scope) and
// bounds the call to requestTimeout, in one copy of the request: a copy
// is 250 bytes to allocate on every call, and the two were two copies.
func (a *API) enter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if set := a.cfg.tokenSet(); set != nil {
			p, ok := bearer(r, set)
			if !ok {
				a.writeError(w, r, errUnauthenticated)
				return
			}
			ctx = auth.With(ctx, p)
		}
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
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

// isAdmin reports whether r may see everything: auth off or an admin's
// token (for /readyz's errors and /metrics).
func isAdmin(r *http.Request, s *auth.Set) bool {
	if s == nil {
		return true
	}
	p, ok := bearer(r, s)
	return ok && p.Role == auth.Admin
}
