package taskdb

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// withDeadline returns a pending job of topic due at base+dueMs whose
// deadline is after past its due time.
func withDeadline(id timer.JobID, topic string, dueMs int64, after time.Duration) *timer.Job {
	j := newJob(id, topic, dueMs)
	j.Expiry = timer.ExpireAfter(after)
	j.ExpireAt = j.Expiry.Deadline(j.DueAt)
	return j
}

// ScanOverdue finds the jobs waiting to fire whose deadline has passed,
// by deadline, with their topics' slot counts, and none other: not one
// firing, one without a deadline, one whose deadline is still to come, or
// one ended. ExpireWaiting ends such a job expired, and leaves a firing
// one (its attempt started in time) as it is.
func testOverdue(t *testing.T, s *Store) {
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "t", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	done := withDeadline(6, "t", 0, 0)
	done.Status = timer.StatusDone
	mustInsert(t, s,
		withDeadline(1, "t", 0, 2*time.Second), // deadline base+2s
		withDeadline(2, "t", 0, time.Second),   // base+1s
		withDeadline(3, "t", 0, time.Second),   // firing below
		newJob(4, "t", 0),                      // no deadline
		withDeadline(5, "t", 0, time.Hour),     // still to come
		done,
		withDeadline(7, "other", 0, 0), // base, of a topic without a row
	)
	if n, err := s.Fire(ctx, []timer.JobID{3}, base, base); n != 1 || err != nil {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	now := base.Add(time.Minute)
	got, err := s.ScanOverdue(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []timer.JobID
	for _, o := range got {
		ids = append(ids, o.Job.ID)
		if want := map[string]int{"t": 8, "other": 0}[o.Job.Topic]; o.Slots != want {
			t.Errorf("job %d of %s: %d slots, want %d", o.Job.ID, o.Job.Topic, o.Slots, want)
		}
	}
	if want := []timer.JobID{7, 2, 1}; !slices.Equal(ids, want) {
		t.Fatalf("ScanOverdue = %v, want %v (by deadline)", ids, want)
	}
	if page, err := s.ScanOverdue(ctx, now, 2); err != nil || len(page) != 2 || page[1].Job.ID != 2 {
		t.Errorf("ScanOverdue with limit 2 = %d jobs, %v", len(page), err)
	}
	if page, err := s.ScanOverdue(ctx, base.Add(time.Second), 10); err != nil || len(page) != 1 || page[0].Job.ID != 7 {
		t.Errorf("ScanOverdue at base+1s = %v, %v; want only job 7 (a deadline at now's ms has not passed)", page, err)
	}
	if ok, err := s.ExpireWaiting(ctx, 3, "late", now); ok || err != nil {
		t.Errorf("ExpireWaiting of a firing job = %t, %v; want false", ok, err)
	}
	if ok, err := s.ExpireWaiting(ctx, 5, "late", now); ok || err != nil {
		t.Errorf("ExpireWaiting of a job before its deadline = %t, %v; want false", ok, err)
	}
	if ok, err := s.ExpireWaiting(ctx, 2, "deadline passed", now); !ok || err != nil {
		t.Fatalf("ExpireWaiting = %t, %v", ok, err)
	}
	j, err := s.Get(ctx, 2)
	if err != nil || j.Status != timer.StatusExpired || !strings.Contains(j.LastError, "deadline passed") || !j.UpdatedAt.Equal(now) {
		t.Fatalf("expired job: %+v, %v", j, err)
	}
	if ok, err := s.ExpireWaiting(ctx, 2, "again", now); ok || err != nil {
		t.Errorf("ExpireWaiting of an expired job = %t, %v; want false", ok, err)
	}
	if page, err := s.ScanOverdue(ctx, now, 10); err != nil || len(page) != 2 || page[0].Job.ID != 7 || page[1].Job.ID != 1 {
		t.Errorf("ScanOverdue after = %v, %v; want 7, 1", page, err)
	}
	if _, err := s.ScanOverdue(ctx, now, 0); err == nil {
		t.Error("ScanOverdue with limit 0: no error")
	}
}
