package timertest

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// TestScheduleStore runs the contract of timer.ScheduleStore against the
// stores open returns: each a fresh, empty store. taskdb runs it against
// MySQL and SQLite, shard against two shards, and timertest against
// Store.
func TestScheduleStore(t *testing.T, open func(t *testing.T) timer.ScheduleStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s timer.ScheduleStore)
	}{
		{"CreateGet", testScheduleCreateGet},
		{"List", testScheduleList},
		{"Due", testScheduleDue},
		{"Advance", testScheduleAdvance},
		{"AdvanceRace", testScheduleAdvanceRace},
		{"Skip", testScheduleSkip},
		{"SkipRace", testScheduleSkipRace},
		{"PauseResume", testSchedulePauseResume},
		{"Delete", testScheduleDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// newSchedule returns a cron schedule whose cursor is base+nextMs.
func newSchedule(id timer.ScheduleID, nextMs int64) *timer.Schedule {
	return &timer.Schedule{
		ID: id,
		Job: timer.JobTemplate{Topic: "cron", BizID: 1<<63 + 5, BizType: 7, CallbackURL: "http://127.0.0.1/hook",
			Payload: []byte(`{"a":1}`), MaxAttempts: 3, Priority: timer.PriorityHigh, ConcurrencyKey: "nightly"},
		Cron:      "*/5 * * * * *",
		TimeZone:  "Europe/Berlin",
		StartAt:   base.Add(-time.Hour),
		EndAt:     base.Add(24 * time.Hour),
		CatchUp:   timer.CatchUpAll,
		Next:      base.Add(time.Duration(nextMs) * time.Millisecond),
		CreatedAt: base,
		UpdatedAt: base,
		Owner:     "team-a@ops",
	}
}

func mustCreate(t testing.TB, s timer.ScheduleStore, scs ...*timer.Schedule) {
	t.Helper()
	for _, sc := range scs {
		if err := s.CreateSchedule(t.Context(), sc); err != nil {
			t.Fatalf("CreateSchedule %s: %v", sc.ID, err)
		}
	}
}

func mustGetSchedule(t testing.TB, s timer.ScheduleStore, id timer.ScheduleID) *timer.Schedule {
	t.Helper()
	sc, err := s.GetSchedule(t.Context(), id)
	if err != nil {
		t.Fatalf("GetSchedule %s: %v", id, err)
	}
	return sc
}

func sameSchedule(got, want *timer.Schedule) bool {
	return got.ID == want.ID && got.Job.Topic == want.Job.Topic && got.Job.BizID == want.Job.BizID &&
		got.Job.BizType == want.Job.BizType && got.Job.CallbackURL == want.Job.CallbackURL &&
		bytes.Equal(got.Job.Payload, want.Job.Payload) && got.Job.MaxAttempts == want.Job.MaxAttempts &&
		got.Job.Priority == want.Job.Priority && got.Job.ConcurrencyKey == want.Job.ConcurrencyKey && got.Cron == want.Cron && got.TimeZone == want.TimeZone &&
		got.Every == want.Every && got.StartAt.Equal(want.StartAt) && got.EndAt.Equal(want.EndAt) &&
		got.CatchUp == want.CatchUp && got.Paused == want.Paused && got.Next.Equal(want.Next) &&
		got.CreatedAt.Equal(want.CreatedAt) && got.UpdatedAt.Equal(want.UpdatedAt) && got.Owner == want.Owner &&
		got.Skipped == want.Skipped && got.LastSkippedAt.Equal(want.LastSkippedAt) && got.LastSkipReason == want.LastSkipReason
}

func testScheduleCreateGet(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	want := newSchedule(1, 0)
	mustCreate(t, s, want)
	if got := mustGetSchedule(t, s, 1); !sameSchedule(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	every := &timer.Schedule{ID: 2, Job: timer.JobTemplate{Topic: "every", CallbackURL: "http://127.0.0.1/"},
		Every: 1500 * time.Millisecond, CatchUp: timer.CatchUpSkip, CreatedAt: base, UpdatedAt: base}
	mustCreate(t, s, every)
	if got := mustGetSchedule(t, s, 2); !sameSchedule(got, every) || !got.StartAt.IsZero() || !got.EndAt.IsZero() || !got.Next.IsZero() {
		t.Errorf("got %+v\nwant %+v (zero times stay zero)", got, every)
	}
	counted := newSchedule(4, 0)
	counted.Owner = strings.Repeat("o", timer.MaxOwnerBytes)
	counted.Skipped, counted.LastSkippedAt, counted.LastSkipReason = 1<<40, base.Add(-time.Second), strings.Repeat("r", timer.MaxSkipReasonBytes)
	mustCreate(t, s, counted)
	if got := mustGetSchedule(t, s, 4); !sameSchedule(got, counted) {
		t.Errorf("got %+v\nwant %+v (owner and skips at their bounds)", got, counted)
	}
	if got := mustGetSchedule(t, s, 2); got.Owner != "" || got.Skipped != 0 || !got.LastSkippedAt.IsZero() || got.LastSkipReason != "" {
		t.Errorf("a schedule of no owner, never skipped: owner %q, skipped %d at %v for %q", got.Owner, got.Skipped, got.LastSkippedAt, got.LastSkipReason)
	}
	if err := s.CreateSchedule(ctx, newSchedule(1, 5)); !errors.Is(err, timer.ErrConflict) {
		t.Errorf("a second schedule 1: %v, want ErrConflict", err)
	}
	bad := newSchedule(3, 0)
	bad.Job.Payload = make([]byte, timer.MaxPayloadBytes+1)
	if err := s.CreateSchedule(ctx, bad); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("an oversized payload: %v, want ErrInvalid", err)
	}
	if _, err := s.GetSchedule(ctx, 3); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("the refused schedule: %v, want ErrNotFound", err)
	}
	long := newSchedule(3, 0)
	long.Owner = strings.Repeat("o", timer.MaxOwnerBytes+1)
	if err := s.CreateSchedule(ctx, long); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("an owner over %d bytes: %v, want ErrInvalid", timer.MaxOwnerBytes, err)
	}
}

