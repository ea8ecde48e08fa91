package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// The series charts in a real headless Chromium against toc serve on
// MariaDB and Redis, after a known load (jobs fired to a receiver over
// about 20 s, some failing to death): each chart draws the numbers of the
// API's answer to the very request the page made (and the table under
// them says the same), the load's totals included; the time picker and
// the custom range change the request; auto-refresh draws a new fire
// without a reload, pauses while the tab is hidden and catches up when it
// shows again; the overview page draws every topic's series.
func TestDashboardCharts(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uic%d:", time.Now().UnixNano()))
	r := newReceiver(t, e2eSecret)
	const fine, failing = 24, 4
	var last string
	for i := range fine + failing {
		job := map[string]any{"topic": "plots", "delay_ms": i * 700, "callback_url": r.srv.URL}
		if i%7 == 3 {
			job["callback_url"], job["max_attempts"] = r.srv.URL+"?fail=1", 1
		}
		last = postJob(t, p, job)
	}
	waitJob(t, p, last, "done")
	waitTotals(t, p, "/v1/topics/plots/series", fine+failing)

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="plots"][data-loaded]`)))
	d.do(chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))

	// The topic's page: the last hour by 10 s, as the API counts it.
	d.show("#/topics/plots")
	loaded := waitSeries(d, 0)
	drawn := checkCharts(t, d, p)
	if drawn.fires != fine+failing || drawn.failed5xx != failing || drawn.dead != failing {
		t.Errorf("the charts draw %+v, want %d fires, %d failed 5xx and dead", drawn, fine+failing, failing)
	}
	if q := d.eval(`document.querySelector('#series').dataset.query`); !strings.HasPrefix(q, "/topics/plots/series?from=") {
		t.Errorf("the page asked for %s", q)
	}
	d.shot("charts-topic")

	// The picker: the last 15 minutes, then a custom range typed in UTC.
	pickRange(d, "15m")
	loaded = waitSeries(d, loaded)
	q := seriesQuery(t, d)
	if from, err := time.Parse(time.RFC3339, q.Get("from")); err != nil || time.Since(from) < 14*time.Minute || time.Since(from) > 16*time.Minute {
		t.Errorf("the last 15 min asked from %q", q.Get("from"))
	}
	if got := checkCharts(t, d, p); got.fires != fine+failing || got.points < 90 || got.points > 92 {
		t.Errorf("the last 15 min draws %+v, want %d fires in 91 points or so", got, fine+failing)
	}
	d.shot("charts-15m")
	d.do(chromedp.Click(chromedp.CSS("#series-utc")))
	d.waitText("#series-status", " UTC to ")
	pickRange(d, "custom")
	loaded = waitSeries(d, loaded)
	from := time.Now().UTC().Add(-30 * time.Minute).Truncate(time.Minute)
	to := from.Add(35 * time.Minute)
	d.do(chromedp.SetValue(chromedp.CSS("#series-from"), from.Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS("#series-to"), to.Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS("#series-apply")))
	loaded = waitSeries(d, loaded)
	q = seriesQuery(t, d)
	if q.Get("from") != from.Format("2006-01-02T15:04:05.000Z") || q.Get("to") != to.Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("the custom range %v to %v (UTC) asked %v", from, to, q)
	}
	if got := checkCharts(t, d, p); got.fires != fine+failing || got.points != 210 {
		t.Errorf("the custom range draws %+v, want %d fires in 210 points", got, fine+failing)
	}
	if got := d.eval(`document.querySelector('#series').dataset.refresh`); got != "off" {
		t.Errorf("a fixed range refreshes: %s", got)
	}
	d.shot("charts-custom-utc")

	// Auto-refresh: back to the last hour, a new fire shows up in the
	// charts without a reload.
	pickRange(d, "1h")
	waitSeries(d, loaded)
	postJob(t, p, map[string]any{"topic": "plots", "delay_ms": 0, "callback_url": r.srv.URL})
	waitFires(d, fine+failing+1)
	if d.eval(`String(window.sameDocument === true)`) != "true" {
		t.Error("the page reloaded")
	}
	checkCharts(t, d, p)

	// Hidden: no request while it is, and the fire made meanwhile drawn
	// as soon as it shows again.
	d.do(chromedp.Evaluate[chromedp.Void](`Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
		Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
		document.dispatchEvent(new Event('visibilitychange'))`))
	if got := d.eval(`document.querySelector('#series').dataset.refresh`); got != "paused" {
		t.Errorf("hidden, the refresh is %q", got)
	}
	d.waitText("#series-status", "paused while the tab is hidden")
	d.do(chromedp.PollFunction[chromedp.Void](`() => { const s = document.querySelector('#series'); return s.dataset.drawn === s.dataset.query; }`,
		chromedp.WithPollingTimeout(stepTimeout))) // no request under way
	hiddenAt := d.eval(`document.querySelector('#series').dataset.loaded`)
	postJob(t, p, map[string]any{"topic": "plots", "delay_ms": 0, "callback_url": r.srv.URL})
	waitTotals(t, p, "/v1/topics/plots/series", fine+failing+2)
	time.Sleep(6 * time.Second) // more than a refresh's period
	if got := d.eval(`document.querySelector('#series').dataset.loaded`); got != hiddenAt {
		t.Errorf("hidden, the charts were fetched again: %s answers, %s when hidden", got, hiddenAt)
	}
	d.shot("charts-hidden")
	d.do(chromedp.Evaluate[chromedp.Void](`delete document.hidden; delete document.visibilityState;
		document.dispatchEvent(new Event('visibilitychange'))`))
	waitFires(d, fine+failing+2)
	if got := d.eval(`document.querySelector('#series').dataset.refresh`); got != "on" {
		t.Errorf("shown again, the refresh is %q", got)
	}

	// Every topic's series, on its own page.
	d.show("#/charts")
	waitSeries(d, 0)
	if q := d.eval(`document.querySelector('#series').dataset.query`); !strings.HasPrefix(q, "/series?from=") {
		t.Errorf("the overview asked for %s", q)
	}
	if got := checkCharts(t, d, p); got.fires != fine+failing+2 {
		t.Errorf("the overview draws %d fires, want %d", got.fires, fine+failing+2)
	}
	pickRange(d, "15m")
	waitSeries(d, 1)
	checkCharts(t, d, p)
	// TOC_UPDATE_DOCS=1 makes this docs/dashboard.md's picture of the charts.
	if png := d.shot("charts-all"); os.Getenv("TOC_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard-charts.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.check()
}

// drawnTotals are what the charts of the page draw, added up.
type drawnTotals struct {
	fires, failed5xx, dead int64
	points                 int
}

// pickRange chooses range in the charts' time picker.
func pickRange(d *dashboard, value string) {
	d.t.Helper()
	d.do(chromedp.SetValue(chromedp.CSS("#series-range"), value),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#series-range').dispatchEvent(new Event('change'))`))
}

