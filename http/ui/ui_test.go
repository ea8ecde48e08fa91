package ui_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/toc-project/toc/http/ui"
)

func TestHandler(t *testing.T) {
	h := ui.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
		body         string
	}{
		{"GET", "/ui", http.StatusOK, "text/html", `<script type="module" src="/ui/app.js">`},
		{"GET", "/ui/", http.StatusOK, "text/html", `<script type="module" src="/ui/app.js">`},
		{"HEAD", "/ui/", http.StatusOK, "text/html", ""},
		{"GET", "/ui/app.js", http.StatusOK, "text/javascript", "hashchange"},
		{"GET", "/ui/style.css", http.StatusOK, "text/css", "body"},
		{"GET", "/ui/nope.js", http.StatusNotFound, "", ""},
		{"GET", "/ui/static/app.js", http.StatusNotFound, "", ""},
		{"GET", "/uix", http.StatusNotFound, "", ""},
		{"POST", "/ui/", http.StatusMethodNotAllowed, "", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		name := tc.method + " " + tc.path
		if rec.Code != tc.status {
			t.Errorf("%s: %d, want %d", name, rec.Code, tc.status)
		}
		if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, tc.contentType) {
			t.Errorf("%s: Content-Type %q, want %s", name, got, tc.contentType)
		}
		if !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: body lacks %q", name, tc.body)
		}
		// Every answer, errors included, carries the policy.
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", name, csp)
		}
		if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", name, got)
		}
	}
}

// A browser that has the page revalidates it and gets a 304.
func TestHandlerRevalidates(t *testing.T) {
	h := ui.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/app.js", nil))
	etag := rec.Header().Get("ETag")
	if etag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, rec.Header().Get("Cache-Control"))
	}
	req := httptest.NewRequest("GET", "/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("with If-None-Match: %d, want 304", rec.Code)
	}
}

// No file of the dashboard runs inline script or puts data in as HTML:
// the policy forbids the first, and the second is how a value the API
// returns would become markup.
func TestAssetsKeepToText(t *testing.T) {
	files, err := os.ReadDir("static")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rec := httptest.NewRecorder()
		ui.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ui/"+f.Name(), nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", f.Name(), rec.Code)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", " onclick=", "<script>"} {
			if strings.Contains(rec.Body.String(), bad) {
				t.Errorf("%s uses %s", f.Name(), bad)
			}
		}
	}
}
