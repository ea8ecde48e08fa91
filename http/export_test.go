package http

import "github.com/toc-project/toc/http/auth"

// RouteListed reports whether "METHOD pattern" has a role in routeRoles.
func RouteListed(route string) bool {
	_, ok := routeRoles[route]
	return ok
}

// RouteNeedsMoreThanRead reports whether "METHOD pattern" needs a write
// or admin token.
func RouteNeedsMoreThanRead(route string) bool {
	need, ok := routeRoles[route]
	return !ok || need != auth.Read
}
