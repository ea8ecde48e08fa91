package main

// Runnable docs: the shell examples of README.md and docs/*.md that are
// marked runnable are run against toc dev, and what they print is checked.
//
// The convention, for whoever writes a page:
//
//   - A fenced block whose info string is "sh runnable" is run; GitHub
//     renders it as any sh block. A plain "sh" block is not run.
//   - A fenced block right after it (blank lines between are allowed) whose
//     info string is "text output" or "json output" is what the block
//     prints on its standard output. "..." in it stands for any text,
//     newlines included (ids, times, the fields not shown); trailing
//     spaces and blank lines are not compared. A runnable block without
//     an output block only has to succeed.
//   - The runnable blocks of a page run in order in one shell, bash -e
//     with pipefail, so a variable set in one block is there in the next
//     and a failing command fails the page. The page starts in an empty
//     temporary directory.
//   - The shell has toc (the binary under test) on PATH, and TOC and
//     TOC_SERVER set to the address of a toc dev of the page's own: the
//     pages write $TOC, which a reader sets once (their first runnable
//     block says TOC=${TOC:-http://localhost:8080}).
//   - A page one of whose blocks is "sh runnable serve" gets no toc dev:
//     it starts toc serve itself, as its reader would, and the test gives
//     that toc serve its flags in the environment (TOC_ADDR at $TOC,
//     TOC_MYSQL_DSN and TOC_REDIS_ADDR of testenv's servers, a
//     TOC_REDIS_PREFIX of its own, TOC_WEBHOOK_SECRET,
//     TOC_ALLOW_PRIVATE_CALLBACKS), so the page names only the flags it
//     is about. Such a page needs MariaDB and Redis, as the integration
//     tests do.
//   - A page that mentions AMQP_URL or NATS_URL gets a RabbitMQ vhost and
//     a nats-server of its own: their URLs in AMQP_URL and NATS_URL, its
//     toc dev (or toc serve) started with them as brokers "main" and
//     "events" (TOC_AMQP, TOC_NATS), as the page tells its reader to
//     start toc, and the webhook secret in TOC_WEBHOOK_SECRET. The
//     shell has busreceiver (http/webhook/examples/busreceiver) on PATH.
//   - 127.0.0.1:9001, the receiver the README's walk-through starts, is a
//     receiver of the test's that answers 204 to everything (the address
//     is replaced in the blocks before they run). Nothing listens on
//     127.0.0.1:9, so a callback there fails. Callbacks go to loopback
//     addresses only.
//
// Every page of docsRunPages must have runnable blocks.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// docsRunPages are the pages that must have runnable blocks; any other
// page of README.md and docs/ that has some is run too.
var docsRunPages = []string{
	"README.md",
	"docs/getting-started.md",
	"docs/api.md",
	"docs/topics.md",
	"docs/deadlines.md",
	"docs/schedules.md",
	"docs/groups.md",
	"docs/tenants.md",
	"docs/delivery.md",
}

// docsReceiver is the receiver address the docs show, replaced by the
// test's own.
const docsReceiver = "127.0.0.1:9001"

// docBlock is a runnable block of a page and the output shown after it.
type docBlock struct {
	line      int // of its opening fence, from 1
	code      string
	want      string
	hasOutput bool
	// serve: the block is "sh runnable serve", its page starts toc serve.
	serve bool
}

// runnableBlocks returns the runnable blocks of a Markdown text, in order,
// each with the output block that follows it; an error for an output
// block that follows no runnable block, or a fence left open.
func runnableBlocks(text string) ([]docBlock, error) {
	var blocks []docBlock
	lines := strings.Split(text, "\n")
	// last is the index of the runnable block an output block may follow:
	// -1 once anything but blank lines came between.
	last := -1
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(trimmed, "```") {
			if trimmed != "" {
				last = -1
			}
			continue
		}
		fence := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
		info := strings.Fields(trimmed[len(fence):])
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != fence; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: a code block that is never closed", start+1)
		}
		content := strings.Join(body, "\n") + "\n"
		switch {
		case len(info) >= 2 && info[0] == "sh" && info[1] == "runnable":
			serve := len(info) == 3 && info[2] == "serve"
			if len(info) > 2 && !serve {
				return nil, fmt.Errorf("line %d: %q: a runnable block is \"sh runnable\" or \"sh runnable serve\"", start+1, trimmed)
			}
			blocks = append(blocks, docBlock{line: start + 1, code: content, serve: serve})
			last = len(blocks) - 1
			continue
		case len(info) == 2 && info[1] == "output":
			if last < 0 || blocks[last].hasOutput {
				return nil, fmt.Errorf("line %d: an output block that follows no runnable block", start+1)
			}
			blocks[last].want, blocks[last].hasOutput = content, true
		}
		last = -1
	}
	return blocks, nil
}

