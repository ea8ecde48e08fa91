package timertest

import (
	"bytes"
	"errors"
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
		got.CreatedAt.Equal(want.CreatedAt) && got.UpdatedAt.Equal(want.UpdatedAt)
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
