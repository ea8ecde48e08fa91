package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/timer"
)

// createJob: POST /v1/jobs.
func (a *API) createJob(w http.ResponseWriter, r *http.Request) {
	var body jobRequest
	if err := decode(r.Body, &body); err != nil {
		a.writeError(w, r, err)
		return
	}
	req, err := a.checked(r.Context(), &body)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	req.TraceParent = traceParent(r.Header)
	if err := allowTopic(r.Context(), req.Topic); err != nil {
		a.writeError(w, r, err)
		return
	}
	done, err := a.admit(r.Context(), 1, []string{req.Topic})
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	res, err := a.jobs.Schedule(r.Context(), req)
	done()
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	writeJSON(w, status, viewOf(res.Job))
}

// checked turns a body into a request and checks its callback URL.
func (a *API) checked(ctx context.Context, body *jobRequest) (timer.Request, error) {
	req, err := body.request()
	if err != nil {
		return req, err
	}
	if req.Topic, err = qualify(ctx, "topic", req.Topic); err != nil {
		return req, err
	}
	return req, a.checkCallback(ctx, req.CallbackURL)
}

// batchRequest is the body of POST /v1/jobs/batch when some item is not
// a well-formed job: each item is then decoded alone, so that its error
// names it.
type batchRequest struct {
	Group *batchGroupRequest `json:"group"`
	Jobs  []batchItemJSON    `json:"jobs"`
}

// batchItemJSON is one item of a batch, kept as it came to be decoded on
// its own (checkKeys leaves a type with its own UnmarshalJSON to it).
type batchItemJSON []byte

func (b *batchItemJSON) UnmarshalJSON(data []byte) error {
	*b = slices.Clone(data)
	return nil
}

type batchItem struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Created bool   `json:"created"`
}

// createBatch: POST /v1/jobs/batch, all or nothing. Any refused item
// answers 400 (409 when every refused item reused a key with other
// content) with one error per refused item, by index, and nothing is
// stored; otherwise the items are committed in one transaction and
// answered in request order.
func (a *API) createBatch(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		a.writeError(w, r, decodeError(err))
		return
	}
	// The common case, every item well-formed, is decoded in one pass;
	// otherwise each item is decoded alone so that its error names it.
	var fast struct {
		Group *batchGroupRequest `json:"group"`
		Jobs  []jobRequest       `json:"jobs"`
	}
	var bodies []*jobRequest
	var errs []error
	var group *batchGroupRequest
	if decodeBytes(raw, &fast) == nil {
		group = fast.Group
		bodies = make([]*jobRequest, len(fast.Jobs))
		for i := range fast.Jobs {
			bodies[i] = &fast.Jobs[i]
		}
		errs = make([]error, len(bodies))
	} else {
		var body batchRequest
		if err := decodeBytes(raw, &body); err != nil {
			a.writeError(w, r, err)
			return
		}
		group = body.Group
		bodies = make([]*jobRequest, len(body.Jobs))
		errs = make([]error, len(body.Jobs))
		for i, item := range body.Jobs {
			bodies[i] = new(jobRequest)
			errs[i] = decodeBytes(item, bodies[i])
		}
	}
	if len(bodies) == 0 || len(bodies) > MaxBatchJobs {
		a.writeError(w, r, &timer.FieldError{Field: "jobs", Message: fmt.Sprintf("must hold 1..%d jobs", MaxBatchJobs)})
		return
	}
	reqs := make([]timer.Request, len(bodies))
	var refused []timer.ItemError
	checkedURL := map[string]error{} // most batches share one callback
	for i, jb := range bodies {
		err := errs[i]
		if err == nil {
			reqs[i], err = jb.request()
		}
		if err == nil {
			reqs[i].Topic, err = qualify(r.Context(), "topic", reqs[i].Topic)
		}
		if err == nil {
			var seen bool
			if err, seen = checkedURL[reqs[i].CallbackURL]; !seen {
				err = a.checkCallback(r.Context(), reqs[i].CallbackURL)
				checkedURL[reqs[i].CallbackURL] = err
			}
		}
		if err != nil {
			refused = append(refused, timer.ItemError{Index: i, Err: err})
		}
	}
	if refused != nil {
		a.writeError(w, r, &timer.BatchError{Items: refused})
		return
	}
	topics := make([]string, len(reqs))
	for i := range reqs {
		topics[i] = reqs[i].Topic
	}
	if err := allowBatch(r.Context(), topics); err != nil {
		a.writeError(w, r, err)
		return
	}
	done, err := a.admit(r.Context(), len(reqs), topics)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if tp := traceParent(r.Header); tp != "" {
		for i := range reqs {
			reqs[i].TraceParent = tp
		}
	}
	if group != nil {
		a.createGroupBatch(w, r, group, reqs)
		return
	}
	res, err := a.jobs.ScheduleBatch(r.Context(), reqs)
	done()
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": batchItems(res)})
}

