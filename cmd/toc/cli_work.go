// The worker command: toc work TOPIC -- COMMAND [ARG...] runs a command
// for each due job of a pull topic.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toc-project/toc/http/client"
)

// Bounds of toc work's flags, the API's.
const (
	maxWorkLease = time.Hour
	maxWorkWait  = 25 * time.Second
	// workStderrTail is how much of the end of a failed command's stderr
	// its nack carries: about what toc keeps of a nack's error.
	workStderrTail = 1000
	// workKillDelay is how long a command has to exit after SIGTERM
	// before it is killed.
	workKillDelay = 5 * time.Second
)

// runWork leases the due jobs of a pull topic and runs a command for
// each, until SIGINT or SIGTERM or --max-jobs.
func runWork(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("work", "work TOPIC [flags] -- COMMAND [ARG...]\n\n"+
		"leases the due jobs of the pull topic TOPIC and runs COMMAND for each, with the job's JSON (a webhook's body)\n"+
		"on its stdin and TOC_JOB_ID, TOC_TOPIC, TOC_ATTEMPT and TOC_LEASE_TOKEN in its environment, while its lease\n"+
		"is extended. Exit 0 acks the job; another exit nacks it with the end of the command's stderr, and toc retries\n"+
		"it by the topic's backoff. SIGINT or SIGTERM stops the leasing and lets running commands finish for --grace.")
	fs.example = "toc work orders --concurrency 4 -- ./close-order.sh"
	server := fs.string("server", "http://127.0.0.1:8080", "toc's address")
	token := fs.string("token", "", "bearer token")
	concurrency := fs.int("concurrency", client.DefaultWorkConcurrency, "commands run at once, 1..1000")
	lease := fs.duration("lease", client.DefaultLease, "how long each job is leased, and extended by while its command runs, 1s..1h")
	wait := fs.duration("wait", client.DefaultLeaseWait, "how long each request waits for a job to fall due, up to 25s")
	grace := fs.duration("grace", client.DefaultWorkGrace, "how long running commands may finish once stopping; then they get SIGTERM, and their jobs come back when their leases expire")
	maxJobs := fs.int("max-jobs", 0, "stop after running this many jobs (0: until SIGINT or SIGTERM)")

	flagArgs, argv := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		flagArgs, argv = args[:i], args[i+1:]
	}
	fs.SetOutput(io.Discard) // help and errors are printed below
	pos, err := fs.parseAnywhere(flagArgs)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	}
	if err == nil {
		err = checkWorkArgs(pos, argv, *concurrency, *lease, *wait, *grace, *maxJobs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "toc work: %v\n", err)
		fs.SetOutput(stderr)
		fs.Usage()
		return exitError{2}
	}
	c, err := client.New(*server, client.WithToken(*token), client.WithUserAgent("toc/"+version),
		client.WithHTTPClient(&http.Client{Timeout: max(client.DefaultTimeout, *wait+10*time.Second)}))
	if err != nil {
		fmt.Fprintf(stderr, "toc work: --server: %v\n", err)
		return exitError{2}
	}
	r := &jobCommand{argv: argv, stdout: &syncWriter{w: stdout}, stderr: &syncWriter{w: stderr}}
	err = c.Work(ctx, pos[0], r.run, client.WorkOptions{
		Concurrency: *concurrency, Lease: *lease, Wait: *wait, Grace: *grace, MaxJobs: *maxJobs,
		Logger: slog.New(slog.NewTextHandler(r.stderr, nil)),
	})
	fmt.Fprintf(r.stderr, "toc work %s: %d job(s) run: %d succeeded, %d failed\n", pos[0], r.ok.Load()+r.failed.Load(), r.ok.Load(), r.failed.Load())
	if e, ok := errors.AsType[*client.Error](err); ok {
		printError(stderr, e, false)
		return exitError{1}
	}
	return err
}

// checkWorkArgs checks toc work's arguments and flags.
func checkWorkArgs(pos, argv []string, concurrency int, lease, wait, grace time.Duration, maxJobs int) error {
	switch {
	case len(pos) != 1:
		return fmt.Errorf("want TOPIC, got %d arguments before --", len(pos))
	case len(argv) == 0:
		return errors.New("give the command to run after --")
	case concurrency < 1 || concurrency > client.MaxLeaseJobs:
		return fmt.Errorf("--concurrency %d: want 1..%d", concurrency, client.MaxLeaseJobs)
	case lease < time.Second || lease > maxWorkLease:
		return fmt.Errorf("--lease %v: want 1s..%v", lease, maxWorkLease)
	case wait <= 0 || wait > maxWorkWait:
		return fmt.Errorf("--wait %v: want more than 0, up to %v", wait, maxWorkWait)
	case grace <= 0:
		return fmt.Errorf("--grace %v: want more than 0", grace)
	case maxJobs < 0:
		return fmt.Errorf("--max-jobs %d: want 0 or more", maxJobs)
	}
	return nil
}

// jobCommand runs the command of toc work for a job.
type jobCommand struct {
	argv           []string
	stdout, stderr io.Writer
	ok, failed     atomic.Int64
}

// run runs the command for l: its error, the end of its stderr with
// its exit status, nacks the job.
func (r *jobCommand) run(ctx context.Context, l client.Lease) error {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // as toc writes a webhook's body
	if err := enc.Encode(l.Job); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, r.argv[0], r.argv[1:]...)
	cmd.Stdin = &body
	cmd.Env = append(os.Environ(),
		"TOC_JOB_ID="+strconv.FormatUint(l.Job.ID, 10),
		"TOC_TOPIC="+l.Job.Topic,
		"TOC_ATTEMPT="+strconv.Itoa(l.Job.Attempt),
		"TOC_LEASE_TOKEN="+l.Token,
	)
	tail := &tailBuffer{max: workStderrTail}
	cmd.Stdout, cmd.Stderr = r.stdout, io.MultiWriter(r.stderr, tail)
	cmd.SysProcAttr = ownProcessGroup()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = workKillDelay
	err := cmd.Run()
	if err == nil {
		r.ok.Add(1)
		return nil
	}
	r.failed.Add(1)
	if msg := strings.TrimSpace(strings.ToValidUTF8(tail.String(), "")); msg != "" {
		return fmt.Errorf("%s: %v: %s", r.argv[0], err, msg)
	}
	return fmt.Errorf("%s: %v", r.argv[0], err)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// syncWriter is w for writers at once: the commands running together
// and the worker's log share toc's stdout and stderr.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
