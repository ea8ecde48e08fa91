package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The schedules page in a real headless Chromium against toc dev: each
// schedule with its rule and next fire times, one paused and resumed,
// one deleted; checked on the page, then on the API.
func TestDashboardSchedules(t *testing.T) {
	chromium := needChromium(t)
	p := startToc(t, "", "dev", "--data", filepath.Join(t.TempDir(), "toc-dev.db"))
	create := func(body map[string]any) map[string]any {
		t.Helper()
		status, s := p.call(t, "POST", "/v1/schedules", body)
		if status != http.StatusCreated {
			t.Fatalf("create %v: %d %v", body, status, s)
		}
		return s
	}
	daily := create(map[string]any{"cron": "30 2 * * *", "time_zone": "America/New_York",
		"job": map[string]any{"topic": "reports", "callback_url": "http://127.0.0.1:9/daily"}})
	hourly := create(map[string]any{"every_ms": 3_600_000, "catch_up": "all",
		"job": map[string]any{"topic": "pings", "callback_url": "http://127.0.0.1:9/ping"}})
	dailyID, hourlyID := daily["id"].(string), hourly["id"].(string)

	d := openDashboard(t, chromium, p.url+"/ui")
	// toc dev has no tokens: the dashboard goes straight in.
	d.do(chromedp.WaitVisible(chromedp.CSS("#topics, #no-topics")))
	d.do(chromedp.Click(chromedp.CSS(`nav a[href="#/schedules"]`)), chromedp.WaitVisible(chromedp.CSS("#schedules")))
	row := func(id string) string { return `tr[data-schedule="` + id + `"]` }
	if got := d.text(row(dailyID) + " td.rule"); got != "cron 30 2 * * * (America/New_York)" {
		t.Errorf("daily rule shows %q", got)
	}
	if got := d.text(row(hourlyID) + " td.rule"); got != "every 3600000 ms" {
		t.Errorf("hourly rule shows %q", got)
	}
	// The next fire times are the API's, three of five shown.
	next := daily["next_fire_times"].([]any)
	for i := range 3 {
		if got := d.text(row(dailyID) + ` td.next li:nth-child(` + string(rune('1'+i)) + `)`); got != next[i].(string) {
			t.Errorf("daily next fire time %d shows %q, want %q", i, got, next[i])
		}
	}
	if got := d.text(row(dailyID) + " td.next li.more"); got != "+2 more" {
		t.Errorf("daily shows %q after its three times", got)
	}
	if got := d.text(row(hourlyID) + " td.catch-up"); got != "all" {
		t.Errorf("hourly catch-up shows %q", got)
	}
	d.shot("schedules")

	// Pause, then resume, the daily one.
	d.do(chromedp.Click(chromedp.CSS(row(dailyID) + " button.pause")))
	d.waitText(row(dailyID)+" td.state", "paused")
	d.waitText(row(dailyID)+" td.next", "none while paused")
	if _, s := p.call(t, "GET", "/v1/schedules/"+dailyID, nil); s["paused"] != true {
		t.Errorf("paused on the page, not in the API: %v", s)
	}
	d.shot("schedule-paused")
	d.do(chromedp.Click(chromedp.CSS(row(dailyID) + " button.resume")))
	d.waitText(row(dailyID)+" td.state", "active")
	if _, s := p.call(t, "GET", "/v1/schedules/"+dailyID, nil); s["paused"] != false {
		t.Errorf("resumed on the page, not in the API: %v", s)
	}

	// Delete the hourly one: the first click asks, the second deletes.
	d.do(chromedp.Click(chromedp.CSS(row(hourlyID) + " button.delete")))
	d.waitText(row(hourlyID)+" button.delete", "sure?")
	d.do(chromedp.Click(chromedp.CSS(row(hourlyID) + " button.delete")))
	d.waitText("#message", "deleted")
	if status, _ := p.call(t, "GET", "/v1/schedules/"+hourlyID, nil); status != http.StatusNotFound {
		t.Errorf("deleted on the page; the API answers %d", status)
	}
	if n := d.eval(`String(document.querySelectorAll('#schedules tbody tr').length)`); n != "1" {
		t.Errorf("%s rows left, want 1", n)
	}
	if strings.Contains(d.eval(`location.href`), "token") {
		t.Error("the token is in the URL")
	}
	d.shot("schedules-after-delete")
	d.check()
}
