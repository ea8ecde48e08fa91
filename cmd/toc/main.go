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
	"os"
	"os/signal"
	"syscall"
	// The zone database in the binary: schedules name IANA zones, and a
	// static binary in a scratch image has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/toc-project/toc/internal/ratelog"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `toc — the low-latency timeout center

usage: toc <command> [flags]

Service:
  dev        run everything in one process: SQLite file, in-process Redis, one worker
  serve      run against MySQL/MariaDB and Redis (production)
  migrate    apply the task-store migrations

Client (talks to a running toc over its REST API; --server, --token, --json):
  schedule   schedule a job
  jobs       get, cancel or reschedule a job (get, cancel: short for jobs get, jobs cancel)
  topics     list, get, set, pause or resume topics
  dead       list, replay or purge dead letters
  forecast   how many of a topic's jobs fall due per step: tomorrow's spike, today
  schedules  create, list, get, pause, resume or delete recurring schedules
  groups     create, get or seal groups of jobs
  cluster    show the cluster's members, leader and slots
  audit      list the audit log: who did which admin or bulk action, when, on how many jobs

Other:
  bench      measure toc: scheduling, firing lateness, drain, memory, recovery
  tokens     hash TOKEN: print the token_sha256 of a token for --tokens-file;
             secret: print a new webhook secret (whsec_...)
  version    print the version, module, Go version and commit

Run 'toc <command> -h' for a command's flags; every flag also reads TOC_<FLAG>.
`

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
		fmt.Fprint(stderr, usage)
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
	case "schedule", "get", "cancel", "jobs", "topics", "dead", "forecast", "schedules", "groups", "cluster", "audit":
		return runClient(ctx, cmd, rest, stdout, stderr)
	case "tokens":
		return runTokens(rest, stdout, stderr)
	case "version", "--version":
		printVersion(stdout)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "toc: unknown command %q\n\n%s", cmd, usage)
	return exitError{2}
}

// rateLimited wraps the handler of dev's and serve's logger: a warning or
// error repeating with the same message and "dep" passes once per
// ratelog.DefaultInterval (10 s), the next one with suppressed=N.
func rateLimited(h slog.Handler) slog.Handler { return ratelog.New(h, ratelog.Config{}) }