// seriesQuery is the query of the page's last series request.
func seriesQuery(t *testing.T, d *dashboard) url.Values {
	t.Helper()
	u, err := url.Parse(d.eval(`document.querySelector('#series').dataset.query`))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// waitSeries waits for the series section to have drawn more answers
// than after, the last the answer to its last request, and returns how
// many it has.
func waitSeries(d *dashboard, after int) int {
	d.t.Helper()
	d.do(chromedp.PollFunction[chromedp.Void](`(n) => { const s = document.querySelector('#series');
		return !!s && Number(s.dataset.loaded) > n && s.dataset.drawn === s.dataset.query && !!document.querySelector('#chart-fires').uplot; }`,
		chromedp.WithPollingArgs(after), chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(stepTimeout)))
	var n int
	fmt.Sscan(d.eval(`document.querySelector('#series').dataset.loaded`), &n)
	return n
}

// waitFires waits for the fires chart to draw n fires in all.
func waitFires(d *dashboard, n int) {
	d.t.Helper()
	d.do(chromedp.PollFunction[chromedp.Void](`(n) => { const c = document.querySelector('#chart-fires');
		return !!c && !!c.uplot && c.uplot.data[1].reduce((a, b) => a + (b || 0), 0) === n; }`,
		chromedp.WithPollingArgs(n), chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
}

// waitTotals waits up to 30 s for the series at path to count n fires.
func waitTotals(t *testing.T, p *proc, path string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, body := p.call(t, "GET", path, nil)
		if status == http.StatusOK && sumSeries(t, body).fires == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %v, want %d fires", path, status, body, n)
		}
	}
}

// checkCharts compares what each chart draws (its uPlot instance's data)
// and the table of numbers with the API's answer to the page's last
// request, bucket by bucket (a bucket the API answers since is left
// out), and returns the totals drawn.
func checkCharts(t *testing.T, d *dashboard, p *proc) drawnTotals {
	t.Helper()
	var drawn map[string][][]*float64
	raw := d.eval(`JSON.stringify(Object.fromEntries(['fires', 'lateness', 'load'].map((id) =>
		[id, document.querySelector('#chart-' + id).uplot.data])))`)
	if err := json.Unmarshal([]byte(raw), &drawn); err != nil {
		t.Fatalf("the charts' data %s: %v", raw, err)
	}
	status, body := p.call(t, "GET", "/v1"+d.eval(`document.querySelector('#series').dataset.drawn`), nil)
	if status != http.StatusOK {
		t.Fatalf("the page's request: %d %v", status, body)
	}
	byStart := map[float64]map[string]any{}
	for _, b := range body["buckets"].([]any) {
		b := b.(map[string]any)
		at, _ := time.Parse(time.RFC3339, b["start"].(string))
		byStart[float64(at.Unix())] = b
	}
	fields := map[string][]func(map[string]any) any{
		"fires":    {field("fires"), failure("4xx"), failure("5xx"), failure("timeout"), failure("other"), field("dead")},
		"lateness": {field("lateness_p50_ms"), field("lateness_p99_ms")},
		"load":     {field("in_flight"), field("throttled")},
	}
	var tot drawnTotals
	for id, fs := range fields {
		data := drawn[id]
		if len(data) != len(fs)+1 {
			t.Fatalf("chart %s draws %d series, want %d", id, len(data)-1, len(fs))
		}
		for i, x := range data[0] {
			b, ok := byStart[*x]
			if !ok {
				t.Fatalf("chart %s draws a bucket at %v the API does not answer from %v", id, time.Unix(int64(*x), 0).UTC(), body["from"])
			}
			for j, f := range fs {
				want, got := f(b), data[j+1][i]
				if (want == nil) != (got == nil) || (want != nil && want.(float64) != *got) {
					t.Errorf("chart %s, line %d, bucket %s: draws %v, the API says %v", id, j, b["start"], deref(got), want)
				}
			}
		}
		if id == "fires" {
			tot.points = len(data[0])
			for i := range data[0] {
				tot.fires += int64(*data[1][i])
				tot.failed5xx += int64(*data[3][i])
				tot.dead += int64(*data[6][i])
			}
		}
	}
	// The table says what the charts draw.
	var table int64
	fmt.Sscan(d.eval(`String([...document.querySelectorAll('#series-table td[data-key=fires]')].reduce((a, td) => a + Number(td.textContent), 0))`), &table)
	if rows := d.eval(`String(document.querySelectorAll('#series-table tbody tr').length)`); table != tot.fires || rows != fmt.Sprint(tot.points) {
		t.Errorf("the table holds %s rows and %d fires, the chart %d points and %d fires", rows, table, tot.points, tot.fires)
	}
	return tot
}

func field(name string) func(map[string]any) any {
	return func(b map[string]any) any { return b[name] }
}

func failure(class string) func(map[string]any) any {
	return func(b map[string]any) any { return b["failures"].(map[string]any)[class] }
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
