package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// readyz reads /readyz with the given token ("" for none).
func readyz(t *testing.T, p *proc, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", p.url+"/readyz", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// waitReady polls /readyz until each named check says want ("ok" or
// "failing") or limit passes.
func waitReady(t *testing.T, p *proc, limit time.Duration, want map[string]string) map[string]any {
	t.Helper()
	var body map[string]any
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body = readyz(t, p, "")
		checks, _ := body["checks"].(map[string]any)
		match := true
		for name, w := range want {
			match = match && checks[name] == w
		}
		if match {
			return body
		}
	}
	t.Fatalf("/readyz never showed %v within %v: %v\n%s", want, limit, body, tail(p.stderr.String(), 30))
	return nil
}

// logLine is what the test reads of one JSON log line.
type logLine struct {
	Time       time.Time `json:"time"`
	Level      string    `json:"level"`
	Msg        string    `json:"msg"`
	Dep        string    `json:"dep"`
	Suppressed int       `json:"suppressed"`
}

// jsonLines parses every line of out as a JSON object, failing the test
// for each one that is not.
func jsonLines(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for l := range strings.Lines(out) {
		var line logLine
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Errorf("not a JSON line: %q", strings.TrimSpace(l))
			continue
		}
		lines = append(lines, line)
	}
	return lines
}

// Issue 12, start-up and dependency loss: toc serve starts with its task
// store, Redis and ZooKeeper all unreachable; it names each in /readyz
// (the error text only with a token), answers 503 to /v1 until the task
// store is there, proceeds as each dependency comes (migrations, the
// API, the engine, the membership) without a restart, and fires a job.
// All the while, with --log-format json, stderr holds only JSON lines, from
// every component (go-redis, the MySQL driver, the ZooKeeper client,
// net/http), and a failing dependency's warning repeats at most once per
// 10 s.
func TestServeStartsWithoutItsDependencies(t *testing.T) {
	maria, rds, zk := testenv.MariaDB(t), testenv.Redis(t), testenv.ZooKeeper(t)
	db := maria.NewDatabase(t)
	mysqlProxy, redisProxy, zkProxy := newProxy(t, maria.Addr), newProxy(t, rds.Addr), newProxy(t, zk.Addr)
	mysqlProxy.cut()
	redisProxy.cut()
	zkProxy.cut()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	recv := newReceiver(t, secret)
	began := time.Now()
	p := startToc(t, "tok", "serve", "--log-format", "json",
		"--mysql-dsn", strings.Replace(db, maria.Addr, mysqlProxy.addr, 1),
		"--redis-addr", redisProxy.addr, "--redis-prefix", fmt.Sprintf("ops%d:", time.Now().UnixNano()),
		"--zk", zkProxy.addr, "--zk-root", fmt.Sprintf("/ops%d", time.Now().UnixNano()), "--zk-session-timeout", "4s",
		"--api-token", "tok", "--webhook-secret", secret, "--allow-private-callbacks")

	// Nothing answers: each dependency is named, without its address
	// unless the caller has a token.
	body := waitReady(t, p, 10*time.Second, map[string]string{"task_store": "failing", "redis": "failing", "zookeeper": "failing"})
	if _, ok := body["errors"]; ok || strings.Contains(fmt.Sprint(body), mysqlProxy.addr) {
		t.Errorf("/readyz without a token says too much: %v", body)
	}
	code, body := readyz(t, p, "tok")
	if errs, _ := body["errors"].(map[string]any); code != 503 || !strings.Contains(fmt.Sprint(errs["task_store"]), mysqlProxy.addr) {
		t.Errorf("/readyz with a token: %d %v", code, body)
	}
	if code, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "ops", "delay_ms": 0, "callback_url": recv.srv.URL + "/hook"}); code != 503 {
		t.Errorf("a schedule before the task store answers: %d %v", code, body)
	}
	time.Sleep(3 * time.Second)

	// The task store comes: migrations run, the API serves; the engine
	// waits for Redis.
	mysqlProxy.restore(t)
	waitReady(t, p, 20*time.Second, map[string]string{"task_store": "ok", "redis": "failing", "zookeeper": "failing"})
	if code, body := p.call(t, "GET", "/v1/topics", nil); code != 200 {
		t.Errorf("GET /v1/topics once the task store answers: %d %v", code, body)
	}
	time.Sleep(3 * time.Second)

	// Redis comes: the engine starts, then the membership, which waits for
	// ZooKeeper.
	redisProxy.restore(t)
	waitReady(t, p, 20*time.Second, map[string]string{"task_store": "ok", "redis": "ok", "zookeeper": "failing"})
	time.Sleep(2 * time.Second)
	zkProxy.restore(t)
	waitReady(t, p, 30*time.Second, map[string]string{"task_store": "ok", "redis": "ok", "zookeeper": "ok"})
	if code, _ := readyz(t, p, ""); code != 200 {
		t.Errorf("/readyz with every dependency up: %d", code)
	}
	code, job := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "ops", "delay_ms": 200, "callback_url": recv.srv.URL + "/hook"})
	if code != 201 {
		t.Fatalf("schedule: %d %v", code, job)
	}
	id, _ := job["id"].(string)
	recv.wait(t, recv.expect([]string{id}), 20*time.Second)
	recv.check(t)

	// ZooKeeper goes away: /readyz names it, and the client's retries
	// stay JSON and limited.
	zkProxy.cut()
	waitReady(t, p, 20*time.Second, map[string]string{"zookeeper": "failing", "task_store": "ok", "redis": "ok"})
	time.Sleep(3 * time.Second)
	p.stop(t)

	out := p.stderr.String()
	lines := jsonLines(t, out)
	took := time.Since(began)
	perRepeat := map[string]int{}
	for _, l := range lines {
		if l.Level == "WARN" || l.Level == "ERROR" {
			perRepeat[l.Msg+" dep="+l.Dep]++
		}
	}
	limit := int(took/(10*time.Second)) + 2
	for repeat, n := range perRepeat {
		if n > limit {
			t.Errorf("%q logged %d times in %v, want at most %d (once per 10 s)", repeat, n, took.Round(time.Second), limit)
		}
	}
	for _, dep := range []string{"task_store", "redis"} {
		if perRepeat["dependency unavailable; retrying dep="+dep] == 0 {
			t.Errorf("no warning with dep=%s", dep)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("%d lines in %v; warnings by message and dep: %v", len(lines), took.Round(time.Second), perRepeat)
	}
}

