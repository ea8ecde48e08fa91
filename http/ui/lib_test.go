package ui_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

// libDir is the npm project that pins the dashboard's browser libraries.
const libDir = "lib"

// copied are the files lib's "copy" script puts in static/: from (under
// lib) to (under static).
func copied(t *testing.T) map[string]string {
	t.Helper()
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	readJSON(t, filepath.Join(libDir, "package.json"), &pkg)
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`cp (\S+) \.\./static/(\S+)`).FindAllStringSubmatch(pkg.Scripts["copy"], -1) {
		out[m[1]] = m[2]
	}
	if len(out) == 0 {
		t.Fatalf("lib/package.json's copy script copies nothing: %q", pkg.Scripts["copy"])
	}
	return out
}

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// The libraries the dashboard serves are the packages lib/package-lock.json
// pins, byte for byte: the committed copy names the locked version, and,
// once npm ci has run in lib (make npm; CI does), each file copied is the
// installed package's. Without the packages installed it skips, or fails
// with TOC_REQUIRE_INTEGRATION=1, as in CI.
func TestLibrariesMatchLock(t *testing.T) {
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	readJSON(t, filepath.Join(libDir, "package-lock.json"), &lock)
	locked := lock.Packages["node_modules/uplot"].Version
	if locked == "" {
		t.Fatal("lib/package-lock.json pins no uplot")
	}
	// The minified build opens with its version.
	js, err := os.ReadFile(filepath.Join("static", "uplot.iife.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(js), "\n"); !strings.Contains(first, "(v"+locked+")") {
		t.Errorf("static/uplot.iife.min.js opens with %q, not uPlot v%s as the lock pins: run npm ci && npm run copy in http/ui/lib", first, locked)
	}

	var installed struct {
		Version string `json:"version"`
	}
	if _, err := os.Stat(filepath.Join(libDir, "node_modules", "uplot", "package.json")); err != nil {
		msg := "lib's packages are not installed (make npm, or npm ci in http/ui/lib)"
		if testenv.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg + " (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	readJSON(t, filepath.Join(libDir, "node_modules", "uplot", "package.json"), &installed)
	if installed.Version != locked {
		t.Fatalf("node_modules holds uplot %s, the lock pins %s: npm ci in http/ui/lib", installed.Version, locked)
	}
	for from, to := range copied(t) {
		want, err := os.ReadFile(filepath.Join(libDir, from))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("static", to))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("static/%s is not lib/%s of the pinned package: npm run copy in http/ui/lib, and commit it", to, from)
		}
	}
}
