package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// The dashboard in a real headless Chromium against toc serve: log in (a
// wrong token refused), the topics, a topic paused and its jobs searched,
// a job shown, rescheduled and cancelled, a dead job's attempts, a
// retrying job's next attempt, the dead letters grouped, one replayed on
// its own and the rest as a group, a group purged one a click until none
// remain, the cluster, log out.
// Each step is checked on what the page shows, then on the API.
func TestDashboard(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("ui%d:", time.Now().UnixNano()))
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	r := newReceiver(t, e2eSecret)

	far := postJob(t, p, map[string]any{"topic": "orders", "delay_ms": 3_600_000, "window_ms": 60_000, "callback_url": r.srv.URL, "key": "order-1001", "concurrency_key": "customer-7",
		"biz_id": 1001, "payload": map[string]any{"order": "A-1001", "note": "<b>not markup</b>"}})
	for i := range 3 {
		postJob(t, p, map[string]any{"topic": "invoices", "delay_ms": 600_000 + i*60_000, "callback_url": r.srv.URL})
	}
	dying := postJob(t, p, map[string]any{"topic": "dying", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 1, "biz_id": 7001})
	dying2 := postJob(t, p, map[string]any{"topic": "dying", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 1, "biz_id": 7002})
	// bounced's two dead letters are purged as a group one click at a
	// time; retrying's job waits ten minutes for its second attempt.
	bounced := []string{
		postJob(t, p, map[string]any{"topic": "bounced", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 1}),
		postJob(t, p, map[string]any{"topic": "bounced", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 1}),
	}
	if status, body := p.call(t, "PUT", "/v1/topics/retrying", map[string]any{"retry": map[string]any{"base_ms": 600_000, "max_ms": 600_000}}); status/100 != 2 {
		t.Fatalf("PUT /v1/topics/retrying: %d %v", status, body)
	}
	retrying := postJob(t, p, map[string]any{"topic": "retrying", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 3})
	waitJob(t, p, dying, "dead")
	waitJob(t, p, dying2, "dead")
	// Usage is published once a second: the topics page shows the dying
	// topic's lateness once its calls are in it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, tp := p.call(t, "GET", "/v1/topics/dying", nil)
		usage, _ := tp["usage"].(map[string]any)
		if n, _ := usage["lateness_calls"].(float64); n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dying topic's usage never counted its 2 calls: %v", tp)
		}
	}
	for _, id := range bounced {
		waitJob(t, p, id, "dead")
	}

	d := openDashboard(t, chromium, p.url+"/ui")

	// Login: a wrong token is refused, the right one shows the topics.
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.shot("login")
	d.do(chromedp.SendKeys(chromedp.CSS("#token"), "wrong"), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#login-error.error")))
	if got := d.text("#login-error"); !strings.Contains(got, "Wrong token") || !strings.Contains(got, "401") {
		t.Errorf("login with a wrong token says %q", got)
	}
	d.shot("login-wrong-token")
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")))

	// Topics: each row filled from the topic's stats.
	d.do(chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="dying"][data-loaded]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="orders"][data-loaded]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="invoices"][data-loaded]`)))
	for sel, want := range map[string]string{
		`tr[data-topic="orders"] td.name`:      "orders",
		`tr[data-topic="orders"] td.pending`:   "1",
		`tr[data-topic="invoices"] td.pending`: "3",
		`tr[data-topic="dying"] td.dead`:       "2",
		`tr[data-topic="dying"] td.state`:      "active",
	} {
		if got := d.text(sel); got != want {
			t.Errorf("topics page: %s shows %q, want %q", sel, got, want)
		}
	}
	// The dying topic's calls were made within the last five minutes:
	// their lateness percentiles are a bucket's bound ("< 5 ms").
	if got := d.text(`tr[data-topic="dying"] td.late-p99`); !strings.HasPrefix(got, "< ") && got != "≥ 1 min" {
		t.Errorf("topics page: the dying topic's lateness p99 shows %q", got)
	}
	if href := d.eval(`location.href`); strings.Contains(href, p.token) {
		t.Errorf("the token is in the URL: %s", href)
	}
	// TOC_UPDATE_DOCS=1 makes this the picture of docs/dashboard.md.
	if png := d.shot("topics"); os.Getenv("TOC_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A topic: its page from the topics list, then paused.
	d.do(chromedp.Click(chromedp.CSS(`tr[data-topic="dying"] td.name a`)), chromedp.WaitVisible(chromedp.CSS("#topic-state")),
		chromedp.WaitVisible(chromedp.CSS("#jobs-table, #jobs-error")))
	if got := d.text("#topic-name"); got != "dying" {
		t.Errorf("topic page of %q", got)
	}
	if got := d.text("#topic-state"); got != "active" {
		t.Errorf("topic page: state %q, want active", got)
	}
	// Its failing receiver's circuit breaker, with the dying topic's two
	// failed calls at least.
	failingRow := fmt.Sprintf(`#breakers tr[data-host=%q]`, strings.TrimPrefix(failing.URL, "http://"))
	d.do(chromedp.WaitVisible(chromedp.CSS(failingRow)))
	if n, err := strconv.Atoi(d.text(failingRow + " td.failures")); err != nil || n < 2 {
		t.Errorf("topic page: the failing host's breaker shows %q failures, want 2 or more", d.text(failingRow+" td.failures"))
	}
	d.shot("topic")
	d.do(chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS("#topic-state.paused")), chromedp.WaitVisible(chromedp.CSS("#message.ok")))
	if got := d.text("#topic-state"); got != "paused" {
		t.Errorf("topic page after Pause: state %q", got)
	}
	if status, body := p.call(t, "GET", "/v1/topics/dying", nil); status != http.StatusOK || body["paused"] != true {
		t.Errorf("after Pause the API says %d %v", status, body)
	}
	d.shot("topic-paused")

	// The topic's jobs: both dead ones, then searched by status (none
	// pending) and by biz_id (the one).
	if got := d.eval(`Array.from(document.querySelectorAll("#jobs-table tbody tr"), (r) => r.dataset.job).sort().join(" ")`); got != sortedJoin(dying, dying2) {
		t.Errorf("topic page lists jobs %q, want %s and %s", got, dying, dying2)
	}
	d.do(chromedp.SetValue(chromedp.CSS(`#job-search select[name="status"]`), "pending"),
		chromedp.Click(chromedp.CSS(`#job-search button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#no-jobs")))
	d.do(chromedp.SetValue(chromedp.CSS(`#job-search select[name="status"]`), "dead"),
		chromedp.SetValue(chromedp.CSS(`#job-search input[name="biz_id"]`), "7002"),
		chromedp.Click(chromedp.CSS(`#job-search button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	if got := d.eval(`Array.from(document.querySelectorAll("#jobs-table tbody tr"), (r) => r.dataset.job).join(" ")`); got != dying2 {
		t.Errorf("search of biz_id 7002 lists jobs %q, want %s", got, dying2)
	}
	if got := d.text(`#jobs-table tr[data-job="` + dying2 + `"] td.status`); got != "dead" {
		t.Errorf("search of biz_id 7002: status %q, want dead", got)
	}
	if got := d.text("#topic-state"); got != "paused" {
		t.Errorf("topic page after a search: state %q, want paused", got)
	}
	d.shot("topic-search")

	// A job: its id and payload (as text: the markup in it is not made
	// elements), then cancelled.
	d.show("#/jobs/" + far)
	d.do(chromedp.WaitVisible(chromedp.CSS("#job-id")))
	if got := d.text("#job-id"); got != far {
		t.Errorf("job page shows id %q, want %s", got, far)
	}
	if got := d.text("#job-payload"); !strings.Contains(got, `"order": "A-1001"`) || !strings.Contains(got, `"note": "<b>not markup</b>"`) {
		t.Errorf("job page payload: %q", got)
	}
	if n := d.eval(`String(document.querySelectorAll("#job-payload *").length)`); n != "0" {
		t.Errorf("the payload became %s elements", n)
	}
	if got := d.text("#job-status"); got != "pending" {
		t.Errorf("job page status %q, want pending", got)
	}
	if got := d.text("#job-version"); got != "1" {
		t.Errorf("job page version %q, want 1", got)
	}
	if got := d.text("#job-window"); !strings.HasPrefix(got, "60000 ms, until ") {
		t.Errorf("job page window %q, want 60000 ms and its end", got)
	}
	if got := d.text("#job-concurrency-key"); got != "customer-7" {
		t.Errorf("job page concurrency key %q, want customer-7", got)
	}
	d.shot("job")
	due := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	d.do(chromedp.SetValue(chromedp.CSS("#fire-at"), due.Format(time.RFC3339)), chromedp.Click(chromedp.CSS(`#reschedule button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#message.ok")))
	if got, err := time.Parse(time.RFC3339, d.text("#job-fire-at")); err != nil || !got.Equal(due) {
		t.Errorf("job page after Reschedule: due %v (%v), want %v (message %q)", got, err, due, d.text("#message"))
	}
	if got := d.text("#job-version"); got != "2" {
		t.Errorf("job page version after Reschedule %q, want 2", got)
	}
	// Changed behind the page's back: the page's cancel, made on the
	// condition of the version it shows, is refused and changes nothing.
	if status, body := p.call(t, "PATCH", "/v1/jobs/"+far, map[string]any{"delay_ms": 3 * 3600 * 1000}); status != http.StatusOK || body["version"] != float64(3) {
		t.Fatalf("PATCH behind the page: %d %v", status, body)
	}
	d.do(chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#cancel.armed")),
		chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#message.error")))
	if got := d.text("#message"); !strings.Contains(got, "412 version_mismatch") || !strings.Contains(got, "Reload") {
		t.Errorf("stale Cancel: message %q, want the 412", got)
	}
	if status, body := p.call(t, "GET", "/v1/jobs/"+far, nil); status != http.StatusOK || body["status"] != "pending" || body["version"] != float64(3) {
		t.Errorf("after a stale Cancel the API says %d %v", status, body)
	}
	d.shot("job-stale")
	d.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#job-version")))
	if got := d.text("#job-version"); got != "3" {
		t.Errorf("job page version after a reload %q, want 3", got)
	}
	d.do(chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitVisible(chromedp.CSS("#cancel.armed")),
		chromedp.Click(chromedp.CSS("#cancel")), chromedp.WaitNotVisible(chromedp.CSS("#cancel")))
	if got := d.text("#job-status"); got != "cancelled" {
		t.Errorf("job page after Cancel: status %q (message %q)", got, d.text("#message"))
	}
	if status, body := p.call(t, "GET", "/v1/jobs/"+far, nil); status != http.StatusOK || body["status"] != "cancelled" {
		t.Errorf("after Cancel the API says %d %v", status, body)
	}
	d.shot("job-cancelled")

	// A dead job's page: its one attempt, answered 500. The history is
	// written in batches, so wait for the API to have it first.
	waitAttempts(t, p, dying)
	d.show("#/jobs/" + dying)
	d.do(chromedp.WaitVisible(chromedp.CSS(`#attempts tr[data-attempt="1"]`)))
	if got := d.text(`#attempts tr[data-attempt="1"] td.status-code`); got != "500" {
		t.Errorf("job page: attempt 1 answered %q, want 500", got)
	}
	if got := d.text("#job-status"); got != "dead" {
		t.Errorf("job page of the dead job: status %q", got)
	}
	d.shot("job-attempts")

	// A job whose first attempt failed: pending, with its next attempt
	// as the API says (five to ten minutes on: the upper half of the
	// topic's 10-minute delay is jitter, and some seconds have passed
	// since the attempt), and the failed attempt.
	waitAttempts(t, p, retrying)
	_, job := p.call(t, "GET", "/v1/jobs/"+retrying, nil)
	next, err := time.Parse(time.RFC3339, fmt.Sprint(job["next_attempt_at"]))
	if err != nil || time.Until(next) < 4*time.Minute {
		t.Fatalf("the retrying job's next attempt: %v (%v), want five to ten minutes on", job["next_attempt_at"], err)
	}
	d.show("#/jobs/" + retrying)
	d.do(chromedp.WaitVisible(chromedp.CSS(`#attempts tr[data-attempt="1"]`)))
	if got := d.text("#job-next-attempt"); got != job["next_attempt_at"] {
		t.Errorf("job page: next attempt %q, want %v", got, job["next_attempt_at"])
	}
	if got := d.text("#job-status"); got != "pending" {
		t.Errorf("job page of the retrying job: status %q", got)
	}
	d.shot("job-next-attempt")

	// Dead letters: the two dead jobs in one group; one replayed from
	// its row, then the rest as a group. The topic is paused, so they
	// stay pending rather than fail and die again.
	d.show("#/deadletters?topic=dying")
	row := fmt.Sprintf(`tr[data-job="%s"]`, dying)
	group := `#dead-groups tr[data-signature="HTTP 500"]`
	d.do(chromedp.WaitVisible(chromedp.CSS(row)), chromedp.WaitVisible(chromedp.CSS(group)))
	if got := d.text(row + " td.state"); got != "dead" {
		t.Errorf("dead letters: the job's state %q", got)
	}
	if got := d.text(group + " td.count"); got != "2" {
		t.Errorf("dead letters: group HTTP 500 counts %q, want 2", got)
	}
	if got := d.text(group + " td.example a"); got != dying && got != dying2 {
		t.Errorf("dead letters: group example %q, want %s or %s", got, dying, dying2)
	} else if href := d.eval(`document.querySelector('` + group + ` td.example a').getAttribute("href")`); href != "#/jobs/"+got {
		t.Errorf("dead letters: group example links to %q", href)
	}
	d.shot("deadletters")
	d.do(chromedp.Click(chromedp.CSS(row+" button.replay")), chromedp.WaitVisible(chromedp.CSS("#message.ok")))
	if got := d.text(row + " td.state"); got != "replayed" {
		t.Errorf("dead letters after Replay: state %q (message %q)", got, d.text("#message"))
	}
	if status, body := p.call(t, "GET", "/v1/jobs/"+dying, nil); status != http.StatusOK || body["status"] != "pending" || body["attempts"] != float64(0) {
		t.Errorf("after Replay the API says %d %v", status, body)
	}
	d.shot("deadletters-replayed")
	d.do(chromedp.Click(chromedp.CSS(group+" button.replay-group")), chromedp.WaitVisible(chromedp.CSS("#no-dead-groups")))
	d.waitText("#message.ok", "Replayed 1 dead letter of dying (HTTP 500).")
	if got := d.text("#dead-groups-section"); got != "No dead letters in dying." {
		t.Errorf("dead letters after Replay group: the groups show %q", got)
	}
	if got := d.text("#message"); strings.Contains(got, "More remain") {
		t.Errorf("dead letters after Replay group: %q", got)
	}
	if status, body := p.call(t, "GET", "/v1/jobs/"+dying2, nil); status != http.StatusOK || body["status"] != "pending" || body["attempts"] != float64(0) {
		t.Errorf("after Replay group the API says %d %v", status, body)
	}
	d.shot("deadletters-group-replayed")

	// Purge group at most one a click: the first says more remain, the
	// second purges the last.
	d.show("#/deadletters?topic=bounced")
	d.do(chromedp.WaitVisible(chromedp.CSS(group)), chromedp.SetValue(chromedp.CSS("#group-limit"), "1"))
	purgeGroup := func() {
		d.do(chromedp.Click(chromedp.CSS(group+" button.purge-group")), chromedp.WaitVisible(chromedp.CSS(group+" button.purge-group.armed")),
			chromedp.Click(chromedp.CSS(group+" button.purge-group")), chromedp.WaitVisible(chromedp.CSS("#message.ok")))
	}
	purgeGroup()
	d.waitText("#message.ok", "Purged 1 dead letter of bounced (HTTP 500). More remain: click Purge group again to continue.")
	if got := d.text(group + " td.count"); got != "1" {
		t.Errorf("dead letters after one Purge group of 1: the group counts %q, want 1", got)
	}
	d.shot("deadletters-group-more-remain")
	purgeGroup()
	d.do(chromedp.WaitVisible(chromedp.CSS("#no-dead-groups")))
	if got := d.text("#message"); got != "Purged 1 dead letter of bounced (HTTP 500)." {
		t.Errorf("dead letters after the second Purge group: %q", got)
	}
	for _, id := range bounced {
		if status, body := p.call(t, "GET", "/v1/jobs/"+id, nil); status != http.StatusOK || body["status"] != "purged" {
			t.Errorf("after Purge group the API says of %s: %d %v", id, status, body)
		}
	}
	d.shot("deadletters-group-purged")

	d.show("#/cluster")
	d.do(chromedp.WaitVisible(chromedp.CSS("#cluster-mode")))
	if got := d.text("#cluster-mode"); got != "standalone" {
		t.Errorf("cluster page: mode %q", got)
	}
	d.shot("cluster")

	// Log out: the login form again, and the token is gone from the tab.
	d.do(chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if kept := d.eval(`String(sessionStorage.getItem("toc.token"))`); kept != "null" {
		t.Errorf("after logout the tab keeps the token %q", kept)
	}
	d.check()
}

// Without tokens (toc dev) the dashboard opens without a login form, and
// its dead letters page opens on the dead jobs of every topic, not on the
// first topic by name (aaa-quiet, which has none). After Log out, the
// form lets anything in.
func TestDashboardWithoutAuth(t *testing.T) {
	chromium := needChromium(t)
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	r := newReceiver(t, e2eSecret)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	postJob(t, p, map[string]any{"topic": "dev-orders", "delay_ms": 3_600_000, "callback_url": r.srv.URL})
	postJob(t, p, map[string]any{"topic": "aaa-quiet", "delay_ms": 3_600_000, "callback_url": r.srv.URL})
	dying := postJob(t, p, map[string]any{"topic": "zz-dying", "delay_ms": 0, "callback_url": failing.URL, "max_attempts": 1})
	waitJob(t, p, dying, "dead")

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="dev-orders"][data-loaded]`)))
	if got := d.text(`tr[data-topic="dev-orders"] td.pending`); got != "1" {
		t.Errorf("topics page: dev-orders pending %q", got)
	}
	if n := d.eval(`String(document.querySelectorAll("#login-form").length)`); n != "0" {
		t.Errorf("without auth the dashboard shows a login form")
	}
	d.shot("dev-topics")

	d.do(chromedp.Click(chromedp.CSS(`#nav a[href="#/deadletters"]`)))
	row := fmt.Sprintf(`#dead tr[data-job="%s"]`, dying)
	d.do(chromedp.WaitVisible(chromedp.CSS(row)))
	_, job := p.call(t, "GET", "/v1/jobs/"+dying, nil)
	if got := d.text(row + " td.topic"); got != "zz-dying" {
		t.Errorf("dead letters of all topics: the job's topic shows %q", got)
	}
	if got := d.text(row + " td.died"); got != job["updated_at"] || got == "" {
		t.Errorf("dead letters of all topics: the job died at %q, want %v", got, job["updated_at"])
	}
	if got := d.eval(`document.querySelector('#dead-search select[name="topic"]').value`); got != "" {
		t.Errorf("dead letters: the topic chosen is %q, want all", got)
	}
	d.shot("dev-deadletters")
	// A topic's own view from its link: its groups.
	d.do(chromedp.Click(chromedp.CSS(row+" td.topic a")), chromedp.WaitVisible(chromedp.CSS(`#dead-groups tr[data-signature="HTTP 500"]`)))

	d.do(chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("#login-form")), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="dev-orders"][data-loaded]`)))
	d.check()
}

// postJob schedules job and returns its id.
func postJob(t *testing.T, p *proc, job map[string]any) string {
	t.Helper()
	status, body := p.call(t, "POST", "/v1/jobs", job)
	if status != http.StatusCreated {
		t.Fatalf("schedule %v: %d %v", job, status, body)
	}
	return body["id"].(string)
}

// waitJob waits up to 30 s for job id to reach status, and returns it.
func waitJob(t *testing.T, p *proc, id, status string) map[string]any {
	t.Helper()
	return waitJobFor(t, p, id, status, func(j map[string]any) bool { return j["status"] == status })
}

// waitJobFor waits up to 30 s until the API's view of job id satisfies
// ok, and returns the view; what names what ok waits for.
func waitJobFor(t *testing.T, p *proc, id, what string, ok func(job map[string]any) bool) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, j := p.call(t, "GET", "/v1/jobs/"+id, nil)
		if ok(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not %s: %v", id, what, j)
		}
	}
}

// waitAttempts waits up to 30 s for job id's attempt history to hold an
// attempt.
func waitAttempts(t *testing.T, p *proc, id string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, body := p.call(t, "GET", "/v1/jobs/"+id+"/attempts", nil)
		if a, _ := body["attempts"].([]any); status == http.StatusOK && len(a) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s has no attempts: %d %v", id, status, body)
		}
	}
}

// sortedJoin is the strings sorted and joined by spaces.
func sortedJoin(s ...string) string {
	slices.Sort(s)
	return strings.Join(s, " ")
}

// dashboard is a headless Chromium tab on toc's dashboard. It saves a
// screenshot of each page shown to $TOC_SCREENSHOTS (CI keeps them), or
// to a temporary directory, and notes the page's uncaught exceptions and
// Content-Security-Policy refusals.
type dashboard struct {
	t   *testing.T
	ctx context.Context
	dir string
	n   int

	mu       sync.Mutex
	problems []string
}

// stepTimeout bounds one step: a wait for an element that never shows
// fails the test rather than hang it.
const stepTimeout = 30 * time.Second

// needChromium returns the path of chromium; without it on PATH it skips
// the test, or fails it when TOC_REQUIRE_INTEGRATION=1.
func needChromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if testenv.Required() {
			t.Fatalf("chromium is not on PATH (apt-get install chromium): %v", err)
		}
		t.Skip("chromium is not on PATH (apt-get install chromium; TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	return bin
}

// openDashboard starts the Chromium at bin on url.
func openDashboard(t *testing.T, bin, url string) *dashboard {
	t.Helper()
	dir := os.Getenv("TOC_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	logs := &syncBuffer{}
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(f string, a ...any) { fmt.Fprintf(logs, f+"\n", a...) }))
	d := &dashboard{t: t, ctx: ctx, dir: dir}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		if t.Failed() && logs.String() != "" {
			t.Logf("chromedp errors:\n%s", tail(logs.String(), 20))
		}
	})
	// The first call starts the browser, bound to ctx: no timeout here.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				d.mu.Lock()
				d.problems = append(d.problems, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				d.mu.Unlock()
			}
		}
	}()
	d.do(chromedp.Navigate(url))
	return d
}

// do runs steps, failing the test (with a screenshot of the page) when
// one fails or outlasts stepTimeout.
func (d *dashboard) do(steps ...chromedp.Action[chromedp.Void]) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		d.fail(err)
	}
}

// fail ends the test on err, with a screenshot and the text of the page.
func (d *dashboard) fail(err error) {
	d.t.Helper()
	d.shot("failed")
	ctx, cancel := context.WithTimeout(d.ctx, stepTimeout)
	defer cancel()
	shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	d.t.Fatalf("browser: %v\nthe page shows:\n%s", err, shown)
}

func fromPage[T any](d *dashboard, a chromedp.Action[T]) T {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		d.fail(err)
	}
	return v
}

// text is what the page shows in the element sel selects.
func (d *dashboard) text(sel string) string {
	d.t.Helper()
	return strings.TrimSpace(fromPage(d, chromedp.Text(chromedp.CSS(sel))))
}

// waitText waits for the element sel selects to show text containing want.
func (d *dashboard) waitText(sel, want string) {
	d.t.Helper()
	d.do(chromedp.PollFunction[chromedp.Void](`(sel, want) => { const e = document.querySelector(sel); return !!e && e.textContent.includes(want); }`,
		chromedp.WithPollingArgs(sel, want), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(stepTimeout)))
}

// eval is the string expr evaluates to in the page.
func (d *dashboard) eval(expr string) string {
	d.t.Helper()
	return fromPage(d, chromedp.Evaluate[string](expr))
}

// show goes to a route of the single page (a change of the hash only).
func (d *dashboard) show(route string) {
	d.t.Helper()
	d.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
}

// shot saves a screenshot of the whole page as NN-name.png and returns it.
func (d *dashboard) shot(name string) []byte {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(d.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		d.t.Errorf("screenshot %s: %v", name, err)
		return nil
	}
	d.n++
	if err := os.WriteFile(filepath.Join(d.dir, fmt.Sprintf("%s-%02d-%s.png", d.t.Name(), d.n, name)), png, 0o644); err != nil {
		d.t.Error(err)
	}
	return png
}

// check fails the test for each uncaught exception or CSP refusal seen.
func (d *dashboard) check() {
	d.t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.problems {
		d.t.Errorf("in the browser: %s", p)
	}
}
