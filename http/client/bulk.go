// Acting on jobs chosen by id (POST /v1/jobs/bulk, /v1/deadletters/bulk),
// and finding a job by id or key across topics (GET /v1/jobs/search).

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// MaxSelection is the most ids one call of CancelSelected and the other
// selection calls takes.
const MaxSelection = 1000

// SelectionResult is what a call on a selection did: how many jobs
// changed, and each that did not with the error the single call on it
// would have answered (not_found for a job of a topic the token may not
// see, in_flight, already_fired, conflict, pending_quota, unavailable).
type SelectionResult struct {
	Changed int                `json:"changed"`
	Failed  []SelectionFailure `json:"failed"`
}

// SelectionFailure is a job of a selection that did not change.
type SelectionFailure struct {
	ID      uint64
	Code    string
	Message string
	Field   string
}

type selectionFailureJSON struct {
	ID    decimal `json:"id"`
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	} `json:"error"`
}

// MarshalJSON writes f as the API does.
func (f SelectionFailure) MarshalJSON() ([]byte, error) {
	var w selectionFailureJSON
	w.ID, w.Error.Code, w.Error.Message, w.Error.Field = decimal(f.ID), f.Code, f.Message, f.Field
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of a failed id.
func (f *SelectionFailure) UnmarshalJSON(data []byte) error {
	var w selectionFailureJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*f = SelectionFailure{ID: uint64(w.ID), Code: w.Error.Code, Message: w.Error.Message, Field: w.Error.Field}
	return nil
}

type selectionJSON struct {
	Action string   `json:"action"`
	IDs    []string `json:"ids"`
	whenJSON
}

// selection sends action on ids to path, with the due time w when given.
// It is not retried after a transport error (a second call would find
// the first one's jobs changed, and count them as failed); a retried 503
// counts its last attempt only.
func (c *Client) selection(ctx context.Context, path, action string, ids []uint64, w *When) (*SelectionResult, error) {
	body := selectionJSON{Action: action, IDs: make([]string, len(ids))}
	for i, id := range ids {
		body.IDs[i] = strconv.FormatUint(id, 10)
	}
	if w != nil {
		body.whenJSON = w.body()
	}
	out := new(SelectionResult)
	if _, err := c.call(ctx, request{method: http.MethodPost, path: path, body: body, safety: refused}, out); err != nil {
		return nil, err
	}
	if out.Failed == nil {
		out.Failed = []SelectionFailure{}
	}
	return out, nil
}

// CancelSelected cancels each job of ids (1..MaxSelection), each as
// definitely as Cancel (POST /v1/jobs/bulk).
func (c *Client) CancelSelected(ctx context.Context, ids []uint64) (*SelectionResult, error) {
	return c.selection(ctx, "/v1/jobs/bulk", "cancel", ids, nil)
}

// RescheduleSelected moves each job of ids to w, each as Reschedule does
// (POST /v1/jobs/bulk).
func (c *Client) RescheduleSelected(ctx context.Context, ids []uint64, w When) (*SelectionResult, error) {
	return c.selection(ctx, "/v1/jobs/bulk", "reschedule", ids, &w)
}

// FireNowSelected makes each job of ids due now: a reschedule to now,
// never before it (POST /v1/jobs/bulk).
func (c *Client) FireNowSelected(ctx context.Context, ids []uint64) (*SelectionResult, error) {
	return c.selection(ctx, "/v1/jobs/bulk", "fire_now", ids, nil)
}

// ReplaySelected replays each dead letter of ids at w (the zero When:
// now), each as ReplayDead (POST /v1/deadletters/bulk).
func (c *Client) ReplaySelected(ctx context.Context, ids []uint64, w When) (*SelectionResult, error) {
	return c.selection(ctx, "/v1/deadletters/bulk", "replay", ids, &w)
}

// PurgeSelected purges each dead letter of ids, each as PurgeDead (POST
// /v1/deadletters/bulk).
func (c *Client) PurgeSelected(ctx context.Context, ids []uint64) (*SelectionResult, error) {
	return c.selection(ctx, "/v1/deadletters/bulk", "purge", ids, nil)
}

// FindResult is what Find found.
type FindResult struct {
	Jobs []Job `json:"jobs"`
	// TopicsSearched counts the topics whose keys were looked at;
	// Truncated is true when the token sees more (their keys were not).
	TopicsSearched int  `json:"topics_searched"`
	Truncated      bool `json:"truncated"`
}

// Find finds the job whose id is q and the jobs whose idempotency key is
// q, in the topics the token may see (GET /v1/jobs/search).
func (c *Client) Find(ctx context.Context, q string) (*FindResult, error) {
	out := new(FindResult)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/jobs/search", query: url.Values{"q": {q}}, safety: idempotent}, out); err != nil {
		return nil, err
	}
	if out.Jobs == nil {
		out.Jobs = []Job{}
	}
	return out, nil
}
