// Command toc is the low-latency timeout center: the service (toc dev,
// toc serve), its migrations, a client for its REST API, and its
// benchmark.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	// The zone database in the binary: schedules name IANA zones, and a
	// static binary in a scratch image has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/toc-project/toc/internal/ratelog"
)

// version is the release this source is, or is on its way to: the next
// one, with -dev, between releases (see CHANGELOG). make build sets it
// from git describe (-ldflags "-X main.version=..."), which names the
// commits since the last tag.
var version = "v0.2.0-dev"

// command is a command of toc's other than the client commands, for the
// top-level help.
type command struct{ name, about string }

// serviceCommands and otherCommands are the commands of the top-level
// help besides clientCommands, which it lists from their table.
var (
	serviceCommands = []command{
		{"dev", "run everything in one process: SQLite file, in-process Redis, one worker"},
		{"serve", "run against MySQL/MariaDB and Redis (production)"},
		{"migrate", "apply the task-store migrations"},
	}
	otherCommands = []command{
		{"bench", "measure toc: scheduling, firing lateness, drain, memory, recovery"},
		{"work TOPIC -- COMMAND [ARG...]", "run a command for each due job of a pull topic: exit 0 acks the job, another exit retries it"},
		{"tokens hash [TOKEN]", "print the token_sha256 of a token for --tokens-file"},
		{"tokens secret", "print a new webhook secret (whsec_...)"},
		{"version", "print the version, module, Go version and commit"},
		{"help [COMMAND...]", "print this, or a command's help: its flags and an example"},
	}
)

// usage is the top-level help. Its client commands come from
// clientCommands, so that none is left out.
func usage() string {
	var b strings.Builder
	b.WriteString("toc — the low-latency timeout center\n\nusage: toc <command> [flags]\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	section := func(title string, cmds []command) {
		fmt.Fprintf(tw, "\n%s\n", title)
		for _, c := range cmds {
			fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.about)
		}
	}
	section("Service:", serviceCommands)
	var client []command
	for _, cc := range clientCommands {
		client = append(client, command{strings.TrimSpace(cc.name + " " + cc.args), cc.about})
	}
	for _, alias := range slices.Sorted(maps.Keys(clientAliases)) {
		cc, _ := findClientCommand(clientAliases[alias])
		client = append(client, command{strings.TrimSpace(alias + " " + cc.args), "short for toc " + cc.name})
	}
	section("Client (talks to a running toc over its REST API; --server, --token, --json):", client)
	section("Other:", otherCommands)
	tw.Flush()
	b.WriteString("\nRun 'toc help <command>' (or 'toc <command> -h') for a command's flags and an example;\nevery flag also reads TOC_<FLAG>.\n")
	return b.String()
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	default:
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "toc:", err)
		os.Exit(1)
	}
}

// exitError ends the process with a code and nothing more to say (the
// message, if any, was already printed).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitError{2}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "dev":
		return runDev(ctx, rest, stdout, stderr)
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, stdout, stderr)
	case "tokens":
		return runTokens(rest, stdout, stderr)
	case "work":
		return runWork(ctx, rest, stdout, stderr)
	case "version", "--version":
		if slices.ContainsFunc(rest, isHelp) {
			h := help{usage: "version\n\nprints the version, module, Go version and commit", example: "toc version"}
			h.write(stdout)
			return helpError{h}
		}
		printVersion(stdout)
		return nil
	case "help", "-h", "--help":
		if len(rest) == 0 || isHelp(rest[0]) {
			fmt.Fprint(stdout, usage())
			return nil
		}
		if !isHelpTopic(rest) {
			fmt.Fprintf(stderr, "toc help: unknown command %q; 'toc help' lists the commands\n\n%s", strings.Join(rest, " "), usage())
			return exitError{2}
		}
		// toc help X [Y]: X's (or X Y's) own help, all of it on stdout.
		return run(ctx, append(slices.Clone(rest), "-h"), stdout, stdout)
	}
	if isClientCommand(cmd) {
		return runClient(ctx, cmd, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "toc: unknown command %q\n\n%s", cmd, usage())
	return exitError{2}
}

// isHelp reports whether a is an argument asking for help.
func isHelp(a string) bool { return a == "-h" || a == "--help" || a == "-help" || a == "help" }

// isCommand reports whether name is one of toc's commands.
func isCommand(name string) bool {
	for _, c := range slices.Concat(serviceCommands, otherCommands) {
		if strings.Fields(c.name)[0] == name {
			return true
		}
	}
	return isClientCommand(name)
}

// isHelpTopic reports whether words name what toc help can print the
// help of: a command, a group of client commands or an alias, or one
// command of a group (jobs get, tokens secret).
func isHelpTopic(words []string) bool {
	if len(words) == 1 {
		return isCommand(words[0])
	}
	name := strings.Join(words, " ")
	if _, ok := findClientCommand(name); ok {
		return true
	}
	return slices.ContainsFunc(slices.Concat(serviceCommands, otherCommands), func(c command) bool {
		return strings.Join(c.words(), " ") == name
	})
}

// words are the words of c's name that name it, without its arguments:
// tokens hash of "tokens hash [TOKEN]".
func (c command) words() []string {
	words := strings.Fields(c.name)
	i := slices.IndexFunc(words, func(w string) bool { return strings.HasPrefix(w, "[") || strings.ToUpper(w) == w })
	if i < 0 {
		return words
	}
	return words[:i]
}

// isClientCommand reports whether name is a client command, a group of
// them (its first word) or an alias.
func isClientCommand(name string) bool {
	_, alias := clientAliases[name]
	return alias || slices.ContainsFunc(clientCommands, func(cc clientCommand) bool {
		return cc.name == name || strings.HasPrefix(cc.name, name+" ")
	})
}

// rateLimited wraps the handler of dev's and serve's logger: a warning or
// error repeating with the same message and "dep" passes once per
// ratelog.DefaultInterval (10 s), the next one with suppressed=N.
func rateLimited(h slog.Handler) slog.Handler { return ratelog.New(h, ratelog.Config{}) }
