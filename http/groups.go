package http

import (
	"bytes"
	"context"
	"encoding/json"
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
	// GetGroup returns a group as stored, its members not counted.
	GetGroup(ctx context.Context, id string) (*timer.Group, error)
	// ScheduleGroup creates (or takes) a group, commits the requests as
	// its members, all or nothing, and seals it when seal is set.
	ScheduleGroup(ctx context.Context, g timer.Group, seal bool, reqs []timer.Request) (*timer.Group, []timer.Result, error)
}

var _ Groups = (*timer.Scheduler)(nil)

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

// readGroup reads a group a request creates into g and claims it: its
// id, its completion topic (which the completion creates, so it counts
// under max_topics) and callback. Fields are named as in POST /v1/groups;
// prefix names where the group sits in the body ("" or "group.").
func (a *API) readGroup(ctx context.Context, id string, cb *callbackRequest, prefix string, g *timer.Group, c *claim) error {
	*g = timer.Group{ID: id}
	if err := timer.CheckGroupID(id, prefix+"id"); err != nil {
		return err
	}
	c.groups = append(c.groups, groupRef{field: prefix + "id", id: &g.ID, use: groupCreate})
	if cb == nil {
		if ns := namespaceOf(ctx); ns != "" {
			// The completion job's topic is what places a group.
			return &timer.FieldError{Field: prefix + "on_complete", Message: "required of a group in namespace " + ns}
		}
		topic := timer.DefaultGroupTopic
		c.topics = append(c.topics, topicRef{field: prefix + "on_complete", name: &topic})
		return nil
	}
	g.OnComplete = &timer.GroupCallback{CallbackURL: deref(cb.CallbackURL), Topic: timer.DefaultGroupTopic}
	if cb.Topic != nil {
		g.OnComplete.Topic = *cb.Topic
	}
	if len(cb.Payload) > 0 && !bytes.Equal(cb.Payload, []byte("null")) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, cb.Payload); err != nil {
			return &timer.FieldError{Field: prefix + "on_complete.payload", Message: "must be a JSON value"}
		}
		g.OnComplete.Payload = compact.Bytes()
	}
	c.topics = append(c.topics, topicRef{field: prefix + "on_complete.topic", name: &g.OnComplete.Topic, create: true})
	c.callbacks = append(c.callbacks, callbackRef{field: prefix + "on_complete.callback_url", url: g.OnComplete.CallbackURL, topic: &g.OnComplete.Topic, item: -1})
	return nil
}

// groupTopic is the topic a group belongs to, for tokens scoped to
// topics: its completion job's.
func groupTopic(g *timer.Group) string {
	if g.OnComplete != nil && g.OnComplete.Topic != "" {
		return g.OnComplete.Topic
	}
	return timer.DefaultGroupTopic
}

func (a *API) groups(w http.ResponseWriter, r *http.Request) (Groups, bool) {
	g, ok := a.jobs.(Groups)
	if !ok {
		a.writeError(w, r, errNoGroups)
	}
	return g, ok
}

var errNoGroups = &timer.FieldError{Field: "id", Message: "this service keeps no groups"}

// readNewGroup reads POST /v1/groups.
func (a *API) readNewGroup(r *http.Request, g *timer.Group) (*claim, error) {
	var body groupRequest
	if err := decode(r.Body, &body); err != nil {
		return nil, err
	}
	c := &claim{}
	return c, a.readGroup(r.Context(), body.ID, body.OnComplete, "", g, c)
}

// createGroup: POST /v1/groups.
func (a *API) createGroup(w http.ResponseWriter, r *http.Request, g *timer.Group, _ *admission) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	stored, created, err := groups.CreateGroup(r.Context(), *g)
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

// readGroupAt reads the {id} of the path: a group the token must see.
func readGroupAt(r *http.Request, id *string) (*claim, error) {
	*id = chi.URLParam(r, "id")
	if err := timer.CheckGroupID(*id, "id"); err != nil {
		return nil, err
	}
	return &claim{groups: []groupRef{{field: "id", id: id, use: groupPath}}}, nil
}

// getGroup: GET /v1/groups/{id}.
func (a *API) getGroup(w http.ResponseWriter, r *http.Request, id *string, _ *admission) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	v, err := groups.Group(r.Context(), *id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, groupViewOf(v))
}

// sealGroup: POST /v1/groups/{id}/seal.
func (a *API) sealGroup(w http.ResponseWriter, r *http.Request, id *string, _ *admission) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	if _, err := groups.SealGroup(r.Context(), *id); err != nil {
		a.writeError(w, r, err)
		return
	}
	v, err := groups.Group(r.Context(), *id)
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
		ID:          timer.GroupName(g.ID),
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
