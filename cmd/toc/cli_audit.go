// The client's audit command: toc audit, a page of the audit log.

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/toc-project/toc/http/client"
)

// auditFields are the columns of toc audit.
var auditFields = []string{"at", "who", "action", "topic", "target", "jobs", "result", "error"}

// auditFlags are the flags of toc audit.
func auditFlags(fs *flagSet) prepareCall {
	var q client.AuditQuery
	fs.StringVar(&q.Action, "action", "", "only this action, as topic.pause or deadletter.purge_bulk")
	fs.StringVar(&q.Topic, "topic", "", "only actions on this topic")
	fs.StringVar(&q.Who, "who", "", "only actions of this caller, by its token's name, as api-token")
	since := fs.timeVar("since", "only actions at or after this RFC 3339 time")
	until := fs.timeVar("until", "only actions before this RFC 3339 time")
	fs.StringVar(&q.Cursor, "cursor", "", "where the page starts: the next of the page before")
	fs.IntVar(&q.Limit, "limit", 0, "page size (0: the API's, 100)")
	return func([]string) (call, error) {
		q.Since, q.Until = *since, *until
		return func(ctx context.Context, c *client.Client) (any, error) {
			entries, next, err := c.Audit(ctx, q)
			return struct {
				Entries    []client.AuditEntry `json:"entries"`
				NextCursor string              `json:"next_cursor"`
			}{entries, next}, err
		}, nil
	}
}

// auditPage is a table of GET /v1/audit, newest first.
func auditPage(w io.Writer, p map[string]any) {
	printTable(w, auditFields, objects(p["entries"])...)
	if next, _ := p["next_cursor"].(string); next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}
