// The audit log: each admin and bulk action is recorded in the task store
// (APIConfig.Audit) with who, what, when and how many jobs it touched, and
// GET /v1/audit lists it.

package http

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// The actions the audit log records, as its entries name them.
const (
	auditTopicPut           = "topic.put"
	auditTopicPatch         = "topic.patch"
	auditTopicPause         = "topic.pause"
	auditTopicResume        = "topic.resume"
	auditTopicDelete        = "topic.delete"
	auditDeadReplay         = "deadletter.replay"
	auditDeadPurge          = "deadletter.purge"
	auditDeadReplayBulk     = "deadletter.replay_bulk"
	auditDeadPurgeBulk      = "deadletter.purge_bulk"
	auditJobsCancelBulk     = "jobs.cancel_bulk"
	auditJobsRescheduleBulk = "jobs.reschedule_bulk"
	// A bulk call's selection (POST /v1/jobs/bulk, /v1/deadletters/bulk).
	auditJobsCancelSelected     = "jobs.cancel_selected"
	auditJobsRescheduleSelected = "jobs.reschedule_selected"
	auditJobsFireNowSelected    = "jobs.fire_now_selected"
	auditDeadReplaySelected     = "deadletter.replay_selected"
	auditDeadPurgeSelected      = "deadletter.purge_selected"
	auditSchedulePause          = "schedule.pause"
	auditScheduleResume         = "schedule.resume"
	auditScheduleDelete         = "schedule.delete"
)

// AuditActions lists every action the audit log records.
var AuditActions = []string{
	auditTopicPut, auditTopicPatch, auditTopicPause, auditTopicResume, auditTopicDelete,
	auditDeadReplay, auditDeadPurge, auditDeadReplayBulk, auditDeadPurgeBulk,
	auditJobsCancelBulk, auditJobsRescheduleBulk,
	auditJobsCancelSelected, auditJobsRescheduleSelected, auditJobsFireNowSelected,
	auditDeadReplaySelected, auditDeadPurgeSelected,
	auditSchedulePause, auditScheduleResume, auditScheduleDelete,
}

// auditTimeout bounds the write of one entry. It runs on a context that
// the client's going away does not cancel: the action is done by then.
const auditTimeout = 5 * time.Second

// AuditHeader is set to "unrecorded" on the answer to an action whose
// audit entry could not be written.
const AuditHeader = "Toc-Audit"

// callerName names the caller of r in the audit log: its token's name
// (the tokens file's entry, or "api-token" for --api-token), which never
// shows the secret; without auth (dev mode), "anonymous".
func (a *API) callerName(r *http.Request) string {
	return cmp.Or(PrincipalName(r.Context()), "anonymous")
}

// auditNote is what a handler says of the action it took: the entry but
// its time, caller and outcome.
type auditNote struct {
	action string
	topic  string
	target string
	// details, when not nil, is marshalled as the entry's JSON details.
	details any
	jobs    int
}

// audit records the action of r, which ended with err, before the handler
// answers, so that a client that reads GET /v1/audit after the answer
// finds it. A request refused as invalid before anything changed is not
// recorded.
//
// The action is done whatever becomes of its entry: a failed write of the
// entry does not turn the answer into an error (a client would retry what
// happened, a bulk action twice). It is logged at error level with the
// whole entry, counted (APIConfig.AuditFailed), and the answer carries
// AuditHeader: unrecorded.
func (a *API) audit(w http.ResponseWriter, r *http.Request, n auditNote, err error) {
	if a.cfg.Audit == nil || errors.Is(err, timer.ErrInvalid) && n.jobs == 0 {
		return
	}
	e := &timer.AuditEntry{At: a.cfg.Now(), Who: a.callerName(r), Action: n.action, Topic: n.topic, Target: n.target, Jobs: int64(n.jobs)}
	if n.details != nil {
		if b, merr := json.Marshal(n.details); merr == nil {
			e.Details = string(b)
		}
		if len(e.Details) > timer.MaxAuditDetailsBytes {
			e.Details = `{"truncated":true}`
		}
	}
	if err != nil {
		e.Error = err.Error()
	}
	e.Fit()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	if werr := a.cfg.Audit.AppendAudit(ctx, e); werr != nil {
		w.Header().Set(AuditHeader, "unrecorded")
		a.log.LogAttrs(r.Context(), slog.LevelError, "audit entry not recorded", slog.Any("err", werr),
			slog.String("who", e.Who), slog.String("action", e.Action), slog.String("topic", e.Topic),
			slog.String("target", e.Target), slog.String("details", e.Details), slog.Int64("jobs", e.Jobs),
			slog.String("error", e.Error))
		if a.cfg.AuditFailed != nil {
			a.cfg.AuditFailed()
		}
	}
}