// outputMatches reports whether got is what want shows: the same text,
// each "..." of want standing for any text, trailing spaces of each line
// and trailing blank lines aside.
func outputMatches(want, got string) bool {
	parts := strings.Split(trimLines(want), "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^(?s:` + strings.Join(parts, ".*?") + `)$`).MatchString(trimLines(got))
}

// trimLines drops the trailing spaces of each line and the trailing blank
// lines.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// The parser finds runnable blocks and their outputs, and nothing else;
// the matcher takes "..." for any text.
func TestDocsRunParser(t *testing.T) {
	page := "# P\n\n```sh\nnot run\n```\n\n```sh runnable\necho a\n```\n\n```text output\na\n```\n" +
		"text\n\n````sh runnable\necho '```'\n````\n\n```\n```\n"
	blocks, err := runnableBlocks(page)
	if err != nil {
		t.Fatal(err)
	}
	want := []docBlock{{line: 7, code: "echo a\n", want: "a\n", hasOutput: true}, {line: 16, code: "echo '```'\n"}}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Errorf("blocks %+v, want %+v", blocks, want)
	}
	if _, err := runnableBlocks("```sh runnable\necho\n```\n```text output\n1\n```\n```text output\n2\n```\n"); err == nil {
		t.Error("a second output block after one runnable block was taken")
	}
	if _, err := runnableBlocks("```sh runnable\necho\n```\ntext\n```text output\n\n```\n"); err == nil {
		t.Error("an output block after text was taken")
	}
	if b, err := runnableBlocks("```sh runnable serve\necho\n```\n"); err != nil || len(b) != 1 || !b[0].serve {
		t.Errorf("sh runnable serve: %+v, %v", b, err)
	}
	if _, err := runnableBlocks("```sh runnable please\necho\n```\n"); err == nil {
		t.Error("sh runnable please was taken")
	}
	if _, err := runnableBlocks("```sh runnable\necho\n"); err == nil {
		t.Error("an open fence was taken")
	}
	for _, tc := range []struct {
		want, got string
		ok        bool
	}{
		{"a\n", "a", true},
		{"a  \n\n", "a\n", true},
		{`{"id":"...","status":"pending",...}`, `{"id":"47","status":"pending","x":1}`, true},
		{`{"id":"...","status":"pending",...}`, `{"id":"47","status":"done","x":1}`, false},
		{"first\n...\nlast", "first\n1\n2\nlast\n", true},
		{"a.c", "abc", false},
		{"a", "ab", false},
	} {
		if got := outputMatches(tc.want, tc.got); got != tc.ok {
			t.Errorf("outputMatches(%q, %q) = %v, want %v", tc.want, tc.got, got, tc.ok)
		}
	}
}

