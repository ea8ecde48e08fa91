package http

// RouteListed reports whether "METHOD pattern" has a role in routeRoles.
func RouteListed(route string) bool {
	_, ok := routeRoles[route]
	return ok
}
