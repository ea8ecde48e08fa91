package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/toc-project/toc/internal/testenv"
)

// occurrences is a webhook receiver that records, by idempotency key,
// the job ids and arrivals of a schedule's occurrences.
type occurrences struct {
	srv *httptest.Server
	wh  *standardwebhooks.Webhook

	mu      sync.Mutex
	arrived map[string][]string // key → job id of each arrival
	bad     []string
	// want, when set, is closed once n keys have arrived.
	n    int
	want chan struct{}
}

func newOccurrences(t *testing.T, secret string) *occurrences {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	o := &occurrences{wh: wh, arrived: map[string][]string{}}
	o.srv = httptest.NewServer(http.HandlerFunc(o.serve))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *occurrences) serve(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(req.Body)
	var msg struct {
		ID     string `json:"id"`
		Key    string `json:"key"`
		FireAt string `json:"fire_at"`
	}
	verr := o.wh.Verify(body, req.Header)
	perr := json.Unmarshal(body, &msg)
	o.mu.Lock()
	defer o.mu.Unlock()
	if verr != nil || perr != nil || msg.Key == "" {
		o.bad = append(o.bad, fmt.Sprintf("bad webhook (%v, %v): %s", verr, perr, body))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	due, err := time.Parse(time.RFC3339, msg.FireAt)
	ms, _ := strconv.ParseInt(msg.Key[strings.LastIndexByte(msg.Key, ':')+1:], 10, 64)
	if err != nil || due.UnixMilli() != ms {
		o.bad = append(o.bad, fmt.Sprintf("job %s key %s is not the occurrence of its fire_at %s", msg.ID, msg.Key, msg.FireAt))
	}
	if now.Before(due) {
		o.bad = append(o.bad, fmt.Sprintf("job %s arrived %v before its due time", msg.ID, due.Sub(now)))
	}
	o.arrived[msg.Key] = append(o.arrived[msg.Key], msg.ID)
	if o.want != nil && len(o.arrived) >= o.n {
		close(o.want)
		o.want = nil
	}
	w.WriteHeader(http.StatusNoContent)
}

// await waits until n distinct occurrences have arrived.
func (o *occurrences) await(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	o.mu.Lock()
	ch := make(chan struct{})
	if len(o.arrived) >= n {
		close(ch)
	} else {
		o.n, o.want = n, ch
	}
	o.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(limit):
		o.mu.Lock()
		defer o.mu.Unlock()
		t.Fatalf("%d of %d occurrences arrived within %v", len(o.arrived), n, limit)
	}
}

// Acceptance of issue 18's schedules: a cron schedule every second fires
// each occurrence exactly once across a SIGKILL of toc and a restart on
// the same MariaDB and Redis. With catch-up "all", the occurrences toc
// missed while it was down fire after the restart; the jobs made ahead
// before the kill fire too; none fires twice, and each occurrence is one
// job (checked by its key, schedule:<id>:<occurrence ms>).
func TestScheduleEverySecondAcrossSIGKILL(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	prefix := fmt.Sprintf("sched%d:", time.Now().UnixNano())
	start := func() *proc {
		return startToc(t, "tok3n", "serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--redis-prefix", prefix,
			"--api-token", "tok3n", "--webhook-secret", secret, "--allow-private-callbacks")
	}
	o := newOccurrences(t, secret)
	p := start()

	end := time.Now().Add(20 * time.Second).Truncate(time.Second)
	status, sc := p.call(t, "POST", "/v1/schedules", map[string]any{
		"cron": "* * * * * *", "catch_up": "all", "end_at": end.UTC().Format(time.RFC3339),
		"job": map[string]any{"topic": "cron", "callback_url": o.srv.URL + "/hook"},
	})
	if status != http.StatusCreated {
		t.Fatalf("create schedule: %d %v", status, sc)
	}
	id := sc["id"].(string)
	next := sc["next_fire_times"].([]any)
	first, err := time.Parse(time.RFC3339, next[0].(string))
	if err != nil || len(next) != 5 {
		t.Fatalf("next_fire_times %v: %v", next, err)
	}
	var want []string
	for at := first; !at.After(end); at = at.Add(time.Second) {
		want = append(want, fmt.Sprintf("schedule:%s:%d", id, at.UnixMilli()))
	}

	// Three occurrences in, between two of them (a webhook is called on
	// the second, so none is in flight 300 ms after one arrived), SIGKILL.
	o.await(t, 3, 30*time.Second)
	time.Sleep(300 * time.Millisecond)
	p.kill(t)
	killed := time.Now()
	// Down long enough that occurrences pass the lookahead made before the
	// kill and the 2 s within which a late one is not yet missed: those
	// must come from the catch-up.
	time.Sleep(7 * time.Second)
	p = start()
	t.Logf("down %v", time.Since(killed).Round(time.Millisecond))

	o.await(t, len(want), 60*time.Second)
	// The last occurrence is in; nothing more may come. Wait past one
	// more second's firing to see nothing does.
	time.Sleep(1500 * time.Millisecond)

	o.mu.Lock()
	arrived, bad := o.arrived, o.bad
	o.mu.Unlock()
	for _, b := range bad {
		t.Error(b)
	}
	for _, key := range want {
		if ids := arrived[key]; len(ids) != 1 {
			t.Errorf("occurrence %s arrived %d times (jobs %v), want once", key, len(ids), ids)
		}
	}
	if len(arrived) != len(want) {
		t.Errorf("%d occurrences arrived, want the %d from %v to end_at %v", len(arrived), len(want), first, end)
	}
	// Some were made only after the restart, past their time: the
	// catch-up, not the jobs made ahead before the kill.
	status, list := p.call(t, "GET", "/v1/jobs?topic=cron&limit=100", nil)
	caughtUp := 0
	for _, j := range list["jobs"].([]any) {
		j := j.(map[string]any)
		due, _ := time.Parse(time.RFC3339, j["fire_at"].(string))
		made, _ := time.Parse(time.RFC3339, j["created_at"].(string))
		if made.After(due.Add(2 * time.Second)) {
			caughtUp++
		}
	}
	if status != http.StatusOK || caughtUp == 0 {
		t.Errorf("no job was made by the catch-up after the restart (%d): %v", status, list)
	}
	t.Logf("%d occurrences, each once; %d of them missed while toc was down and caught up", len(want), caughtUp)
	// An occurrence's job is found by its key.
	status, found := p.call(t, "GET", "/v1/jobs?topic=cron&key="+want[len(want)/2], nil)
	if jobs, _ := found["jobs"].([]any); status != http.StatusOK || len(jobs) != 1 || jobs[0].(map[string]any)["status"] != "done" {
		t.Errorf("find by key: %d %v", status, found)
	}
	status, got := p.call(t, "GET", "/v1/schedules/"+id, nil)
	if times, _ := got["next_fire_times"].([]any); status != http.StatusOK || len(times) != 0 {
		t.Errorf("the schedule past its end_at: %d %v, want no next fire time", status, got)
	}
	p.stop(t)
}
