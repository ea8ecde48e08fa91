package main

// The example receivers in http/webhook/examples, each run as its users
// would run it, against toc dev signing with two secrets.

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/testenv"
)

// examplesDir is http/webhook/examples, from cmd/toc where tests run.
const examplesDir = "../../http/webhook/examples"

// TestReceivers checks each example receiver: it verifies toc's
// deliveries while toc signs with an old and a new secret (a receiver
// knowing only one of them accepts them), refuses a tampered body with
// 401, processes a webhook-id once, and stops a job with 410.
func TestReceivers(t *testing.T) {
	oldSecret, newSecret := webhook.NewSecret(), webhook.NewSecret()
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"),
		"--webhook-secret", oldSecret, "--webhook-secret", newSecret)
	// toc dev prints the first secret it signs with.
	if !strings.Contains(p.stdout.String(), "webhook secret: "+oldSecret+"\n") {
		t.Fatalf("toc dev did not print its first secret:\n%s", p.stdout.String())
	}
	for _, kind := range []struct {
		name    string
		command func(t *testing.T) (dir string, argv []string)
	}{
		{"go", goReceiverCommand},
		{"node", nodeReceiverCommand},
	} {
		t.Run(kind.name, func(t *testing.T) {
			dir, argv := kind.command(t)
			start := func(secrets string) *exampleReceiver {
				return startExampleReceiver(t, dir, argv, secrets)
			}
			receiverFlow(t, p, start, oldSecret, newSecret)
		})
	}
}

// goReceiverCommand builds http/webhook/examples/goreceiver.
func goReceiverCommand(t *testing.T) (string, []string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "goreceiver")
	out, err := exec.Command("go", "build", "-o", bin, filepath.Join(examplesDir, "goreceiver")).CombinedOutput()
	if err != nil {
		t.Fatalf("build the Go receiver: %v\n%s", err, out)
	}
	return "", []string{bin}
}

// nodeReceiverCommand is node on http/webhook/examples/nodereceiver,
// whose node_modules npm ci installed.
func nodeReceiverCommand(t *testing.T) (string, []string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(examplesDir, "nodereceiver"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailableTool(t, fmt.Sprintf("node is not on PATH (apt-get install nodejs npm, then npm ci in %s): %v", dir, err))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); err != nil {
		unavailableTool(t, fmt.Sprintf("the Node receiver's packages are not installed (npm ci in %s): %v", dir, err))
	}
	return dir, []string{node, "server.js"}
}

