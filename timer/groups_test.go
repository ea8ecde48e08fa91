package timer_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

func groupReq(group string) timer.Request {
	r := batchReq("jobs", "")
	r.GroupID = group
	return r
}

var doneCallback = &timer.GroupCallback{CallbackURL: "http://127.0.0.1:9/done", Payload: []byte(`{"task":7}`)}

// completionJobs returns the jobs of the topic groups: the completion
// jobs.
func completionJobs(t *testing.T, s *timertest.Store) []*timer.Job {
	t.Helper()
	jobs, err := s.ListJobs(t.Context(), timer.JobQuery{Topic: timer.DefaultGroupTopic, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// A job joins only a group that exists and is open; the batch with a
// group creates it, makes every job a member and seals it; once every
// member has ended the group completes once, with a completion job that
// carries the counts.
func TestGroupLifecycle(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	gc := timer.NewGroupCompleter(store, s, timer.GroupCompleterConfig{})
	s.OnEnded(gc.Notify)

	if _, err := s.Schedule(ctx, groupReq("nope")); !errors.As(err, new(*timer.FieldError)) {
		t.Errorf("a job of an unknown group = %v, want a field error", err)
	} else if fe, _ := errors.AsType[*timer.FieldError](err); fe.Field != "group_id" {
		t.Errorf("field %q, want group_id", fe.Field)
	}
	g, res, err := s.ScheduleGroup(ctx, timer.Group{ID: "task-7", OnComplete: doneCallback}, true,
		[]timer.Request{batchReq("jobs", ""), batchReq("jobs", ""), batchReq("jobs", "k3")})
	if err != nil {
		t.Fatal(err)
	}
	if g.SealedAt.IsZero() || len(res) != 3 || res[0].Job.GroupID != "task-7" {
		t.Fatalf("ScheduleGroup = %+v, %+v", g, res)
	}
	if _, err := s.Schedule(ctx, groupReq("task-7")); !timer.IsGroupSealed(err) || !errors.Is(err, timer.ErrConflict) {
		t.Errorf("a job joining a sealed group = %v, want a conflict", err)
	}
	// A repeated key answers its job, sealed or not.
	again := batchReq("jobs", "k3")
	again.GroupID = "task-7"
	if r, err := s.Schedule(ctx, again); err != nil || r.Created || r.Job.ID != res[2].Job.ID {
		t.Errorf("a repeated key = %+v, %v; want the existing job", r, err)
	}

	end := func(i int, to timer.Status) {
		t.Helper()
		switch to {
		case timer.StatusCancelled:
			if _, err := s.Cancel(ctx, res[i].Job.ID); err != nil {
				t.Fatal(err)
			}
		case timer.StatusDead:
			if _, err := store.Fail(ctx, res[i].Job.ID, timer.Failure{Attempts: 1, Error: "HTTP 500", Status: 500, Dead: true}, batchNow); err != nil {
				t.Fatal(err)
			}
		case timer.StatusDone:
			if _, err := store.Complete(ctx, []timer.Completion{{ID: res[i].Job.ID, Attempts: 1}}, batchNow); err != nil {
				t.Fatal(err)
			}
		}
		if err := gc.Check(ctx, "task-7"); err != nil {
			t.Fatal(err)
		}
	}
	end(0, timer.StatusDone)
	end(1, timer.StatusCancelled)
	if len(completionJobs(t, store)) != 0 {
		t.Fatal("completed with a member live")
	}
	end(2, timer.StatusDead)
	jobs := completionJobs(t, store)
	if len(jobs) != 1 {
		t.Fatalf("%d completion jobs, want 1", len(jobs))
	}
	j := jobs[0]
	if j.Key != timer.GroupKey("task-7") || j.CallbackURL != doneCallback.CallbackURL || j.GroupID != "" {
		t.Errorf("completion job = %+v", j)
	}
	var body struct {
		GroupID string           `json:"group_id"`
		Counts  map[string]int64 `json:"counts"`
		Total   int64            `json:"total"`
		Payload map[string]int   `json:"payload"`
	}
	if err := json.Unmarshal(j.Payload, &body); err != nil {
		t.Fatal(err)
	}
	if body.GroupID != "task-7" || body.Total != 3 || body.Counts["done"] != 1 || body.Counts["dead"] != 1 ||
		body.Counts["cancelled"] != 1 || body.Counts["pending"] != 0 || body.Payload["task"] != 7 {
		t.Errorf("completion payload = %s", j.Payload)
	}
	// Checks and sweeps after that change nothing.
	if err := gc.Check(ctx, "task-7"); err != nil {
		t.Fatal(err)
	}
	if n, err := gc.RunOnce(ctx); err != nil || n != 0 {
		t.Errorf("RunOnce = %d, %v; want nothing left", n, err)
	}
	if got := completionJobs(t, store); len(got) != 1 {
		t.Errorf("%d completion jobs, want 1", len(got))
	}
	v, err := s.Group(ctx, "task-7")
	if err != nil || v.CompletionJob != j.ID || v.CompletedAt.IsZero() || v.Now[timer.StatusDone] != 1 {
		t.Errorf("Group = %+v, %v", v, err)
	}
}

// A group made open by CreateGroup takes members one by one, and
// completes only once sealed: a member ending first is not the end.
func TestGroupOpenUntilSealed(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	gc := timer.NewGroupCompleter(store, s, timer.GroupCompleterConfig{})
	if _, created, err := s.CreateGroup(ctx, timer.Group{ID: "open", OnComplete: doneCallback}); err != nil || !created {
		t.Fatalf("CreateGroup = %v, %v", created, err)
	}
	if _, created, err := s.CreateGroup(ctx, timer.Group{ID: "open", OnComplete: doneCallback}); err != nil || created {
		t.Errorf("CreateGroup again, same callback = %v, %v; want the group", created, err)
	}
	if _, _, err := s.CreateGroup(ctx, timer.Group{ID: "open"}); !errors.Is(err, timer.ErrConflict) {
		t.Errorf("CreateGroup again, other callback = %v; want a conflict", err)
	}
	r, err := s.Schedule(ctx, groupReq("open"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, r.Job.ID); err != nil {
		t.Fatal(err)
	}
	if err := gc.Check(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if g, _ := store.GetGroup(ctx, "open"); !g.CompletedAt.IsZero() {
		t.Fatal("an open group completed")
	}
	if _, err := s.Schedule(ctx, groupReq("open")); err != nil {
		t.Fatalf("a second member: %v", err)
	}
	if _, err := s.SealGroup(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if err := gc.Check(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	if g, _ := store.GetGroup(ctx, "open"); !g.CompletedAt.IsZero() {
		t.Fatal("completed with a member pending")
	}
	// A sealed group with no members left completes at once: here the
	// second member ends without anyone hearing of it, and the sweep
	// finds it.
	jobs, err := store.ListJobs(ctx, timer.JobQuery{Topic: "jobs", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if _, err := store.Transition(ctx, j.ID, timer.StatusPending, timer.StatusCancelled, batchNow); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := gc.RunOnce(ctx); err != nil || n != 1 {
		t.Fatalf("RunOnce = %d, %v; want the group completed", n, err)
	}
	if g, _ := store.GetGroup(ctx, "open"); g.CompletedAt.IsZero() || g.Counts[timer.StatusCancelled] != 2 || g.CompletionJob == 0 {
		t.Errorf("group = %+v", g)
	}
}

// Two processes hear at once that the last two members ended: one
// declares the completion, and there is one completion job.
func TestGroupTwoMembersEndAtOnce(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	_, res, err := s.ScheduleGroup(ctx, timer.Group{ID: "pair", OnComplete: doneCallback}, true,
		[]timer.Request{batchReq("jobs", ""), batchReq("jobs", "")})
	if err != nil {
		t.Fatal(err)
	}
	// Two processes: two schedulers and completers over one store.
	var gcs [2]*timer.GroupCompleter
	for i := range gcs {
		s2, _ := newBatchScheduler(t, store, timer.SchedulerConfig{Node: i + 1})
		gcs[i] = timer.NewGroupCompleter(store, s2, timer.GroupCompleterConfig{})
	}
	for round := range 20 {
		id := "pair"
		if round > 0 {
			id = "pair-" + string(rune('a'+round))
			if _, res, err = s.ScheduleGroup(ctx, timer.Group{ID: id, OnComplete: doneCallback}, true,
				[]timer.Request{batchReq("jobs", ""), batchReq("jobs", "")}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i, gc := range gcs {
			wg.Go(func() {
				if _, err := store.Complete(ctx, []timer.Completion{{ID: res[i].Job.ID, Attempts: 1}}, batchNow); err != nil {
					t.Error(err)
				}
				if err := gc.Check(ctx, id); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		g, err := store.GetGroup(ctx, id)
		if err != nil || g.CompletedAt.IsZero() || g.Counts[timer.StatusDone] != 2 || g.CompletionJob == 0 {
			t.Fatalf("round %d: group = %+v, %v", round, g, err)
		}
	}
	if got := completionJobs(t, store); len(got) != 20 {
		t.Errorf("%d completion jobs for 20 groups, want 20", len(got))
	}
}

// sealingStore seals a group just before the jobs joining it are
// inserted: a seal that lands between the scheduler's check and its
// commit.
type sealingStore struct {
	*timertest.Store
	group string
}

func (s *sealingStore) Insert(ctx context.Context, jobs []*timer.Job) error {
	if s.group != "" {
		if _, err := s.Store.SealGroup(ctx, s.group, batchNow); err != nil {
			return err
		}
	}
	return s.Store.Insert(ctx, jobs)
}

// A job that joins a group sealed after the scheduler checked it, but
// before its row was committed, is taken back and refused: never a member
// a completion could have missed.
func TestGroupJoinRacesSeal(t *testing.T) {
	ctx := t.Context()
	store := &sealingStore{Store: timertest.NewStore()}
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	if _, _, err := s.CreateGroup(ctx, timer.Group{ID: "g"}); err != nil {
		t.Fatal(err)
	}
	store.group = "g"
	if _, err := s.Schedule(ctx, groupReq("g")); !timer.IsGroupSealed(err) {
		t.Errorf("Schedule = %v, want the group sealed", err)
	}
	if _, _, err := s.CreateGroup(ctx, timer.Group{ID: "h"}); err != nil {
		t.Fatal(err)
	}
	store.group = "h"
	_, err := s.ScheduleBatch(ctx, []timer.Request{groupReq("h"), batchReq("jobs", "")})
	var be *timer.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 0 || !timer.IsGroupSealed(be.Items[0].Err) {
		t.Errorf("ScheduleBatch = %v, want item 0 refused: group sealed", err)
	}
	if n := store.Len(); n != 0 {
		t.Errorf("%d rows left, want none", n)
	}
}

// The same group id in two namespaces is two groups, stored under
// QualifiedGroupID: each takes its own members and completes on its own,
// under the same completion key in its own namespace's topic, and every
// message and payload names the group by the id its client gave.
func TestGroupsOfTwoNamespaces(t *testing.T) {
	ctx := t.Context()
	store := timertest.NewStore()
	s, _ := newBatchScheduler(t, store, timer.SchedulerConfig{})
	gc := timer.NewGroupCompleter(store, s, timer.GroupCompleterConfig{})
	sandbox := timer.QualifiedGroupID("sandbox", "g")
	callback := func(topic string) *timer.GroupCallback {
		return &timer.GroupCallback{Topic: topic, CallbackURL: "http://127.0.0.1:9/done"}
	}
	_, def, err := s.ScheduleGroup(ctx, timer.Group{ID: "g", OnComplete: callback("groups")}, true, []timer.Request{batchReq("jobs", "")})
	if err != nil {
		t.Fatalf("the default namespace's group g: %v", err)
	}
	_, sb, err := s.ScheduleGroup(ctx, timer.Group{ID: sandbox, OnComplete: callback("sandbox.groups")}, true, []timer.Request{batchReq("sandbox.jobs", "")})
	if err != nil {
		t.Fatalf("the sandbox's group g: %v", err)
	}
	if def[0].Job.GroupID != "g" || sb[0].Job.GroupID != sandbox {
		t.Fatalf("members of groups %q and %q, want g and %q", def[0].Job.GroupID, sb[0].Job.GroupID, sandbox)
	}
	shows := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sandbox") || strings.Contains(err.Error(), "\x1f") {
			t.Errorf("%s: %v; want a message with %s that does not show the namespace", what, err, want)
		}
	}
	_, err = s.Schedule(ctx, timer.Request{Topic: "sandbox.jobs", Delay: time.Minute, CallbackURL: "http://127.0.0.1:9/h", GroupID: sandbox})
	shows("joining the sealed sandbox group", err, `group "g" is sealed`)
	_, err = s.Schedule(ctx, timer.Request{Topic: "sandbox.jobs", Delay: time.Minute, CallbackURL: "http://127.0.0.1:9/h", GroupID: timer.QualifiedGroupID("sandbox", "nope")})
	shows("joining an unknown sandbox group", err, `unknown group "nope"`)
	_, _, err = s.CreateGroup(ctx, timer.Group{ID: sandbox, OnComplete: callback("sandbox.other")})
	shows("creating the sandbox group again with another callback", err, `group "g" exists with another on_complete`)

	completions := func(topic string) []*timer.Job {
		t.Helper()
		jobs, err := store.ListJobs(ctx, timer.JobQuery{Topic: topic, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	if _, err := store.Complete(ctx, []timer.Completion{{ID: def[0].Job.ID, Attempts: 1}}, batchNow); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"g", sandbox} {
		if err := gc.Check(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := completions("groups"); len(got) != 1 || got[0].Key != "group:g:complete" {
		t.Fatalf("completion jobs of the default namespace = %v, want one keyed group:g:complete", got)
	}
	if g, err := store.GetGroup(ctx, sandbox); err != nil || !g.CompletedAt.IsZero() || len(completions("sandbox.groups")) != 0 {
		t.Fatalf("the sandbox's group = %+v, %v; want it live, its member pending", g, err)
	}
	if _, err := store.Complete(ctx, []timer.Completion{{ID: sb[0].Job.ID, Attempts: 1}}, batchNow); err != nil {
		t.Fatal(err)
	}
	if err := gc.Check(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	got := completions("sandbox.groups")
	if len(got) != 1 || got[0].Key != "group:g:complete" {
		t.Fatalf("completion jobs of the sandbox = %v, want one keyed group:g:complete", got)
	}
	var body struct {
		GroupID string `json:"group_id"`
		Total   int64  `json:"total"`
	}
	if err := json.Unmarshal(got[0].Payload, &body); err != nil || body.GroupID != "g" || body.Total != 1 {
		t.Errorf("the sandbox's completion payload = %s, %v; want group_id g, total 1", got[0].Payload, err)
	}
	if len(completions("groups")) != 1 {
		t.Error("the sandbox's completion made a job in the default namespace")
	}
}

// A group's completion job is in the group's namespace: its topic
// defaults to that namespace's DefaultGroupTopic, and a topic of another
// namespace is refused, so that the completion keys of the same id in two
// namespaces (GroupKey) never meet in one topic.
func TestGroupCompletionTopicOfItsNamespace(t *testing.T) {
	ctx := t.Context()
	s, _ := newBatchScheduler(t, timertest.NewStore(), timer.SchedulerConfig{})
	g, _, err := s.CreateGroup(ctx, timer.Group{ID: timer.QualifiedGroupID("sandbox", "d"), OnComplete: &timer.GroupCallback{CallbackURL: "http://127.0.0.1:9/done"}})
	if err != nil || g.OnComplete.Topic != "sandbox."+timer.DefaultGroupTopic {
		t.Errorf("a sandbox group without a topic = %+v, %v; want its completion in sandbox.%s", g, err, timer.DefaultGroupTopic)
	}
	if g, _, err := s.CreateGroup(ctx, timer.Group{ID: "d", OnComplete: &timer.GroupCallback{CallbackURL: "http://127.0.0.1:9/done"}}); err != nil || g.OnComplete.Topic != timer.DefaultGroupTopic {
		t.Errorf("a default group without a topic = %+v, %v; want its completion in %s", g, err, timer.DefaultGroupTopic)
	}
	for _, tc := range []struct{ id, topic string }{
		{timer.QualifiedGroupID("sandbox", "x"), "orders"},
		{timer.QualifiedGroupID("sandbox", "y"), "online.orders"},
		{"z", "sandbox.orders"},
	} {
		_, _, err := s.CreateGroup(ctx, timer.Group{ID: tc.id, OnComplete: &timer.GroupCallback{Topic: tc.topic, CallbackURL: "http://127.0.0.1:9/done"}})
		if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "on_complete.topic" {
			t.Errorf("group %q completing in %s: %v; want a field error naming on_complete.topic", tc.id, tc.topic, err)
		}
	}
}
