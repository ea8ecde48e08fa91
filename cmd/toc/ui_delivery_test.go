package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// A topic's page says how its jobs go out (issue 36), in a real headless
// Chromium against toc serve: a webhook topic, a NATS one, a RabbitMQ one.
func TestDashboardTopicDelivery(t *testing.T) {
	chromium := needChromium(t)
	n := testenv.NATS(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uid%d:", time.Now().UnixNano()),
		"--nats", "events="+n.URL(), "--amqp", "main=amqp://guest:guest@127.0.0.1:1/")
	for topic, settings := range map[string]map[string]any{
		"hooks":    {},
		"events":   {"delivery": "nats", "nats": map[string]string{"broker": "events", "subject": "orders.due.{biz_id}"}},
		"invoices": {"delivery": "amqp", "amqp": map[string]any{"broker": "main", "exchange": "toc", "routing_key": "{topic}", "persistent": false}},
		"emails":   {"delivery": "pull"},
	} {
		if status, body := p.call(t, "PUT", "/v1/topics/"+topic, settings); status/100 != 2 {
			t.Fatalf("PUT /v1/topics/%s: %d %v", topic, status, body)
		}
	}
	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="events"][data-loaded]`)))
	for topic, want := range map[string]string{
		"hooks":    "webhook to each job's callback URL",
		"events":   `NATS JetStream events: subject "orders.due.{biz_id}"`,
		"invoices": `RabbitMQ main: exchange "toc", routing key "{topic}", transient`,
		"emails":   "pulled: workers lease its due jobs (POST /v1/topics/emails/leases)",
	} {
		d.do(chromedp.Navigate(p.url + "/ui#/topics/" + topic))
		d.waitText("#topic-delivery", want)
		if topic == "events" {
			d.shot("topic-delivery-nats")
		}
	}
}
