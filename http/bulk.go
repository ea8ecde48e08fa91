// Acting on a selection: POST /v1/jobs/bulk and POST
// /v1/deadletters/bulk change each job of a list of ids, as the single
// call on one id would, and answer how many changed and, for each that
// did not, why.

package http

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// MaxBulkIDs is the most ids one bulk call acts on.
const MaxBulkIDs = 1000

// The actions of a bulk call, as its body names them.
const (
	bulkCancel     = "cancel"
	bulkReschedule = "reschedule"
	bulkFireNow    = "fire_now"
	bulkReplay     = "replay"
	bulkPurge      = "purge"
)

// selectionRequest is the body of POST /v1/jobs/bulk and
// /v1/deadletters/bulk.
type selectionRequest struct {
	Action string   `json:"action"`
	IDs    []string `json:"ids"`
	// FireAt and DelayMS are a reschedule's new due time (one of them),
	// or a replay's (none: now).
	FireAt  *string `json:"fire_at"`
	DelayMS *int64  `json:"delay_ms"`
}

// selection is the input of a bulk call: its action, the ids in the
// order given, and the due time of a reschedule or replay.
type selection struct {
	body   selectionRequest
	ids    []timer.JobID
	fireAt time.Time
	delay  time.Duration
}

// readSelection reads the body of a bulk call whose actions are those
// given; timed are the actions that take a due time (required unless the
// action is in optional). Its claim is the selection, whose jobs the gate
// checks one by one (a replay's max_pending is charged as each is
// replayed, by selectedDead).
func readSelection(actions, timed, optional []string) func(*http.Request, *selection) (*claim, error) {
	return func(r *http.Request, in *selection) (*claim, error) {
		b := &in.body
		if err := decode(r.Body, b); err != nil {
			return nil, err
		}
		if !slices.Contains(actions, b.Action) {
			return nil, &timer.FieldError{Field: "action", Message: "must be one of " + strings.Join(actions, ", ")}
		}
		if len(b.IDs) == 0 || len(b.IDs) > MaxBulkIDs {
			return nil, &timer.FieldError{Field: "ids", Message: fmt.Sprintf("must hold 1..%d job ids", MaxBulkIDs)}
		}
		seen := make(map[timer.JobID]bool, len(b.IDs))
		in.ids = make([]timer.JobID, len(b.IDs))
		for i, s := range b.IDs {
			id, err := timer.ParseJobID(s)
			if err != nil {
				return nil, &timer.FieldError{Field: fmt.Sprintf("ids[%d]", i), Message: "must be a job id: a positive decimal integer below 2^63"}
			}
			if seen[id] {
				return nil, &timer.FieldError{Field: fmt.Sprintf("ids[%d]", i), Message: "job " + s + " is given more than once"}
			}
			seen[id], in.ids[i] = true, id
		}
		w := whenRequest{FireAt: b.FireAt, DelayMS: b.DelayMS}
		if !slices.Contains(timed, b.Action) {
			if w.FireAt != nil || w.DelayMS != nil {
				field := "fire_at"
				if w.FireAt == nil {
					field = "delay_ms"
				}
				return nil, &timer.FieldError{Field: field, Message: "only " + strings.Join(timed, " or ") + " takes a due time"}
			}
			return &claim{selected: in.ids}, nil
		}
		var err error
		in.fireAt, in.delay, err = w.when(slices.Contains(optional, b.Action))
		return &claim{selected: in.ids}, err
	}
}

// readJobSelection reads POST /v1/jobs/bulk.
var readJobSelection = readSelection([]string{bulkCancel, bulkReschedule, bulkFireNow}, []string{bulkReschedule}, nil)

// readDeadSelection reads POST /v1/deadletters/bulk.
var readDeadSelection = readSelection([]string{bulkReplay, bulkPurge}, []string{bulkReplay}, []string{bulkReplay})

// bulkFailure is a job of a selection that did not change, with the
// error the single call on it would have answered.
type bulkFailure struct {
	ID    string      `json:"id"`
	Error errorDetail `json:"error"`
}

// bulkResult is the answer of a bulk call.
type bulkResult struct {
	Changed int           `json:"changed"`
	Failed  []bulkFailure `json:"failed"`
}

