package http

import (
	"context"
	"fmt"
	"net/http"
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

// listDead: GET /v1/deadletters?topic=T&from=T1&to=T2&error=TEXT&limit=N&after=CURSOR,
// from the task store's dead rows, in the order they died.
func (a *API) listDead(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := timer.DeadQuery{ErrorContains: q.Get("error")}
	var err error
	if f.Topic, err = requiredTopic(r.Context(), q.Get("topic")); err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := allowTopic(r.Context(), f.Topic); err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := timeRange(q.Get, &f.From, &f.To); err != nil {
		a.writeError(w, r, err)
		return
	}
	limit := DefaultDeadPage
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxDeadPage {
			a.writeError(w, r, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxDeadPage)})
			return
		}
		limit = n
	}
	f.Limit = limit
	jobs, next, err := a.dead.ListDead(r.Context(), f, q.Get("after"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	items := make([]jobView, len(jobs))
	for i, j := range jobs {
		items[i] = viewOf(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next": next})
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
