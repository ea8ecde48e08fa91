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
	q      timer.DeadQuery
	cursor string
}

// readDeadPage reads GET /v1/deadletters?topic=T&from=T1&to=T2&error=TEXT
// &limit=N&cursor=C; after is cursor's former name, still taken. The
// topic is optional: without one the page is of every topic the token may
// see. A parameter not its own, or given twice, is a 400 naming it.
func readDeadPage(r *http.Request, in *deadPage) (*claim, error) {
	q := r.URL.Query()
	in.q = timer.DeadQuery{Topic: q.Get("topic"), ErrorContains: q.Get("error"), Limit: DefaultDeadPage}
	c := &claim{topics: []topicRef{{field: "topic", name: &in.q.Topic, optional: true}}}
	if err := onlyParams(q, "topic", "from", "to", "error", "limit", "cursor", "after"); err != nil {
		return c, err
	}
	cursor, field := q.Get("cursor"), "cursor"
	if q.Has("after") {
		if q.Has("cursor") {
			return c, &timer.FieldError{Field: "after", Message: "the former name of cursor: give one of them"}
		}
		cursor, field = q.Get("after"), "after"
	}
	if _, err := timer.ParseCursor(cursor, field); err != nil {
		return c, err
	}
	in.cursor = cursor
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
// order they died; next_cursor is "" after the last page. Without a
// topic it lists those of every topic the token may see.
func (a *API) listDead(w http.ResponseWriter, r *http.Request, in *deadPage, _ *admission) {
	ctx, f := r.Context(), in.q
	if f.Topic == "" {
		topics, err := a.jobs.Topics(ctx)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		for _, t := range visibleTopics(ctx, topics) {
			f.Topics = append(f.Topics, t.Name)
		}
	}
	jobs, next, err := a.dead.ListDead(ctx, f, in.cursor)
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