// Every runnable block of README.md and docs/*.md runs against a toc dev
// of its page's own (or the toc serve its page starts) and prints what
// the page shows.
func TestDocsRun(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailableTool(t, fmt.Sprintf("%s is not on PATH: the runnable docs need it", tool))
		}
	}
	root := filepath.Join("..", "..")
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	for _, path := range pages {
		name := filepath.ToSlash(must(filepath.Rel(root, path)))
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := runnableBlocks(string(b))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(blocks) == 0 {
			if slices.Contains(docsRunPages, name) {
				t.Errorf("%s has no runnable block (```sh runnable)", name)
			}
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runPage(t, name, blocks)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// runPage runs the blocks of a page in one shell against a toc dev of its
// own, or the toc serve the page starts, and checks each block's output.
func runPage(t *testing.T, name string, blocks []docBlock) {
	var env, brokers []string
	path := os.Getenv("PATH")
	if slices.ContainsFunc(blocks, func(b docBlock) bool {
		return strings.Contains(b.code, "AMQP_URL") || strings.Contains(b.code, "NATS_URL")
	}) {
		amqpURL, natsURL := testenv.RabbitMQ(t).URL, testenv.NewNATS(t).URL()
		brokers = []string{"AMQP_URL=" + amqpURL, "NATS_URL=" + natsURL,
			"TOC_AMQP=main=" + amqpURL, "TOC_NATS=events=" + natsURL, "TOC_WEBHOOK_SECRET=" + e2eSecret}
		bin := filepath.Join(t.TempDir(), "busreceiver")
		if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(examplesDir, "busreceiver")).CombinedOutput(); err != nil {
			t.Fatalf("build busreceiver: %v\n%s", err, out)
		}
		path = filepath.Dir(bin) + string(os.PathListSeparator) + path
	}
	if slices.ContainsFunc(blocks, func(b docBlock) bool { return b.serve }) {
		addr := testenv.FreeAddr(t)
		env = []string{"TOC=http://" + addr, "TOC_SERVER=http://" + addr, "TOC_ADDR=" + addr,
			"TOC_MYSQL_DSN=" + testenv.MariaDB(t).NewDatabase(t), "TOC_REDIS_ADDR=" + testenv.Redis(t).Addr,
			fmt.Sprintf("TOC_REDIS_PREFIX=docs%d:", time.Now().UnixNano()),
			"TOC_WEBHOOK_SECRET=" + e2eSecret, "TOC_ALLOW_PRIVATE_CALLBACKS=true"}
	} else {
		p := startTocEnv(t, brokers, "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
		env = []string{"TOC=" + p.url, "TOC_SERVER=" + p.url}
	}
	env = append(env, brokers...)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	recvAddr := strings.TrimPrefix(recv.URL, "http://")

	// Each block is followed by a line that marks its end on stdout, so
	// the output of one run is cut into the blocks' outputs.
	// The marker starts with an ASCII record separator (octal 036).
	const marker = "\x1edocs-run block done"
	var script strings.Builder
	for i, b := range blocks {
		script.WriteString(strings.ReplaceAll(b.code, docsReceiver, recvAddr))
		fmt.Fprintf(&script, "printf '\\n\\036%s %d\\n'\n", marker[1:], i)
	}
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "page.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	// Files, not pipes: a server a block starts in the background keeps
	// its copy of stdout open after the shell exits.
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()

	cmd := exec.Command("bash", "-e", "-o", "pipefail", scriptPath)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(append(withoutTocEnv(), env...),
		"PATH="+filepath.Dir(tocBin)+string(os.PathListSeparator)+path,
		"GORACE=atexit_sleep_ms=0")
	// Its own process group, ended as a whole: what a block started in
	// the background ends with the page.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(45 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		runErr = fmt.Errorf("still running after 45 s: %v", <-done)
	}

	out := must(os.ReadFile(stdout.Name()))
	errOut := must(os.ReadFile(stderr.Name()))
	outputs := strings.Split(string(out), "\n"+marker+" ")
	for i, b := range blocks {
		if i+1 >= len(outputs) {
			t.Fatalf("%s:%d: the block failed (%v):\n%s\nits output:\n%s\nstderr:\n%s",
				name, b.line, runErr, b.code, outputs[len(outputs)-1], tail(string(errOut), 30))
		}
		got := outputs[i]
		if i > 0 {
			// Past the previous marker's number and newline.
			_, got, _ = strings.Cut(got, "\n")
		}
		if b.hasOutput && !outputMatches(strings.ReplaceAll(b.want, docsReceiver, recvAddr), got) {
			t.Errorf("%s:%d: the block printed\n%s\nwhere the page shows\n%s\n(the page's stderr:\n%s)", name, b.line, got, b.want, tail(string(errOut), 20))
		}
	}
	if runErr != nil {
		t.Errorf("%s: the shell ended with %v\nstderr:\n%s", name, runErr, tail(string(errOut), 30))
	}
}

// withoutTocEnv is the environment without the variables toc or the
// docs read: TOC_* and TOC.
func withoutTocEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TOC_") && !strings.HasPrefix(e, "TOC=") {
			env = append(env, e)
		}
	}
	return env
}
