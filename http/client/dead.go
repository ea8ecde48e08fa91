// Dead letters: list, replay and purge them one by one, group them by why
// they died, and replay or purge a group.

package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// DeadQuery selects dead letters (GET /v1/deadletters). Every field left
// zero selects all: without Topic, those of every topic the token may see.
type DeadQuery struct {
	Topic string
	// From and To bound when they died: at or after, before.
	From time.Time
	To   time.Time
	// Error selects those whose last error holds this text.
	Error string
	// Limit is the page's size, 1..1000 (0: the API's, 100).
	Limit int
	// Cursor is where the page starts: the Next of the page before.
	Cursor string
}

func (q DeadQuery) values() url.Values {
	v := url.Values{}
	setString(v, "topic", q.Topic)
	setTime(v, "from", q.From)
	setTime(v, "to", q.To)
	setString(v, "error", q.Error)
	setInt(v, "limit", q.Limit)
	setString(v, "cursor", q.Cursor)
	return v
}

// DeadPage is a page of dead letters, in the order they died: the shape
// of every page of the API, as JobPage.
type DeadPage struct {
	Jobs []Job `json:"jobs"`
	// NextCursor is the next page's DeadQuery.Cursor, "" after the last.
	NextCursor string `json:"next_cursor"`

	// Items is Jobs.
	//
	// Deprecated: use Jobs.
	Items []Job `json:"-"`
	// Next is NextCursor.
	//
	// Deprecated: use NextCursor.
	Next string `json:"-"`
}

// DeadLetters returns a page of the dead letters q selects (GET
// /v1/deadletters), read from the task store's rows.
func (c *Client) DeadLetters(ctx context.Context, q DeadQuery) (*DeadPage, error) {
	p := new(DeadPage)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/deadletters", query: q.values(), safety: idempotent}, p); err != nil {
		return nil, err
	}
	if p.Jobs == nil {
		p.Jobs = []Job{}
	}
	p.Items, p.Next = p.Jobs, p.NextCursor
	return p, nil
}

// DeadLettersAll iterates over every dead letter q selects from q.Cursor
// on, a page at a time; it ends after the first error, which it yields.
func (c *Client) DeadLettersAll(ctx context.Context, q DeadQuery) iter.Seq2[Job, error] {
	return all(q.Cursor, func(cursor string) ([]Job, string, error) {
		q.Cursor = cursor
		p, err := c.DeadLetters(ctx, q)
		if err != nil {
			return nil, "", err
		}
		return p.Jobs, p.NextCursor, nil
	})
}

func deadPath(id uint64, rest string) string {
	return "/v1/deadletters/" + strconv.FormatUint(id, 10) + rest
}

// ReplayDead makes a dead letter pending again at w (the zero When: now),
// its attempts reset (POST /v1/deadletters/{id}/replay). A job that is not
// dead is ErrConflict. It is not retried after a transport error.
func (c *Client) ReplayDead(ctx context.Context, id uint64, w When) (*Job, error) {
	return c.job(ctx, request{method: http.MethodPost, path: deadPath(id, "/replay"), body: w.body(), safety: refused})
}

// PurgeDead purges a dead letter (DELETE /v1/deadletters/{id}): its row
// ends purged, kept as a record. A job that is not dead is ErrConflict.
func (c *Client) PurgeDead(ctx context.Context, id uint64) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: deadPath(id, ""), safety: idempotent}, nil)
	return err
}

// DeadFilter selects a topic's dead letters by when they died, for
// DeadSummary.
type DeadFilter struct {
	Topic string
	From  time.Time
	To    time.Time
}

// DeadGroup is the dead letters of one signature: "HTTP <status>" when
// the receiver answered, else the last error with its numbers made N.
type DeadGroup struct {
	Signature string
	Count     int
	FirstSeen time.Time
	LastSeen  time.Time
	// ExampleID is one of the group's jobs.
	ExampleID uint64
}

type deadGroupJSON struct {
	Signature string  `json:"signature"`
	Count     int     `json:"count"`
	FirstSeen stamp   `json:"first_seen"`
	LastSeen  stamp   `json:"last_seen"`
	ExampleID decimal `json:"example_id"`
}

// MarshalJSON writes g as the API does.
func (g DeadGroup) MarshalJSON() ([]byte, error) {
	return marshal(deadGroupJSON{Signature: g.Signature, Count: g.Count, FirstSeen: stamp(g.FirstSeen),
		LastSeen: stamp(g.LastSeen), ExampleID: decimal(g.ExampleID)})
}

