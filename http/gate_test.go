package http_test

import (
	"net/http"
	"strings"
	"testing"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// groupBody is POST /v1/groups's body for group id, completing in topic.
func groupBody(id, topic string) string {
	return `{"id": "` + id + `", "on_complete": {"callback_url": "http://127.0.0.1:9/done", "topic": "` + topic + `"}}`
}

func jobIn(topic, group string) string {
	return `{"topic": "` + topic + `", "delay_ms": 3600000, "callback_url": "http://127.0.0.1:9/hook", "group_id": "` + group + `"}`
}

// errorMessage is the error message of an answer.
func errorMessage(a answer) string {
	e, _ := a.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

// A job may join only a group its token may see: another tenant's group
// is the very 400 of a missing one, and creating one of its id says only
// that the id is taken.
func TestGateGroupsOfAnotherTenant(t *testing.T) {
	e := tenantsEnv(t)
	orders, billing := bearerOf("orders"), bearerOf("billing")
	if a := e.call(t, "POST", "/v1/groups", groupBody("g-billing", "billing"), billing...); a.status != http.StatusCreated {
		t.Fatalf("billing creates its group: %d %s", a.status, a.raw)
	}
	missing := e.call(t, "POST", "/v1/jobs", jobIn("orders", "g-nope"), orders...)
	missing.wantError(t, 400, tochttp.CodeInvalid, "group_id")
	intruder := e.call(t, "POST", "/v1/jobs", jobIn("orders", "g-billing"), orders...)
	intruder.wantError(t, 400, tochttp.CodeInvalid, "group_id")
	if got, want := strings.ReplaceAll(errorMessage(intruder), "g-billing", "g-nope"), errorMessage(missing); got != want {
		t.Errorf("joining another tenant's group says %q; a missing one %q", got, want)
	}
	b := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("orders")+`, `+jobIn("orders", "g-billing")+`]}`, orders...)
	b.wantError(t, 400, tochttp.CodeInvalid, "jobs")
	if items := b.body["error"].(map[string]any)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["field"] != "group_id" {
		t.Errorf("batch joining another tenant's group: %s", b.raw)
	}
	taken := e.call(t, "POST", "/v1/jobs/batch", `{"group": `+groupBody("g-billing", "orders")+`, "jobs": [`+job("orders")+`]}`, orders...)
	taken.wantError(t, 409, tochttp.CodeConflict, "")
	again := e.call(t, "POST", "/v1/groups", groupBody("g-billing", "orders"), orders...)
	again.wantError(t, 409, tochttp.CodeConflict, "")
	for _, a := range []answer{taken, again} {
		if msg := errorMessage(a); strings.Contains(msg, "on_complete") || strings.Contains(msg, "billing\"") && !strings.Contains(msg, "g-billing") {
			t.Errorf("a taken id tells of the group: %q", msg)
		}
	}
	if e.rows(t, "orders") != 0 {
		t.Errorf("refused joins stored %d jobs", e.rows(t, "orders"))
	}
	g := e.call(t, "GET", "/v1/groups/g-billing", "", billing...)
	if g.status != 200 || g.body["total"].(float64) != 0 {
		t.Errorf("billing's group after the intrusions: %d %s", g.status, g.raw)
	}
	if a := e.call(t, "POST", "/v1/jobs", jobIn("billing", "g-billing"), billing...); a.status != http.StatusCreated {
		t.Errorf("its owner joins it: %d %s", a.status, a.raw)
	}
}

// Group ids are scoped per namespace: the same id in two is two groups,
// and neither namespace's jobs may join the other's.
func TestGateGroupsPerNamespace(t *testing.T) {
	set, err := auth.ParseIn([]byte(namespacesTokens), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set },
		Namespaces: map[string]tochttp.Namespace{"sandbox": {CallbackHosts: []string{"127.0.0.1"}}}}, nil)
	orders, sbOrders := bearerOf("orders"), bearerOf("sb-orders")
	if a := e.call(t, "POST", "/v1/groups", groupBody("g1", "orders"), orders...); a.status != http.StatusCreated {
		t.Fatalf("online group: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/jobs", jobIn("orders", "g1"), sbOrders...).wantError(t, 400, tochttp.CodeInvalid, "group_id")
	e.call(t, "GET", "/v1/groups/g1", "", sbOrders...).wantError(t, 404, tochttp.CodeNotFound, "")
	if a := e.call(t, "POST", "/v1/groups", groupBody("g1", "orders"), sbOrders...); a.status != http.StatusCreated || a.body["id"] != "g1" {
		t.Fatalf("sandbox's own g1: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/jobs", jobIn("orders", "g1"), sbOrders...); a.status != http.StatusCreated {
		t.Fatalf("sandbox joins its g1: %d %s", a.status, a.raw)
	}
	online, sandbox := e.call(t, "GET", "/v1/groups/g1", "", orders...), e.call(t, "GET", "/v1/groups/g1", "", sbOrders...)
	if online.body["total"].(float64) != 0 || sandbox.body["total"].(float64) != 1 {
		t.Errorf("g1 online %s, in sandbox %s; want 0 and 1 members", online.raw, sandbox.raw)
	}
}

// max_topics counts the topic a group's completion will create, by POST
// /v1/groups and by a batch's group.
func TestGateTopicQuotaThroughGroups(t *testing.T) {
	e := tenantsEnv(t)
	orders := bearerOf("orders")
	for _, topic := range []string{"orders", "orders-a", "orders-b"} {
		if a := e.call(t, "POST", "/v1/jobs", job(topic), orders...); a.status != 201 {
			t.Fatalf("%s: %d %s", topic, a.status, a.raw)
		}
	}
	e.call(t, "POST", "/v1/groups", groupBody("gq-1", "orders-e"), orders...).wantError(t, 409, tochttp.CodeTopicQuota, "on_complete.topic")
	e.call(t, "POST", "/v1/jobs/batch", `{"group": `+groupBody("gq-2", "orders-f")+`, "jobs": [`+job("orders")+`]}`, orders...).
		wantError(t, 409, tochttp.CodeTopicQuota, "group.on_complete.topic")
	for _, id := range []string{"gq-1", "gq-2"} {
		e.call(t, "GET", "/v1/groups/"+id, "", orders...).wantError(t, 404, tochttp.CodeNotFound, "")
	}
	if a := e.call(t, "POST", "/v1/groups", groupBody("gq-3", "orders-a"), orders...); a.status != http.StatusCreated {
		t.Errorf("a group completing in an existing topic: %d %s", a.status, a.raw)
	}
}

// A schedule is refused while the token's topics hold max_pending jobs;
// validation comes before every quota; a batch larger than the rate's
// bucket can never go, so it is refused at once.
func TestGateQuotaOrder(t *testing.T) {
	e := tenantsEnv(t)
	small, slow := bearerOf("small"), bearerOf("slow")
	schedule := `{"every_ms": 60000, "job": {"topic": "small", "callback_url": "http://127.0.0.1:9/hook"}}`
	if a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("small")+`, `+job("small")+`]}`, small...); a.status != 200 {
		t.Fatalf("small: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/schedules", schedule, small...); a.status != http.StatusCreated {
		t.Fatalf("a schedule below max_pending: %d %s", a.status, a.raw)
	}
	if a := e.call(t, "POST", "/v1/jobs", job("small"), small...); a.status != http.StatusCreated {
		t.Fatalf("the third job: %d %s", a.status, a.raw)
	}
	e.call(t, "POST", "/v1/schedules", schedule, small...).wantError(t, 429, tochttp.CodePendingQuota, "")
	e.call(t, "POST", "/v1/jobs", `{"topic": "small", "delay_ms": -5, "callback_url": "http://127.0.0.1:9/hook"}`, small...).
		wantError(t, 400, tochttp.CodeInvalid, "delay_ms")
	e.call(t, "POST", "/v1/schedules", `{"every_ms": 5, "job": {"topic": "small", "callback_url": "http://127.0.0.1:9/hook"}}`, small...).
		wantError(t, 400, tochttp.CodeInvalid, "every_ms")
	// Group ids are 1..100 bytes, counted in bytes; past it a 400 naming
	// the field, at the quota or not.
	long, euros := strings.Repeat("g", 101), strings.Repeat("€", 34)
	e.call(t, "POST", "/v1/jobs", jobIn("small", long), small...).wantError(t, 400, tochttp.CodeInvalid, "group_id")
	ops := bearerOf("ops")
	for _, id := range []string{long, euros} {
		e.call(t, "POST", "/v1/groups", groupBody(id, "groups"), ops...).wantError(t, 400, tochttp.CodeInvalid, "id")
		e.call(t, "POST", "/v1/jobs/batch", `{"group": `+groupBody(id, "groups")+`, "jobs": [`+job("parts")+`]}`, ops...).
			wantError(t, 400, tochttp.CodeInvalid, "group.id")
	}
	if a := e.call(t, "POST", "/v1/groups", groupBody(strings.Repeat("g", 100), "groups"), ops...); a.status != http.StatusCreated {
		t.Errorf("a 100-byte group id: %d %s", a.status, a.raw)
	}

	a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("slow")+`, `+job("slow")+`, `+job("slow")+`]}`, slow...)
	a.wantError(t, 429, tochttp.CodeRateLimited, "")
	if !strings.Contains(errorMessage(a), "at most 2 a call") || e.rows(t, "slow") != 0 {
		t.Errorf("a batch over the bucket: %s, %d rows", a.raw, e.rows(t, "slow"))
	}
	if a := e.call(t, "POST", "/v1/jobs/batch", `{"jobs": [`+job("slow")+`, `+job("slow")+`]}`, slow...); a.status != 200 {
		t.Errorf("a batch the bucket holds: %d %s", a.status, a.raw)
	}
}

