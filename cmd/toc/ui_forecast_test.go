package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// forecastBar is a bar of the forecast chart as the page draws it.
type forecastBar struct {
	Start  string  `json:"start"`
	Count  int64   `json:"count"`
	Title  string  `json:"title"`
	Height float64 `json:"height"`
}

// The forecast chart of a topic's page in a real headless Chromium
// against toc serve: a bar per bucket whose data and tooltip are the
// counts of the jobs scheduled (a spike, a spread, zeros; a cancelled job
// and another topic's left out), heights in proportion, the step changed
// with the form, and a bad step answered with the API's error naming it.
func TestDashboardForecast(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uif%d:", time.Now().UnixNano()))
	r := newReceiver(t, e2eSecret)
	from := time.Now().UTC().Truncate(time.Hour).Add(48 * time.Hour)
	want := []int64{0, 3, 12, 0, 1, 5}
	for i, n := range want {
		for k := range n {
			at := from.Add(time.Duration(i)*time.Hour + time.Duration(k)*time.Minute)
			postJob(t, p, map[string]any{"topic": "nightly", "fire_at": at.Format(time.RFC3339), "callback_url": r.srv.URL})
		}
	}
	cancelled := postJob(t, p, map[string]any{"topic": "nightly", "fire_at": from.Add(2 * time.Hour).Format(time.RFC3339), "callback_url": r.srv.URL})
	if status, body := p.call(t, "DELETE", "/v1/jobs/"+cancelled, nil); status != 200 {
		t.Fatalf("cancel: %d %v", status, body)
	}
	postJob(t, p, map[string]any{"topic": "other", "fire_at": from.Add(2 * time.Hour).Format(time.RFC3339), "callback_url": r.srv.URL})

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="nightly"][data-loaded]`)))

	// The topic's page by default: from this hour, a day, by the hour.
	d.show("#/topics/nightly")
	bars := waitBars(d, 24)
	if got := d.eval(`document.querySelector('#forecast-form input[name=step]').value`); got != "1h" {
		t.Errorf("the form's default step is %q", got)
	}
	if !strings.HasSuffix(bars[0].Start, ":00:00.000Z") {
		t.Errorf("the default forecast starts at %s, not on the hour", bars[0].Start)
	}

	// The window of the jobs, by the hour.
	q := url.Values{"forecast_from": {from.Format(time.RFC3339)}, "forecast_to": {from.Add(6 * time.Hour).Format(time.RFC3339)}, "forecast_step": {"1h"}}
	d.show("#/topics/nightly?" + q.Encode())
	bars = waitBars(d, 6)
	checkBars(t, bars, from, time.Hour, want)
	if got := d.text("#forecast-total"); !strings.HasPrefix(got, "21 jobs due from") {
		t.Errorf("the forecast's total says %q", got)
	}
	if got := d.eval(`String(document.querySelector('#forecast').innerText.includes('null') || !!document.querySelector('#forecast-partial'))`); got != "false" {
		t.Errorf("a complete forecast shows a stray null or a partial note: %s", d.text("#forecast"))
	}
	// The tallest bar fills the plot; the others are in proportion.
	for i, b := range bars {
		if got, want := b.Height, bars[2].Height*float64(want[i])/12; got < want-0.5 || got > want+0.5 {
			t.Errorf("bar %d is %.1f high, want %.1f (%d of the tallest's 12)", i, got, want, b.Count)
		}
	}
	if bars[2].Height < 100 {
		t.Errorf("the tallest bar is only %.1f high", bars[2].Height)
	}
	if got := d.eval(`[...document.querySelectorAll('#forecast-chart .x-label')].map(e => e.textContent).join(' ')`); !strings.Contains(got, from.Add(2*time.Hour).Format("15:04")) {
		t.Errorf("the x axis is labelled %q", got)
	}
	if got := d.eval(`[...document.querySelectorAll('#forecast-chart .y-label')].map(e => e.textContent).join(' ')`); got != "0 6 12" {
		t.Errorf("the y axis is labelled %q, want 0 6 12", got)
	}
	d.shot("forecast")

	// Two hours a bar, chosen in the form.
	d.do(chromedp.SetValue(chromedp.CSS(`#forecast-form input[name=step]`), "2h"), chromedp.Click(chromedp.CSS("#forecast-form button[type=submit]")))
	bars = waitBars(d, 3)
	checkBars(t, bars, from, 2*time.Hour, []int64{3, 12, 6})
	d.shot("forecast-2h")

	// A step the API refuses: its error, naming the field.
	d.do(chromedp.SetValue(chromedp.CSS(`#forecast-form input[name=step]`), "1ms"), chromedp.Click(chromedp.CSS("#forecast-form button[type=submit]")))
	d.waitText("#forecast-error", "step")
	if got := d.text("#forecast-error"); !strings.Contains(got, "400") {
		t.Errorf("a bad step shows %q", got)
	}
	d.check()
}

// waitBars waits until the forecast chart has n bars and returns them.
func waitBars(d *dashboard, n int) []forecastBar {
	d.t.Helper()
	d.do(chromedp.PollFunction[chromedp.Void](`(n) => { const f = document.querySelector('#forecast[data-loaded]');
		return !!f && f.querySelectorAll('#forecast-chart rect.bar').length === n; }`,
		chromedp.WithPollingArgs(n), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(stepTimeout)))
	raw := d.eval(`JSON.stringify([...document.querySelectorAll('#forecast-chart rect.bar')].map(r => ({
		start: r.dataset.start, count: Number(r.dataset.count), title: r.querySelector('title').textContent,
		height: Number(r.getAttribute('height'))})))`)
	var bars []forecastBar
	if err := json.Unmarshal([]byte(raw), &bars); err != nil {
		d.t.Fatalf("the chart's bars %s: %v", raw, err)
	}
	return bars
}

// checkBars checks each bar's start, count and tooltip against want.
func checkBars(t *testing.T, bars []forecastBar, from time.Time, step time.Duration, want []int64) {
	t.Helper()
	if len(bars) != len(want) {
		t.Fatalf("%d bars, want %d", len(bars), len(want))
	}
	for i, b := range bars {
		start := from.Add(time.Duration(i) * step).Format("2006-01-02T15:04:05.000Z")
		if b.Start != start || b.Count != want[i] || !strings.Contains(b.Title, fmt.Sprintf("%s: %d job", start, want[i])) {
			t.Errorf("bar %d: %+v, want %d jobs from %s", i, b, want[i], start)
		}
	}
}
