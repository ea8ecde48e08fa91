package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/internal/testenv"
)

// tenantTokens is the tokens file of TestTenantsEndToEnd: the admin by
// its digest, two writers, a reader and the quota-bound tenants.
var tenantTokens = `{"tokens": [
  {"name": "ops", "token_sha256": "` + auth.Hash("ops-token-0123456789") + `", "role": "admin"},
  {"name": "orders", "token": "orders-token-0123456789", "role": "write", "topics": ["orders", "orders-*"]},
  {"name": "billing", "token": "billing-token-0123456789", "role": "write", "topics": ["billing"]},
  {"name": "viewer", "token": "viewer-token-0123456789", "role": "read", "topics": ["orders-*"]},
  {"name": "flood", "token": "flood-token-0123456789", "role": "write", "topics": ["flood-*"], "max_topics": 100},
  {"name": "slow", "token": "slow-token-0123456789", "role": "write", "topics": ["slow"], "rate": 1},
  {"name": "small", "token": "small-token-0123456789", "role": "write", "topics": ["small"], "max_pending": 2}
]}`

// as is p calling with another tenant's token.
func (p *proc) as(name string) *proc {
	q := *p
	q.token = name + "-token-0123456789"
	return &q
}

// startTenants runs toc serve on real MariaDB and Redis with the tokens
// file tenantTokens (and the args), calling as the admin ops; it returns
// the process, a receiver of its webhooks and the file's path.
func startTenants(t *testing.T, args ...string) (*proc, *receiver, string) {
	t.Helper()
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(file, []byte(tenantTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, secret)
	p := startToc(t, "ops-token-0123456789", append([]string{"serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr,
		"--redis-prefix", fmt.Sprintf("ten%d:", time.Now().UnixNano()), "--tokens-file", file,
		"--webhook-secret", secret, "--allow-private-callbacks"}, args...)...)
	return p, rcv, file
}

func TestTenantsEndToEnd(t *testing.T) {
	p, rcv, file := startTenants(t, "--api-token", "legacy-admin")
	orders, billing, viewer := p.as("orders"), p.as("billing"), p.as("viewer")
	hook := rcv.srv.URL + "/hook"
	job := func(topic string, delay time.Duration) map[string]any {
		return map[string]any{"topic": topic, "delay_ms": delay.Milliseconds(), "callback_url": hook}
	}
	want := func(q *proc, method, path string, body any, status int, code string) map[string]any {
		t.Helper()
		got, out := q.call(t, method, path, body)
		if got != status {
			t.Fatalf("%s %s as %s: %d %v, want %d", method, path, q.token, got, out, status)
		}
		if code != "" {
			if e, _ := out["error"].(map[string]any); e == nil || e["code"] != code {
				t.Fatalf("%s %s as %s: %v, want code %s", method, path, q.token, out, code)
			}
		}
		return out
	}

	// Roles and boundaries.
	id := want(orders, "POST", "/v1/jobs", job("orders-eu", time.Hour), 201, "")["id"].(string)
	want(orders, "POST", "/v1/jobs", job("billing", time.Hour), 403, "forbidden")
	want(orders, "POST", "/v1/jobs/batch", map[string]any{"jobs": []any{job("orders", time.Hour), job("billing", time.Hour)}}, 403, "forbidden")
	want(viewer, "POST", "/v1/jobs", job("orders-eu", time.Hour), 403, "forbidden")
	want(billing, "POST", "/v1/jobs", job("billing", time.Hour), 201, "")
	missing := want(billing, "GET", "/v1/jobs/4611686018427387904", nil, 404, "not_found")["error"].(map[string]any)["message"].(string)
	for _, c := range []struct {
		method, path string
		body         any
	}{{"GET", "/v1/jobs/" + id, nil}, {"DELETE", "/v1/jobs/" + id, nil}, {"PATCH", "/v1/jobs/" + id, map[string]any{"delay_ms": 1000}}} {
		e := want(billing, c.method, c.path, c.body, 404, "not_found")["error"].(map[string]any)
		if e["message"] != strings.Replace(missing, "4611686018427387904", id, 1) {
			t.Errorf("%s %s of another tenant's job: %q; of a missing one: %q", c.method, c.path, e["message"], missing)
		}
	}
	want(viewer, "GET", "/v1/jobs/"+id, nil, 200, "")
	want(billing, "GET", "/v1/jobs?topic=orders-eu", nil, 403, "forbidden")
	want(billing, "GET", "/v1/topics/orders-eu/stats", nil, 403, "forbidden")
	want(billing, "GET", "/v1/deadletters?topic=orders-eu", nil, 403, "forbidden")
	want(billing, "DELETE", "/v1/jobs?topic=orders-eu&biz_id=1", nil, 403, "forbidden")
	want(billing, "POST", "/v1/deadletters/replay", map[string]any{"topic": "orders-eu"}, 403, "forbidden")
	want(orders, "PUT", "/v1/topics/orders-eu", map[string]any{}, 403, "forbidden")
	want(orders, "GET", "/v1/cluster", nil, 403, "forbidden")
	want(p, "GET", "/v1/cluster", nil, 200, "")
	if topics := want(billing, "GET", "/v1/topics", nil, 200, "")["topics"].([]any); len(topics) != 1 || topics[0].(map[string]any)["name"] != "billing" {
		t.Errorf("billing's topics: %v", topics)
	}
	if topics := want(p, "GET", "/v1/topics", nil, 200, "")["topics"].([]any); len(topics) != 2 {
		t.Errorf("admin's topics: %v", topics)
	}
	metrics := func(q *proc) (int, string) {
		req, _ := http.NewRequest("GET", p.url+"/metrics", nil)
		if q != nil {
			req.Header.Set("Authorization", "Bearer "+q.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := metrics(nil); code != 401 {
		t.Errorf("/metrics without a token: %d", code)
	}
	if _, m := metrics(billing); !strings.Contains(m, `topic="billing"`) || strings.Contains(m, "orders") {
		t.Errorf("billing's /metrics shows other topics or not its own:\n%s", m)
	}
	if _, m := metrics(p); !strings.Contains(m, `topic="orders-eu"`) {
		t.Errorf("admin's /metrics lacks orders-eu")
	}
	legacy := *p
	legacy.token = "legacy-admin"
	want(&legacy, "GET", "/v1/cluster", nil, 200, "") // --api-token beside the file: an admin

	// Quotas: max_topics 100 takes 100 topics in one batch and refuses
	// the 101st; rate 1 refuses a second job at once; max_pending 2.
	flood := p.as("flood")
	var hundred []any
	for i := range 100 {
		hundred = append(hundred, job(fmt.Sprintf("flood-%d", i), time.Hour))
	}
	want(flood, "POST", "/v1/jobs/batch", map[string]any{"jobs": hundred}, 200, "")
	want(flood, "POST", "/v1/jobs", job("flood-100", time.Hour), 409, "topic_quota")
	want(flood, "POST", "/v1/jobs", job("flood-7", time.Hour), 201, "")
	slow := p.as("slow")
	want(slow, "POST", "/v1/jobs", job("slow", time.Hour), 201, "")
	req, _ := http.NewRequest("POST", p.url+"/v1/jobs", strings.NewReader(`{"topic": "slow", "delay_ms": 1000, "callback_url": "`+hook+`"}`))
	req.Header.Set("Authorization", "Bearer "+slow.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra := resp.Header.Get("Retry-After"); resp.StatusCode != 429 || ra != "1" {
		t.Errorf("over the rate: %d, Retry-After %q", resp.StatusCode, ra)
	}
	small := p.as("small")
	want(small, "POST", "/v1/jobs/batch", map[string]any{"jobs": []any{job("small", time.Hour), job("small", time.Hour)}}, 200, "")
	want(small, "POST", "/v1/jobs", job("small", time.Hour), 429, "pending_quota")

	// Reload: a change of the file takes effect; a bad file keeps the
	// tokens in force; SIGHUP reloads at once.
	rewrite := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	waitStatus := func(q *proc, status int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if got, _ := q.call(t, "GET", "/v1/topics", nil); got == status {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /v1/topics as %s never answered %d", q.token, status)
			}
		}
	}
	rewrite(strings.Replace(tenantTokens, `"name": "billing", "token": "billing-token-0123456789"`, `"name": "billing", "token": "billing-token-rotated-0123"`, 1))
	waitStatus(billing, 401)
	rotated := *billing
	rotated.token = "billing-token-rotated-0123"
	want(&rotated, "GET", "/v1/topics", nil, 200, "")
	rewrite(`{"tokens": [{"name": "broken", "role": "superuser"}]}`)
	time.Sleep(3 * time.Second) // the file is looked at every second; nothing should change
	p.cmd.Process.Signal(syscall.SIGHUP)
	want(&rotated, "GET", "/v1/topics", nil, 200, "")
	want(orders, "GET", "/v1/topics", nil, 200, "")
	if !strings.Contains(p.stderr.String(), "tokens file refused") {
		t.Errorf("a bad file was not logged:\n%s", tail(p.stderr.String(), 10))
	}
	rewrite(tenantTokens)
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitStatus(billing, 200)
	waitStatus(&rotated, 401)
}

// TestTenantTopicFlood: a tenant creating topics as fast as it can,
// bounded by its max_topics, while another tenant's jobs come due: every
// one of them fires.
func TestTenantTopicFlood(t *testing.T) {
	admin, rcv, _ := startTenants(t)
	p := admin.as("orders")
	ids := scheduleMany(t, p, "orders", rcv.srv.URL+"/hook", 50, time.Now().Add(2*time.Second), 5*time.Second)
	done := rcv.expect(ids)
	flood := p.as("flood")
	created, refused := 0, 0
	for i := range 1000 {
		status, body := flood.call(t, "POST", "/v1/jobs", map[string]any{"topic": fmt.Sprintf("flood-%d", i), "delay_ms": 3600000, "callback_url": rcv.srv.URL + "/hook"})
		switch status {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			refused++
		default:
			t.Fatalf("flood %d: %d %v", i, status, body)
		}
	}
	if created != 100 || refused != 900 {
		t.Errorf("flood: %d created, %d refused; want 100 and 900", created, refused)
	}
	rcv.wait(t, done, time.Minute)
	rcv.check(t)
}

// A tokens file with a fault stops toc at start, naming the entry and
// field; toc tokens hash prints what a token_sha256 entry holds.
func TestTokensFileAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(file, []byte(`{"tokens": [{"name": "a", "token": "aaaaaaaaaaaaaaaaaaaa", "role": "write", "topics": ["[x"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runTocCmd(t, "serve", "--mysql-dsn", "x@tcp(127.0.0.1:1)/x", "--tokens-file", file, "--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err == nil || !strings.Contains(out, "tokens[0] (a): topics[0]") {
		t.Errorf("serve with a bad tokens file: %v\n%s", err, out)
	}
	out, err = runTocCmd(t, "tokens", "hash", "ops-token-0123456789")
	if err != nil || strings.TrimSpace(out) != auth.Hash("ops-token-0123456789") {
		t.Errorf("toc tokens hash: %v %q", err, out)
	}
}
