package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/testenv"
)

// namespaceTokens is the tokens file of TestNamespacesEndToEnd: an admin
// and a writer of topics orders* in each of the default namespace and
// sandbox.
const namespaceTokens = `{"tokens": [
  {"name": "ops", "token": "ops-token-0123456789", "role": "admin"},
  {"name": "orders", "token": "orders-token-0123456789", "role": "write", "topics": ["orders*"]},
  {"name": "sb-ops", "token": "sb-ops-token-0123456789", "role": "admin", "namespace": "sandbox"},
  {"name": "sb-orders", "token": "sb-orders-token-0123456789", "role": "write", "topics": ["orders*"], "namespace": "sandbox"}
]}`

// TestNamespacesEndToEnd: toc serve on MariaDB and redis-server with the
// default namespace and sandbox, which has its own Redis prefix, webhook
// secret and callback hosts. The same topic name in both is two topics;
// each namespace's receiver verifies its calls with its own secret and
// reads the topic by its name; neither tenant sees the other's jobs,
// topics or audit entries.
// namespaceStack is toc serve on MariaDB and redis-server with the tokens
// file namespaceTokens and a namespaces file of sandbox (its own prefix,
// secret, and callback host 127.0.0.1), called as the default admin ops;
// each namespace has a receiver verifying with its own secret.
type namespaceStack struct {
	ops                *proc
	online, sandbox    *receiver
	dsn, redisAddr     string
	prefix             string
	onlineSecret       string
	tokens, namespaces string // the files
}

