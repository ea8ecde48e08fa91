// The table of /v1 routes: each an op that the gate admits (gate.go).

package http

import (
	"fmt"
	"net/http"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// op is one /v1 route: the least role it needs, the largest body it
// reads, and its handler, made by gated from a read function (what the
// request names and adds) and a serve function.
type op struct {
	method, pattern string
	role            auth.Role
	body            int64
	handler         http.HandlerFunc
}

// readNothing is the read function of a route that names nothing: no
// path id, no topic, no body (its answer is bounded by the token's scope
// inside, as GET /v1/topics lists only the token's topics).
func readNothing(*http.Request, *struct{}) (*claim, error) { return nil, nil }

// ops is every /v1 route. What a token may see or change within a route
// is further bounded by its topics and namespace, which the gate decides
// from the route's read function.
func (a *API) ops() []op {
	small, batch := a.cfg.MaxBodyBytes, a.cfg.MaxBatchBodyBytes
	return []op{
		{"POST", "/v1/jobs", auth.Write, small, gated(a, a.readJob, a.createJob)},
		{"POST", "/v1/jobs/batch", auth.Write, batch, gated(a, a.readBatch, a.createBatch)},
		{"GET", "/v1/jobs", auth.Read, 0, gated(a, readJobQuery("topic", "status", "biz_id", "key", "fire_after", "fire_before", "limit", "cursor"), a.findJobs)},
		{"DELETE", "/v1/jobs", auth.Write, 0, gated(a, readJobQuery("topic", "biz_id", "key"), a.cancelMatching)},
		{"PATCH", "/v1/jobs", auth.Write, small, gated(a, readMovedJobs, a.rescheduleMatching)},
		{"POST", "/v1/jobs/bulk", auth.Write, small, gated(a, readJobSelection, a.selectedJobs)},
		{"GET", "/v1/jobs/search", auth.Read, 0, gated(a, readJobSearch, a.searchJobs)},
		{"GET", "/v1/jobs/{id}", auth.Read, 0, gated(a, readJobAt, a.getJob)},
		{"GET", "/v1/jobs/{id}/attempts", auth.Read, 0, gated(a, readJobAt, a.listAttempts)},
		{"DELETE", "/v1/jobs/{id}", auth.Write, 0, gated(a, readJobChange, a.cancelJob)},
		{"PATCH", "/v1/jobs/{id}", auth.Write, small, gated(a, readJobMove, a.rescheduleJob)},
		{"GET", "/v1/deadletters", auth.Read, 0, gated(a, readDeadPage, a.listDead)},
		{"GET", "/v1/deadletters/summary", auth.Read, 0, gated(a, readDeadSummary, a.deadSummary)},
		{"POST", "/v1/deadletters/replay", auth.Write, small, gated(a, readDeadBulk(true), a.replayMatching)},
		{"POST", "/v1/deadletters/purge", auth.Write, small, gated(a, readDeadBulk(false), a.purgeMatching)},
		{"POST", "/v1/deadletters/bulk", auth.Write, small, gated(a, readDeadSelection, a.selectedDead)},
		{"POST", "/v1/deadletters/{id}/replay", auth.Write, small, gated(a, readReplay, a.replayDead)},
		{"DELETE", "/v1/deadletters/{id}", auth.Write, 0, gated(a, readJobAt, a.purgeDead)},
		{"GET", "/v1/topics", auth.Read, 0, gated(a, readNothing, a.listTopics)},
		{"GET", "/v1/topics/{topic}", auth.Read, 0, gated(a, readTopicAt, a.getTopic)},
		{"PUT", "/v1/topics/{topic}", auth.Admin, small, gated(a, readTopicPut, a.putTopic)},
		{"PATCH", "/v1/topics/{topic}", auth.Admin, small, gated(a, readTopicPatch, a.patchTopic)},
		{"DELETE", "/v1/topics/{topic}", auth.Admin, 0, gated(a, readTopicAt, a.deleteTopic)},
		{"POST", "/v1/topics/{topic}/pause", auth.Admin, 0, gated(a, readTopicAt, a.pauseTopic(true))},
		{"POST", "/v1/topics/{topic}/resume", auth.Admin, 0, gated(a, readTopicAt, a.pauseTopic(false))},
		{"GET", "/v1/topics/{topic}/stats", auth.Read, 0, gated(a, readTopicAt, a.topicStats)},
		{"GET", "/v1/topics/{topic}/forecast", auth.Read, 0, gated(a, a.readForecast, a.forecast)},
		{"GET", "/v1/topics/{topic}/series", auth.Read, 0, gated(a, a.readSeries(true), a.series)},
		{"GET", "/v1/series", auth.Read, 0, gated(a, a.readSeries(false), a.series)},
		{"POST", "/v1/topics/{topic}/leases", auth.Write, small, gated(a, readLeaseRequest, a.lease)},
		{"POST", "/v1/leases/ack", auth.Write, small, gated(a, readLeaseAcks, a.ackLeases)},
		{"POST", "/v1/leases/{token}/ack", auth.Write, 0, gated(a, readLeaseChange("ack"), a.changeLease)},
		{"POST", "/v1/leases/{token}/nack", auth.Write, small, gated(a, readLeaseChange("nack"), a.changeLease)},
		{"POST", "/v1/leases/{token}/extend", auth.Write, small, gated(a, readLeaseChange("extend"), a.changeLease)},
		{"POST", "/v1/schedules", auth.Write, small, gated(a, a.readSchedule, a.createSchedule)},
		{"GET", "/v1/schedules", auth.Read, 0, gated(a, readNothing, a.listSchedules)},
		{"GET", "/v1/schedules/{id}", auth.Read, 0, gated(a, a.readScheduleAt, a.getSchedule)},
		{"DELETE", "/v1/schedules/{id}", auth.Write, 0, gated(a, a.readScheduleAt, a.deleteSchedule)},
		{"POST", "/v1/schedules/{id}/pause", auth.Write, 0, gated(a, a.readScheduleAt, a.pauseSchedule)},
		{"POST", "/v1/schedules/{id}/resume", auth.Write, 0, gated(a, a.readScheduleAt, a.resumeSchedule)},
		{"POST", "/v1/groups", auth.Write, small, gated(a, a.readNewGroup, a.createGroup)},
		{"GET", "/v1/groups/{id}", auth.Read, 0, gated(a, readGroupAt, a.getGroup)},
		{"POST", "/v1/groups/{id}/seal", auth.Write, 0, gated(a, readGroupAt, a.sealGroup)},
		{"GET", "/v1/cluster", auth.Admin, 0, gated(a, readNothing, a.cluster)},
		{"GET", "/v1/audit", auth.Admin, 0, gated(a, readAuditQuery, a.listAudit)},
	}
}

// serveOp checks the token's role for o, bounds the body o reads (a route
// that reads none gets the smallest bound) and runs its handler.
func (a *API) serveOp(o op) http.HandlerFunc {
	limit := o.body
	if limit == 0 {
		limit = a.cfg.MaxBodyBytes
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if p := principalFrom(r.Context()); p != nil && !p.Role.Allows(o.role) {
			a.writeError(w, r, fmt.Errorf("token %s (role %s) may not %s %s: it needs the role %s: %w", p.Name, p.Role, o.method, o.pattern, o.role, errForbidden))
			return
		}
		if r.ContentLength > limit {
			a.writeError(w, r, &http.MaxBytesError{Limit: limit})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		o.handler(w, r)
	}
}

// errBatchSize refuses a batch of no job or more than MaxBatchJobs.
var errBatchSize = &timer.FieldError{Field: "jobs", Message: fmt.Sprintf("must hold 1..%d jobs", MaxBatchJobs)}
