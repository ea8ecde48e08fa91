// The client's topic commands: topics list|get|set|pause|resume|retention.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/toc-project/toc/http/client"
)

// topicFields are the columns of a table of topics.
var topicFields = []string{"name", "slots", "max_attempts", "rate_limit", "burst", "max_in_flight", "weight", "paused", "delivery"}

// topicItems is the answer of toc topics list, as the API's.
type topicItems struct {
	Topics []client.Topic `json:"topics"`
}

func topicList(ctx context.Context, c *client.Client) (any, error) {
	t, err := c.Topics(ctx)
	return topicItems{t}, err
}

// printTopic prints a topic, and its live usage when the answer has it.
func printTopic(w io.Writer, t map[string]any) {
	printTable(w, topicFields, t)
	if u, ok := t["usage"].(map[string]any); ok {
		fmt.Fprintln(w)
		printTable(w, []string{"due_waiting", "in_flight", "rate", "throttled", "members"}, u)
	}
}

// topicSettings are the flags of toc topics set: the settings given, and
// only those, make the patch.
func topicSettings(fs *flagSet) prepareCall {
	var p client.TopicPatch
	given := 0
	toInt := func(v float64) int { return int(v) }
	toMS := func(v float64) time.Duration { return time.Duration(v) * time.Millisecond }
	for _, s := range []struct {
		flag, usage string
		float       bool
		apply       func(v float64, reset bool)
	}{
		{"max-attempts", "default attempts of the topic's jobs, 1..64", false, patchOf(&p.MaxAttempts, toInt)},
		{"rate-limit", "dispatches per second over the cluster; 0: none", true, patchOf(&p.RateLimit, func(v float64) float64 { return v })},
		{"burst", "dispatches that may go at once after a quiet spell; needs a rate limit", false, patchOf(&p.Burst, toInt)},
		{"max-in-flight", "webhook calls running at once over the cluster; 0: none", false, patchOf(&p.MaxInFlight, toInt)},
		{"weight", "share of a saturated worker against other topics", false, patchOf(&p.Weight, toInt)},
		{"retry-base-ms", "backoff of the first retry, in ms", false, patchOf(&p.RetryBase, toMS)},
		{"retry-max-ms", "longest backoff of a retry, in ms", false, patchOf(&p.RetryMax, toMS)},
		{"lease-ms", "how long a claimed job stays with its worker, in ms", false, patchOf(&p.Lease, toMS)},
		{"callback-timeout-ms", "bound of one webhook call, in ms", false, patchOf(&p.CallbackTimeout, toMS)},
		{"lateness-slo-ms", "the lateness objective: a call that starts within it of its due time is on time, in ms", false, patchOf(&p.LatenessSLO, toMS)},
		{"expire-after-ms", "deadline of the topic's jobs that set none, in ms after their due time (0: must not fire late; the default: none)", false, patchOf(&p.ExpireAfter, toMS)},
	} {
		fs.Var(&setting{float: s.float, apply: s.apply, given: &given}, s.flag, s.usage+`; "default" for the default`)
	}
	var d client.Delivery
	way := fs.string("delivery", "", "how the topic's due jobs go out: webhook, pull, amqp or nats, with the way's settings below, given whole")
	fs.StringVar(&d.Broker, "broker", "", "amqp, nats: the broker, by its name in the server's --amqp or --nats")
	fs.StringVar(&d.Exchange, "exchange", "", "amqp: the exchange (\"\": the default exchange)")
	fs.StringVar(&d.RoutingKey, "routing-key", "", "amqp: the routing key; may use {topic}, {job_id}, {key}, {biz_id}, {biz_type}")
	fs.BoolVar(&d.Transient, "transient", false, "amqp: publish non-persistent messages")
	fs.StringVar(&d.Subject, "subject", "", "nats: the subject, which a JetStream stream captures; may use the job's fields as --routing-key")
	return func(args []string) (call, error) {
		if *way != "" {
			d.Way = *way
			p.Delivery = &d
			given++
		} else if d != (client.Delivery{}) {
			return nil, errors.New("--broker, --exchange, --routing-key, --transient and --subject go with --delivery")
		}
		if given == 0 {
			return nil, errors.New("give a setting to change")
		}
		return func(ctx context.Context, c *client.Client) (any, error) { return c.PatchTopic(ctx, args[0], p) }, nil
	}
}

