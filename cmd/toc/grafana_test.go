package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// The files in deploy/ whose expressions name toc's metrics.
const (
	dashboardFile = "deploy/grafana/toc-dashboard.json"
	alertsFile    = "deploy/prometheus/toc-alerts.yml"
)

// metricName is a name of a metric a process of toc exports: its own,
// and the Go and process collectors'.
var metricName = regexp.MustCompile(`\b(?:toc|process|go)_[a-z0-9_]+\b`)

// dashboardExprs returns the PromQL of the Grafana dashboard: each
// panel's targets, and each variable's query.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("%s: panel %q has a target without an expression", dashboardFile, p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// Issue 37: the Grafana dashboard and the alerting rules in deploy/ use
// only metrics toc exports. Every metric name in their expressions shows
// on a live toc serve's /metrics, on MariaDB and Redis, while it fires
// (against a lateness objective), retries, buries, expires, throttles,
// defers behind an open breaker and deletes jobs.
func TestDeployedMetricsExist(t *testing.T) {
	exprs := dashboardExprs(t)
	if len(exprs) < 10 {
		t.Fatalf("%s: %d expressions, want a dashboard", dashboardFile, len(exprs))
	}
	alerts, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for file, texts := range map[string][]string{dashboardFile: exprs, alertsFile: {string(alerts)}} {
		for _, text := range texts {
			for _, name := range metricName.FindAllString(text, -1) {
				if !slices.Contains(want[name], file) {
					want[name] = append(want[name], file)
				}
			}
		}
	}

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(up.Close)
	// A host that always fails: its breaker opens after five calls, and
	// defers the jobs after them.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	t.Cleanup(down.Close)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("gf%d:", time.Now().UnixNano()),
		"--retain-done", "1s", "--retain-dead", "1s", "--retain-expired", "1s", "--retention-interval", "1s")
	for topic, body := range map[string]map[string]any{
		"steady":    {"rate_limit": 1, "lateness_slo_ms": 1000},
		"hopeless":  {},
		"deadlined": {"retry": map[string]any{"base_ms": 500, "max_ms": 500}, "expire_after_ms": 1200},
	} {
		if status, resp := p.call(t, "PUT", "/v1/topics/"+topic, body); status/100 != 2 {
			t.Fatalf("PUT topic %s: %d %v", topic, status, resp)
		}
	}
	var jobs []map[string]any
	for range 3 {
		jobs = append(jobs, map[string]any{"topic": "steady", "delay_ms": 100, "callback_url": up.URL})
	}
	for range 8 {
		jobs = append(jobs, map[string]any{"topic": "hopeless", "delay_ms": 100, "max_attempts": 2, "callback_url": down.URL})
	}
	jobs = append(jobs, map[string]any{"topic": "deadlined", "delay_ms": 100, "callback_url": down.URL})
	for _, job := range jobs {
		if status, resp := p.call(t, "POST", "/v1/jobs", job); status != http.StatusCreated {
			t.Fatalf("schedule %v: %d %v", job, status, resp)
		}
	}

	// Series labelled by a topic or a status exist once something has
	// happened to one, and a retention backlog only while it lasts: every
	// name must show in some scrape.
	seen := map[string]bool{}
	missing := func() []string {
		var out []string
		for name := range want {
			if !seen[name] {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for deadline := time.Now().Add(60 * time.Second); len(missing()) > 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(p.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == '#' {
				continue
			}
			name, _, _ := strings.Cut(line, " ")
			name, _, _ = strings.Cut(name, "{")
			seen[name] = true
		}
		resp.Body.Close()
	}
	lost := missing()
	for _, name := range lost {
		t.Errorf("%s (in %s) is not among toc's metrics", name, strings.Join(want[name], ", "))
	}
	t.Logf("%d metric names in the dashboard's %d expressions and the alerting rules, %d of them seen on /metrics", len(want), len(exprs), len(want)-len(lost))
}
