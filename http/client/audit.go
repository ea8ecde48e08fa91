package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AuditEntry is one recorded admin or bulk action (GET /v1/audit).
type AuditEntry struct {
	ID int64
	// At is when the action ended.
	At time.Time
	// Who is the caller: its token's name (the tokens file's entry;
	// "api-token", "api-token-N" for the Nth --api-token), "anonymous"
	// when the server takes none.
	Who string
	// Action is what was done, as "topic.pause" or "deadletter.purge_bulk".
	Action string
	Topic  string
	// Target is a job or schedule ("job ID", "schedule ID"), or a bulk
	// action's filter in query form; "" for the topic as a whole.
	Target string
	// Details is a JSON object of what the action was given and answered,
	// nil for none.
	Details json.RawMessage
	// Jobs is how many jobs the action changed.
	Jobs int64
	// Result is "ok" or "failed"; Error says why it failed.
	Result string
	Error  string
}

type auditEntryJSON struct {
	ID      int64           `json:"id"`
	At      stamp           `json:"at"`
	Who     string          `json:"who"`
	Action  string          `json:"action"`
	Topic   string          `json:"topic,omitempty"`
	Target  string          `json:"target,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Jobs    int64           `json:"jobs"`
	Result  string          `json:"result"`
	Error   string          `json:"error,omitempty"`
}

// MarshalJSON writes e as the API does.
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	return marshal(auditEntryJSON{ID: e.ID, At: stamp(e.At), Who: e.Who, Action: e.Action, Topic: e.Topic, Target: e.Target,
		Details: e.Details, Jobs: e.Jobs, Result: e.Result, Error: e.Error})
}

// UnmarshalJSON reads e as the API writes it.
func (e *AuditEntry) UnmarshalJSON(data []byte) error {
	var w auditEntryJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*e = AuditEntry{ID: w.ID, At: time.Time(w.At), Who: w.Who, Action: w.Action, Topic: w.Topic, Target: w.Target,
		Details: w.Details, Jobs: w.Jobs, Result: w.Result, Error: w.Error}
	return nil
}

// AuditQuery selects entries of the audit log; empty fields select all.
type AuditQuery struct {
	Action string
	Topic  string
	Who    string
	// Since and Until bound the entries' times: Since <= At < Until.
	Since, Until time.Time
	// Limit is the most entries a page holds (0: the server's 100).
	Limit int
	// Cursor is the previous page's next cursor ("" for the newest).
	Cursor string
}

// Audit lists a page of the audit log, newest first, and returns the next
// page's cursor, "" after the last (GET /v1/audit).
func (c *Client) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, string, error) {
	v := url.Values{}
	for k, s := range map[string]string{"action": q.Action, "topic": q.Topic, "who": q.Who, "cursor": q.Cursor,
		"since": formatTime(q.Since), "until": formatTime(q.Until)} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	var out struct {
		Entries    []AuditEntry `json:"entries"`
		NextCursor string       `json:"next_cursor"`
	}
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/audit", query: v, safety: idempotent}, &out); err != nil {
		return nil, "", err
	}
	if out.Entries == nil {
		out.Entries = []AuditEntry{}
	}
	return out.Entries, out.NextCursor, nil
}
