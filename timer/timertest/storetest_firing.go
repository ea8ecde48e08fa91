// The task store contract, continued: firing (the conditional update that
// a cancel races against) and the dead-letter record.

package timertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// Fire moves pending and firing jobs due by until to firing, and no
// others; a cancel after it finds the job firing, one before it wins.
func testFire(t *testing.T, s timer.Store) {
	ctx := t.Context()
	cancelled := newJob(4, "t", 0)
	cancelled.Status = timer.StatusCancelled
	done := newJob(5, "t", 0)
	done.Status = timer.StatusDone
	mustInsert(t, s, newJob(1, "t", 0), newJob(2, "t", 10), newJob(3, "t", 11), cancelled, done)
	now := base.Add(time.Minute)
	n, err := s.Fire(ctx, []timer.JobID{1, 2, 3, 4, 5, 99}, base.Add(10*time.Millisecond), now)
	if err != nil || n != 2 {
		t.Fatalf("Fire = %d, %v; want the 2 pending jobs due by until", n, err)
	}
	want := map[timer.JobID]timer.Status{1: timer.StatusFiring, 2: timer.StatusFiring, 3: timer.StatusPending, 4: timer.StatusCancelled, 5: timer.StatusDone}
	for id, st := range want {
		if got := mustGet(t, s, id); got.Status != st {
			t.Errorf("job %d is %s, want %s", id, got.Status, st)
		}
	}
	// A cancel loses to Fire: the job is no longer pending.
	if ok, err := s.Transition(ctx, 1, timer.StatusPending, timer.StatusCancelled, now); ok || err != nil {
		t.Errorf("cancel of a firing job = %t, %v; want false", ok, err)
	}
	// A firing job whose worker died is fired again.
	if n, err := s.Fire(ctx, []timer.JobID{1}, base, now); err != nil || n != 1 {
		t.Errorf("Fire of a firing job = %d, %v; want 1", n, err)
	}
	// A rescheduled job (pending, due later) is left pending.
	if ok, err := s.Reschedule(ctx, 3, base.Add(time.Hour), now); !ok || err != nil {
		t.Fatalf("Reschedule = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{3}, base.Add(time.Minute), now); err != nil || n != 0 {
		t.Errorf("Fire of a job rescheduled later = %d, %v; want 0", n, err)
	}
	if n, err := s.Fire(ctx, nil, base, now); err != nil || n != 0 {
		t.Errorf("Fire of no ids = %d, %v", n, err)
	}
}

// A firing job ends done, fails back to pending or dead, is cancelled
// from firing, or is stopped by the receiver's 410 (cancelled, the attempt
// recorded); a reschedule of a firing job fails.
func testFiringFinishes(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s, newJob(1, "t", 0), newJob(2, "t", 0), newJob(3, "t", 0), newJob(4, "t", 0), newJob(5, "t", 0))
	if n, err := s.Fire(ctx, []timer.JobID{1, 2, 3, 4, 5}, base, base); n != 5 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	if ok, err := s.Reschedule(ctx, 1, base.Add(time.Hour), base); ok || err != nil {
		t.Errorf("Reschedule of a firing job = %t, %v; want false", ok, err)
	}
	if n, err := s.Complete(ctx, []timer.Completion{{ID: 1, Attempts: 1}}, base); n != 1 || err != nil {
		t.Errorf("Complete of a firing job = %d, %v; want 1", n, err)
	}
	retryAt := base.Add(90 * time.Second)
	if ok, err := s.Fail(ctx, 2, timer.Failure{Attempts: 1, Error: "503", Status: 503, RetryAt: retryAt}, base); !ok || err != nil {
		t.Errorf("Fail of a firing job = %t, %v", ok, err)
	}
	if ok, err := s.Fail(ctx, 3, timer.Failure{Attempts: 1, Error: "gave up", Dead: true}, base); !ok || err != nil {
		t.Errorf("Fail(dead) of a firing job = %t, %v", ok, err)
	}
	if ok, err := s.Transition(ctx, 4, timer.StatusFiring, timer.StatusCancelled, base); !ok || err != nil {
		t.Errorf("firing to cancelled = %t, %v", ok, err)
	}
	if ok, err := s.Fail(ctx, 5, timer.Failure{Attempts: 2, Error: "410 Gone", Status: 410, Stopped: true, RetryAt: base.Add(time.Hour)}, base); !ok || err != nil {
		t.Errorf("Fail(stopped) of a firing job = %t, %v", ok, err)
	}
	want := map[timer.JobID]timer.Status{1: timer.StatusDone, 2: timer.StatusPending, 3: timer.StatusDead, 4: timer.StatusCancelled, 5: timer.StatusCancelled}
	for id, st := range want {
		if got := mustGet(t, s, id); got.Status != st {
			t.Errorf("job %d is %s, want %s", id, got.Status, st)
		}
	}
	if got := mustGet(t, s, 2); got.LastStatus != 503 || !got.DueAt.Equal(retryAt) {
		t.Errorf("after Fail: last status %d, due %v; want 503, due at the retry %v", got.LastStatus, got.DueAt, retryAt)
	}
	if got := mustGet(t, s, 3); !got.DueAt.Equal(newJob(3, "t", 0).DueAt) {
		t.Errorf("a dead job's due time moved to %v", got.DueAt)
	}
	if got := mustGet(t, s, 5); got.Attempts != 2 || got.LastStatus != 410 || got.LastError != "410 Gone" || !got.DueAt.Equal(newJob(5, "t", 0).DueAt) {
		t.Errorf("a stopped job: attempts %d, last status %d, last error %q, due %v; want 2, 410, \"410 Gone\", unmoved",
			got.Attempts, got.LastStatus, got.LastError, got.DueAt)
	}
}

