package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// Pause and resume from the topics list (issue 37), in a real headless
// Chromium against toc serve: a row's button pauses its topic, and the
// row, its button and the API say so while the other row stays active;
// the same button resumes it.
func TestDashboardTopicsListPause(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uip%d:", time.Now().UnixNano()))
	for _, topic := range []string{"alpha", "beta"} {
		if status, body := p.call(t, "PUT", "/v1/topics/"+topic, map[string]any{}); status/100 != 2 {
			t.Fatalf("PUT /v1/topics/%s: %d %v", topic, status, body)
		}
	}
	paused := func(topic string) any {
		t.Helper()
		status, body := p.call(t, "GET", "/v1/topics/"+topic, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /v1/topics/%s: %d %v", topic, status, body)
		}
		return body["paused"]
	}

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="alpha"][data-loaded]`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="beta"][data-loaded]`)))
	const alpha, beta = `tr[data-topic="alpha"]`, `tr[data-topic="beta"]`
	if got := d.text(alpha + " button.pause-toggle"); got != "Pause" {
		t.Errorf("an active topic's button says %q, want Pause", got)
	}

	d.do(chromedp.Click(chromedp.CSS(alpha + " button.pause-toggle")))
	d.waitText(alpha+" td.state", "paused")
	if got := d.text(alpha + " button.pause-toggle"); got != "Resume" {
		t.Errorf("a paused topic's button says %q, want Resume", got)
	}
	if got := d.text(beta + " td.state"); got != "active" {
		t.Errorf("the other topic shows %q, want active", got)
	}
	if paused("alpha") != true || paused("beta") != false {
		t.Errorf("after Pause the API says alpha paused %v, beta %v", paused("alpha"), paused("beta"))
	}
	d.shot("topics-paused")

	d.do(chromedp.Click(chromedp.CSS(alpha + " button.pause-toggle")))
	d.waitText(alpha+" td.state", "active")
	if paused("alpha") != false {
		t.Errorf("after Resume the API says alpha paused %v", paused("alpha"))
	}
	d.check()
}