// filterText is a bulk action's filter as an entry's target: its query
// form, without the topic and empty values.
func filterText(pairs ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			v.Set(pairs[i], pairs[i+1])
		}
	}
	return v.Encode()
}

// auditView is an entry as GET /v1/audit shows it.
type auditView struct {
	ID      int64           `json:"id"`
	At      string          `json:"at"`
	Who     string          `json:"who"`
	Action  string          `json:"action"`
	Topic   string          `json:"topic,omitempty"`
	Target  string          `json:"target,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	Jobs    int64           `json:"jobs"`
	Result  string          `json:"result"`
	Error   string          `json:"error,omitempty"`
}

func auditViewOf(e *timer.AuditEntry) auditView {
	v := auditView{ID: e.ID, At: formatTime(e.At), Who: e.Who, Action: e.Action, Topic: shownTopic(e.Topic), Target: e.Target,
		Jobs: e.Jobs, Result: "ok", Error: e.Error}
	if e.Details != "" && json.Valid([]byte(e.Details)) {
		v.Details = json.RawMessage(e.Details)
	}
	if e.Failed() {
		v.Result = "failed"
	}
	return v
}

// errNoAudit answers GET /v1/audit of an API without an audit log.
var errNoAudit = fmt.Errorf("this toc keeps no audit log: %w", timer.ErrNotFound)

// listAudit: GET /v1/audit?action=A&topic=T&who=W&since=T1&until=T2
// &limit=N&cursor=C, newest first; next_cursor is "" after the last page.
func (a *API) listAudit(w http.ResponseWriter, r *http.Request, q *timer.AuditQuery, _ *admission) {
	if a.cfg.Audit == nil {
		a.writeError(w, r, errNoAudit)
		return
	}
	entries, err := a.cfg.Audit.ListAudit(r.Context(), *q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// An admin of a namespace sees its topics' entries only: a page may
	// hold fewer than the limit, and next_cursor goes on from the last
	// entry read.
	p := principalFrom(r.Context())
	views := make([]auditView, 0, len(entries))
	for _, e := range entries {
		if p == nil || p.AllTopics() || p.Allows(e.Topic) {
			views = append(views, auditViewOf(e))
		}
	}
	next := ""
	if len(entries) == q.Limit {
		next = timer.AuditCursorOf(entries[len(entries)-1]).Text()
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": views, "next_cursor": next})
}

// readAuditQuery reads the query of GET /v1/audit; its topic, a filter,
// is optional.
func readAuditQuery(r *http.Request, q *timer.AuditQuery) (*claim, error) {
	var err error
	*q, err = auditQuery(r.URL.Query())
	return &claim{topics: []topicRef{{field: "topic", name: &q.Topic, optional: true}}}, err
}

// auditQuery reads the query of GET /v1/audit; an unknown parameter, one
// given twice, or a bad value is a 400 naming it.
func auditQuery(v url.Values) (timer.AuditQuery, error) {
	if err := onlyParams(v, "action", "topic", "who", "since", "until", "limit", "cursor"); err != nil {
		return timer.AuditQuery{}, err
	}
	q := timer.AuditQuery{Action: v.Get("action"), Topic: v.Get("topic"), Who: v.Get("who"), Limit: timer.DefaultAuditPage}
	if q.Action != "" && !slices.Contains(AuditActions, q.Action) {
		return q, &timer.FieldError{Field: "action", Message: "must be one of " + strings.Join(AuditActions, ", ")}
	}
	var err error
	if len(q.Who) > timer.MaxAuditWhoBytes {
		return q, &timer.FieldError{Field: "who", Message: fmt.Sprintf("must be at most %d bytes", timer.MaxAuditWhoBytes)}
	}
	for _, p := range []struct {
		field string
		to    *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
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
		if err != nil || n < 1 || n > timer.MaxAuditPage {
			return q, &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", timer.MaxAuditPage)}
		}
		q.Limit = n
	}
	if q.After, err = timer.ParseAuditCursor(v.Get("cursor"), "cursor"); err != nil {
		return q, err
	}
	return q, q.Check()
}