func batchItems(res []timer.Result) []batchItem {
	items := make([]batchItem, len(res))
	for i, res := range res {
		items[i] = batchItem{ID: res.Job.ID.String(), Status: res.Job.Status.String(), Created: res.Created}
	}
	return items
}

// createGroupBatch is POST /v1/jobs/batch with a "group": the group is
// created unless it exists (open, with the same on_complete), every job
// joins it, and it is sealed after them unless "seal" is false.
func (a *API) createGroupBatch(w http.ResponseWriter, r *http.Request, body *batchGroupRequest, reqs []timer.Request) {
	groups, ok := a.groups(w, r)
	if !ok {
		return
	}
	g, err := a.group(r.Context(), body.ID, body.OnComplete, "group.")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	seal := body.Seal == nil || *body.Seal
	stored, res, err := groups.ScheduleGroup(r.Context(), g, seal, reqs)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	ref := groupRef{ID: stored.ID, Sealed: !stored.SealedAt.IsZero(), CreatedAt: formatTime(stored.CreatedAt), SealedAt: formatTime(stored.SealedAt)}
	writeJSON(w, http.StatusOK, map[string]any{"results": batchItems(res), "group": ref})
}

// groupRef is the group a batch's jobs joined, in its answer: GET
// /v1/groups/{id} counts its members.
type groupRef struct {
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

// getJob: GET /v1/jobs/{id}.
func (a *API) getJob(w http.ResponseWriter, r *http.Request) {
	a.withJob(w, r, func(ctx context.Context, id timer.JobID) (*timer.Job, error) { return a.jobs.Get(ctx, id) })
}

// AttemptLister lists a job's attempt history; *timer.Scheduler
// implements it. Jobs that do not implement it show none.
type AttemptLister interface {
	// Attempts returns the attempts recorded for a job, or an error
	// wrapping timer.ErrNotFound for an unknown job.
	Attempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error)
}

// listAttempts: GET /v1/jobs/{id}/attempts.
func (a *API) listAttempts(w http.ResponseWriter, r *http.Request) {
	id, err := jobID(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.visibleJob(r.Context(), id); err != nil {
		a.writeError(w, r, err)
		return
	}
	var attempts []timer.Attempt
	if l, ok := a.jobs.(AttemptLister); ok {
		attempts, err = l.Attempts(r.Context(), id)
	} else {
		_, err = a.jobs.Get(r.Context(), id)
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
func (a *API) cancelJob(w http.ResponseWriter, r *http.Request) {
	version, err := ifMatch(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.withJob(w, r, func(ctx context.Context, id timer.JobID) (*timer.Job, error) {
		return a.jobs.CancelIf(ctx, id, version)
	})
}

// rescheduleJob: PATCH /v1/jobs/{id}, with an optional If-Match.
func (a *API) rescheduleJob(w http.ResponseWriter, r *http.Request) {
	version, err := ifMatch(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.withWhen(w, r, false, func(ctx context.Context, id timer.JobID, fireAt time.Time, delay time.Duration) (*timer.Job, error) {
		return a.jobs.RescheduleIf(ctx, id, version, fireAt, delay)
	})
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

func (a *API) withWhen(w http.ResponseWriter, r *http.Request, optional bool, do func(context.Context, timer.JobID, time.Time, time.Duration) (*timer.Job, error)) {
	var body whenRequest
	if r.ContentLength != 0 || !optional {
		if err := decode(r.Body, &body); err != nil && !(optional && isEmptyBody(err)) {
			a.writeError(w, r, err)
			return
		}
	}
	fireAt, delay, err := body.when(optional)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.withJob(w, r, func(ctx context.Context, id timer.JobID) (*timer.Job, error) {
		return do(ctx, id, fireAt, delay)
	})
}

func isEmptyBody(err error) bool {
	fe, ok := errors.AsType[*timer.FieldError](err)
	return ok && fe.Field == "" && strings.HasPrefix(fe.Message, "the body is empty")
}

func (a *API) withJob(w http.ResponseWriter, r *http.Request, do func(context.Context, timer.JobID) (*timer.Job, error)) {
	id, err := jobID(r)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := a.visibleJob(r.Context(), id); err != nil {
		a.writeError(w, r, err)
		return
	}
	j, err := do(r.Context(), id)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("ETag", etag(j.Version))
	writeJSON(w, http.StatusOK, viewOf(j))
}
