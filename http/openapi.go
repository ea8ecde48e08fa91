package http

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3 document of the API, served at
// /v1/openapi.json; a test keeps it and the router in step.
//
//go:embed openapi.json
var OpenAPI []byte

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
