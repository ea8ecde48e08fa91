// The client's schedule commands: schedules create|list|get|pause|resume|delete.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toc-project/toc/http/client"
)

// scheduleFields are the columns of a table of schedules.
var scheduleFields = []string{"id", "cron", "time_zone", "every_ms", "catch_up", "paused", "next_fire"}

// scheduleRow adds next_fire, the first of next_fire_times, to a
// schedule's JSON object.
func scheduleRow(o map[string]any) map[string]any {
	if next, _ := o["next_fire_times"].([]any); len(next) > 0 {
		o["next_fire"] = next[0]
	}
	if job, ok := o["job"].(map[string]any); ok {
		o["topic"] = job["topic"]
	}
	return o
}

// printSchedule prints a schedule, its job and its next fire times.
func printSchedule(w io.Writer, o map[string]any) {
	printTable(w, append(scheduleFields[:6:6], "topic", "key_prefix"), scheduleRow(o))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "NEXT_FIRE_TIMES")
	next, _ := o["next_fire_times"].([]any)
	for _, t := range next {
		fmt.Fprintln(w, cell(t))
	}
	switch {
	case len(next) > 0:
	case o["paused"] == true:
		fmt.Fprintln(w, "- (none while paused)")
	default:
		fmt.Fprintln(w, "- (none left)")
	}
}

// schedulePage is a table of GET /v1/schedules.
func schedulePage(w io.Writer, p map[string]any) {
	rows := objects(p["schedules"])
	for _, r := range rows {
		scheduleRow(r)
	}
	printTable(w, append(scheduleFields, "topic"), rows...)
	if next, _ := p["next_cursor"].(string); next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}

// scheduleCreateFlags are the flags of toc schedules create.
func scheduleCreateFlags(fs *flagSet) prepareCall {
	cron := fs.string("cron", "", `cron expression: 5 fields, or 6 with seconds first ("*/10 * * * * *")`)
	zone := fs.string("time-zone", "", "IANA time zone of --cron (default UTC)")
	every := fs.duration("every", 0, "instead of --cron: an occurrence every so long (at least 1s)")
	start := fs.string("start-at", "", "no occurrence before this time (RFC 3339)")
	end := fs.string("end-at", "", "no occurrence after this time (RFC 3339)")
	catchUp := fs.string("catch-up", "", "occurrences missed while toc was down: skip, last (default) or all")
	topic := fs.string("topic", "", "topic of the jobs")
	callback := fs.string("callback", "", "callback URL of the jobs")
	payload := fs.string("payload", "", "payload of the jobs, a JSON value")
	bizID := fs.Uint64("biz-id", 0, "business id of the jobs (slot basis)")
	maxAttempts := fs.int("max-attempts", 0, "attempts before a job is dead (default: the topic's)")
	priority := fs.string("priority", "", "high, normal or low")
	concurrencyKey := fs.string("concurrency-key", "", "the occurrences' jobs are never in flight at once")
	return func([]string) (call, error) {
		r := client.ScheduleRequest{Cron: *cron, TimeZone: *zone, Every: *every, CatchUp: client.CatchUp(*catchUp),
			Job: client.JobTemplate{Topic: *topic, CallbackURL: *callback, BizID: *bizID, MaxAttempts: *maxAttempts,
				Priority: client.Priority(*priority), ConcurrencyKey: *concurrencyKey}}
		for _, f := range []struct {
			name string
			in   string
			out  *time.Time
		}{{"--start-at", *start, &r.StartAt}, {"--end-at", *end, &r.EndAt}} {
			if f.in == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, f.in)
			if err != nil {
				return nil, fmt.Errorf("%s: not an RFC 3339 time", f.name)
			}
			*f.out = t
		}
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				return nil, errors.New("--payload is not valid JSON")
			}
			r.Job.Payload = json.RawMessage(*payload)
		}
		return func(ctx context.Context, c *client.Client) (any, error) { return c.CreateSchedule(ctx, r) }, nil
	}
}

// scheduleListFlags are the flags of toc schedules list.
func scheduleListFlags(fs *flagSet) prepareCall {
	limit := fs.int("limit", 0, "schedules per page (default 100)")
	cursor := fs.string("cursor", "", "the cursor a previous page printed")
	return func([]string) (call, error) {
		return func(ctx context.Context, c *client.Client) (any, error) {
			list, next, err := c.Schedules(ctx, *limit, strings.TrimSpace(*cursor))
			return struct {
				Schedules  []client.Schedule `json:"schedules"`
				NextCursor string            `json:"next_cursor"`
			}{list, next}, err
		}, nil
	}
}

// onSchedule is a command on the schedule its one argument names.
func onSchedule(do func(c *client.Client, ctx context.Context, id uint64) (any, error)) func(fs *flagSet) prepareCall {
	return func(*flagSet) prepareCall {
		return func(args []string) (call, error) {
			id, err := parseID(args[0])
			if err != nil {
				return nil, errors.New(strings.Replace(err.Error(), "job id", "schedule id", 1))
			}
			return func(ctx context.Context, c *client.Client) (any, error) { return do(c, ctx, id) }, nil
		}
	}
}

func scheduleGet(c *client.Client, ctx context.Context, id uint64) (any, error) {
	return c.GetSchedule(ctx, id)
}

func schedulePause(c *client.Client, ctx context.Context, id uint64) (any, error) {
	return c.PauseSchedule(ctx, id)
}

func scheduleResume(c *client.Client, ctx context.Context, id uint64) (any, error) {
	return c.ResumeSchedule(ctx, id)
}

func scheduleDelete(c *client.Client, ctx context.Context, id uint64) (any, error) {
	if err := c.DeleteSchedule(ctx, id); err != nil {
		return nil, err
	}
	return map[string]any{"id": fmt.Sprint(id), "deleted": true}, nil
}
