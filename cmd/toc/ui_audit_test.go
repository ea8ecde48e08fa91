package main

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// The audit page in a real headless Chromium against toc dev: actions
// taken through the API show as rows, newest first, with who, what and
// how many jobs; the action filter narrows them.
func TestDashboardAudit(t *testing.T) {
	chromium := needChromium(t)
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	must := func(method, path string, body any, want int) {
		t.Helper()
		if status, resp := p.call(t, method, path, body); status != want {
			t.Fatalf("%s %s: %d, want %d: %v", method, path, status, want, resp)
		}
	}
	must("PUT", "/v1/topics/billing", map[string]any{"max_attempts": 4}, http.StatusCreated)
	must("POST", "/v1/topics/billing/pause", nil, http.StatusOK)
	for range 2 {
		must("POST", "/v1/jobs", map[string]any{"topic": "billing", "biz_id": 9, "delay_ms": 3_600_000, "callback_url": "http://127.0.0.1:9/h"}, http.StatusCreated)
	}
	must("DELETE", "/v1/jobs?topic=billing&biz_id=9", nil, http.StatusOK)

	d := openDashboard(t, chromium, p.url+"/ui")
	// toc dev has no tokens: the dashboard goes straight in.
	d.do(chromedp.WaitVisible(chromedp.CSS("#topics, #no-topics")))
	d.do(chromedp.Click(chromedp.CSS(`nav a[href="#/audit"]`)), chromedp.WaitVisible(chromedp.CSS("#audit")))
	first := "#audit tbody tr:nth-child(1)"
	for cell, want := range map[string]string{"action": "jobs.cancel_bulk", "who": "anonymous", "topic": "billing",
		"target": "biz_id=9", "jobs": "2", "result": "ok"} {
		if got := d.text(first + " td." + cell); got != want {
			t.Errorf("newest row's %s shows %q, want %q", cell, got, want)
		}
	}
	if n := d.eval(`String(document.querySelectorAll('#audit tbody tr').length)`); n != "3" {
		t.Errorf("%s rows, want 3", n)
	}
	d.shot("audit")

	// The action filter: only the pause.
	d.do(chromedp.SetValue(chromedp.CSS(`#audit-search select[name="action"]`), "topic.pause"),
		chromedp.Click(chromedp.CSS(`#audit-search button[type="submit"]`)))
	d.waitText(first+" td.action", "topic.pause")
	if n := d.eval(`String(document.querySelectorAll('#audit tbody tr').length)`); n != "1" {
		t.Errorf("%s rows for topic.pause, want 1", n)
	}
	d.check()
}
