// The client's job commands: schedule, jobs get|cancel|reschedule|attempts.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toc-project/toc/http/client"
)

// jobFields are the columns of a table of jobs, and of dead letters.
var jobFields = []string{"id", "topic", "status", "fire_at", "attempts", "max_attempts", "last_status", "last_error", "updated_at", "version", "group_id"}

// scheduleFlags are the flags of toc schedule.
func scheduleFlags(fs *flagSet) prepareCall {
	topic := fs.string("topic", "", "topic of the job")
	callback := fs.string("callback", "", "callback URL")
	when := whenFlags(fs, false)
	fs.Var(fs.Lookup("fire-at").Value, "at", "the same as --fire-at")
	payload := fs.string("payload", "", "payload, a JSON value")
	key := fs.string("key", "", "idempotency key")
	bizID := fs.Uint64("biz-id", 0, "business id (slot basis)")
	maxAttempts := fs.int("max-attempts", 0, "attempts before the job is dead (default: the topic's)")
	expireAfter := fs.Int64("expire-after-ms", -2, "deadline in ms after the due time: a job that cannot start an attempt by then ends expired "+
		"instead of firing late (0: must not fire late at all; -1: no deadline, even if the topic has one; default: the topic's)")
	window := fs.Duration("window", 0, "flexible window: the job may fire until its due time plus this (e.g. 60s; at most 24h)")
	concurrencyKey := fs.string("concurrency-key", "", "jobs of the topic with this key are never in flight at once")
	group := fs.string("group", "", "the open group the job joins (toc groups create)")
	return func([]string) (call, error) {
		w, err := when()
		if err != nil {
			return nil, err
		}
		if *window < 0 || *window%time.Millisecond != 0 {
			return nil, errors.New("--window must be whole milliseconds, not negative")
		}
		r := client.JobRequest{Topic: *topic, CallbackURL: *callback, FireAt: w.FireAt, Delay: w.Delay,
			Key: *key, BizID: *bizID, MaxAttempts: *maxAttempts, Window: *window, ConcurrencyKey: *concurrencyKey, GroupID: *group}
		if *expireAfter != -2 {
			r.ExpireAfterMS = expireAfter
		}
		if *payload != "" {
			if !json.Valid([]byte(*payload)) {
				return nil, errors.New("--payload is not valid JSON")
			}
			r.Payload = json.RawMessage(*payload)
		}
		return func(ctx context.Context, c *client.Client) (any, error) {
			j, _, err := c.Schedule(ctx, r)
			return j, err
		}, nil
	}
}

// rescheduleFlags are the flags of toc jobs reschedule.
func rescheduleFlags(fs *flagSet) prepareCall {
	ifMatch := ifMatchFlag(fs)
	return idWhenFlags(fs, true, func(c *client.Client, ctx context.Context, id uint64, w client.When) (*client.Job, error) {
		return c.Reschedule(ctx, id, w, ifMatch()...)
	})
}

// cancelFlags are the flags of toc jobs cancel.
func cancelFlags(fs *flagSet) prepareCall {
	ifMatch := ifMatchFlag(fs)
	return onJob(func(c *client.Client, ctx context.Context, id uint64) (*client.Job, error) {
		return c.Cancel(ctx, id, ifMatch()...)
	})(fs)
}

// ifMatchFlag declares --if-match, and returns the options of the change
// it asks for: none, or client.IfMatch.
func ifMatchFlag(fs *flagSet) func() []client.ChangeOption {
	version := fs.Int64("if-match", 0, "change the job only if it is still at this `version` (as jobs get shows it); "+
		"if it changed since, nothing changes and the command fails with version_mismatch")
	return func() []client.ChangeOption {
		if *version == 0 {
			return nil
		}
		return []client.ChangeOption{client.IfMatch(*version)}
	}
}

// idWhenFlags are the flags of a command that moves the job of its ID
// argument to --fire-at or --delay (one of them required when required)
// with act.
func idWhenFlags(fs *flagSet, required bool, act func(*client.Client, context.Context, uint64, client.When) (*client.Job, error)) prepareCall {
	when := whenFlags(fs, required)
	return func(args []string) (call, error) {
		id, err := parseID(args[0])
		if err != nil {
			return nil, err
		}
		w, err := when()
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c *client.Client) (any, error) { return act(c, ctx, id, w) }, nil
	}
}

// attemptList is the answer of toc jobs attempts, as the API's.
type attemptList struct {
	Attempts []client.Attempt `json:"attempts"`
}

// attempts lists a job's attempts; in the form of a method of the client,
// for onJob.
func attempts(c *client.Client, ctx context.Context, id uint64) (attemptList, error) {
	a, err := c.Attempts(ctx, id)
	return attemptList{a}, err
}