// ScanPending reads firing jobs with the pending ones, in (due, id)
// order: an attempt under way whose timer Redis lost must come back too.
func testScanPendingFiring(t *testing.T, s timer.Store) {
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "t", Slots: 16}); err != nil {
		t.Fatal(err)
	}
	done := newJob(4, "t", 0)
	done.Status = timer.StatusDone
	mustInsert(t, s, newJob(1, "t", 5), newJob(2, "t", 1), newJob(3, "t", 2), done)
	if n, err := s.Fire(ctx, []timer.JobID{1, 2}, base.Add(time.Second), base); n != 2 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	got, err := s.ScanPending(ctx, timer.ScanQuery{Before: base.Add(time.Second), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != 2 || got[1].ID != 3 || got[2].ID != 1 || got[0].Slots != 16 {
		t.Fatalf("ScanPending = %+v, want jobs 2, 3, 1 (two of them firing) with the topic's 16 slots", got)
	}
}

// ListDead lists a topic's dead jobs in order of death, filtered by time
// of death and error text (case-insensitive, wildcards taken literally),
// page by page.
func testListDead(t *testing.T, s timer.Store) {
	ctx := t.Context()
	var all []*timer.Job
	for i := range 12 {
		all = append(all, newJob(timer.JobID(i+1), "t", 0))
	}
	all = append(all, newJob(50, "other", 0), newJob(51, "t", 0))
	mustInsert(t, s, all...)
	for i := range 12 {
		id := timer.JobID(i + 1)
		msg := fmt.Sprintf("POST /hook: 500 Internal Server Error #%d", i)
		if i%3 == 0 {
			msg = "dial tcp: connection refused 100%_sure"
		}
		died := base.Add(time.Duration(12-i) * time.Second) // later ids died earlier
		if ok, err := s.Fail(ctx, id, timer.Failure{Attempts: 3, Error: msg, Status: 500, Dead: true}, died); !ok || err != nil {
			t.Fatalf("Fail(%d) = %t, %v", id, ok, err)
		}
	}
	if ok, err := s.Fail(ctx, 50, timer.Failure{Attempts: 1, Error: "x", Dead: true}, base); !ok || err != nil {
		t.Fatal(ok, err)
	}
	// pages lists what q selects, 5 at a time.
	pages := func(q timer.DeadQuery) string {
		t.Helper()
		var ids []timer.JobID
		q.Limit = 5
		for range 10 {
			page, err := s.ListDead(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range page {
				ids = append(ids, j.ID)
				if j.Status != timer.StatusDead || (j.Topic == "t") != (j.LastStatus == 500) {
					t.Fatalf("listed %+v", j)
				}
			}
			if len(page) < q.Limit {
				break
			}
			last := page[len(page)-1]
			q.After = timer.Cursor{DueAt: last.UpdatedAt, ID: last.ID}
		}
		return fmt.Sprint(ids)
	}
	// Paging: 5 at a time, in order of death: ids 12, 11, ..., 1.
	if got := pages(timer.DeadQuery{Topic: "t"}); got != "[12 11 10 9 8 7 6 5 4 3 2 1]" {
		t.Fatalf("pages listed %v, want 12 down to 1", got)
	}
	// Many topics: their dead jobs in one order of death (50 died first).
	// 6,002 names, the two of them far apart, so that a store that asks
	// for them in parts must merge the parts.
	topics := []string{"other"}
	for i := range 6000 {
		topics = append(topics, fmt.Sprintf("idle-%d", i))
	}
	topics = append(topics, "t")
	for _, c := range []struct {
		q    timer.DeadQuery
		want string
	}{
		{timer.DeadQuery{Topics: topics}, "[50 12 11 10 9 8 7 6 5 4 3 2 1]"},
		{timer.DeadQuery{Topics: []string{"other", "ghost"}}, "[50]"},
		{timer.DeadQuery{Topics: nil}, "[]"},
		{timer.DeadQuery{Topic: "other", Topics: []string{"t"}}, "[50]"},
		{timer.DeadQuery{Topics: []string{"t", "other"}, From: base.Add(3 * time.Second), To: base.Add(5 * time.Second)}, "[10 9]"},
	} {
		if got := pages(c.q); got != c.want {
			t.Errorf("ListDead of %d topics %.2q (topic %q) listed %s, want %s", len(c.q.Topics), c.q.Topics, c.q.Topic, got, c.want)
		}
	}
	filtered, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t", ErrorContains: "REFUSED 100%_", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(filtered); fmt.Sprint(got) != "[10 7 4 1]" {
		t.Errorf("error filter listed %v, want [10 7 4 1]", got)
	}
	if none, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t", ErrorContains: "100%x", Limit: 100}); err != nil || len(none) != 0 {
		t.Errorf("a wildcard taken literally matched %v, %v", idsOf(none), err)
	}
	window, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t", From: base.Add(3 * time.Second), To: base.Add(5 * time.Second), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(window); fmt.Sprint(got) != "[10 9]" {
		t.Errorf("time window listed %v, want [10 9] (died at +3 s and +4 s)", got)
	}
	if _, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t"}); err == nil {
		t.Error("ListDead with limit 0 did not fail")
	}
}

func idsOf(jobs []*timer.Job) []timer.JobID {
	out := make([]timer.JobID, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