func testScheduleList(t *testing.T, s timer.ScheduleStore) {
	for id := timer.ScheduleID(5); id >= 1; id-- {
		mustCreate(t, s, newSchedule(id, 0))
	}
	page, err := s.ListSchedules(t.Context(), 0, 2)
	if err != nil || len(page) != 2 || page[0].ID != 1 || page[1].ID != 2 {
		t.Fatalf("first page: %v, %v; want 1, 2", page, err)
	}
	page, err = s.ListSchedules(t.Context(), 2, 10)
	if err != nil || len(page) != 3 || page[0].ID != 3 || page[2].ID != 5 {
		t.Fatalf("after 2: %v, %v; want 3..5", page, err)
	}
}

func testScheduleDue(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	mustCreate(t, s, newSchedule(1, 3000), newSchedule(2, 1000), newSchedule(3, 2000), newSchedule(4, 9000))
	done := newSchedule(5, 0)
	done.Next = time.Time{}
	mustCreate(t, s, done)
	if _, err := s.PauseSchedule(ctx, 3, true, time.Time{}, base); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueSchedules(ctx, base.Add(3*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []timer.ScheduleID
	for _, sc := range due {
		ids = append(ids, sc.ID)
	}
	if len(ids) != 2 || ids[0] != 2 || ids[1] != 1 {
		t.Errorf("due by base+3s: %v, want [2 1] (by cursor; not the paused 3, the later 4 or the finished 5)", ids)
	}
	if due, err := s.DueSchedules(ctx, base.Add(time.Hour), 1); err != nil || len(due) != 1 || due[0].ID != 2 {
		t.Errorf("limit 1: %v, %v; want [2]", due, err)
	}
}

func testScheduleAdvance(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	mustCreate(t, s, newSchedule(1, 1000))
	later := base.Add(time.Minute)
	if ok, err := s.AdvanceSchedule(ctx, 1, base, base.Add(2*time.Second), later); err != nil || ok {
		t.Errorf("advance from a stale cursor: %v, %v; want false", ok, err)
	}
	if ok, err := s.AdvanceSchedule(ctx, 1, base.Add(time.Second), base.Add(2*time.Second), later); err != nil || !ok {
		t.Fatalf("advance: %v, %v; want true", ok, err)
	}
	got := mustGetSchedule(t, s, 1)
	if !got.Next.Equal(base.Add(2*time.Second)) || !got.UpdatedAt.Equal(later) {
		t.Errorf("after advance: next %v updated %v", got.Next, got.UpdatedAt)
	}
	if ok, err := s.AdvanceSchedule(ctx, 1, base.Add(2*time.Second), time.Time{}, later); err != nil || !ok {
		t.Fatalf("advance to the end: %v, %v", ok, err)
	}
	if got := mustGetSchedule(t, s, 1); !got.Next.IsZero() {
		t.Errorf("after the last occurrence: next %v, want zero", got.Next)
	}
	if ok, err := s.AdvanceSchedule(ctx, 9, base, base, later); err != nil || ok {
		t.Errorf("advance an unknown schedule: %v, %v; want false", ok, err)
	}
}

// testScheduleAdvanceRace: of materializers racing to move one cursor
// from one value, exactly one wins.
func testScheduleAdvanceRace(t *testing.T, s timer.ScheduleStore) {
	mustCreate(t, s, newSchedule(1, 0))
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ok, err := s.AdvanceSchedule(t.Context(), 1, base, base.Add(time.Duration(i+1)*time.Second), base)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d winners, want 1", won.Load())
	}
}

// testScheduleSkip: SkipOccurrences moves the cursor as AdvanceSchedule
// does, on the same condition, and counts the occurrences it skipped.
func testScheduleSkip(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	mustCreate(t, s, newSchedule(1, 1000))
	later := base.Add(time.Minute)
	if ok, err := s.SkipOccurrences(ctx, 1, base, base.Add(2*time.Second), 1, "full", later); err != nil || ok {
		t.Errorf("skip from a stale cursor: %v, %v; want false", ok, err)
	}
	if got := mustGetSchedule(t, s, 1); got.Skipped != 0 || !got.LastSkippedAt.IsZero() || got.LastSkipReason != "" {
		t.Errorf("after a stale skip: skipped %d at %v for %q; want nothing counted", got.Skipped, got.LastSkippedAt, got.LastSkipReason)
	}
	if ok, err := s.SkipOccurrences(ctx, 1, base.Add(time.Second), base.Add(3*time.Second), 2, "max_pending 30 full", later); err != nil || !ok {
		t.Fatalf("skip: %v, %v; want true", ok, err)
	}
	got := mustGetSchedule(t, s, 1)
	if !got.Next.Equal(base.Add(3*time.Second)) || !got.UpdatedAt.Equal(later) || got.Skipped != 2 ||
		!got.LastSkippedAt.Equal(later) || got.LastSkipReason != "max_pending 30 full" || got.Owner != "team-a@ops" {
		t.Errorf("after skip: %+v", got)
	}
	if ok, err := s.AdvanceSchedule(ctx, 1, base.Add(3*time.Second), base.Add(4*time.Second), later.Add(time.Second)); err != nil || !ok {
		t.Fatalf("advance: %v, %v", ok, err)
	}
	last := later.Add(time.Minute)
	reason := strings.Repeat("é", timer.MaxSkipReasonBytes/2)
	if ok, err := s.SkipOccurrences(ctx, 1, base.Add(4*time.Second), time.Time{}, 3, reason, last); err != nil || !ok {
		t.Fatalf("skip to the end: %v, %v", ok, err)
	}
	got = mustGetSchedule(t, s, 1)
	if !got.Next.IsZero() || got.Skipped != 5 || !got.LastSkippedAt.Equal(last) || got.LastSkipReason != reason {
		t.Errorf("after the last skip: next %v, skipped %d at %v for %q; want none left, 5 at %v", got.Next, got.Skipped, got.LastSkippedAt, got.LastSkipReason, last)
	}
	if ok, err := s.SkipOccurrences(ctx, 9, base, base, 1, "", later); err != nil || ok {
		t.Errorf("skip in an unknown schedule: %v, %v; want false", ok, err)
	}
	mustCreate(t, s, newSchedule(2, 0))
	for _, bad := range []struct {
		n      int64
		reason string
	}{{0, "none"}, {-1, "negative"}, {1, strings.Repeat("r", timer.MaxSkipReasonBytes+1)}} {
		if ok, err := s.SkipOccurrences(ctx, 2, base, base.Add(time.Second), bad.n, bad.reason, later); !errors.Is(err, timer.ErrInvalid) || ok {
			t.Errorf("skip %d for %d bytes: %v, %v; want ErrInvalid", bad.n, len(bad.reason), ok, err)
		}
	}
	if got := mustGetSchedule(t, s, 2); !got.Next.Equal(base) || got.Skipped != 0 {
		t.Errorf("after refused skips: next %v, skipped %d; want unchanged", got.Next, got.Skipped)
	}
}

// testScheduleSkipRace: of materializers racing to skip the same
// occurrences, and one to make them, exactly one moves the cursor, and
// the count is that one's.
func testScheduleSkipRace(t *testing.T, s timer.ScheduleStore) {
	mustCreate(t, s, newSchedule(1, 0))
	var won atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			var ok bool
			var err error
			if i == 0 {
				ok, err = s.AdvanceSchedule(t.Context(), 1, base, base.Add(3*time.Second), base)
			} else {
				ok, err = s.SkipOccurrences(t.Context(), 1, base, base.Add(3*time.Second), 3, "full", base)
			}
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d winners, want 1", won.Load())
	}
	if got := mustGetSchedule(t, s, 1); got.Skipped != 0 && got.Skipped != 3 {
		t.Errorf("skipped %d, want 0 or 3: one winner's count", got.Skipped)
	}
}

