package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// staticBuildFlags are deploy/Dockerfile's go build flags beside
// -trimpath and CGO_ENABLED=0, which plainBuild sets; TestStaticBuild
// checks the Dockerfile still uses them all.
var staticBuildFlags = []string{"-ldflags", "-s -w -X main.version=static-test"}

// TestStaticBuild builds toc as deploy/Dockerfile does (CGO_ENABLED=0,
// -trimpath), since no container engine runs the Dockerfile here, checks
// the binary is static (no ELF interpreter, no shared libraries: it runs
// on distroless/static or scratch), and runs it: toc version, and toc dev
// until it answers /healthz.
func TestStaticBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toc once more; skipped with -short")
	}
	if runtime.GOOS != "linux" {
		t.Skipf("the image is linux; this is %s", runtime.GOOS)
	}
	dockerfile, err := os.ReadFile(filepath.Join("deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build -trimpath -ldflags \"-s -w ${VERSION:+-X main.version=${VERSION}}\"", `ENTRYPOINT ["toc", "serve"]`} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("deploy/Dockerfile does not say %s: keep it and this test's build the same", want)
		}
	}

	bin := filepath.Join(t.TempDir(), "toc")
	build := plainBuild(slices.Concat(staticBuildFlags, []string{"-o", bin, "."})...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names an ELF interpreter (PT_INTERP): it is dynamically linked")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries (DT_NEEDED) %v, %v", libs, err)
	}

	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("toc version: %v\n%s", err, out)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "toc static-test" {
		t.Errorf("toc version: first line %q, want %q (the -ldflags version)\n%s", first, "toc static-test", out)
	}

	// startTocBin returns once /healthz answers 200.
	p := startTocBin(t, bin, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	p.stop(t)
}
