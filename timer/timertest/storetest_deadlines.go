// The task store contract, continued: deadlines. A job with a deadline
// is never moved to firing after it; Expire ends it, and only it.

package timertest

import (
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// withDeadline returns j with a deadline after past its due time.
func withDeadline(j *timer.Job, after time.Duration) *timer.Job {
	j.Expiry = timer.ExpireAfter(after)
	j.ExpireAt = j.Expiry.Deadline(j.DueAt)
	return j
}

// A job's deadline is kept and read back; Fire leaves a job past it as
// it is, in the statement that fires the others; Expire ends only a
// pending or firing job whose deadline has passed; a reschedule moves
// the deadline with the due time; an expired job is final.
func testDeadlines(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s,
		withDeadline(newJob(1, "t", 0), 5*time.Second), // deadline base+5s
		withDeadline(newJob(2, "t", 0), 0),             // must not fire late: deadline base
		newJob(3, "t", 0),                              // no deadline
		withDeadline(newJob(4, "t", 0), time.Second),   // rescheduled below
		withDeadline(newJob(5, "t", 0), time.Second),   // firing when its deadline passes
	)
	got := mustGet(t, s, 1)
	if !got.Expiry.Set || got.Expiry.After != 5*time.Second || !got.ExpireAt.Equal(base.Add(5*time.Second)) {
		t.Fatalf("job 1 reads back deadline %+v at %v; want 5s after base", got.Expiry, got.ExpireAt)
	}
	if got := mustGet(t, s, 3); got.Expiry.Set || !got.ExpireAt.IsZero() {
		t.Fatalf("job 3 reads back deadline %+v at %v; want none", got.Expiry, got.ExpireAt)
	}
	if got := mustGet(t, s, 2); !got.Expiry.Set || got.Expiry.After != 0 || !got.ExpireAt.Equal(base) {
		t.Fatalf("job 2 reads back deadline %+v at %v; want 0 after base", got.Expiry, got.ExpireAt)
	}
	// At the deadline's own millisecond a job may still fire.
	if n, err := s.Fire(ctx, []timer.JobID{5}, base, base.Add(999*time.Microsecond+time.Second)); n != 1 || err != nil {
		t.Fatalf("Fire of job 5 within its deadline's millisecond = %d, %v; want 1", n, err)
	}
	now := base.Add(2 * time.Second) // past 2's, 4's and 5's deadlines, before 1's
	if ok, err := s.Expire(ctx, 1, "too early", now); ok || err != nil {
		t.Errorf("Expire of a job before its deadline = %t, %v; want false", ok, err)
	}
	if ok, err := s.Reschedule(ctx, 4, base.Add(time.Minute), now); !ok || err != nil {
		t.Fatalf("Reschedule = %t, %v", ok, err)
	}
	if got := mustGet(t, s, 4); !got.ExpireAt.Equal(base.Add(time.Minute + time.Second)) {
		t.Errorf("rescheduled job's deadline = %v; want the new due time plus 1s", got.ExpireAt)
	}
	n, err := s.Fire(ctx, []timer.JobID{1, 2, 3, 4, 5}, base.Add(time.Hour), now)
	if err != nil || n != 3 {
		t.Fatalf("Fire = %d, %v; want 3 (1, 3 and the rescheduled 4), not the jobs past their deadlines", n, err)
	}
	for id, st := range map[timer.JobID]timer.Status{1: timer.StatusFiring, 2: timer.StatusPending, 3: timer.StatusFiring, 4: timer.StatusFiring, 5: timer.StatusFiring} {
		if got := mustGet(t, s, id); got.Status != st {
			t.Errorf("after Fire job %d is %s, want %s", id, got.Status, st)
		}
	}
	for _, id := range []timer.JobID{2, 5} { // pending, and firing (its worker died)
		before := mustGet(t, s, id)
		if ok, err := s.Expire(ctx, id, "deadline passed: job "+id.String(), now); !ok || err != nil {
			t.Fatalf("Expire of job %d past its deadline = %t, %v; want true", id, ok, err)
		}
		got := mustGet(t, s, id)
		if got.Status != timer.StatusExpired || got.LastError != "deadline passed: job "+id.String() || got.Version != before.Version+1 {
			t.Errorf("expired job %d = %s %q v%d; want expired with the reason at v%d", id, got.Status, got.LastError, got.Version, before.Version+1)
		}
		if ok, err := s.Expire(ctx, id, "again", now); ok || err != nil {
			t.Errorf("Expire of an expired job = %t, %v; want false", ok, err)
		}
	}
	if ok, err := s.Expire(ctx, 3, "no deadline", now.Add(time.Hour)); ok || err != nil {
		t.Errorf("Expire of a job without a deadline = %t, %v; want false", ok, err)
	}
	// Final: no cancel, reschedule, replay or fire moves it.
	if ok, err := s.Transition(ctx, 2, timer.StatusPending, timer.StatusCancelled, now); ok || err != nil {
		t.Errorf("cancel of an expired job = %t, %v", ok, err)
	}
	if ok, err := s.Reschedule(ctx, 2, base.Add(time.Hour), now); ok || err != nil {
		t.Errorf("reschedule of an expired job = %t, %v", ok, err)
	}
	if ok, err := s.Replay(ctx, 2, base.Add(time.Hour), now); ok || err != nil {
		t.Errorf("replay of an expired job = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{2}, base.Add(time.Hour), base); n != 0 || err != nil {
		t.Errorf("Fire of an expired job = %d, %v", n, err)
	}
	if ok, err := s.Expire(ctx, 99, "missing", now); ok || err != nil {
		t.Errorf("Expire of a missing job = %t, %v", ok, err)
	}
	// Listed by status, as the search API does.
	list, err := s.ListJobs(ctx, timer.JobQuery{Topic: "t", Statuses: []timer.Status{timer.StatusExpired}, Limit: 10})
	if err != nil || len(list) != 2 || list[0].ID != 2 || list[1].ID != 5 {
		t.Errorf("ListJobs(expired) = %v, %v; want jobs 2 and 5", jobIDs(list), err)
	}
	// Expired jobs do not hold their topic, and ScanPending skips them.
	timers, err := s.ScanPending(ctx, timer.ScanQuery{Before: base.Add(time.Hour), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, tm := range timers {
		if tm.ID == 2 || tm.ID == 5 {
			t.Errorf("ScanPending returned expired job %d", tm.ID)
		}
	}
}

// A failed attempt whose retry would start past the deadline ends the
// job expired, with its attempts and reason.
func testDeadlineFail(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s, withDeadline(newJob(1, "t", 0), time.Second))
	if n, err := s.Fire(ctx, []timer.JobID{1}, base, base); n != 1 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	f := timer.Failure{Attempts: 1, Error: "deadline passed: 503", Status: 503, Expired: true, RetryAt: base.Add(time.Minute)}
	if ok, err := s.Fail(ctx, 1, f, base); !ok || err != nil {
		t.Fatalf("Fail(expired) = %t, %v", ok, err)
	}
	got := mustGet(t, s, 1)
	if got.Status != timer.StatusExpired || got.Attempts != 1 || got.LastStatus != 503 || !strings.Contains(got.LastError, "deadline passed") || !got.DueAt.Equal(base) {
		t.Errorf("after Fail(expired): %s, %d attempts, status %d, %q, due %v; want expired, 1, 503, the reason, due unmoved",
			got.Status, got.Attempts, got.LastStatus, got.LastError, got.DueAt)
	}
}

// A topic's default deadline is stored, changed and cleared.
func testTopicExpiry(t *testing.T, s timer.Store) {
	ctx := t.Context()
	put := func(e timer.Expiry) timer.Topic {
		t.Helper()
		got, _, err := s.PutTopic(ctx, timer.Topic{Name: "d", Slots: 4, Expiry: e})
		if err != nil {
			t.Fatal(err)
		}
		if got.Expiry != e {
			t.Errorf("PutTopic stored deadline %+v, want %+v", got.Expiry, e)
		}
		return got
	}
	put(timer.ExpireAfter(30 * time.Second))
	if got, err := s.Topic(ctx, "d"); err != nil || got.Expiry != timer.ExpireAfter(30*time.Second) {
		t.Errorf("Topic = %+v, %v; want its 30s deadline", got.Expiry, err)
	}
	put(timer.ExpireAfter(0))
	put(timer.Expiry{})
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "d", Slots: 4, Expiry: timer.ExpireAfter(-time.Second)}); err == nil {
		t.Error("PutTopic with a negative deadline succeeded")
	}
}

func jobIDs(js []*timer.Job) []timer.JobID {
	out := make([]timer.JobID, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}