// selectedJobs: POST /v1/jobs/bulk. Each cancel is as definite as DELETE
// /v1/jobs/{id}, each reschedule as PATCH /v1/jobs/{id}; fire_now is a
// reschedule to now, which never makes a job due before now and, like
// any reschedule, fails for a job already firing or ended.
func (a *API) selectedJobs(w http.ResponseWriter, r *http.Request, in *selection, ad *admission) {
	act := func(ctx context.Context, id timer.JobID) (*timer.Job, error) {
		switch in.body.Action {
		case bulkCancel:
			return a.jobs.Cancel(ctx, id)
		case bulkReschedule:
			return a.jobs.Reschedule(ctx, id, in.fireAt, in.delay)
		}
		return a.jobs.Reschedule(ctx, id, time.Time{}, 0)
	}
	audited := map[string]string{bulkCancel: auditJobsCancelSelected, bulkReschedule: auditJobsRescheduleSelected,
		bulkFireNow: auditJobsFireNowSelected}[in.body.Action]
	a.eachSelected(w, r, in, ad, audited, act)
}

// selectedDead: POST /v1/deadletters/bulk. Each replay is as POST
// /v1/deadletters/{id}/replay (and counts against max_pending: a replay
// past it fails with pending_quota), each purge as DELETE
// /v1/deadletters/{id}.
func (a *API) selectedDead(w http.ResponseWriter, r *http.Request, in *selection, ad *admission) {
	act := func(ctx context.Context, id timer.JobID) (*timer.Job, error) {
		if in.body.Action == bulkPurge {
			if err := a.dead.PurgeDead(ctx, id); err != nil {
				return nil, err
			}
			// The row stays, purged: its topic files the audit entry.
			j, err := a.jobs.Get(ctx, id)
			if err != nil {
				return &timer.Job{ID: id}, nil
			}
			return j, nil
		}
		if err := ad.pending(ctx, 1); err != nil {
			return nil, err
		}
		return a.jobs.Replay(ctx, id, in.fireAt, in.delay)
	}
	audited := auditDeadReplaySelected
	if in.body.Action == bulkPurge {
		audited = auditDeadPurgeSelected
	}
	a.eachSelected(w, r, in, ad, audited, act)
}

// eachSelected acts on each id of in, one after the other, and answers
// the count of those changed and the error of each of the others: a job
// the token may not see is not_found, word for word as a missing one (the
// gate found it so), and once the request's time is up the ids not yet
// acted on are unavailable, untouched. The call is recorded in the audit
// log as action, under the topic of the jobs changed when they share
// one.
func (a *API) eachSelected(w http.ResponseWriter, r *http.Request, in *selection, ad *admission, action string,
	act func(context.Context, timer.JobID) (*timer.Job, error)) {
	ctx := r.Context()
	res := bulkResult{Failed: []bulkFailure{}}
	fail := func(id timer.JobID, err error) {
		_, d := toDetail(err)
		d.Message = shownMessage(ctx, d.Message)
		res.Failed = append(res.Failed, bulkFailure{ID: id.String(), Error: d})
	}
	var topics []string
	for _, id := range in.ids {
		if err := ad.hidden[id]; err != nil {
			fail(id, err)
			continue
		}
		if err := ctx.Err(); err != nil {
			fail(id, err)
			continue
		}
		j, err := act(ctx, id)
		if err != nil {
			fail(id, err)
			continue
		}
		res.Changed++
		if j.Topic != "" && !slices.Contains(topics, j.Topic) {
			topics = append(topics, j.Topic)
		}
	}
	details := map[string]any{"failed": len(res.Failed)}
	if in.body.FireAt != nil {
		details["fire_at"] = *in.body.FireAt
	}
	if in.body.DelayMS != nil {
		details["delay_ms"] = *in.body.DelayMS
	}
	n := auditNote{action: action, target: "ids=" + strings.Join(in.body.IDs, ","), jobs: res.Changed, details: details}
	if len(topics) == 1 {
		n.topic = topics[0]
	}
	a.audit(w, r, n, nil)
	writeJSON(w, http.StatusOK, res)
}
