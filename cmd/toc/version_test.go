package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
)

func TestWriteVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "toc v1.2.3\n"},
		{"a go build in a git tree", &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/toc-project/toc", Version: "v0.0.0-20261124101500-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{
				{Key: "CGO_ENABLED", Value: "0"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-11-24T10:15:00Z"},
				{Key: "vcs.modified", Value: "true"},
			},
		}, `toc v1.2.3
module   github.com/toc-project/toc v0.0.0-20261124101500-0123456789ab+dirty
go       go1.26.8
commit   0123456789abcdef0123456789abcdef01234567
time     2026-11-24T10:15:00Z
modified true
`},
		{"no VCS (a container build without .git)", &debug.BuildInfo{
			GoVersion: "go1.26.8",
			Main:      debug.Module{Path: "github.com/toc-project/toc", Version: "(devel)"},
		}, `toc v1.2.3
module   github.com/toc-project/toc (devel)
go       go1.26.8
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeVersion(&b, "v1.2.3", tc.info)
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestVersionCommand runs toc version on the binary TestMain built with
// go build, which records the module and, in a git tree, the commit.
func TestVersionCommand(t *testing.T) {
	out, err := runTocCmd(t, "version")
	if err != nil {
		t.Fatalf("toc version: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if want := "toc " + version; lines[0] != want {
		t.Errorf("first line %q, want %q (no -ldflags version: the source's)", lines[0], want)
	}
	if want := fmt.Sprintf("schema   %d\nlayout   %d\n", taskdb.SchemaVersion(), slots.Layout); !strings.HasSuffix(out, want) || taskdb.SchemaVersion() < 25 {
		t.Errorf("toc version does not end with the schema and layout %q:\n%s", want, out)
	}
	if !regexp.MustCompile(`(?m)^module   github\.com/toc-project/toc \S+$`).MatchString(out) {
		t.Errorf("no module line:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^go       go1\.\d+`).MatchString(out) {
		t.Errorf("no go line:\n%s", out)
	}
	if strings.Contains(out, "commit") && !regexp.MustCompile(`(?m)^commit   [0-9a-f]{40}\n`).MatchString(out) {
		t.Errorf("commit line is not a git hash:\n%s", out)
	}
	if again, _ := runTocCmd(t, "--version"); again != out {
		t.Errorf("toc --version printed\n%s\ntoc version\n%s", again, out)
	}
}
