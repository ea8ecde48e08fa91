// toc version: the version given at build time, and what the Go toolchain
// recorded in the binary.

package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
)

// printVersion writes what toc version prints: writeVersion, from this
// binary's build information, then the task-store schema (the last
// migration it knows) and the Redis layout the build writes, which decide
// what it mixes with (docs/operations.md, Upgrades).
func printVersion(w io.Writer) {
	info, _ := debug.ReadBuildInfo()
	writeVersion(w, version, info)
	fmt.Fprintf(w, "%-9s%d\n", "schema", taskdb.SchemaVersion())
	fmt.Fprintf(w, "%-9s%d\n", "layout", slots.Layout)
}

// writeVersion writes the version set at build time (-ldflags
// "-X main.version=..."), as "toc <version>", and then one "name value"
// line for each thing the toolchain recorded in info: the main module and
// its version ("(devel)" when built without one), the Go version, and the
// VCS commit, its time, and whether the tree had uncommitted changes. A
// line the build did not record (no VCS in a container build, none at all
// in a test binary) is left out.
func writeVersion(w io.Writer, version string, info *debug.BuildInfo) {
	fmt.Fprintln(w, "toc", version)
	if info == nil {
		return
	}
	line := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-9s%s\n", name, value)
		}
	}
	if info.Main.Path != "" {
		line("module", info.Main.Path+" "+info.Main.Version)
	}
	line("go", info.GoVersion)
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	line("commit", vcs["vcs.revision"])
	line("time", vcs["vcs.time"])
	line("modified", vcs["vcs.modified"])
}
