package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// Groups creates, seals and reads groups of jobs; *timer.Scheduler
// implements it. An API whose Jobs do not answers 404 on /v1/groups.
type Groups interface {
	// CreateGroup stores a new open group (created true), or answers the
	// open one of that id with the same callback; another is a conflict.
	CreateGroup(ctx context.Context, g timer.Group) (*timer.Group, bool, error)
	// SealGroup closes a group to new members.
	SealGroup(ctx context.Context, id string) (*timer.Group, error)
	// Group returns a group with its members counted now.
	Group(ctx context.Context, id string) (timer.GroupView, error)
	// ScheduleGroup creates (or takes) a group, commits the requests as
	// its members, all or nothing, and seals it when seal is set.
	ScheduleGroup(ctx context.Context, g timer.Group, seal bool, reqs []timer.Request) (*timer.Group, []timer.Result, error)
}

var _ Groups = (*timer.Scheduler)(nil)

func (a *API) groupRoutes(r chi.Router) {
	r.With(a.limitBody(a.cfg.MaxBodyBytes)).Post("/groups", a.createGroup)
	r.Get("/groups/{id}", a.getGroup)
	r.Post("/groups/{id}/seal", a.sealGroup)
}

// groupRequest is the body of POST /v1/groups.
type groupRequest struct {
	ID         string           `json:"id"`
	OnComplete *callbackRequest `json:"on_complete"`
}

// batchGroupRequest is the "group" of a batch: the group its jobs join,
// created unless it exists, sealed after them unless seal is false.
type batchGroupRequest struct {
	ID         string           `json:"id"`
	OnComplete *callbackRequest `json:"on_complete"`
	Seal       *bool            `json:"seal"`
}

// callbackRequest is a group's on_complete.
type callbackRequest struct {
	CallbackURL *string         `json:"callback_url"`
	Topic       *string         `json:"topic"`
	Payload     json.RawMessage `json:"payload"`
}

// group turns the body into a group, checking the callback URL as any
// job's is checked. Fields are named as in POST /v1/groups; prefix names
// where the group sits in the body ("" or "group.").
func (a *API) group(ctx context.Context, id string, cb *callbackRequest, prefix string) (timer.Group, error) {
	g := timer.Group{ID: id}
	if err := timer.CheckGroupID(id, prefix+"id"); err != nil {
		return g, err
	}
	if cb == nil {
		if ns := namespaceOf(ctx); ns != "" {
			// The completion job's topic is what places a group.
			return g, &timer.FieldError{Field: prefix + "on_complete", Message: "required of a group in namespace " + ns}
		}
		return g, allowTopic(ctx, groupTopic(&g))
	}
	if cb.CallbackURL == nil || *cb.CallbackURL == "" {
		return g, &timer.FieldError{Field: prefix + "on_complete.callback_url", Message: "required"}
	}
	if err := a.checkCallback(ctx, *cb.CallbackURL); err != nil {
		if fe, ok := err.(*timer.FieldError); ok {
			return g, &timer.FieldError{Field: prefix + "on_complete." + fe.Field, Message: fe.Message}
		}
		return g, err
	}
	g.OnComplete = &timer.GroupCallback{CallbackURL: *cb.CallbackURL}
	topic := timer.DefaultGroupTopic
	if cb.Topic != nil {
		topic = *cb.Topic
	}
	var err error
	if g.OnComplete.Topic, err = qualify(ctx, prefix+"on_complete.topic", topic); err != nil {
		return g, err
	}
	if len(cb.Payload) > 0 && !bytes.Equal(cb.Payload, []byte("null")) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, cb.Payload); err != nil {
			return g, &timer.FieldError{Field: prefix + "on_complete.payload", Message: "must be a JSON value"}
		}
		g.OnComplete.Payload = compact.Bytes()
	}
	return g, allowTopic(ctx, groupTopic(&g))
}

// groupTopic is the topic a group belongs to, for tokens scoped to
// topics: its completion job's.
func groupTopic(g *timer.Group) string {
	if g.OnComplete != nil && g.OnComplete.Topic != "" {
		return g.OnComplete.Topic
	}
	return timer.DefaultGroupTopic
}

// visibleGroup returns nil when the request's token may see group id: auth
// off, a token of every topic, or one whose topics hold the group's
// (groupTopic). Another tenant's group is answered as a missing one, word
// for word as the task store words it.
func visibleGroup(ctx context.Context, groups Groups, id string) error {
	p := principalFrom(ctx)
	if p == nil || p.AllTopics() {
		return nil
	}
	v, err := groups.Group(ctx, id)
	if err != nil {
		return err
	}
	if !p.Allows(groupTopic(v.Group)) {
		return fmt.Errorf("get group %q: %w", id, timer.ErrNotFound)
	}
	return nil
}

