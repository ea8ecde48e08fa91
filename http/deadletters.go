package http

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toc-project/toc/timer"
)

// replayDead: POST /v1/deadletters/{id}/replay; the body is optional.
func (a *API) replayDead(w http.ResponseWriter, r *http.Request) {
	a.withWhen(w, r, true, func(ctx context.Context, id timer.JobID, fireAt time.Time, delay time.Duration) (*timer.Job, error) {
		// A replayed job is pending again: it counts against max_pending.
		if err := a.roomForPending(ctx, 1); err != nil {
			return nil, err
		}
		j, err := a.jobs.Replay(ctx, id, fireAt, delay)
		n := auditNote{action: auditDeadReplay, target: "job " + id.String()}
		if err == nil {
			n.topic, n.jobs, n.details = j.Topic, 1, map[string]string{"fire_at": formatTime(j.DueAt)}
		}
		a.audit(w, r, n, err)
		return j, err
	})
}

// listDead: GET /v1/deadletters?topic=T&from=T1&to=T2&error=TEXT&limit=N
// &cursor=C, from the task store's dead rows, in the order they died;
// next_cursor is "" after the last page. Without a topic it lists those
// of every topic the token may see. after is cursor's former name, still
// taken.
func (a *API) listDead(w http.ResponseWriter, r *http.Request) {
	ctx, q := r.Context(), r.URL.Query()
	f, cursor, err := deadQuery(ctx, q)
	if err == nil && f.Topic == "" {
		var topics []timer.Topic
		topics, err = a.jobs.Topics(ctx)
		for _, t := range visibleTopics(ctx, topics) {
			f.Topics = append(f.Topics, t.Name)
		}
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	jobs, next, err := a.dead.ListDead(ctx, f, cursor)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	views := make([]jobView, len(jobs))
	for i, j := range jobs {
		views[i] = viewOf(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": views, "next_cursor": next})
}

// deadQuery reads the query of GET /v1/deadletters: its timer.DeadQuery
// (with the topic, when one is given, that the token may use) and its
// cursor. A parameter not its own, or given twice, is a 400 naming it.
func deadQuery(ctx context.Context, q url.Values) (timer.DeadQuery, string, error) {
	f := timer.DeadQuery{ErrorContains: q.Get("error"), Limit: DefaultDeadPage}
	if err := onlyParams(q, "topic", "from", "to", "error", "limit", "cursor", "after"); err != nil {
		return f, "", err
	}
	cursor, field := q.Get("cursor"), "cursor"
	if q.Has("after") {
		if q.Has("cursor") {
			return f, "", &timer.FieldError{Field: "after", Message: "the former name of cursor: give one of them"}
		}
		cursor, field = q.Get("after"), "after"
	}
	if _, err := timer.ParseCursor(cursor, field); err != nil {
		return f, "", err
	}
	var err error
	if f.Topic, err = qualify(ctx, "topic", q.Get("topic")); err != nil {
		return f, "", err
	}
	if f.Topic != "" {
		if err := allowTopic(ctx, f.Topic); err != nil {
			return f, "", err
		}
	}
	if err := timeRange(q.Get, &f.From, &f.To); err != nil {
		return f, "", err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxDeadPage {
			return f, "", &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxDeadPage)}
		}
		f.Limit = n
	}
	return f, cursor, nil
}

// purgeDead: DELETE /v1/deadletters/{id}.
func (a *API) purgeDead(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err == nil {
		err = a.visibleJob(r.Context(), id)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	err = a.dead.PurgeDead(r.Context(), id)
	n := auditNote{action: auditDeadPurge, target: "job " + id.String()}
	if err == nil {
		n.jobs = 1
		// The row stays, purged: its topic files the entry under it.
		if j, gerr := a.jobs.Get(r.Context(), id); gerr == nil {
			n.topic = j.Topic
		}
	}
	a.audit(w, r, n, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id.String(), "purged": true})
}