func testSchedulePauseResume(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	mustCreate(t, s, newSchedule(1, 1000))
	at := base.Add(time.Minute)
	sc, err := s.PauseSchedule(ctx, 1, true, time.Time{}, at)
	if err != nil || !sc.Paused || !sc.Next.Equal(base.Add(time.Second)) || !sc.UpdatedAt.Equal(at) {
		t.Fatalf("pause: %+v, %v; want paused, cursor kept", sc, err)
	}
	if sc, err = s.PauseSchedule(ctx, 1, true, time.Time{}, at.Add(time.Minute)); err != nil || !sc.UpdatedAt.Equal(at) {
		t.Errorf("pause again: %+v, %v; want unchanged", sc, err)
	}
	resumeAt := base.Add(time.Hour)
	if sc, err = s.PauseSchedule(ctx, 1, false, resumeAt, resumeAt); err != nil || sc.Paused || !sc.Next.Equal(resumeAt) {
		t.Fatalf("resume: %+v, %v; want running from %v", sc, err, resumeAt)
	}
	if sc, err = s.PauseSchedule(ctx, 1, false, base, resumeAt.Add(time.Hour)); err != nil || !sc.Next.Equal(resumeAt) {
		t.Errorf("resume a running schedule: %+v, %v; want the cursor unchanged", sc, err)
	}
	if _, err := s.PauseSchedule(ctx, 9, true, time.Time{}, at); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("pause an unknown schedule: %v, want ErrNotFound", err)
	}
}

func testScheduleDelete(t *testing.T, s timer.ScheduleStore) {
	ctx := t.Context()
	mustCreate(t, s, newSchedule(1, 0))
	if err := s.DeleteSchedule(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSchedule(ctx, 1); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("get after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteSchedule(ctx, 1); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("delete again: %v, want ErrNotFound", err)
	}
}
