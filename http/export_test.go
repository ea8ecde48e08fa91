package http

import "github.com/toc-project/toc/http/auth"

// RouteRole returns the role the op of "METHOD pattern" needs, or false
// when no op serves it.
func (a *API) RouteRole(route string) (auth.Role, bool) {
	for _, o := range a.ops() {
		if o.method+" "+o.pattern == route {
			return o.role, true
		}
	}
	return "", false
}
