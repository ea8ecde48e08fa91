package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toc-project/toc/internal/testenv"
)

// The storage view of a topic's page in a real headless Chromium against
// toc serve: per finished status, the retention in force (the topic's
// own over the --retain-* flags, "forever" for 0), the rows held, when
// the oldest finished, and the rows past retention. A cancelled member of
// a group still open is past its topic's 1 ms retention and kept: the
// retirer never deletes it, and the view counts it as past retention.
func TestDashboardStorage(t *testing.T) {
	chromium := needChromium(t)
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr, "--redis-prefix", fmt.Sprintf("uis%d:", time.Now().UnixNano()),
		"--retain-purged", "0")
	r := newReceiver(t, e2eSecret)
	if status, body := p.call(t, "POST", "/v1/groups", map[string]any{"id": "shelf-1"}); status != http.StatusCreated {
		t.Fatalf("create group: %d %v", status, body)
	}
	id := postJob(t, p, map[string]any{"topic": "shelf", "delay_ms": 1_500, "callback_url": r.srv.URL, "group_id": "shelf-1"})
	if status, body := p.call(t, "DELETE", "/v1/jobs/"+id, nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %v", status, body)
	}
	postJob(t, p, map[string]any{"topic": "shelf", "delay_ms": 3_600_000, "callback_url": r.srv.URL}) // pending: in no row of the view
	if status, body := p.call(t, "PATCH", "/v1/topics/shelf", map[string]any{"retention": map[string]any{"cancelled_ms": 1, "dead_ms": 0}}); status != http.StatusOK {
		t.Fatalf("set retention: %d %v", status, body)
	}
	time.Sleep(1_600 * time.Millisecond) // past the 1 ms, counted from the cancelled job's due time

	d := openDashboard(t, chromium, p.url+"/ui")
	d.do(chromedp.WaitVisible(chromedp.CSS("#login-form")))
	d.do(chromedp.SetValue(chromedp.CSS("#token"), p.token), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="shelf"][data-loaded]`)))
	d.show("#/topics/shelf")
	d.do(chromedp.WaitVisible(chromedp.CSS(`#storage tr[data-status="purged"]`)))

	row := func(st string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, c := range []string{"kept", "rows", "oldest", "past"} {
			out[c] = d.text(fmt.Sprintf(`#storage tr[data-status=%q] td.%s`, st, c))
		}
		return out
	}
	for st, want := range map[string]map[string]string{
		"done":      {"kept": "1 d", "rows": "0", "oldest": "—", "past": "0"},
		"cancelled": {"kept": "1 ms", "rows": "1", "past": "1"},
		"expired":   {"kept": "1 d", "rows": "0", "past": "0"},
		"dead":      {"kept": "forever", "rows": "0", "past": "0"},
		"purged":    {"kept": "forever", "rows": "0", "past": "0"},
	} {
		got := row(st)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s's %s shows %q, want %q (row %v)", st, k, got[k], v, got)
			}
		}
	}
	if got := row("cancelled")["oldest"]; !strings.HasPrefix(got, time.Now().UTC().Format("2006-01-02T")) || !strings.HasSuffix(got, "ago)") {
		t.Errorf("the oldest cancelled row shows %q, want its end today and its age", got)
	}
	if got := d.text("#storage-section .note"); !strings.Contains(got, "never") {
		t.Errorf("the storage note says %q", got)
	}
	d.shot("storage")
	d.check()
}
