// Finding jobs, and cancelling or rescheduling them by business identity:
// GET, DELETE and PATCH on /v1/jobs with filters in the query.

package http

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// Search pages: the default and the most jobs a page holds.
const (
	DefaultJobPage = 100
	MaxJobPage     = timer.MaxJobPage
)

// readJobQuery reads a timer.JobQuery from the query parameters allowed.
func readJobQuery(allowed ...string) func(*http.Request, *timer.JobQuery) (*claim, error) {
	return func(r *http.Request, q *timer.JobQuery) (*claim, error) {
		var err error
		*q, err = jobQuery(r.URL.Query(), allowed...)
		return &claim{topics: []topicRef{{field: "topic", name: &q.Topic}}}, err
	}
}

// findJobs: GET /v1/jobs?topic=T&status=S[,S]&biz_id=B&key=K
// &fire_after=T1&fire_before=T2&limit=N&cursor=C, in (due time, id)
// order; next_cursor is "" after the last page.
func (a *API) findJobs(w http.ResponseWriter, r *http.Request, q *timer.JobQuery, _ *admission) {
	jobs, err := a.jobs.Find(r.Context(), *q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	views := make([]jobView, len(jobs))
	for i, j := range jobs {
		views[i] = viewOf(j)
	}
	next := ""
	if len(jobs) == q.Limit {
		next = timer.CursorOf(jobs[len(jobs)-1]).Text()
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": views, "next_cursor": next})
}

// cancelMatching: DELETE /v1/jobs?topic=T&(biz_id=B|key=K) cancels every
// pending job of the business object, each definitely (see Cancel).
func (a *API) cancelMatching(w http.ResponseWriter, r *http.Request, q *timer.JobQuery, _ *admission) {
	b, err := a.jobs.CancelMatching(r.Context(), *q)
	a.audit(w, r, auditNote{action: auditJobsCancelBulk, topic: q.Topic, target: matchText(*q), jobs: b.Changed,
		details: map[string]int{"too_late": b.TooLate}}, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"cancelled": b.Changed, "too_late": b.TooLate})
}

// movedJobs is PATCH /v1/jobs's input: the query and the body's due time.
type movedJobs struct {
	q      timer.JobQuery
	body   whenRequest
	fireAt time.Time
	delay  time.Duration
}

func readMovedJobs(r *http.Request, in *movedJobs) (*claim, error) {
	var err error
	in.q, err = jobQuery(r.URL.Query(), "topic", "biz_id", "key")
	c := &claim{topics: []topicRef{{field: "topic", name: &in.q.Topic}}}
	if err != nil {
		return c, err
	}
	if err := decode(r.Body, &in.body); err != nil {
		return c, err
	}
	in.fireAt, in.delay, err = in.body.when(false)
	return c, err
}

// rescheduleMatching: PATCH /v1/jobs?topic=T&(biz_id=B|key=K) with
// {"fire_at"} or {"delay_ms"} moves every pending job of the business
// object, each definitely (see Reschedule).
func (a *API) rescheduleMatching(w http.ResponseWriter, r *http.Request, in *movedJobs, _ *admission) {
	b, err := a.jobs.RescheduleMatching(r.Context(), in.q, in.fireAt, in.delay)
	details := map[string]any{"too_late": b.TooLate}
	if in.body.FireAt != nil {
		details["fire_at"] = *in.body.FireAt
	}
	if in.body.DelayMS != nil {
		details["delay_ms"] = *in.body.DelayMS
	}
	a.audit(w, r, auditNote{action: auditJobsRescheduleBulk, topic: in.q.Topic, target: matchText(in.q), jobs: b.Changed, details: details}, err)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"rescheduled": b.Changed, "too_late": b.TooLate})
}

