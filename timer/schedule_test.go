package timer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/cron"
	"github.com/toc-project/toc/timer/timertest"
)

// schedEnv is a materializer and the schedules over one fake store, with
// a clock the test moves.
type schedEnv struct {
	now       time.Time
	store     *timertest.Store
	m         *timer.Materializer
	schedules *timer.Schedules
}

func newSchedEnv(t testing.TB, start time.Time) *schedEnv {
	t.Helper()
	e := &schedEnv{now: start, store: timertest.NewStore()}
	clock := func() time.Time { return e.now }
	sched, err := timer.NewScheduler(e.store, timertest.NewIndex(), timer.SchedulerConfig{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if e.m, err = timer.NewMaterializer(e.store, sched, timer.MaterializerConfig{Cron: cron.Parse, Now: clock}); err != nil {
		t.Fatal(err)
	}
	e.schedules = timer.NewSchedules(e.store, 0, cron.Parse, clock, nil)
	return e
}

func (e *schedEnv) create(t testing.TB, sc timer.Schedule) timer.ScheduleView {
	t.Helper()
	if sc.Job.Topic == "" {
		sc.Job = timer.JobTemplate{Topic: "rec", CallbackURL: "http://127.0.0.1/"}
	}
	v, err := e.schedules.Create(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *schedEnv) pass(t testing.TB) {
	t.Helper()
	if _, err := e.m.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// run moves the clock to until a second at a time, a pass at each.
func (e *schedEnv) run(t testing.TB, until time.Time) {
	t.Helper()
	for ; !e.now.After(until); e.now = e.now.Add(time.Second) {
		e.pass(t)
	}
}

// due returns the due times of schedule id's jobs, in order.
func (e *schedEnv) due(t testing.TB, topic string, id timer.ScheduleID) []time.Time {
	t.Helper()
	var jobs []*timer.Job
	for after := (timer.Cursor{}); ; {
		page, err := e.store.ListJobs(t.Context(), timer.JobQuery{Topic: topic, After: after, Limit: timer.MaxJobPage})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, page...)
		if len(page) < timer.MaxJobPage {
			break
		}
		last := page[len(page)-1]
		after = timer.Cursor{DueAt: last.DueAt, ID: last.ID}
	}
	var out []time.Time
	for _, j := range jobs {
		if strings.HasPrefix(j.Key, "schedule:"+id.String()+":") {
			if j.Key != timer.ScheduleKey(id, j.DueAt) {
				t.Errorf("job %s key %q, due %v", j.ID, j.Key, j.DueAt)
			}
			out = append(out, j.DueAt)
		}
	}
	for i := 1; i < len(out); i++ {
		if !out[i].After(out[i-1]) {
			t.Fatalf("due times out of order or doubled: %v", out)
		}
	}
	return out
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func seconds(from time.Time, secs ...int) []time.Time {
	out := make([]time.Time, len(secs))
	for i, s := range secs {
		out[i] = from.Add(time.Duration(s) * time.Second)
	}
	return out
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func TestScheduleNextFireTimes(t *testing.T) {
	e := newSchedEnv(t, t0.Add(250*time.Millisecond))
	v := e.create(t, timer.Schedule{Cron: "*/10 * * * * *"})
	if want := seconds(t0, 10, 20, 30, 40, 50); !sameTimes(v.NextFireTimes, want) {
		t.Errorf("cron: %v, want %v", v.NextFireTimes, want)
	}
	v = e.create(t, timer.Schedule{Every: 1500 * time.Millisecond})
	want := []time.Time{}
	for i := 1; i <= 5; i++ {
		want = append(want, e.now.Add(time.Duration(i)*1500*time.Millisecond))
	}
	if !sameTimes(v.NextFireTimes, want) {
		t.Errorf("every 1.5 s from creation: %v, want %v", v.NextFireTimes, want)
	}
	v = e.create(t, timer.Schedule{Every: time.Minute, StartAt: t0.Add(-time.Hour - 30*time.Second), EndAt: t0.Add(2 * time.Minute)})
	if want := seconds(t0, 30, 90); !sameTimes(v.NextFireTimes, want) {
		t.Errorf("every minute from a past start, up to end_at: %v, want %v", v.NextFireTimes, want)
	}
	v = e.create(t, timer.Schedule{Cron: "0 0 9 * * *", TimeZone: "Europe/Berlin", StartAt: t0.Add(48 * time.Hour)})
	if got := v.NextFireTimes[0]; !got.Equal(time.Date(2026, 6, 4, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("09:00 Berlin from start_at: %v", got)
	}
}

func TestScheduleValidate(t *testing.T) {
	e := newSchedEnv(t, t0)
	cb := timer.JobTemplate{Topic: "rec", CallbackURL: "http://127.0.0.1/"}
	for _, tt := range []struct {
		name  string
		sc    timer.Schedule
		field string
	}{
		{"neither", timer.Schedule{Job: cb}, "cron"},
		{"both", timer.Schedule{Job: cb, Cron: "* * * * *", Every: time.Second}, "cron"},
		{"bad cron", timer.Schedule{Job: cb, Cron: "61 * * * *"}, "cron"},
		{"four fields", timer.Schedule{Job: cb, Cron: "* * * *"}, "cron"},
		{"zone in the expression", timer.Schedule{Job: cb, Cron: "CRON_TZ=UTC * * * * *"}, "cron"},
		{"never", timer.Schedule{Job: cb, Cron: "0 0 30 2 *"}, "cron"},
		{"unknown zone", timer.Schedule{Job: cb, Cron: "* * * * *", TimeZone: "Mars/Olympus"}, "time_zone"},
		{"local zone", timer.Schedule{Job: cb, Cron: "* * * * *", TimeZone: "Local"}, "time_zone"},
		{"zone with every", timer.Schedule{Job: cb, Every: time.Minute, TimeZone: "UTC"}, "time_zone"},
		{"every too small", timer.Schedule{Job: cb, Every: 999 * time.Millisecond}, "every_ms"},
		{"every too large", timer.Schedule{Job: cb, Every: timer.MaxEvery + time.Millisecond}, "every_ms"},
		{"end before start", timer.Schedule{Job: cb, Every: time.Minute, StartAt: t0.Add(time.Hour), EndAt: t0.Add(time.Minute)}, "end_at"},
		{"end in the past", timer.Schedule{Job: cb, Every: time.Minute, EndAt: t0.Add(-time.Minute)}, "end_at"},
		{"no occurrence before end", timer.Schedule{Job: cb, Every: time.Hour, EndAt: t0.Add(time.Minute)}, "end_at"},
		{"start out of range", timer.Schedule{Job: cb, Every: time.Minute, StartAt: time.Date(5000, 1, 1, 0, 0, 0, 0, time.UTC)}, "start_at"},
		{"catch-up", timer.Schedule{Job: cb, Every: time.Minute, CatchUp: 7}, "catch_up"},
		{"job topic", timer.Schedule{Job: timer.JobTemplate{Topic: "Bad Topic", CallbackURL: "http://127.0.0.1/"}, Every: time.Minute}, "job.topic"},
		{"job payload", timer.Schedule{Job: timer.JobTemplate{Topic: "rec", CallbackURL: "x", Payload: make([]byte, timer.MaxPayloadBytes+1)}, Every: time.Minute}, "job.payload"},
		{"job max_attempts", timer.Schedule{Job: timer.JobTemplate{Topic: "rec", CallbackURL: "x", MaxAttempts: 65}, Every: time.Minute}, "job.max_attempts"},
		{"job priority", timer.Schedule{Job: timer.JobTemplate{Topic: "rec", CallbackURL: "x", Priority: 9}, Every: time.Minute}, "job.priority"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.schedules.Create(t.Context(), tt.sc)
			var fe *timer.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, timer.ErrInvalid) {
				t.Fatalf("Create = %v, want a field error on %s", err, tt.field)
			}
		})
	}
	if n, err := e.store.ListSchedules(t.Context(), 0, 100); err != nil || len(n) != 0 {
		t.Errorf("refused schedules stored: %d, %v", len(n), err)
	}
}

// Every second for a minute, one pass a second: each occurrence one job,
// made before it is due.
func TestMaterializeOnTime(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	v := e.create(t, timer.Schedule{Cron: "* * * * * *"})
	e.run(t, t0.Add(time.Minute))
	want := []time.Time{}
	for s := 1; s <= 62; s++ { // the last pass, at 59.1 s, looks 3 s ahead
		want = append(want, t0.Add(time.Duration(s)*time.Second))
	}
	if got := e.due(t, "rec", v.ID); !sameTimes(got, want) {
		t.Fatalf("%d jobs %v..., want %d", len(got), got[:min(3, len(got))], len(want))
	}
	for _, at := range want {
		j, err := e.store.GetByKey(t.Context(), "rec", timer.ScheduleKey(v.ID, at))
		if err != nil || !j.CreatedAt.Before(at) {
			t.Fatalf("job of %v: %v, created %v; want it made before it was due", at, err, j.CreatedAt)
		}
	}
}

// Down for a minute (no pass), then the policies: skip drops what was
// missed, last fires the latest of it, all fires each; what is due from
// now on fires in every case.
func TestCatchUp(t *testing.T) {
	for _, tt := range []struct {
		policy timer.CatchUp
		missed []int // seconds after t0 of the missed occurrences that fire
	}{
		{timer.CatchUpSkip, nil},
		{timer.CatchUpLast, []int{57}},
		{timer.CatchUpAll, []int{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
			31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57}},
	} {
		t.Run(tt.policy.String(), func(t *testing.T) {
			e := newSchedEnv(t, t0.Add(100*time.Millisecond))
			v := e.create(t, timer.Schedule{Cron: "* * * * * *", CatchUp: tt.policy})
			e.pass(t) // 1..3 made
			e.now = t0.Add(time.Minute)
			e.pass(t) // 58, 59 are within Late: not missed
			want := seconds(t0, 1, 2, 3)
			want = append(want, seconds(t0, tt.missed...)...)
			want = append(want, seconds(t0, 58, 59, 60, 61, 62, 63)...)
			if got := e.due(t, "rec", v.ID); !sameTimes(got, want) {
				t.Errorf("got %d jobs %v\nwant %d %v", len(got), got, len(want), want)
			}
		})
	}
}

// CatchUpAll fires at most MaxCatchUp missed occurrences, the earliest.
func TestCatchUpAllBound(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	v := e.create(t, timer.Schedule{Every: time.Second, CatchUp: timer.CatchUpAll})
	e.now = t0.Add(time.Hour)
	e.pass(t)
	got := e.due(t, "rec", v.ID)
	missed := 0
	for _, at := range got {
		if at.Before(e.now.Add(-timer.DefaultLate)) {
			missed++
		}
	}
	if missed != timer.MaxCatchUp || !got[0].Equal(t0.Add(1100*time.Millisecond)) {
		t.Errorf("%d missed occurrences fired from %v, want %d from the first", missed, got[0], timer.MaxCatchUp)
	}
	e.now = e.now.Add(time.Second)
	e.pass(t)
	if again := e.due(t, "rec", v.ID); len(again) != len(got)+1 {
		t.Errorf("the next pass made %d jobs, want 1", len(again)-len(got))
	}
}

// A pass that made its jobs but could not move the cursor (it died, or
// the store failed) is redone by the next, and by another member at the
// same time: the keys make the same jobs, never two.
func TestMaterializeAgainMakesNoDuplicate(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	v := e.create(t, timer.Schedule{Cron: "* * * * * *", CatchUp: timer.CatchUpAll})
	e.store.FailNext("AdvanceSchedule", errors.New("store away"), 1)
	if _, err := e.m.RunOnce(t.Context()); err == nil {
		t.Fatal("the pass hid the failed advance")
	}
	other, err := timer.NewMaterializer(e.store, mustScheduler(t, e), timer.MaterializerConfig{Cron: cron.Parse, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.now = e.now.Add(700 * time.Millisecond)
		e.pass(t)
		if _, err := other.RunOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	want := seconds(t0, 1, 2, 3, 4, 5, 6) // the last pass, at 3.6 s, looks 3 s ahead
	if got := e.due(t, "rec", v.ID); !sameTimes(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func mustScheduler(t testing.TB, e *schedEnv) *timer.Scheduler {
	t.Helper()
	s, err := timer.NewScheduler(e.store, timertest.NewIndex(), timer.SchedulerConfig{Node: 1, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPauseResumeDelete(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	v := e.create(t, timer.Schedule{Cron: "* * * * * *", CatchUp: timer.CatchUpAll})
	e.pass(t)
	p, err := e.schedules.Pause(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Paused, it will fire nothing: no next fire times, not even those it
	// would have if resumed.
	if !p.Paused || p.NextFireTimes == nil || len(p.NextFireTimes) != 0 {
		t.Fatalf("pause: paused %v, next fire times %v; want paused with none", p.Paused, p.NextFireTimes)
	}
	e.now = t0.Add(30 * time.Second)
	e.pass(t)
	if got := e.due(t, "rec", v.ID); len(got) != 3 {
		t.Fatalf("paused: %d jobs, want the 3 made before", len(got))
	}
	if g, err := e.schedules.Get(t.Context(), v.ID); err != nil || len(g.NextFireTimes) != 0 {
		t.Fatalf("get while paused: next fire times %v, %v; want none", g.NextFireTimes, err)
	}
	r, err := e.schedules.Resume(t.Context(), v.ID)
	if err != nil || r.Paused || !sameTimes(r.NextFireTimes, seconds(t0, 31, 32, 33, 34, 35)) {
		t.Fatalf("resume: %+v, %v; want running from 31 s", r, err)
	}
	e.pass(t)
	if got := e.due(t, "rec", v.ID); !sameTimes(got, seconds(t0, 1, 2, 3, 31, 32, 33)) {
		t.Errorf("after resume: %v (the pause's occurrences are dropped, even with catch-up all)", got)
	}
	if err := e.schedules.Delete(t.Context(), v.ID); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(10 * time.Second)
	e.pass(t)
	if got := e.due(t, "rec", v.ID); len(got) != 6 {
		t.Errorf("after delete: %d jobs, want 6", len(got))
	}
	if _, err := e.schedules.Get(t.Context(), v.ID); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}

// The materializer over a daily schedule in New York, its clock moved
// through both changes of 2026: the jobs it makes are due at what the
// expression says (see package timer/cron for the rule).
func TestMaterializeAcrossDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		expr, from, to string
		want           []string
	}{
		{"30 2 * * *", "2026-03-06T12:00:00-05:00", "2026-03-10T12:00:00-04:00",
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
		{"30 1 * * *", "2026-10-31T00:00:00-04:00", "2026-11-02T12:00:00-05:00",
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
	} {
		t.Run(tt.expr, func(t *testing.T) {
			from, _ := time.Parse(time.RFC3339, tt.from)
			to, _ := time.Parse(time.RFC3339, tt.to)
			e := newSchedEnv(t, from)
			v := e.create(t, timer.Schedule{Cron: tt.expr, TimeZone: "America/New_York", CatchUp: timer.CatchUpSkip})
			// Passes a second apart around each occurrence; the idle
			// hours between are skipped.
			for !e.now.After(to) {
				e.pass(t)
				sc, err := e.store.GetSchedule(t.Context(), v.ID)
				if err != nil {
					t.Fatal(err)
				}
				e.now = e.now.Add(time.Second)
				if skip := sc.Next.Add(-5 * time.Second); skip.After(e.now) {
					e.now = skip
				}
			}
			var got []string
			for _, at := range e.due(t, "rec", v.ID) {
				got = append(got, at.In(ny).Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("jobs due\n %v\nwant\n %v", got, tt.want)
			}
		})
	}
}