// A namespace admin's schedule actions are filed in its namespace's
// audit log, not the default one's.
func TestGateScheduleAuditInNamespace(t *testing.T) {
	set, err := auth.ParseIn([]byte(namespacesTokens), []string{"sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	e := newAPIEnv(t, tochttp.APIConfig{TokenSet: func() *auth.Set { return set }}, nil)
	ops, sbOps := bearerOf("ops"), bearerOf("sb-ops")
	s := e.call(t, "POST", "/v1/schedules", `{"every_ms": 60000, "job": {"topic": "orders", "callback_url": "http://127.0.0.1:9/hook"}}`, sbOps...)
	if s.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", s.status, s.raw)
	}
	id := s.body["id"].(string)
	for _, verb := range []string{"pause", "resume"} {
		if a := e.call(t, "POST", "/v1/schedules/"+id+"/"+verb, "", sbOps...); a.status != 200 {
			t.Fatalf("%s: %d %s", verb, a.status, a.raw)
		}
	}
	if a := e.call(t, "DELETE", "/v1/schedules/"+id, "", sbOps...); a.status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", a.status, a.raw)
	}
	actions := func(tok []string) []string {
		a := e.call(t, "GET", "/v1/audit", "", tok...)
		var out []string
		for _, en := range a.body["entries"].([]any) {
			if m := en.(map[string]any); m["target"] == "schedule "+id {
				out = append(out, m["action"].(string))
			}
		}
		return out
	}
	if got := actions(sbOps); strings.Join(got, ",") != "schedule.delete,schedule.resume,schedule.pause" {
		t.Errorf("sandbox's audit log: %v", got)
	}
	if got := actions(ops); len(got) != 0 {
		t.Errorf("the default namespace's audit log shows sandbox's schedule: %v", got)
	}
}

// A schedule's occurrence is admitted as its owner's job: refused with
// timer.ErrQuota at the owner's max_pending, and charged when admitted.
func TestAdmitOccurrence(t *testing.T) {
	e := tenantsEnv(t)
	small := bearerOf("small")
	if a := e.call(t, "POST", "/v1/jobs", job("small"), small...); a.status != http.StatusCreated {
		t.Fatalf("small: %d %s", a.status, a.raw)
	}
	occurrence := &timer.Schedule{Owner: "small", Job: timer.JobTemplate{Topic: "small"}}
	for i := range 2 { // room for two more of max_pending 3
		if err := e.api.AdmitOccurrence(t.Context(), occurrence); err != nil {
			t.Fatalf("occurrence %d: %v", i, err)
		}
	}
	err := e.api.AdmitOccurrence(t.Context(), occurrence)
	if !timer.IsQuota(err) || !strings.Contains(err.Error(), "max_pending 3") {
		t.Errorf("at the quota: %v, want a quota error", err)
	}
	for _, owner := range []string{"", "gone"} {
		if err := e.api.AdmitOccurrence(t.Context(), &timer.Schedule{Owner: owner}); err != nil {
			t.Errorf("owner %q: %v, want no quota to keep", owner, err)
		}
	}
}