// jobQuery reads a timer.JobQuery from the query parameters allowed; any
// other parameter, or one given twice, is a 400 naming it. status is a
// list, so where it is allowed it may be given twice: repeated
// (status=a&status=b, OpenAPI's default form, which generated clients
// send), comma separated (status=a,b), or both.
//
// Its topic is the client's name: the gate qualifies it.
func jobQuery(v url.Values, allowed ...string) (timer.JobQuery, error) {
	single := v
	if slices.Contains(allowed, "status") && len(v["status"]) > 1 {
		single = maps.Clone(v)
		delete(single, "status")
	}
	if err := onlyParams(single, allowed...); err != nil {
		return timer.JobQuery{}, err
	}
	q := timer.JobQuery{Topic: v.Get("topic"), Key: v.Get("key"), Limit: DefaultJobPage}
	if q.Topic == "" {
		return q, &timer.FieldError{Field: "topic", Message: "a topic name is required"}
	}
	var err error
	for _, s := range v["status"] {
		if s == "" {
			continue
		}
		for name := range strings.SplitSeq(s, ",") {
			st, err := timer.ParseStatus(strings.TrimSpace(name))
			if err != nil {
				return q, err
			}
			q.Statuses = append(q.Statuses, st)
		}
	}
	if s := v.Get("biz_id"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return q, &timer.FieldError{Field: "biz_id", Message: "must be a whole number from 1 to 2^64-1"}
		}
		q.BizID = n
	}
	for _, p := range []struct {
		field string
		to    *time.Time
	}{{"fire_after", &q.FireAfter}, {"fire_before", &q.FireBefore}} {
		if s := v.Get(p.field); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return q, &timer.FieldError{Field: p.field, Message: "must be an RFC 3339 time"}
			}
			*p.to = t
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxJobPage {
			return q, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxJobPage)}
		}
		q.Limit = n
	}
	q.After, err = timer.ParseCursor(v.Get("cursor"), "cursor")
	if err != nil {
		return q, err
	}
	return q, q.Check()
}

// onlyParams reports, naming it, a parameter of v not allowed or given
// more than once.
func onlyParams(v url.Values, allowed ...string) error {
	for name, vals := range v {
		if !slices.Contains(allowed, name) {
			return &timer.FieldError{Field: name, Message: "not a parameter here; use " + strings.Join(allowed, ", ")}
		}
		if len(vals) > 1 {
			return &timer.FieldError{Field: name, Message: "given more than once"}
		}
	}
	return nil
}

// matchText is the business identity a bulk cancel or reschedule selects,
// as an audit entry's target.
func matchText(q timer.JobQuery) string {
	biz := ""
	if q.BizID != 0 {
		biz = strconv.FormatUint(q.BizID, 10)
	}
	return filterText("biz_id", biz, "key", q.Key)
}

// MaxSearchTopics bounds the topics one GET /v1/jobs/search looks a key
// up in: one read of the (topic, idem_key) index each.
const MaxSearchTopics = 1000

// jobSearch is GET /v1/jobs/search's input: what to find.
type jobSearch struct{ q string }

// readJobSearch reads GET /v1/jobs/search?q=: a job id or an idempotency
// key, required; any other parameter, or q twice, is a 400 naming it. It
// names no topic: the search is of the topics the token may see.
func readJobSearch(r *http.Request, in *jobSearch) (*claim, error) {
	v := r.URL.Query()
	if err := onlyParams(v, "q"); err != nil {
		return nil, err
	}
	in.q = strings.TrimSpace(v.Get("q"))
	switch {
	case in.q == "":
		return nil, &timer.FieldError{Field: "q", Message: "required: a job id or an idempotency key"}
	case len(in.q) > timer.MaxKeyBytes || !timer.ValidKey(in.q):
		return nil, &timer.FieldError{Field: "q", Message: fmt.Sprintf("at most %d bytes of printable characters", timer.MaxKeyBytes)}
	}
	return nil, nil
}

// searchJobs: GET /v1/jobs/search?q=, the job whose id is q and the jobs
// whose idempotency key is q, of the topics the token may see. Its cost
// is bounded: one primary key read when q is a number, and one read of
// the (topic, idem_key) index (a row at most) in each of the first
// MaxSearchTopics visible topics by name; "truncated" says when the
// token sees more, whose keys were not looked at.
func (a *API) searchJobs(w http.ResponseWriter, r *http.Request, in *jobSearch, _ *admission) {
	ctx := r.Context()
	topics, err := a.jobs.Topics(ctx)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	visible := visibleTopics(ctx, topics)
	slices.SortFunc(visible, func(x, y timer.Topic) int { return strings.Compare(x.Name, y.Name) })
	var found []*timer.Job
	if id, err := timer.ParseJobID(in.q); err == nil {
		j, err := a.jobs.Get(ctx, id)
		switch {
		case err == nil:
			if slices.ContainsFunc(visible, func(t timer.Topic) bool { return t.Name == j.Topic }) {
				found = append(found, j)
			}
		case !errors.Is(err, timer.ErrNotFound):
			a.writeError(w, r, err)
			return
		}
	}
	searched := visible[:min(len(visible), MaxSearchTopics)]
	for _, t := range searched {
		jobs, err := a.jobs.Find(ctx, timer.JobQuery{Topic: t.Name, Key: in.q, Limit: 1})
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		for _, j := range jobs {
			if !slices.ContainsFunc(found, func(f *timer.Job) bool { return f.ID == j.ID }) {
				found = append(found, j)
			}
		}
	}
	views := make([]jobView, len(found))
	for i, j := range found {
		views[i] = viewOf(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": views, "topics_searched": len(searched), "truncated": len(searched) < len(visible)})
}