// unavailableTool skips the test, or fails it under
// TOC_REQUIRE_INTEGRATION=1, as testenv does for a missing server.
func unavailableTool(t *testing.T, msg string) {
	t.Helper()
	if testenv.Required() {
		t.Fatal(msg)
	}
	t.Skip(msg + " (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
}

func receiverFlow(t *testing.T, p *proc, start func(secrets string) *exampleReceiver, oldSecret, newSecret string) {
	otherSecret := webhook.NewSecret()
	rOld := start(oldSecret)
	rNew := start(newSecret)
	// Several secrets, separated as in TOC_WEBHOOK_SECRET.
	rMulti := start(otherSecret + "," + newSecret)

	t.Run("rotation", func(t *testing.T) {
		// toc signs with both secrets: a receiver knowing only the old one
		// and one knowing only the new one both accept its deliveries.
		for name, r := range map[string]*exampleReceiver{"old": rOld, "new": rNew, "multi": rMulti} {
			id := postJob(t, p, map[string]any{"topic": "receivers", "delay_ms": 0, "callback_url": r.url + "/hook",
				"payload": map[string]any{"order": 42}})
			if got := r.wait(t, id, "processed"); got["status"] != "204" || got["topic"] != "receivers" || got["attempt"] != "1" {
				t.Errorf("%s receiver: delivery of job %s logged %v", name, id, got)
			}
			waitJob(t, p, id, "done")
		}
	})

	t.Run("stop", func(t *testing.T) {
		// 410 Gone ends the job as cancelled, with no further attempt.
		id := postJob(t, p, map[string]any{"topic": "receivers", "delay_ms": 0, "callback_url": rNew.url + "/hook",
			"max_attempts": 5, "payload": map[string]any{"stop": true}})
		waitJob(t, p, id, "cancelled")
		if got := rNew.wait(t, id, "stopped"); got["status"] != "410" {
			t.Errorf("stop: logged %v, want status 410", got)
		}
		// The job itself shows the attempt and the answer that stopped it.
		if _, j := p.call(t, "GET", "/v1/jobs/"+id, nil); j["attempts"] != 1.0 || j["last_status"] != 410.0 {
			t.Errorf("stopped job: %v, want attempts 1 and last_status 410", j)
		}
		// The job's history shows the one attempt and the receiver's 410.
		waitAttempts(t, p, id)
		_, h := p.call(t, "GET", "/v1/jobs/"+id+"/attempts", nil)
		if a, _ := h["attempts"].([]any); len(a) != 1 || a[0].(map[string]any)["status_code"] != 410.0 {
			t.Errorf("stopped job's attempts: %v, want one answered 410", h)
		}
		if got := rNew.results(id); !slices.Equal(got, []string{"stopped"}) {
			t.Errorf("stopped job delivered as %v, want once", got)
		}
	})

	t.Run("tampered", func(t *testing.T) {
		id := "tampered-1"
		body := exampleBody(id, 1)
		h := signedHeaders(t, id, body, newSecret)
		bad := bytes.Clone(body)
		bad[bytes.Index(bad, []byte(`"order":7`))+len(`"order":`)] = '8'
		if got := rMulti.post(t, bad, h); got != http.StatusUnauthorized {
			t.Errorf("tampered body: %d, want 401", got)
		}
		if got := rMulti.post(t, body, signedHeaders(t, id, body, webhook.NewSecret())); got != http.StatusUnauthorized {
			t.Errorf("signed with an unknown secret: %d, want 401", got)
		}
		// The same delivery untouched is accepted: the byte made the 401.
		if got := rMulti.post(t, body, h); got/100 != 2 {
			t.Errorf("untouched body: %d, want 2xx", got)
		}
		rMulti.wait(t, id, "processed")
		if got := rMulti.results(id); !slices.Equal(got, []string{"bad_signature", "bad_signature", "processed"}) {
			t.Errorf("deliveries of %s: %v", id, got)
		}
	})

	t.Run("duplicate", func(t *testing.T) {
		// A repeat of a webhook-id, as toc's next attempt would send it (a
		// later timestamp, signed again), is answered 2xx and not processed
		// again. Each is signed with one secret of the receiver's list.
		id := "dup-1"
		first := exampleBody(id, 1)
		if got := rMulti.post(t, first, signedHeaders(t, id, first, otherSecret)); got/100 != 2 {
			t.Errorf("first delivery: %d, want 2xx", got)
		}
		rMulti.wait(t, id, "processed")
		again := exampleBody(id, 2)
		if got := rMulti.post(t, again, signedHeaders(t, id, again, newSecret)); got/100 != 2 {
			t.Errorf("repeated delivery: %d, want 2xx", got)
		}
		rMulti.wait(t, id, "duplicate")
		if got := rMulti.results(id); !slices.Equal(got, []string{"processed", "duplicate"}) {
			t.Errorf("deliveries of %s: %v, want processed once", id, got)
		}
	})
}

// exampleBody is a webhook body as toc sends it.
func exampleBody(id string, attempt int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"topic":"direct","fire_at":%q,"attempt":%d,"payload":{"order":7}}`,
		id, time.Now().UTC().Format(time.RFC3339Nano), attempt)
}

// signedHeaders are the Standard Webhooks headers of body, signed now
// with each of secrets.
func signedHeaders(t *testing.T, id string, body []byte, secrets ...string) http.Header {
	t.Helper()
	ts := time.Now().Unix()
	var sigs []string
	for _, s := range secrets {
		key, err := webhook.ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, webhook.Sign(key, id, ts, body))
	}
	return http.Header{
		"Content-Type":      {"application/json"},
		"Webhook-Id":        {id},
		"Webhook-Timestamp": {strconv.FormatInt(ts, 10)},
		"Webhook-Signature": {strings.Join(sigs, " ")},
	}
}

// exampleReceiver is a running example receiver and what it logged.
type exampleReceiver struct {
	url  string
	out  *syncBuffer
	done chan struct{}
}

// startExampleReceiver runs argv in dir with WEBHOOK_SECRETS=secrets on a
// free loopback port and waits for the line saying where it listens.
func startExampleReceiver(t *testing.T, dir string, argv []string, secrets string) *exampleReceiver {
	t.Helper()
	r := &exampleReceiver{out: &syncBuffer{}, done: make(chan struct{})}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRETS="+secrets, "ADDR=127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("receiver %s output:\n%s", r.url, tail(r.out.String(), 40))
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, l := range logLines(r.out.String()) {
			if l["msg"] == "receiver listening" {
				r.url = "http://" + l["addr"]
				return r
			}
		}
		select {
		case <-r.done:
			t.Fatalf("receiver %v exited at start: %v\n%s", argv, cmd.ProcessState, r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver %v did not say where it listens:\n%s", argv, r.out.String())
		}
	}
}

// post sends body with headers h to the receiver and returns the status.
func (r *exampleReceiver) post(t *testing.T, body []byte, h http.Header) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.url+"/hook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// deliveries are the receiver's delivery lines for webhook id.
func (r *exampleReceiver) deliveries(id string) []map[string]string {
	var ds []map[string]string
	for _, l := range logLines(r.out.String()) {
		if l["msg"] == "delivery" && l["id"] == id {
			ds = append(ds, l)
		}
	}
	return ds
}

// results are the result of each delivery of webhook id, in order.
func (r *exampleReceiver) results(id string) []string {
	var rs []string
	for _, d := range r.deliveries(id) {
		rs = append(rs, d["result"])
	}
	return rs
}

// wait waits up to 30 s for the receiver to log a delivery of webhook id
// with result, and returns that line.
func (r *exampleReceiver) wait(t *testing.T, id, result string) map[string]string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, d := range r.deliveries(id) {
			if d["result"] == result {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver %s logged no delivery of %s with result %s:\n%s", r.url, id, result, tail(r.out.String(), 20))
		}
	}
}

// logLines parses the logfmt lines of out (the receivers' format, Go's
// slog text handler); a line that does not parse is left out.
func logLines(out string) []map[string]string {
	var lines []map[string]string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if l, ok := parseLogfmt(sc.Text()); ok {
			lines = append(lines, l)
		}
	}
	return lines
}

func parseLogfmt(line string) (map[string]string, bool) {
	l := map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimLeft(line, " ") {
		key, rest, ok := strings.Cut(line, "=")
		if !ok || key == "" || strings.Contains(key, " ") {
			return nil, false
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, false
			}
			if val, err = strconv.Unquote(q); err != nil {
				return nil, false
			}
			rest = rest[len(q):]
		} else {
			val, rest, _ = strings.Cut(rest, " ")
		}
		l[key], line = val, rest
	}
	return l, len(l) > 0
}
