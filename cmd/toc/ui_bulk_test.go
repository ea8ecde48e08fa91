package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// docPicture saves the element sel as docs/name, a picture of docs/dashboard.md,
// when TOC_UPDATE_DOCS=1.
func (d *dashboard) docPicture(name, sel string) {
	d.t.Helper()
	if os.Getenv("TOC_UPDATE_DOCS") != "1" {
		return
	}
	png := fromPage(d, chromedp.Screenshot(chromedp.CSS(sel)))
	if err := os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// checkJobs checks the boxes of the rows of ids in the table sel.
func (d *dashboard) checkJobs(table string, ids ...string) {
	d.t.Helper()
	for _, id := range ids {
		d.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s tr[data-job="%s"] input.select`, table, id))))
	}
}

// confirm clicks button sel twice: it asks, saying confirmation, then
// acts.
func (d *dashboard) confirm(sel, confirmation string) {
	d.t.Helper()
	d.do(chromedp.Click(chromedp.CSS(sel)))
	if got := d.text(sel); got != confirmation {
		d.t.Errorf("%s asks %q, want %q", sel, got, confirmation)
	}
	d.do(chromedp.Click(chromedp.CSS(sel)))
}

// jobField is a field of job id as the API shows it.
func jobField(t *testing.T, p *proc, id, field string) any {
	t.Helper()
	status, j := p.call(t, "GET", "/v1/jobs/"+id, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/jobs/%s: %d %v", id, status, j)
	}
	return j[field]
}

// Acting on many jobs from a topic's page (issue 37), in a real headless
// Chromium against toc serve, in a browser whose time zone is
// Asia/Kolkata (UTC+05:30): checked jobs are cancelled, rescheduled to a
// local time (shown in UTC too) and fired now, each after a confirmation;
// the result line counts what changed and says why the others could not,
// and the API agrees.
func TestDashboardBulkJobs(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uib%d:", time.Now().UnixNano()))
	r := newReceiver(t, e2eSecret)
	var jobs []string
	for i := range 5 {
		jobs = append(jobs, postJob(t, p, map[string]any{"topic": "bulk", "delay_ms": 3_600_000 + i*60_000, "callback_url": r.srv.URL, "key": fmt.Sprintf("bulk-%d", i)}))
	}

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"})
		return err
	}))
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="bulk"][data-loaded]`)))
	d.show("#/topics/bulk")
	d.do(chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	if got := d.eval(`String(["#bulk-cancel", "#bulk-fire-now", "#bulk-reschedule"].every((s) => document.querySelector(s).disabled))`); got != "true" {
		t.Errorf("with nothing selected the actions are enabled")
	}

	// Cancel two.
	d.checkJobs("#jobs-table", jobs[0], jobs[1])
	if got := d.text("#jobs-selected"); got != "2 selected" {
		t.Errorf("after checking two: %q", got)
	}
	d.confirm("#bulk-cancel", "Confirm: cancel 2 jobs")
	d.waitText("#jobs-bulk-result", "2 changed, 0 could not.")
	for _, id := range jobs[:2] {
		if got := jobField(t, p, id, "status"); got != "cancelled" {
			t.Errorf("job %s after Cancel: %v", id, got)
		}
		d.waitText(fmt.Sprintf(`#jobs-table tr[data-job="%s"] td.status`, id), "cancelled")
	}
	if got := d.text("#jobs-selected"); got != "0 selected" {
		t.Errorf("after the list is drawn again: %q", got)
	}

	// A cancelled one and a pending one: one changes, the other says why.
	d.checkJobs("#jobs-table", jobs[0], jobs[2])
	d.confirm("#bulk-cancel", "Confirm: cancel 2 jobs")
	d.waitText("#jobs-bulk-result", "1 changed, 1 could not: job "+jobs[0]+": conflict (job "+jobs[0]+" is cancelled).")
	if got := jobField(t, p, jobs[2], "status"); got != "cancelled" {
		t.Errorf("job %s after Cancel: %v", jobs[2], got)
	}
	d.shot("jobs-cancel-partly")

	// Reschedule to a local time, shown in UTC beside it.
	d.do(chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector("#bulk-when"); i.value = "2030-01-02T03:04"; i.dispatchEvent(new Event("input")); })()`))
	if got := d.text("#bulk-when-utc"); got != "Asia/Calcutta time; 2030-01-01T21:34:00.000Z UTC" && got != "Asia/Kolkata time; 2030-01-01T21:34:00.000Z UTC" {
		t.Errorf("the time to reschedule to reads %q", got)
	}
	d.checkJobs("#jobs-table", jobs[3])
	d.confirm("#bulk-reschedule", "Confirm: reschedule 1 job")
	d.waitText("#jobs-bulk-result", "1 changed, 0 could not.")
	if got := jobField(t, p, jobs[3], "fire_at"); got != "2030-01-01T21:34:00.000Z" {
		t.Errorf("job %s rescheduled to %v, want 2030-01-01T21:34:00.000Z", jobs[3], got)
	}
	d.waitText(fmt.Sprintf(`#jobs-table tr[data-job="%s"] td.due`, jobs[3]), "2030-01-01T21:34:00.000Z")

	// Fire now: due now, and fired.
	d.checkJobs("#jobs-table", jobs[4])
	d.confirm("#bulk-fire-now", "Confirm: fire now 1 job")
	d.waitText("#jobs-bulk-result", "1 changed, 0 could not.")
	waitJob(t, p, jobs[4], "done")
	if got := r.count(jobs[4]); got != 1 {
		t.Errorf("job %s fired %d times after Fire now, want 1", jobs[4], got)
	}

	// Select all, then cancel: the one pending is cancelled, the others
	// say why not.
	d.show("#/topics/bulk?status=")
	d.do(chromedp.WaitVisible(chromedp.CSS("#jobs-table")))
	d.do(chromedp.Click(chromedp.CSS("#jobs-select-all")))
	if got := d.text("#jobs-selected"); got != "5 selected" {
		t.Errorf("after Select all: %q", got)
	}
	if got := d.eval(`String(document.querySelectorAll("#jobs-table input.select:checked").length)`); got != "5" {
		t.Errorf("Select all checked %s rows, want 5", got)
	}
	d.confirm("#bulk-cancel", "Confirm: cancel 5 jobs")
	d.waitText("#jobs-bulk-result", "1 changed, 4 could not: ")
	for _, want := range []string{jobs[0] + ": conflict", jobs[4] + ": already_fired"} {
		d.waitText("#jobs-bulk-result", want)
	}
	if got := jobField(t, p, jobs[3], "status"); got != "cancelled" {
		t.Errorf("job %s after Cancel of all: %v", jobs[3], got)
	}
	d.checkJobs("#jobs-table", jobs[1], jobs[3])
	d.shot("jobs-bulk")
	d.docPicture("dashboard-bulk.png", "#jobs")

	// The audit page has each Cancel, by the action its filter offers.
	d.show("#/audit?action=jobs.cancel_selected")
	d.do(chromedp.WaitVisible(chromedp.CSS("#audit tbody tr")))
	if got := d.eval(`document.querySelector('#audit-search select[name="action"]').value + " " + document.querySelectorAll("#audit tbody tr").length`); got != "jobs.cancel_selected 3" {
		t.Errorf("the audit page of the cancels shows %q, want the filter and 3 entries", got)
	}
	d.check()
}

