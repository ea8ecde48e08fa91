package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
)

// The schedule methods of package client and the toc schedules commands
// against toc dev: create, list, get, pause, resume, delete, and what
// each prints.
func TestSchedulesClientAndCLI(t *testing.T) {
	p, _ := startDev(t)
	c, err := client.New(p.url, client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := c.CreateSchedule(ctx, client.ScheduleRequest{Cron: "0 9 * * MON-FRI", TimeZone: "Europe/Berlin", CatchUp: client.CatchUpSkip,
		Job: client.JobTemplate{Topic: "reports", CallbackURL: "http://127.0.0.1:9/hook", Payload: json.RawMessage(`{"r":1}`), BizID: 7}})
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if len(s.NextFireTimes) != 5 || s.NextFireTimes[0].In(berlin).Hour() != 9 || s.CatchUp != client.CatchUpSkip || s.Job.BizID != 7 ||
		string(s.Job.Payload) != `{"r":1}` || s.KeyPrefix == "" {
		t.Fatalf("created: %+v", s)
	}
	got, err := c.GetSchedule(ctx, s.ID)
	if err != nil || got.ID != s.ID || got.Cron != s.Cron || !got.NextFireTimes[0].Equal(s.NextFireTimes[0]) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if _, err := c.CreateSchedule(ctx, client.ScheduleRequest{Cron: "99 * * * *", Job: client.JobTemplate{Topic: "reports", CallbackURL: "http://127.0.0.1:9/"}}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a bad cron: %v, want ErrInvalid", err)
	}
	if paused, err := c.PauseSchedule(ctx, s.ID); err != nil || !paused.Paused {
		t.Fatalf("pause: %+v, %v", paused, err)
	}

	run := func(args ...string) string {
		t.Helper()
		r := cli(t, nil, append(args, "--server", p.url)...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	out := run("schedules", "create", "--every", "90s", "--catch-up", "all", "--topic", "pings", "--callback", "http://127.0.0.1:9/ping", "--json")
	var created map[string]any
	if err := json.Unmarshal([]byte(out), &created); err != nil || created["every_ms"] != float64(90000) || created["catch_up"] != "all" {
		t.Fatalf("schedules create --json: %v\n%s", err, out)
	}
	id := created["id"].(string)
	list := run("schedules", "list")
	if !strings.Contains(list, id) || !strings.Contains(list, "0 9 * * MON-FRI") || !strings.Contains(list, "NEXT_FIRE") {
		t.Errorf("schedules list:\n%s", list)
	}
	if page := run("schedules", "list", "--limit", "1"); !strings.Contains(page, "more: --cursor") {
		t.Errorf("schedules list --limit 1 shows no next page:\n%s", page)
	}
	if get := run("schedules", "get", id); !strings.Contains(get, "NEXT_FIRE_TIMES") || !strings.Contains(get, "schedule:"+id+":") {
		t.Errorf("schedules get:\n%s", get)
	}
	if out := run("schedules", "pause", id); !strings.Contains(out, "true") || !strings.Contains(out, "(none while paused)") {
		t.Errorf("schedules pause:\n%s", out)
	}
	if out := run("schedules", "resume", id, "--json"); !strings.Contains(out, `"paused": false`) && !strings.Contains(out, `"paused":false`) {
		t.Errorf("schedules resume:\n%s", out)
	}
	run("schedules", "delete", id)
	if r := cli(t, nil, "schedules", "get", id, "--server", p.url); r.code != 1 || !strings.Contains(r.stderr, "not_found") && !strings.Contains(r.stderr, "not found") {
		t.Errorf("schedules get after delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, nil, "schedules", "create", "--every", "1s", "--topic", "t", "--callback", "http://127.0.0.1:9/", "--time-zone", "UTC", "--server", p.url); r.code != 1 || !strings.Contains(r.stderr, "time_zone") {
		t.Errorf("a refused create: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	if resumed, err := c.ResumeSchedule(ctx, s.ID); err != nil || resumed.Paused {
		t.Fatalf("resume: %+v, %v", resumed, err)
	}
	all, next, err := c.Schedules(ctx, 10, "")
	if err != nil || len(all) != 1 || all[0].ID != s.ID || next != "" {
		t.Fatalf("list: %+v, %q, %v", all, next, err)
	}
	if err := c.DeleteSchedule(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSchedule(ctx, s.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
}
