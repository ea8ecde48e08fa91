package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// The header's search box (issue 37), in a real headless Chromium against
// toc serve: a job id or a key of one job opens that job's page; a key
// used in two topics lists both jobs; a key of none says so.
func TestDashboardSearch(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uis%d:", time.Now().UnixNano()))
	r := newReceiver(t, e2eSecret)
	post := func(topic, key string) string {
		return postJob(t, p, map[string]any{"topic": topic, "key": key, "delay_ms": 3_600_000, "callback_url": r.srv.URL})
	}
	solo := post("orders", "solo-key")
	orders42, invoices42 := post("orders", "order-42"), post("invoices", "order-42")
	other := post("invoices", "invoice-7")

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if got := d.eval(`String(document.querySelector("#find").offsetParent === null)`); got != "true" {
		t.Errorf("the search box shows before login")
	}
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="orders"][data-loaded]`)))
	find := func(q string) {
		t.Helper()
		d.do(chromedp.SetValue(chromedp.CSS("#find-q"), q), chromedp.Click(chromedp.CSS("#find-go")))
	}

	// By id: the job's page.
	find(other)
	d.waitText("#job-id", other)
	if got := d.eval(`location.hash`); got != "#/jobs/"+other {
		t.Errorf("search by id shows %s", got)
	}
	d.shot("search-by-id")

	// By the key of one job: its page.
	find("solo-key")
	d.waitText("#job-id", solo)

	// By a key of two topics: both listed, each linking to its job.
	find("  order-42 ")
	d.do(chromedp.WaitVisible(chromedp.CSS("#search-results")))
	if got := d.eval(`Array.from(document.querySelectorAll("#search-results tbody tr"), (r) => r.dataset.job + ":" + r.querySelector("td.topic").textContent).sort().join(" ")`); got != sortedJoin(orders42+":orders", invoices42+":invoices") {
		t.Errorf("search by a key of two topics lists %s", got)
	}
	if got := d.text("main"); strings.Contains(got, "null") || strings.Contains(got, "undefined") {
		t.Errorf("the results page shows %q", got)
	}
	d.shot("search-by-key")
	d.docPicture("dashboard-search.png", "body")
	d.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#search-results tr[data-job="%s"] a`, invoices42))))
	d.waitText("#job-id", invoices42)

	// Nothing: said so.
	find("nothing-here")
	d.waitText("#no-search-results", "No job has the id or the key nothing-here")
	d.check()
}
