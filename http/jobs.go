package http

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// newJob is POST /v1/jobs's input: the request the body makes.
type newJob struct{ req timer.Request }

// readJob reads POST /v1/jobs: one job, which names its topic (created on
// first use), its callback and perhaps a group to join.
func (a *API) readJob(r *http.Request, in *newJob) (*claim, error) {
	var body jobRequest
	if err := decode(r.Body, &body); err != nil {
		return nil, err
	}
	req, err := body.request()
	if err != nil {
		return nil, err
	}
	req.TraceParent = traceParent(r.Header)
	in.req = req
	c := &claim{jobs: 1}
	c.add(&in.req, -1)
	return c, nil
}

// add claims what job req of a request names: its topic, which it
// creates on first use, its callback, and the group it joins. item is its
// index in a batch (-1: the request's one job).
func (c *claim) add(req *timer.Request, item int) {
	c.topics = append(c.topics, topicRef{field: "topic", name: &req.Topic, create: true, item: item, inBatch: item >= 0})
	c.callbacks = append(c.callbacks, callbackRef{url: req.CallbackURL, topic: &req.Topic, item: item})
	if req.GroupID == "" {
		return
	}
	for i := range c.groups {
		// One read per group a batch joins; the requests hold its id, which
		// the gate qualifies in the first that names it.
		if g := &c.groups[i]; g.use == groupJoin && *g.id == req.GroupID {
			g.joiners = append(g.joiners, item)
			g.others = append(g.others, &req.GroupID)
			return
		}
	}
	g := groupRef{field: "group_id", id: &req.GroupID, use: groupJoin}
	if item >= 0 {
		g.joiners = []int{item}
	}
	c.groups = append(c.groups, g)
}

// joinCreated folds into the group a batch creates (its last group) the
// items that name it: they join the group the call makes, not one that
// must exist.
func (c *claim) joinCreated() {
	created := &c.groups[len(c.groups)-1]
	kept := c.groups[:0]
	for _, g := range c.groups[:len(c.groups)-1] {
		if g.use == groupJoin && *g.id == *created.id {
			created.others = append(append(created.others, g.id), g.others...)
			continue
		}
		kept = append(kept, g)
	}
	c.groups = append(kept, *created)
}

// createJob: POST /v1/jobs.
func (a *API) createJob(w http.ResponseWriter, r *http.Request, in *newJob, _ *admission) {
	res, err := a.jobs.Schedule(r.Context(), in.req)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	writeJobJSON(w, status, res.Job)
}

type batchItem struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Created bool   `json:"created"`
	// Job is the job as POST /v1/jobs would answer it, when the batch
	// asked for it (with_jobs).
	Job *jobView `json:"job,omitempty"`
}

// newBatch is POST /v1/jobs/batch's input: its requests, the group they
// join when it names one, and whether the answer shows each job in full.
type newBatch struct {
	reqs     []timer.Request
	group    *batchGroupRequest
	g        timer.Group
	withJobs bool
}

// readBatch reads POST /v1/jobs/batch, all or nothing: any refused item
// is a 400 (409 when every refused item reused a key with other content)
// with one error per refused item, by index. The body's reading stops
// once it holds more items than a batch may (readBatchBody).
func (a *API) readBatch(r *http.Request, in *newBatch) (*claim, error) {
	raw, err := readBatchBody(r.Body, max(0, r.ContentLength))
	if err != nil {
		return nil, err
	}
	head, bodies, errs, err := decodeBatch(raw)
	if err != nil {
		return nil, err
	}
	group := head.Group
	in.withJobs = head.WithJobs
	if len(bodies) == 0 || len(bodies) > MaxBatchJobs {
		return nil, errBatchSize
	}
	c := &claim{jobs: len(bodies), topics: make([]topicRef, 0, len(bodies)), callbacks: make([]callbackRef, 0, len(bodies))}
	in.reqs = make([]timer.Request, len(bodies))
	var refused []timer.ItemError
	for i := range bodies {
		var err error
		if errs != nil {
			err = errs[i]
		}
		if err == nil {
			in.reqs[i], err = bodies[i].request()
		}
		if err != nil {
			refused = append(refused, timer.ItemError{Index: i, Err: err})
		}
	}
	if refused != nil {
		return nil, &timer.BatchError{Items: refused}
	}
	tp := traceParent(r.Header)
	for i := range in.reqs {
		in.reqs[i].TraceParent = tp
		c.add(&in.reqs[i], i)
	}
	if group != nil {
		in.group = group
		if err := a.readGroup(r.Context(), group.ID, group.OnComplete, "group.", &in.g, c); err != nil {
			return nil, err
		}
		c.joinCreated()
	}
	return c, nil
}

