// The client's commands over many jobs and attempts: jobs find, jobs
// list, jobs cancel-all and reschedule-all, jobs attempts, dead summary,
// dead replay-all and purge-all.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/toc-project/toc/http/client"
)

// jobSearch are the flags of toc jobs list.
func jobSearch(fs *flagSet) prepareCall {
	var q client.SearchQuery
	fs.StringVar(&q.Topic, "topic", "", "the jobs' topic (required)")
	status := fs.string("status", "", "pending, firing, done, cancelled, dead or purged; several separated by commas")
	fs.Uint64Var(&q.BizID, "biz-id", 0, "the jobs of this business id")
	fs.StringVar(&q.Key, "key", "", "the job of this idempotency key")
	after := fs.timeVar("fire-after", "due at or after this RFC 3339 time")
	before := fs.timeVar("fire-before", "due before this RFC 3339 time")
	fs.StringVar(&q.Cursor, "cursor", "", "where the page starts: the next of the page before")
	fs.IntVar(&q.Limit, "limit", 0, "page size (0: the API's, 100)")
	return func([]string) (call, error) {
		q.FireAfter, q.FireBefore = *after, *before
		if *status != "" {
			for s := range strings.SplitSeq(*status, ",") {
				q.Statuses = append(q.Statuses, client.Status(strings.TrimSpace(s)))
			}
		}
		return func(ctx context.Context, c *client.Client) (any, error) { return c.Search(ctx, q) }, nil
	}
}

// businessObject declares the flags naming a business object: its topic,
// and its business id or key.
func businessObject(fs *flagSet) *client.Match {
	var m client.Match
	fs.StringVar(&m.Topic, "topic", "", "the jobs' topic (required)")
	fs.Uint64Var(&m.BizID, "biz-id", 0, "the jobs of this business id")
	fs.StringVar(&m.Key, "key", "", "the jobs of this idempotency key")
	return &m
}

// cancelAll are the flags of toc jobs cancel-all.
func cancelAll(fs *flagSet) prepareCall {
	m := businessObject(fs)
	return func([]string) (call, error) {
		return func(ctx context.Context, c *client.Client) (any, error) { return c.CancelMatching(ctx, *m) }, nil
	}
}

// rescheduleAll are the flags of toc jobs reschedule-all.
func rescheduleAll(fs *flagSet) prepareCall {
	m := businessObject(fs)
	when := whenFlags(fs, true)
	return func([]string) (call, error) {
		w, err := when()
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, c *client.Client) (any, error) { return c.RescheduleMatching(ctx, *m, w) }, nil
	}
}

// foundJobs is a table of what GET /v1/jobs/search found, and a line when
// it could not look for the key in every topic.
func foundJobs(w io.Writer, p map[string]any) {
	printTable(w, []string{"id", "topic", "key", "status", "fire_at"}, objects(p["jobs"])...)
	if p["truncated"] == true {
		fmt.Fprintf(w, "\nthe key was looked for in the first %v topics only: toc jobs list --topic T --key K looks in another\n", p["topics_searched"])
	}
}

// jobPage is a table of a page of GET /v1/jobs.
func jobPage(w io.Writer, p map[string]any) {
	printTable(w, jobFields, objects(p["jobs"])...)
	if next, _ := p["next_cursor"].(string); next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}

// attemptTable is a table of GET /v1/jobs/{id}/attempts.
func attemptTable(w io.Writer, a map[string]any) {
	printTable(w, []string{"attempt", "started_at", "duration_ms", "status_code", "error", "response_excerpt"}, objects(a["attempts"])...)
}

// deadRangeFlags are the flags of toc dead summary.
func deadRangeFlags(fs *flagSet) prepareCall {
	var f client.DeadFilter
	fs.StringVar(&f.Topic, "topic", "", "the dead letters' topic (required)")
	from := fs.timeVar("from", "dead at or after this RFC 3339 time")
	to := fs.timeVar("to", "dead before this RFC 3339 time")
	return func([]string) (call, error) {
		f.From, f.To = *from, *to
		return func(ctx context.Context, c *client.Client) (any, error) { return c.DeadSummary(ctx, f) }, nil
	}
}

// deadBulk are the flags of toc dead replay-all (replay) and purge-all.
func deadBulk(replay bool) func(fs *flagSet) prepareCall {
	return func(fs *flagSet) prepareCall {
		var b client.DeadBulk
		fs.StringVar(&b.Topic, "topic", "", "the dead letters' topic (required)")
		fs.StringVar(&b.Signature, "signature", "", "only this group of toc dead summary (default: all)")
		from := fs.timeVar("from", "dead at or after this RFC 3339 time")
		to := fs.timeVar("to", "dead before this RFC 3339 time")
		fs.IntVar(&b.Limit, "limit", 0, "the most to act on in this call (0: the API's, 1,000)")
		fs.Float64Var(&b.Rate, "rate", 0, "the most a second (0: the API's, 500)")
		var when func() (client.When, error)
		if replay {
			when = whenFlags(fs, false)
		}
		return func([]string) (call, error) {
			b.From, b.To = *from, *to
			if !replay {
				return func(ctx context.Context, c *client.Client) (any, error) { return c.PurgeMatching(ctx, b) }, nil
			}
			w, err := when()
			if err != nil {
				return nil, err
			}
			if !w.FireAt.IsZero() {
				return nil, errors.New("give --delay: a bulk replay takes no --fire-at")
			}
			b.Delay = w.Delay
			return func(ctx context.Context, c *client.Client) (any, error) { return c.ReplayMatching(ctx, b) }, nil
		}
	}
}

// deadGroups is a table of GET /v1/deadletters/summary.
func deadGroups(w io.Writer, s map[string]any) {
	printTable(w, []string{"count", "signature", "first_seen", "last_seen", "example_id"}, objects(s["groups"])...)
	if t, _ := s["truncated"].(bool); t {
		fmt.Fprintln(w, "\n(truncated: more dead letters than the summary reads)")
	}
}
