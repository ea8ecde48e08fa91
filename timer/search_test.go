package timer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// CancelMatching cancels a business object's pending jobs and counts the
// one in flight as too late; RescheduleMatching moves each pending one.
func TestChangeMatching(t *testing.T) {
	ctx := t.Context()
	store, index := timertest.NewStore(), timertest.NewIndex()
	s, err := timer.NewScheduler(store, index, timer.SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(time.Hour)
	var ids []timer.JobID
	for i := range 6 {
		r, err := s.Schedule(ctx, timer.Request{Topic: "orders", BizID: uint64(i%2 + 1), FireAt: due.Add(time.Duration(i) * time.Second), CallbackURL: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Job.ID)
	}
	// Job 0 (business id 1) is firing.
	if n, err := store.Fire(ctx, ids[:1], due.Add(time.Hour), time.Now()); err != nil || n != 1 {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	b, err := s.CancelMatching(ctx, timer.JobQuery{Topic: "orders", BizID: 1})
	if err != nil || b.Changed != 2 || b.TooLate != 1 {
		t.Fatalf("CancelMatching = %+v, %v; want 2 cancelled, 1 too late", b, err)
	}
	b, err = s.RescheduleMatching(ctx, timer.JobQuery{Topic: "orders", BizID: 2}, due.Add(24*time.Hour), 0)
	if err != nil || b.Changed != 3 || b.TooLate != 0 {
		t.Fatalf("RescheduleMatching = %+v, %v; want 3", b, err)
	}
	if _, err := s.CancelMatching(ctx, timer.JobQuery{Topic: "orders"}); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("CancelMatching without biz_id or key = %v, want ErrInvalid", err)
	}
}