// createBatch: POST /v1/jobs/batch; the items are committed in one
// transaction and answered in request order.
func (a *API) createBatch(w http.ResponseWriter, r *http.Request, in *newBatch, _ *admission) {
	if in.group != nil {
		a.createGroupBatch(w, r, in)
		return
	}
	res, err := a.jobs.ScheduleBatch(r.Context(), in.reqs)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeBatchJSON(w, res, in.withJobs)
}

// batchItems is a batch's answer of each job, in full when withJobs.
func batchItems(res []timer.Result, withJobs bool) []batchItem {
	items := make([]batchItem, len(res))
	for i, res := range res {
		items[i] = batchItem{ID: res.Job.ID.String(), Status: res.Job.Status.String(), Created: res.Created}
		if withJobs {
			v := viewOf(res.Job)
			items[i].Job = &v
		}
	}
	return items
}

// createGroupBatch is POST /v1/jobs/batch with a "group": the group is
// created unless it exists (open, with the same on_complete), every job
// joins it, and it is sealed after them unless "seal" is false.
func (a *API) createGroupBatch(w http.ResponseWriter, r *http.Request, in *newBatch) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	seal := in.group.Seal == nil || *in.group.Seal
	stored, res, err := groups.ScheduleGroup(r.Context(), in.g, seal, in.reqs)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ref := batchGroupView{ID: timer.GroupName(stored.ID), Sealed: !stored.SealedAt.IsZero(), CreatedAt: formatTime(stored.CreatedAt), SealedAt: formatTime(stored.SealedAt)}
	writeJSON(w, http.StatusOK, map[string]any{"results": batchItems(res, in.withJobs), "group": ref})
}

// batchGroupView is the group a batch's jobs joined, in its answer: GET
// /v1/groups/{id} counts its members.
type batchGroupView struct {
	ID        string `json:"id"`
	Sealed    bool   `json:"sealed"`
	CreatedAt string `json:"created_at"`
	SealedAt  string `json:"sealed_at,omitempty"`
}

// traceParent is the W3C traceparent a scheduling request carries, which
// its jobs keep and their webhooks carry on; "" when there is none, or
// when it is malformed or repeated, which the Trace Context
// specification says to ignore rather than refuse.
func traceParent(h http.Header) string {
	v := h.Values("traceparent")
	if len(v) != 1 || !timer.ValidTraceParent(v[0]) {
		return ""
	}
	return v[0]
}

func jobID(r *http.Request) (timer.JobID, error) {
	id, err := timer.ParseJobID(chi.URLParam(r, "id"))
	if err != nil {
		return 0, &timer.FieldError{Field: "id", Message: "must be a job id: a positive decimal integer below 2^63"}
	}
	return id, nil
}

// jobAt is the input of a route on one job of the path: /v1/jobs/{id}
// and /v1/deadletters/{id}.
type jobAt struct {
	id timer.JobID
	// version is the If-Match of a change (timer.AnyVersion: none).
	version int64
	// fireAt and delay are the new due time of a reschedule or replay.
	fireAt time.Time
	delay  time.Duration
}

// readJobAt reads the job of the path, which the token must see.
func readJobAt(r *http.Request, in *jobAt) (*claim, error) {
	id, err := jobID(r)
	in.id = id
	return &claim{job: id}, err
}

// readJobChange reads a cancel: the job of the path and its If-Match.
func readJobChange(r *http.Request, in *jobAt) (*claim, error) {
	c, err := readJobAt(r, in)
	if err == nil {
		in.version, err = ifMatch(r)
	}
	return c, err
}