// Replaying and purging checked dead letters from the dead letters page
// of all topics (issue 37): each after a confirmation, with the result
// line and the API in agreement; a dead letter purged behind the page's
// back is one that could not be purged, and the line says why.
func TestDashboardBulkDeadLetters(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uid%d:", time.Now().UnixNano()))
	var failing atomic.Bool
	failing.Store(true)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(recv.Close)
	var dead []string
	for _, topic := range []string{"dead-a", "dead-a", "dead-a", "dead-b", "dead-b"} {
		dead = append(dead, postJob(t, p, map[string]any{"topic": topic, "delay_ms": 0, "callback_url": recv.URL, "max_attempts": 1}))
	}
	for _, id := range dead {
		waitJob(t, p, id, "dead")
	}
	failing.Store(false) // the receiver is fixed: a replay is delivered

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="dead-a"][data-loaded]`)))
	d.show("#/deadletters")
	d.do(chromedp.WaitVisible(chromedp.CSS("#dead")))

	// Replay two of one topic and one of another.
	d.checkJobs("#dead", dead[0], dead[1], dead[3])
	d.confirm("#bulk-replay", "Confirm: replay 3 jobs")
	d.waitText("#dead-bulk-result", "3 changed, 0 could not.")
	for _, id := range []string{dead[0], dead[1], dead[3]} {
		waitJob(t, p, id, "done")
	}
	if got := d.eval(`Array.from(document.querySelectorAll("#dead tbody tr"), (r) => r.dataset.job).sort().join(" ")`); got != sortedJoin(dead[2], dead[4]) {
		t.Errorf("dead letters listed after the replay: %s, want %s", got, sortedJoin(dead[2], dead[4]))
	}
	d.shot("dead-replayed")

	// Purge both left, one of them purged meanwhile by another caller.
	d.checkJobs("#dead", dead[2], dead[4])
	d.docPicture("dashboard-dead-bulk.png", "main")
	if status, body := p.call(t, "DELETE", "/v1/deadletters/"+dead[4], nil); status != http.StatusOK {
		t.Fatalf("purge %s: %d %v", dead[4], status, body)
	}
	d.confirm("#bulk-purge", "Confirm: purge 2 jobs")
	d.waitText("#dead-bulk-result", "1 changed, 1 could not: job "+dead[4]+": conflict (purge dead letter "+dead[4]+": job is purged).")
	for _, id := range []string{dead[2], dead[4]} {
		if got := jobField(t, p, id, "status"); got != "purged" {
			t.Errorf("job %s after Purge: %v", id, got)
		}
	}
	d.do(chromedp.WaitVisible(chromedp.CSS("#no-dead")))
	d.shot("dead-purged")
	d.check()
}
