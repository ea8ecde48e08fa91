package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard in a real headless Chromium with a sandbox token: its
// topics page lists the sandbox's orders (by that name, with its pending
// count) and nothing of the default namespace, whose orders topic and
// job are a missing topic and a missing job to it.
func TestDashboardNamespaces(t *testing.T) {
	chromium := needChromium(t)
	st := startNamespaces(t)
	schedule := func(q *proc, topic, hook string) string {
		t.Helper()
		status, body := q.call(t, "POST", "/v1/jobs", map[string]any{"topic": topic, "delay_ms": time.Hour.Milliseconds(), "callback_url": hook})
		if status != http.StatusCreated {
			t.Fatalf("schedule %s as %s: %d %v", topic, q.token, status, body)
		}
		return body["id"].(string)
	}
	sbOrders, orders := st.ops.as("sb-orders"), st.ops.as("orders")
	mine := schedule(sbOrders, "orders", st.sandbox.srv.URL+"/hook")
	schedule(sbOrders, "orders", st.sandbox.srv.URL+"/hook")
	theirs := schedule(orders, "orders", st.online.srv.URL+"/hook")
	schedule(orders, "orders-eu", st.online.srv.URL+"/hook")

	d := openDashboard(t, chromium, st.ops.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")), chromedp.SetValue(chromedp.CSS("#token"), sbOrders.token),
		chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="orders"][data-loaded]`)))
	if n := d.eval(`String(document.querySelectorAll('tr[data-topic]').length)`); n != "1" {
		t.Errorf("the sandbox token's topics page lists %s topics, want its orders only", n)
	}
	if got := d.text(`tr[data-topic="orders"] td.pending`); got != "2" {
		t.Errorf("the sandbox's orders shows %q pending, want 2 (the default namespace's orders holds 1 more)", got)
	}
	d.shot("namespaces-topics")

	d.show("#/jobs/" + mine)
	d.waitText("#job-id", mine)
	d.show("#/jobs/" + theirs)
	d.do(chromedp.WaitVisible(chromedp.CSS(`#main p.message.error`)))
	if got := d.text(`#main p.message.error`); !strings.Contains(got, "not found") {
		t.Errorf("the default namespace's job, seen with a sandbox token: %q, want not found", got)
	}
	d.check()
}
