// Package ui is toc's web dashboard: a single page of plain HTML, CSS and
// JavaScript, embedded in the binary and served under /ui.
//
// The page holds no data of its own. In the browser it calls the REST API
// under /v1 with the bearer token the user typed, kept in sessionStorage,
// so the assets themselves need no token; when the API answers without
// one (auth off, as in toc dev), it opens without asking. The pages are hash routes of
// the one document: topics (the landing page), charts of every topic's
// series, a topic with its charts and its jobs, a job, dead letters and
// the cluster.
//
// # Libraries
//
// The charts are drawn by uPlot, an npm package pinned in
// lib/package-lock.json whose built files lib's "copy" script puts in
// static/, where they are committed and embedded like the rest (no CDN,
// no npm needed to run toc); TestLibrariesMatchLock checks the copy
// against the locked package.
//
// # Security
//
// Every answer carries a Content-Security-Policy that allows scripts,
// styles and fetches from this origin only (no inline script, no eval),
// X-Content-Type-Options nosniff, and refuses framing. The scripts put
// data in the page as text, never as HTML.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"time"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui"

// contentSecurityPolicy allows this origin's scripts, styles and API
// calls and nothing else.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static/*
var static embed.FS

// asset is one embedded file with its entity tag.
type asset struct {
	name string
	body []byte
	etag string
}

// Handler serves the dashboard: index.html at /ui and /ui/, the assets at
// /ui/NAME, to GET and HEAD only.
func Handler() http.Handler {
	assets := map[string]asset{}
	files, _ := fs.ReadDir(static, "static") // embedded: cannot fail
	for _, f := range files {
		body, _ := static.ReadFile("static/" + f.Name())
		sum := sha256.Sum256(body)
		assets[f.Name()] = asset{name: f.Name(), body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, Prefix)
		name = strings.TrimPrefix(name, "/")
		if name == "" {
			name = "index.html"
		}
		a, found := assets[name]
		if !ok || !found {
			http.NotFound(w, r)
			return
		}
		// The assets change only with the binary: a browser revalidates
		// each time and gets a 304 while the tag matches.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	})
}