// readJobMove reads a reschedule: the job of the path, its If-Match and
// the body's new due time, which is required.
func readJobMove(r *http.Request, in *jobAt) (*claim, error) {
	c, err := readJobChange(r, in)
	if err == nil {
		in.fireAt, in.delay, err = readWhen(r, false)
	}
	return c, err
}

// readWhen reads a body of fire_at or delay_ms; optional: the body may be
// empty, meaning now.
func readWhen(r *http.Request, optional bool) (time.Time, time.Duration, error) {
	var body whenRequest
	if r.ContentLength != 0 || !optional {
		if err := decode(r.Body, &body); err != nil && !(optional && isEmptyBody(err)) {
			return time.Time{}, 0, err
		}
	}
	return body.when(optional)
}

// getJob: GET /v1/jobs/{id}.
func (a *API) getJob(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	j, err := a.jobs.Get(r.Context(), in.id)
	a.writeJob(w, r, j, err)
}

// AttemptLister lists a job's attempt history; *timer.Scheduler
// implements it. Jobs that do not implement it show none.
type AttemptLister interface {
	// Attempts returns the attempts recorded for a job, or an error
	// wrapping timer.ErrNotFound for an unknown job.
	Attempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error)
}

// listAttempts: GET /v1/jobs/{id}/attempts.
func (a *API) listAttempts(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	var attempts []timer.Attempt
	var err error
	if l, ok := a.jobs.(AttemptLister); ok {
		attempts, err = l.Attempts(r.Context(), in.id)
	} else {
		_, err = a.jobs.Get(r.Context(), in.id)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := attemptsView{Attempts: make([]attemptView, len(attempts))}
	for i, at := range attempts {
		out.Attempts[i] = attemptViewOf(at)
	}
	writeJSON(w, http.StatusOK, out)
}

// cancelJob: DELETE /v1/jobs/{id}, with an optional If-Match.
func (a *API) cancelJob(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	j, err := a.jobs.CancelIf(r.Context(), in.id, in.version)
	a.writeJob(w, r, j, err)
}

// rescheduleJob: PATCH /v1/jobs/{id}, with an optional If-Match.
func (a *API) rescheduleJob(w http.ResponseWriter, r *http.Request, in *jobAt, _ *admission) {
	j, err := a.jobs.RescheduleIf(r.Context(), in.id, in.version, in.fireAt, in.delay)
	a.writeJob(w, r, j, err)
}

// ifMatch reads the If-Match header of a change: the version its entity
// tag names, or timer.AnyVersion when there is none or it is "*". It
// takes one strong tag, as GET /v1/jobs/{id} gives it in its ETag ("3");
// a weak one, a list, or anything else is an error naming the header.
func ifMatch(r *http.Request) (int64, error) {
	vals := r.Header.Values("If-Match")
	if len(vals) == 0 {
		return timer.AnyVersion, nil
	}
	bad := &timer.FieldError{Field: "If-Match", Message: `must be one entity tag as the job's ETag gives it, like "3", or *`}
	tag := strings.TrimSpace(vals[0])
	if len(vals) > 1 {
		return 0, bad
	}
	if tag == "*" {
		return timer.AnyVersion, nil
	}
	version, ok := parseETag(tag)
	if !ok {
		return 0, bad
	}
	return version, nil
}

// etag is the entity tag of a job at version: its version, quoted.
func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// parseETag is the inverse of etag: digits between quotes, from 1, with no
// leading zero.
func parseETag(tag string) (int64, bool) {
	if len(tag) < 3 || tag[0] != '"' || tag[len(tag)-1] != '"' || tag[1] == '0' {
		return 0, false
	}
	digits := tag[1 : len(tag)-1]
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

func isEmptyBody(err error) bool {
	fe, ok := errors.AsType[*timer.FieldError](err)
	return ok && fe.Field == "" && strings.HasPrefix(fe.Message, "the body is empty")
}

// writeJob answers a job, with its version as the ETag, or err.
func (a *API) writeJob(w http.ResponseWriter, r *http.Request, j *timer.Job, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(j.Version))
	writeJobJSON(w, http.StatusOK, j)
}