// UnmarshalJSON reads the API's JSON of a group.
func (g *DeadGroup) UnmarshalJSON(data []byte) error {
	var w deadGroupJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*g = DeadGroup{Signature: w.Signature, Count: w.Count, FirstSeen: time.Time(w.FirstSeen),
		LastSeen: time.Time(w.LastSeen), ExampleID: uint64(w.ExampleID)}
	return nil
}

// DeadSummary is a topic's dead letters grouped by why they died, the
// largest group first.
type DeadSummary struct {
	Groups []DeadGroup `json:"groups"`
	// Truncated is true when there were more dead letters than the
	// summary reads.
	Truncated bool `json:"truncated"`
}

// DeadSummary groups the dead letters f selects by signature (GET
// /v1/deadletters/summary).
func (c *Client) DeadSummary(ctx context.Context, f DeadFilter) (*DeadSummary, error) {
	v := url.Values{"topic": {f.Topic}}
	setTime(v, "from", f.From)
	setTime(v, "to", f.To)
	s := new(DeadSummary)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/deadletters/summary", query: v, safety: idempotent}, s); err != nil {
		return nil, err
	}
	if s.Groups == nil {
		s.Groups = []DeadGroup{}
	}
	return s, nil
}

// DeadBulk selects the dead letters ReplayMatching and PurgeMatching act
// on, in the order they died, and how fast.
type DeadBulk struct {
	Topic string
	// Signature is one group of DeadSummary; "" for all.
	Signature string
	From      time.Time
	To        time.Time
	// Limit is the most one call acts on, 1..10,000 (0: the API's,
	// 1,000), and Rate the most a second (0: the API's, 500).
	Limit int
	Rate  float64
	// Delay puts the replayed jobs' due time that far ahead (replay only;
	// 0: now).
	Delay time.Duration
}

type deadBulkJSON struct {
	Topic     string   `json:"topic"`
	Signature string   `json:"signature,omitempty"`
	From      string   `json:"from,omitempty"`
	To        string   `json:"to,omitempty"`
	Limit     int      `json:"limit,omitempty"`
	Rate      *float64 `json:"rate,omitempty"`
	DelayMS   *int64   `json:"delay_ms,omitempty"`
}

// MarshalJSON writes b as the API reads it.
func (b DeadBulk) MarshalJSON() ([]byte, error) {
	w := deadBulkJSON{Topic: b.Topic, Signature: b.Signature, Limit: b.Limit}
	if !b.From.IsZero() {
		w.From = b.From.UTC().Format(time.RFC3339Nano)
	}
	if !b.To.IsZero() {
		w.To = b.To.UTC().Format(time.RFC3339Nano)
	}
	if b.Rate != 0 {
		w.Rate = &b.Rate
	}
	if b.Delay != 0 {
		d := ms(b.Delay)
		w.DelayMS = &d
	}
	return marshal(w)
}

// ReplayResult and PurgeResult count what one call of ReplayMatching or
// PurgeMatching did; while More is true, more dead letters match: call
// again.
type (
	ReplayResult struct {
		Replayed int  `json:"replayed"`
		More     bool `json:"more"`
	}
	PurgeResult struct {
		Purged int  `json:"purged"`
		More   bool `json:"more"`
	}
)

// ReplayMatching replays up to b.Limit of the dead letters b selects, at
// most b.Rate a second (POST /v1/deadletters/replay). It is not retried
// after a transport error; a retried 503 counts its last attempt only.
func (c *Client) ReplayMatching(ctx context.Context, b DeadBulk) (*ReplayResult, error) {
	out := new(ReplayResult)
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/deadletters/replay", body: b, safety: refused}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// PurgeMatching purges up to b.Limit of the dead letters b selects, at
// most b.Rate a second (POST /v1/deadletters/purge); b.Delay must be 0.
// It is not retried after a transport error; a retried 503 counts its last
// attempt only.
func (c *Client) PurgeMatching(ctx context.Context, b DeadBulk) (*PurgeResult, error) {
	out := new(PurgeResult)
	if _, err := c.call(ctx, request{method: http.MethodPost, path: "/v1/deadletters/purge", body: b, safety: refused}, out); err != nil {
		return nil, err
	}
	return out, nil
}