func (a *API) groups(w http.ResponseWriter, r *http.Request) (Groups, bool) {
	g, ok := a.jobs.(Groups)
	if !ok {
		a.writeError(w, r, errNoGroups)
	}
	return g, ok
}

var errNoGroups = &timer.FieldError{Field: "id", Message: "this service keeps no groups"}

// createGroup: POST /v1/groups.
func (a *API) createGroup(w http.ResponseWriter, r *http.Request) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	var body groupRequest
	if err := decode(r.Body, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	g, err := a.group(r.Context(), body.ID, body.OnComplete, "")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	stored, created, err := groups.CreateGroup(r.Context(), g)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, groupViewOf(timer.GroupView{Group: stored, Now: map[timer.Status]int64{}}))
}

// pathGroup returns the group store and the {id} of the path, a group the
// request's token may see; otherwise it answers the error and reports
// false.
func (a *API) pathGroup(w http.ResponseWriter, r *http.Request) (Groups, string, bool) {
	groups, ok := a.groups(w, r)
	if !ok {
		return nil, "", false
	}
	id := chi.URLParam(r, "id")
	err := timer.CheckGroupID(id, "id")
	if err == nil {
		err = visibleGroup(r.Context(), groups, id)
	}
	if err != nil {
		a.writeError(w, r, err)
		return nil, "", false
	}
	return groups, id, true
}

// getGroup: GET /v1/groups/{id}.
func (a *API) getGroup(w http.ResponseWriter, r *http.Request) {
	groups, id, ok := a.pathGroup(w, r)
	if !ok {
		return
	}
	v, err := groups.Group(r.Context(), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, groupViewOf(v))
}

// sealGroup: POST /v1/groups/{id}/seal.
func (a *API) sealGroup(w http.ResponseWriter, r *http.Request) {
	groups, id, ok := a.pathGroup(w, r)
	if !ok {
		return
	}
	if _, err := groups.SealGroup(r.Context(), id); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := groups.Group(r.Context(), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, groupViewOf(v))
}

// groupView is a group as the API shows it.
type groupView struct {
	ID         string        `json:"id"`
	Sealed     bool          `json:"sealed"`
	Completed  bool          `json:"completed"`
	OnComplete *callbackView `json:"on_complete"`
	// Counts and Total are the members now, by status.
	Counts      map[string]int64 `json:"counts"`
	Total       int64            `json:"total"`
	CreatedAt   string           `json:"created_at"`
	SealedAt    string           `json:"sealed_at,omitempty"`
	CompletedAt string           `json:"completed_at,omitempty"`
	// CompletedCounts are the counts the completion carried.
	CompletedCounts map[string]int64 `json:"completed_counts,omitempty"`
	CompletionJobID string           `json:"completion_job_id,omitempty"`
}

type callbackView struct {
	CallbackURL string          `json:"callback_url"`
	Topic       string          `json:"topic"`
	Payload     json.RawMessage `json:"payload"`
}

// countsOf names every status of timer.Statuses, zeros included.
func countsOf(c map[timer.Status]int64) (map[string]int64, int64) {
	out := make(map[string]int64, len(timer.Statuses))
	var total int64
	for _, st := range timer.Statuses {
		out[st.String()] = c[st]
		total += c[st]
	}
	return out, total
}

func groupViewOf(v timer.GroupView) groupView {
	g := v.Group
	out := groupView{
		ID:          g.ID,
		Sealed:      !g.SealedAt.IsZero(),
		Completed:   !g.CompletedAt.IsZero(),
		CreatedAt:   formatTime(g.CreatedAt),
		SealedAt:    formatTime(g.SealedAt),
		CompletedAt: formatTime(g.CompletedAt),
	}
	out.Counts, out.Total = countsOf(v.Now)
	if out.Completed {
		out.CompletedCounts, _ = countsOf(g.Counts)
	}
	if g.CompletionJob != 0 {
		out.CompletionJobID = g.CompletionJob.String()
	}
	if cb := g.OnComplete; cb != nil {
		out.OnComplete = &callbackView{CallbackURL: cb.CallbackURL, Topic: shownTopic(cb.Topic), Payload: json.RawMessage("null")}
		if len(cb.Payload) > 0 {
			out.OnComplete.Payload = cb.Payload
		}
	}
	return out
}
