// Groups: one main task, many jobs, and one callback when every member
// has ended.

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// GroupCallback is what a group calls once complete: a job due at once,
// in Topic ("" for the server's default, groups), whose payload carries
// the counts and Payload.
type GroupCallback struct {
	CallbackURL string          `json:"callback_url"`
	Topic       string          `json:"topic,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// GroupRequest creates a group (CreateGroup).
type GroupRequest struct {
	ID         string         `json:"id"`
	OnComplete *GroupCallback `json:"on_complete,omitempty"`
}

// Group is a group as the API shows it (GET /v1/groups/{id}).
type Group struct {
	ID        string
	Sealed    bool
	Completed bool
	// OnComplete is nil for none.
	OnComplete *GroupCallback
	// Counts are the members by status now; Total their number.
	Counts map[Status]int64
	Total  int64
	// CreatedAt, SealedAt and CompletedAt: zero while not yet.
	CreatedAt, SealedAt, CompletedAt time.Time
	// CompletedCounts are the counts the completion carried.
	CompletedCounts map[Status]int64
	// CompletionJobID is the completion's job, 0 until scheduled.
	CompletionJobID uint64
}

type groupJSON struct {
	ID              string           `json:"id"`
	Sealed          bool             `json:"sealed"`
	Completed       bool             `json:"completed"`
	OnComplete      *GroupCallback   `json:"on_complete"`
	Counts          map[Status]int64 `json:"counts"`
	Total           int64            `json:"total"`
	CreatedAt       stamp            `json:"created_at"`
	SealedAt        stamp            `json:"sealed_at,omitzero"`
	CompletedAt     stamp            `json:"completed_at,omitzero"`
	CompletedCounts map[Status]int64 `json:"completed_counts,omitempty"`
	CompletionJobID decimal          `json:"completion_job_id,omitzero"`
}

// MarshalJSON writes g as the API does.
func (g Group) MarshalJSON() ([]byte, error) {
	return marshal(groupJSON{ID: g.ID, Sealed: g.Sealed, Completed: g.Completed, OnComplete: g.OnComplete,
		Counts: g.Counts, Total: g.Total, CreatedAt: stamp(g.CreatedAt), SealedAt: stamp(g.SealedAt),
		CompletedAt: stamp(g.CompletedAt), CompletedCounts: g.CompletedCounts, CompletionJobID: decimal(g.CompletionJobID)})
}

// UnmarshalJSON reads the API's JSON of a group.
func (g *Group) UnmarshalJSON(data []byte) error {
	var w groupJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*g = Group{ID: w.ID, Sealed: w.Sealed, Completed: w.Completed, OnComplete: w.OnComplete, Counts: w.Counts, Total: w.Total,
		CreatedAt: time.Time(w.CreatedAt), SealedAt: time.Time(w.SealedAt), CompletedAt: time.Time(w.CompletedAt),
		CompletedCounts: w.CompletedCounts, CompletionJobID: uint64(w.CompletionJobID)}
	return nil
}

func groupPath(id, suffix string) string { return "/v1/groups/" + url.PathEscape(id) + suffix }

// CreateGroup creates an open group (POST /v1/groups); jobs join it with
// JobRequest.GroupID until SealGroup. The same request again answers the
// open group (created false): it is safe to retry.
func (c *Client) CreateGroup(ctx context.Context, r GroupRequest) (*Group, bool, error) {
	g := new(Group)
	status, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/groups", body: r, safety: idempotent}, g)
	if err != nil {
		return nil, false, err
	}
	return g, status == http.StatusCreated, nil
}

// GetGroup returns a group with its members' counts (GET
// /v1/groups/{id}).
func (c *Client) GetGroup(ctx context.Context, id string) (*Group, error) {
	g := new(Group)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: groupPath(id, ""), safety: idempotent}, g); err != nil {
		return nil, err
	}
	return g, nil
}

// SealGroup closes a group to new members (POST /v1/groups/{id}/seal);
// it completes once every member has ended.
func (c *Client) SealGroup(ctx context.Context, id string) (*Group, error) {
	g := new(Group)
	if _, err := c.call(ctx, request{method: http.MethodPost, path: groupPath(id, "/seal"), safety: idempotent}, g); err != nil {
		return nil, err
	}
	return g, nil
}
