package main

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// The group page in a real headless Chromium against toc dev: reached
// from a member's job page, it shows the group's state and its members'
// counts by status, as the API does; sealed and emptied, it shows the
// completion.
func TestDashboardGroup(t *testing.T) {
	chromium := needChromium(t)
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	if status, g := p.call(t, "POST", "/v1/groups", map[string]any{"id": "export-7"}); status != http.StatusCreated {
		t.Fatalf("create group: %d %v", status, g)
	}
	var ids []string
	for range 3 {
		status, j := p.call(t, "POST", "/v1/jobs", map[string]any{"topic": "parts", "delay_ms": 3_600_000,
			"callback_url": "http://127.0.0.1:9/part", "group_id": "export-7"})
		if status != http.StatusCreated {
			t.Fatalf("join: %d %v", status, j)
		}
		ids = append(ids, j["id"].(string))
	}
	if status, _ := p.call(t, "DELETE", "/v1/jobs/"+ids[0], nil); status != http.StatusOK {
		t.Fatalf("cancel: %d", status)
	}

	d := openDashboard(t, chromium, p.url+"/ui#/jobs/"+ids[1])
	// toc dev has no tokens: the dashboard goes straight in.
	d.do(chromedp.WaitVisible(chromedp.CSS("#job-group")))
	d.do(chromedp.Click(chromedp.CSS("#job-group")), chromedp.WaitVisible(chromedp.CSS("#group-counts")))
	if got := d.text("#group-state"); got != "open, taking members" {
		t.Errorf("state shows %q", got)
	}
	if got := d.text(`tr[data-row="now"] td[data-status="pending"]`); got != "2" {
		t.Errorf("pending shows %q, want 2", got)
	}
	if got := d.text(`tr[data-row="now"] td[data-status="cancelled"]`); got != "1" {
		t.Errorf("cancelled shows %q, want 1", got)
	}
	d.shot("group-open")

	// Sealed, its last members cancelled: completed, with the counts it
	// carried.
	p.call(t, "POST", "/v1/groups/export-7/seal", nil)
	for _, id := range ids[1:] {
		p.call(t, "DELETE", "/v1/jobs/"+id, nil)
	}
	for range 100 {
		if _, g := p.call(t, "GET", "/v1/groups/export-7", nil); g["completed"] == true {
			break
		}
		d.do(chromedp.Sleep(50e6))
	}
	d.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`tr[data-row="completed"]`)))
	if got := d.text("#group-state"); got != "completed" {
		t.Errorf("state shows %q", got)
	}
	if got := d.text(`tr[data-row="completed"] td[data-status="cancelled"]`); got != "3" {
		t.Errorf("cancelled at completion shows %q, want 3", got)
	}
	d.shot("group-completed")
	d.check()
}
