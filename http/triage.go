// Dead-letter triage: GET /v1/deadletters/summary, and POST
// /v1/deadletters/replay and /purge acting on a filter.

package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// Defaults of a bulk replay or purge: how many dead letters one request
// acts on, and how many a second.
const (
	DefaultDeadBulk = 1000
	DefaultDeadRate = 500
)

// readDeadSummary reads GET /v1/deadletters/summary?topic=T&from=T1&to=T2;
// any other parameter, or one given twice, is a 400 naming it.
func readDeadSummary(r *http.Request, f *timer.DeadFilter) (*claim, error) {
	q := r.URL.Query()
	f.Topic = q.Get("topic")
	c := &claim{topics: []topicRef{{field: "topic", name: &f.Topic}}}
	if err := onlyParams(q, "topic", "from", "to"); err != nil {
		return c, err
	}
	return c, timeRange(q.Get, &f.From, &f.To)
}

// deadSummary: GET /v1/deadletters/summary.
func (a *API) deadSummary(w http.ResponseWriter, r *http.Request, f *timer.DeadFilter, _ *admission) {
	groups, truncated, err := a.dead.Summary(r.Context(), *f)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]map[string]any, len(groups))
	for i, g := range groups {
		out[i] = map[string]any{"signature": g.Signature, "count": g.Count, "example_id": g.Example.String(),
			"first_seen": formatTime(g.FirstSeen), "last_seen": formatTime(g.LastSeen)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": out, "truncated": truncated})
}

// bulkRequest is the body of POST /v1/deadletters/replay and /purge.
type bulkRequest struct {
	Topic     string   `json:"topic"`
	Signature string   `json:"signature"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Limit     *int     `json:"limit"`
	Rate      *float64 `json:"rate"`
	// DelayMS (replay only) puts the replayed jobs' due time that far
	// ahead; 0 or none: now.
	DelayMS *int64 `json:"delay_ms"`
}

// deadBulk is the input of POST /v1/deadletters/replay and /purge: the
// body and the filter it makes.
type deadBulk struct {
	b bulkRequest
	f timer.DeadFilter
	// delay is a replay's.
	delay time.Duration
}

// readDeadBulk reads the body of a bulk replay (replay true) or purge.
func readDeadBulk(replay bool) func(*http.Request, *deadBulk) (*claim, error) {
	return func(r *http.Request, in *deadBulk) (*claim, error) {
		if err := decode(r.Body, &in.b); err != nil {
			return nil, err
		}
		in.f = timer.DeadFilter{Topic: in.b.Topic, Signature: in.b.Signature}
		c := &claim{topics: []topicRef{{field: "topic", name: &in.f.Topic}}}
		get := func(k string) string { return map[string]string{"from": in.b.From, "to": in.b.To}[k] }
		if err := timeRange(get, &in.f.From, &in.f.To); err != nil {
			return c, err
		}
		if !replay {
			if in.b.DelayMS != nil {
				return c, &timer.FieldError{Field: "delay_ms", Message: "a purge has no due time"}
			}
			return c, nil
		}
		var err error
		_, in.delay, err = whenRequest{DelayMS: in.b.DelayMS}.when(true)
		return c, err
	}
}

// replayMatching: POST /v1/deadletters/replay. Each replayed job is
// pending again: the replay stops at the token's max_pending, which the
// admission charges job by job.
func (a *API) replayMatching(w http.ResponseWriter, r *http.Request, in *deadBulk, ad *admission) {
	a.bulkDead(w, r, in, auditDeadReplayBulk, "replayed", func(ctx context.Context, j *timer.Job) error {
		if err := ad.pending(ctx, 1); err != nil {
			return err
		}
		_, err := a.jobs.Replay(ctx, j.ID, time.Time{}, in.delay)
		return err
	})
}

// purgeMatching: POST /v1/deadletters/purge.
func (a *API) purgeMatching(w http.ResponseWriter, r *http.Request, in *deadBulk, _ *admission) {
	a.bulkDead(w, r, in, auditDeadPurgeBulk, "purged", func(ctx context.Context, j *timer.Job) error {
		return a.dead.PurgeDead(ctx, j.ID)
	})
}

// bulkDead acts on the dead letters in selects and answers {counted: N,
// "more": bool}, recorded in the audit log as audited.
func (a *API) bulkDead(w http.ResponseWriter, r *http.Request, in *deadBulk, audited, counted string, act func(context.Context, *timer.Job) error) {
	b := in.b
	limit, rate := DefaultDeadBulk, float64(DefaultDeadRate)
	if b.Limit != nil {
		limit = *b.Limit
	}
	if b.Rate != nil {
		rate = *b.Rate
	}
	n, more, err := a.dead.Each(r.Context(), in.f, limit, rate, act)
	a.audit(w, r, auditNote{action: audited, topic: in.f.Topic, target: filterText("signature", b.Signature, "from", b.From, "to", b.To),
		jobs: n, details: map[string]any{"limit": limit, "rate": rate, "delay_ms": b.DelayMS, "more": more}}, err)
	if qe, ok := errors.AsType[*quotaError](err); ok {
		qe.msg = strings.TrimSuffix(qe.msg, nothingWritten) + fmt.Sprintf("; %d jobs were %s before it, and no more", n, counted)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{counted: n, "more": more})
}

// timeRange reads the RFC 3339 times "from" and "to" through get into
// from and to, leaving each zero when absent.
func timeRange(get func(string) string, from, to *time.Time) error {
	for _, p := range []struct {
		field string
		to    *time.Time
	}{{"from", from}, {"to", to}} {
		if s := get(p.field); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return &timer.FieldError{Field: p.field, Message: "must be an RFC 3339 time"}
			}
			*p.to = t
		}
	}
	return nil
}