// toc_topic_due_waiting counts, at each scrape, the jobs of a topic due
// but still in Redis: here those of a paused topic. A topic created
// after the process started is counted from its topic list.
func TestMetricsDueWaiting(t *testing.T) {
	metricsAddr := testenv.FreeAddr(t)
	p := startToc(t, "", "dev", "--data", t.TempDir()+"/m.db", "--metrics-addr", metricsAddr)
	if code, body := p.call(t, "PUT", "/v1/topics/held", map[string]any{"slots": 4}); code != 200 && code != 201 {
		t.Fatalf("put topic: %d %v", code, body)
	}
	if code, body := p.call(t, "POST", "/v1/topics/held/pause", nil); code != 200 {
		t.Fatalf("pause: %d %v", code, body)
	}
	for range 3 {
		if code, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "held", "delay_ms": 0, "callback_url": "http://127.0.0.1:1/x"}); code != 201 {
			t.Fatalf("schedule: %d %v", code, body)
		}
	}
	const want = `toc_topic_due_waiting{topic="held"} 3`
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(b, []byte(want)) {
			break
		}
	}
	if !bytes.Contains(b, []byte(want)) {
		i := bytes.Index(b, []byte("toc_topic_due_waiting"))
		t.Errorf("metrics lack %s; they say %.200s", want, b[max(i, 0):])
	}
	p.stop(t)
}

// With --metrics-addr, /metrics is served there and not on the API's
// address; topic labels follow --metrics-max-topics.
func TestMetricsOwnListener(t *testing.T) {
	metricsAddr := testenv.FreeAddr(t)
	p := startToc(t, "", "dev", "--data", t.TempDir()+"/m.db", "--metrics-addr", metricsAddr, "--metrics-max-topics", "1")
	if code, _ := p.call(t, "GET", "/metrics", nil); code != 404 {
		t.Errorf("/metrics on the API's address with --metrics-addr: %d, want 404", code)
	}
	for _, topic := range []string{"first", "second"} {
		if code, body := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": topic, "delay_ms": 60000, "callback_url": "http://127.0.0.1:1/x"}); code != 201 {
			t.Fatalf("schedule: %d %v", code, body)
		}
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`toc_jobs_scheduled_total{topic="first"} 1`, `toc_jobs_scheduled_total{topic="_other"} 1`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if bytes.Contains(b, []byte(`topic="second"`)) {
		t.Error(`metrics name topic "second", past --metrics-max-topics 1`)
	}
	p.stop(t)
}