func startNamespaces(t *testing.T) *namespaceStack {
	t.Helper()
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	dir := t.TempDir()
	onlineSecret := webhook.NewSecret()
	out, err := runTocCmd(t, "tokens", "secret")
	sandboxSecret := strings.TrimSpace(out)
	if err != nil || !strings.HasPrefix(sandboxSecret, "whsec_") || sandboxSecret == onlineSecret {
		t.Fatalf("toc tokens secret: %v %q", err, out)
	}
	prefix := fmt.Sprintf("ns%d:", time.Now().UnixNano())
	tokens, spaces := filepath.Join(dir, "tokens.json"), filepath.Join(dir, "namespaces.json")
	writeFile(t, tokens, namespaceTokens)
	writeFile(t, spaces, `{"namespaces": [{"name": "sandbox", "redis_prefix": "`+prefix+`sb:", "webhook_secrets": ["`+sandboxSecret+`"], "callback_hosts": ["127.0.0.1"]}]}`)
	online, sandbox := newReceiver(t, onlineSecret), newReceiver(t, sandboxSecret)
	ops := startToc(t, "ops-token-0123456789", "serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--redis-prefix", prefix,
		"--tokens-file", tokens, "--namespaces-file", spaces, "--webhook-secret", onlineSecret, "--allow-private-callbacks")
	return &namespaceStack{ops: ops, online: online, sandbox: sandbox, dsn: dsn, redisAddr: rds.Addr, prefix: prefix,
		onlineSecret: onlineSecret, tokens: tokens, namespaces: spaces}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNamespacesEndToEnd(t *testing.T) {
	st := startNamespaces(t)
	ops, online, sandbox, prefix, dsn := st.ops, st.online, st.sandbox, st.prefix, st.dsn
	orders, sbOps, sbOrders := ops.as("orders"), ops.as("sb-ops"), ops.as("sb-orders")
	want := func(q *proc, method, path string, body any, status int) map[string]any {
		t.Helper()
		got, out := q.call(t, method, path, body)
		if got != status {
			t.Fatalf("%s %s as %s: %d %v, want %d", method, path, q.token, got, out, status)
		}
		return out
	}
	job := func(hook string, delay time.Duration) map[string]any {
		return map[string]any{"topic": "orders", "delay_ms": delay.Milliseconds(), "callback_url": hook}
	}

	// Jobs of topic orders in each namespace, due in 2 s and in an hour.
	onlineSoon := want(orders, "POST", "/v1/jobs", job(online.srv.URL+"/hook", 2*time.Second), 201)["id"].(string)
	sandboxSoon := want(sbOrders, "POST", "/v1/jobs", job(sandbox.srv.URL+"/hook", 2*time.Second), 201)["id"].(string)
	onlineLater := want(orders, "POST", "/v1/jobs", job(online.srv.URL+"/hook", time.Hour), 201)["id"].(string)
	sandboxLater := want(sbOrders, "POST", "/v1/jobs", job(sandbox.srv.URL+"/hook", time.Hour), 201)["id"].(string)
	for _, c := range []struct {
		q          *proc
		mine, not  []string
		topicCount int
	}{
		{orders, []string{onlineSoon, onlineLater}, []string{sandboxSoon, sandboxLater}, 1},
		{ops, []string{onlineSoon, onlineLater}, []string{sandboxSoon, sandboxLater}, 1},
		{sbOrders, []string{sandboxSoon, sandboxLater}, []string{onlineSoon, onlineLater}, 1},
		{sbOps, []string{sandboxSoon, sandboxLater}, []string{onlineSoon, onlineLater}, 1},
	} {
		for _, id := range c.mine {
			if j := want(c.q, "GET", "/v1/jobs/"+id, nil, 200); j["topic"] != "orders" {
				t.Errorf("%s reads job %s: topic %v, want orders", c.q.token, id, j["topic"])
			}
		}
		for _, id := range c.not {
			want(c.q, "GET", "/v1/jobs/"+id, nil, 404)
			want(c.q, "DELETE", "/v1/jobs/"+id, nil, 404)
		}
		if jobs := want(c.q, "GET", "/v1/jobs?topic=orders", nil, 200)["jobs"].([]any); len(jobs) != 2 {
			t.Errorf("%s lists topic orders: %d jobs, want its 2", c.q.token, len(jobs))
		}
		if items := want(c.q, "GET", "/v1/topics", nil, 200)["topics"].([]any); len(items) != c.topicCount || items[0].(map[string]any)["name"] != "orders" {
			t.Errorf("%s lists topics: %v", c.q.token, items)
		}
	}
	want(ops, "GET", "/v1/topics/sandbox.orders", nil, 400)
	want(sbOrders, "POST", "/v1/jobs", job("http://localhost:1/hook", time.Hour), 400)

	// Each namespace's keys under its own prefix.
	rdb := redis.NewClient(&redis.Options{Addr: st.redisAddr})
	defer rdb.Close()
	keys := func(match string) []string {
		t.Helper()
		k, err := rdb.Keys(context.Background(), match).Result()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if k := keys(prefix + "sb:{sandbox.orders:*"); len(k) == 0 {
		t.Errorf("no keys under the sandbox's prefix %ssb:; all: %v", prefix, keys(prefix+"*"))
	}
	if k := keys(prefix + "{sandbox.*"); len(k) != 0 {
		t.Errorf("sandbox keys under the default prefix: %v", k)
	}
	if k := keys(prefix + "{orders:*"); len(k) == 0 {
		t.Errorf("no keys of the default namespace's orders under %s", prefix)
	}

	// Each fires to its receiver, signed with its namespace's secret (a
	// receiver verifying with the other secret would record the call as
	// bad), and named orders.
	onlineDone, sandboxDone := online.expect([]string{onlineSoon}), sandbox.expect([]string{sandboxSoon})
	online.wait(t, onlineDone, time.Minute)
	sandbox.wait(t, sandboxDone, time.Minute)
	online.check(t)
	sandbox.check(t)
	for _, c := range []struct {
		r  *receiver
		id string
	}{{online, onlineSoon}, {sandbox, sandboxSoon}} {
		c.r.mu.Lock()
		if got := c.r.topic[c.id]; got != "orders" {
			t.Errorf("job %s arrived with topic %q, want orders", c.id, got)
		}
		c.r.mu.Unlock()
	}

	// Metrics: each namespace's tokens see their topic's series, named by
	// its name, and none of the other namespace's.
	for _, q := range []*proc{sbOrders, sbOps, orders, ops} {
		req, _ := http.NewRequest("GET", ops.url+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+q.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(text), `topic="orders"`) || strings.Contains(string(text), "sandbox") {
			t.Errorf("/metrics as %s: %d, %d bytes; want the series of orders, and none naming sandbox:\n%s", q.token, resp.StatusCode, len(text), text)
		}
	}

	// Audit: each admin sees its own namespace's entries.
	want(sbOps, "POST", "/v1/topics/orders/pause", nil, 200)
	want(ops, "POST", "/v1/topics/orders/resume", nil, 200)
	actions := func(q *proc) string {
		var got []string
		for _, e := range want(q, "GET", "/v1/audit", nil, 200)["entries"].([]any) {
			e := e.(map[string]any)
			got = append(got, fmt.Sprintf("%s %s %s", e["who"], e["action"], e["topic"]))
		}
		return strings.Join(got, "; ")
	}
	if got := actions(sbOps); got != "sb-ops topic.pause orders" {
		t.Errorf("the sandbox admin's audit log: %q", got)
	}
	if got := actions(ops); got != "ops topic.resume orders" {
		t.Errorf("the default admin's audit log: %q", got)
	}
	if j := want(sbOps, "GET", "/v1/topics/orders", nil, 200); j["paused"] != true {
		t.Errorf("the sandbox's orders after its pause and the default's resume: %v", j)
	}

	// A tokens file naming a namespace toc does not have stops it at start.
	writeFile(t, st.tokens, strings.Replace(namespaceTokens, `"namespace": "sandbox"`, `"namespace": "staging"`, 1))
	out, err := runTocCmd(t, "serve", "--mysql-dsn", dsn, "--redis-addr", st.redisAddr, "--tokens-file", st.tokens, "--namespaces-file", st.namespaces, "--webhook-secret", st.onlineSecret)
	if err == nil || !strings.Contains(out, `namespace: "staging" is not one of the namespaces sandbox`) {
		t.Errorf("serve with a token of an unknown namespace: %v\n%s", err, out)
	}
	writeFile(t, st.namespaces, `{"namespaces": [{"name": "sandbox", "webhook_secrets": []}]}`)
	out, err = runTocCmd(t, "serve", "--mysql-dsn", dsn, "--redis-addr", st.redisAddr, "--tokens-file", st.tokens, "--namespaces-file", st.namespaces, "--webhook-secret", st.onlineSecret)
	if err == nil || !strings.Contains(out, "namespaces[0] (sandbox): webhook_secrets: at least one is required") {
		t.Errorf("serve with a namespace without a secret: %v\n%s", err, out)
	}
}
