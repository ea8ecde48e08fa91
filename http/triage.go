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

// deadSummary: GET /v1/deadletters/summary?topic=T&from=T1&to=T2; any
// other parameter, or one given twice, is a 400 naming it.
func (a *API) deadSummary(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := timer.DeadFilter{Topic: q.Get("topic")}
	err := onlyParams(q, "topic", "from", "to")
	if err == nil {
		err = deadRange(r.Context(), q.Get, &f)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	groups, truncated, err := a.dead.Summary(r.Context(), f)
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

// replayMatching: POST /v1/deadletters/replay.
func (a *API) replayMatching(w http.ResponseWriter, r *http.Request) {
	a.bulkDead(w, r, auditDeadReplayBulk, "replayed", func(b bulkRequest) (func(context.Context, *timer.Job) error, error) {
		when := whenRequest{DelayMS: b.DelayMS}
		_, delay, err := when.when(true)
		return func(ctx context.Context, j *timer.Job) error {
			// Each replayed job is pending again: the replay stops at the
			// token's max_pending.
			if err := a.roomForPending(ctx, 1); err != nil {
				return err
			}
			_, err := a.jobs.Replay(ctx, j.ID, time.Time{}, delay)
			return err
		}, err
	})
}

// purgeMatching: POST /v1/deadletters/purge.
func (a *API) purgeMatching(w http.ResponseWriter, r *http.Request) {
	a.bulkDead(w, r, auditDeadPurgeBulk, "purged", func(b bulkRequest) (func(context.Context, *timer.Job) error, error) {
		if b.DelayMS != nil {
			return nil, &timer.FieldError{Field: "delay_ms", Message: "a purge has no due time"}
		}
		return func(ctx context.Context, j *timer.Job) error { return a.dead.PurgeDead(ctx, j.ID) }, nil
	})
}

// bulkDead acts on the dead letters a bulkRequest selects and answers
// {counted: N, "more": bool}, recorded in the audit log as audited.
func (a *API) bulkDead(w http.ResponseWriter, r *http.Request, audited, counted string, action func(bulkRequest) (func(context.Context, *timer.Job) error, error)) {
	var b bulkRequest
	if err := decode(r.Body, &b); err != nil {
		a.writeError(w, r, err)
		return
	}
	f := timer.DeadFilter{Topic: b.Topic, Signature: b.Signature}
	get := func(k string) string { return map[string]string{"from": b.From, "to": b.To}[k] }
	if err := deadRange(r.Context(), get, &f); err != nil {
		a.writeError(w, r, err)
		return
	}
	act, err := action(b)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	limit, rate := DefaultDeadBulk, float64(DefaultDeadRate)
	if b.Limit != nil {
		limit = *b.Limit
	}
	if b.Rate != nil {
		rate = *b.Rate
	}
	n, more, err := a.dead.Each(r.Context(), f, limit, rate, act)
	a.audit(w, r, auditNote{action: audited, topic: f.Topic, target: filterText("signature", b.Signature, "from", b.From, "to", b.To),
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

// deadRange checks f's topic and reads its from and to through get.
func deadRange(ctx context.Context, get func(string) string, f *timer.DeadFilter) error {
	var err error
	if f.Topic, err = requiredTopic(ctx, f.Topic); err != nil {
		return err
	}
	if err := allowTopic(ctx, f.Topic); err != nil {
		return err
	}
	return timeRange(get, &f.From, &f.To)
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