// patchOf returns what sets dst from the value of a flag: conv of it, or
// back to the default.
func patchOf[T any](dst *client.Patch[T], conv func(float64) T) func(v float64, reset bool) {
	return func(v float64, reset bool) {
		if reset {
			*dst = client.Reset[T]()
			return
		}
		*dst = client.Set(conv(v))
	}
}

// maxSetting bounds a setting's value: beyond any setting's range, and
// within a time.Duration of milliseconds.
const maxSetting = 1e12

// setting is a flag of toc topics set: given, it applies its value, or
// the default for "default".
type setting struct {
	float bool
	apply func(v float64, reset bool)
	given *int // counts the settings given
}

func (s *setting) String() string { return "" }

func (s *setting) Set(v string) error {
	*s.given++
	if v == "default" {
		s.apply(0, true)
		return nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || !s.float && n != math.Trunc(n) {
		return errors.New(`not a number, nor "default"`)
	}
	if math.Abs(n) > maxSetting {
		return fmt.Errorf("out of range (at most %g)", float64(maxSetting))
	}
	s.apply(n, false)
	return nil
}

// topicRetention are the flags of toc topics retention: with none it shows
// the topic's retention in force and its storage; each status's flag
// given (a Go duration, 0 keeps forever, "default" the server's global
// retention) or --reset changes the topic's own retention first.
func topicRetention(fs *flagSet) prepareCall {
	var p client.TopicPatch
	retain := map[string]client.Patch[time.Duration]{}
	for _, st := range retiredStatuses {
		fs.Var(&retentionFlag{status: st, retain: retain}, st,
			fmt.Sprintf(`how long a job that ended %s is kept, a Go duration (1h, 30m); 0: forever; "default": the server's --retain-%s`, st, st))
	}
	reset := fs.bool("reset", false, "go back to the server's global retention for every status not given")
	return func(args []string) (call, error) {
		if *reset {
			for _, st := range retiredStatuses {
				if _, given := retain[st]; !given {
					retain[st] = client.Reset[time.Duration]()
				}
			}
		}
		name := args[0]
		return func(ctx context.Context, c *client.Client) (any, error) {
			if len(retain) > 0 {
				p.Retain = retain
				if _, err := c.PatchTopic(ctx, name, p); err != nil {
					return nil, err
				}
			}
			return c.TopicStats(ctx, name)
		}, nil
	}
}

// retiredStatuses are the statuses whose jobs retire, as the API names
// them.
var retiredStatuses = []string{"done", "cancelled", "expired", "dead", "purged"}

// retentionFlag is a status's flag of toc topics retention.
type retentionFlag struct {
	status string
	retain map[string]client.Patch[time.Duration]
}

func (f *retentionFlag) String() string { return "" }

func (f *retentionFlag) Set(v string) error {
	if v == "default" {
		f.retain[f.status] = client.Reset[time.Duration]()
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return errors.New(`not a duration (1h, 30m, 0 for forever), nor "default"`)
	case d < 0:
		return errors.New("negative: 0 keeps forever")
	}
	f.retain[f.status] = client.Set(d)
	return nil
}

// printRetention prints a topic's stats as its retention in force and
// what the task store holds of each ended status: a count the database
// estimated starts with "~".
func printRetention(w io.Writer, s map[string]any) {
	retention, _ := s["retention"].(map[string]any)
	storage, _ := s["storage"].(map[string]any)
	rows := make([]map[string]any, 0, len(retiredStatuses))
	for _, st := range retiredStatuses {
		r := map[string]any{"status": st, "retention": "forever"}
		n, _ := retention[st+"_ms"].(json.Number)
		if ms, _ := n.Int64(); ms > 0 {
			r["retention"] = (time.Duration(ms) * time.Millisecond).String()
		}
		if o, ok := storage[st].(map[string]any); ok {
			count := func(n, estimated string) string {
				c := cell(o[n])
				if o[estimated] == true {
					c = "~" + c
				}
				return c
			}
			r["rows"], r["past_retention"], r["oldest_ended_at"] = count("rows", "rows_estimated"), count("past_retention", "past_retention_estimated"), o["oldest_ended_at"]
		}
		rows = append(rows, r)
	}
	printTable(w, []string{"status", "retention", "rows", "oldest_ended_at", "past_retention"}, rows...)
}
