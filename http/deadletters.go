package http

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/toc-project/toc/timer"
)

// readReplay reads a replay: the dead job of the path and the optional
// body's due time. A replayed job is pending again: it counts against
// max_pending.
func readReplay(r *http.Request, in *jobAt) (*claim, error) {
	c, err := readJobAt(r, in)
	if err == nil {
		in.fireAt, in.delay, err = readWhen(r, true)
	}
	c.replayed = 1
	return c, err
}

// replayDead: POST /v1/deadletters/{id}/replay; the body is optional.
func (a *API) replayDead(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	j, err := a.jobs.Replay(r.Context(), in.id, in.fireAt, in.delay)
	n := auditNote{action: auditDeadReplay, target: "job " + in.id.String()}
	if err == nil {
		n.topic, n.jobs, n.details = j.Topic, 1, map[string]string{"fire_at": formatTime(j.DueAt)}
	}
	a.audit(w, r, n, err)
	a.writeJob(w, r, j, err)
}

// deadPage is the input of GET /v1/deadletters: the query and the cursor.
type deadPage struct {
	q     timer.DeadQuery
	after string
}

// readDeadPage reads GET /v1/deadletters?topic=T&from=T1&to=T2&error=TEXT
// &limit=N&after=CURSOR.
func readDeadPage(r *http.Request, in *deadPage) (*claim, error) {
	q := r.URL.Query()
	in.q = timer.DeadQuery{ErrorContains: q.Get("error"), Limit: DefaultDeadPage}
	in.q.Topic, in.after = q.Get("topic"), q.Get("after")
	c := &claim{topics: []topicRef{{field: "topic", name: &in.q.Topic}}}
	if err := timeRange(q.Get, &in.q.From, &in.q.To); err != nil {
		return c, err
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxDeadPage {
			return c, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxDeadPage)}
		}
		in.q.Limit = n
	}
	return c, nil
}

// listDead: GET /v1/deadletters, from the task store's dead rows, in the
// order they died.
func (a *API) listDead(w http.ResponseWriter, r *http.Request, in *deadPage, _ *admission) {
	jobs, next, err := a.dead.ListDead(r.Context(), in.q, in.after)
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
func (a *API) purgeDead(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	err := a.dead.PurgeDead(r.Context(), in.id)
	n := auditNote{action: auditDeadPurge, target: "job " + in.id.String()}
	if err == nil {
		n.jobs = 1
		// The row stays, purged: its topic files the entry under it.
		if j, gerr := a.jobs.Get(r.Context(), in.id); gerr == nil {
			n.topic = j.Topic
		}
	}
	a.audit(w, r, n, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": in.id.String(), "purged": true})
}
