package taskdb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/cron"
	"github.com/toc-project/toc/timer/timertest"
)

// Three members' materializers at once over one MariaDB, each with its
// own scheduler and node number, under a schedule every second: every
// occurrence from creation to end_at is one job, none skipped, none
// doubled. What keeps them apart is the store's compare-and-set of the
// cursor and its unique (topic, key) index.
func TestMaterializersRaceOnMariaDB(t *testing.T) {
	s := openMariaDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	schedules := timer.NewSchedules(s, 0, cron.Parse, nil, nil)
	v, err := schedules.Create(ctx, timer.Schedule{Cron: "* * * * * *", EndAt: now.Add(5 * time.Second), CatchUp: timer.CatchUpAll,
		Job: timer.JobTemplate{Topic: "race", CallbackURL: "http://127.0.0.1:9/"}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for node := 1; node <= 3; node++ {
		sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{Node: node})
		if err != nil {
			t.Fatal(err)
		}
		m, err := timer.NewMaterializer(s, sched, timer.MaterializerConfig{Cron: cron.Parse, Interval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { m.Run(ctx) })
	}
	// Wait for the event: the cursor is past end_at.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		sc, err := s.GetSchedule(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Next.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schedule never finished: cursor %v", sc.Next)
		}
	}
	cancel()
	wg.Wait()
	jobs, err := s.ListJobs(t.Context(), timer.JobQuery{Topic: "race", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, j := range jobs {
		if !strings.HasPrefix(j.Key, "schedule:"+v.ID.String()+":") || j.Key != timer.ScheduleKey(v.ID, j.DueAt) || seen[j.Key] {
			t.Errorf("job %s: key %q due %v", j.ID, j.Key, j.DueAt)
		}
		seen[j.Key] = true
	}
	var want int
	for at := v.NextFireTimes[0]; !at.After(v.EndAt); at = at.Add(time.Second) {
		if !seen[timer.ScheduleKey(v.ID, at)] {
			t.Errorf("no job for the occurrence at %v", at)
		}
		want++
	}
	if len(jobs) != want {
		t.Errorf("%d jobs, want %d", len(jobs), want)
	}
}

// skipCount counts the occurrences a materializer skipped.
type skipCount struct {
	timer.NopObserver
	n atomic.Int64
}

func (c *skipCount) OccurrencesSkipped(_, _ string, n int) { c.n.Add(int64(n)) }

// Three members' materializers at once over one MariaDB, under a
// schedule every second whose owner's quota refuses every occurrence:
// each occurrence from creation to end_at is skipped and counted once,
// in the row and in the members' metrics together, and none is a job.
func TestMaterializersSkipOnceOnMariaDB(t *testing.T) {
	s := openMariaDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	now := time.Now()
	schedules := timer.NewSchedules(s, 0, cron.Parse, nil, nil)
	v, err := schedules.Create(ctx, timer.Schedule{Cron: "* * * * * *", EndAt: now.Add(4 * time.Second), CatchUp: timer.CatchUpAll,
		Owner: "tenant-a", Job: timer.JobTemplate{Topic: "quota", CallbackURL: "http://127.0.0.1:9/"}})
	if err != nil {
		t.Fatal(err)
	}
	full := func(_ context.Context, sc *timer.Schedule) error {
		return fmt.Errorf("token %s holds 5 of its max_pending 5: %w", sc.Owner, timer.ErrQuota)
	}
	var wg sync.WaitGroup
	obs := make([]*skipCount, 3)
	for i := range obs {
		obs[i] = &skipCount{}
		sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{Node: i + 1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := timer.NewMaterializer(s, sched, timer.MaterializerConfig{Cron: cron.Parse, Interval: 10 * time.Millisecond, Admit: full, Observer: obs[i]})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { m.Run(ctx) })
	}
	var sc *timer.Schedule
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if sc, err = s.GetSchedule(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		if sc.Next.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the schedule never finished: cursor %v", sc.Next)
		}
	}
	cancel()
	wg.Wait()
	var want int64
	for at := v.NextFireTimes[0]; !at.After(v.EndAt); at = at.Add(time.Second) {
		want++
	}
	observed := obs[0].n.Load() + obs[1].n.Load() + obs[2].n.Load()
	if sc.Skipped != want || observed != want || sc.LastSkipReason != "token tenant-a holds 5 of its max_pending 5: over quota" || sc.LastSkippedAt.IsZero() {
		t.Errorf("skipped %d, observed %d, last at %v for %q; want %d", sc.Skipped, observed, sc.LastSkippedAt, sc.LastSkipReason, want)
	}
	if jobs, err := s.ListJobs(t.Context(), timer.JobQuery{Topic: "quota", Limit: 100}); err != nil || len(jobs) != 0 {
		t.Errorf("jobs %v, %v; want none", jobs, err)
	}
}

// A daily schedule in New York and one in Berlin, the materializer's
// clock moved through the daylight-saving changes of 2026 over MariaDB:
// the jobs stored are due at what the expressions say (see timer/cron):
// no 02:30 on the day it does not exist, two 01:30s (and in Berlin two
// 02:30s) on the day the hour repeats.
func TestMaterializeAcrossDaylightSavingOnMariaDB(t *testing.T) {
	s := openMariaDB(t)
	for i, tt := range []struct {
		expr, zone, from, to string
		want                 []string
	}{
		{"30 2 * * *", "America/New_York", "2026-03-06T12:00:00-05:00", "2026-03-10T12:00:00-04:00",
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"}},
		{"30 1 * * *", "America/New_York", "2026-10-31T00:00:00-04:00", "2026-11-02T12:00:00-05:00",
			[]string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
		{"0 30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00", "2026-10-26T12:00:00+01:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:30:00+01:00"}},
	} {
		t.Run(tt.zone+" "+tt.expr, func(t *testing.T) {
			loc, err := time.LoadLocation(tt.zone)
			if err != nil {
				t.Fatal(err)
			}
			from, _ := time.Parse(time.RFC3339, tt.from)
			to, _ := time.Parse(time.RFC3339, tt.to)
			now := from
			clock := func() time.Time { return now }
			sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{Node: i, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			m, err := timer.NewMaterializer(s, sched, timer.MaterializerConfig{Cron: cron.Parse, Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			topic := "dst" + string(rune('a'+i))
			v, err := timer.NewSchedules(s, i, cron.Parse, clock, nil).Create(t.Context(), timer.Schedule{Cron: tt.expr, TimeZone: tt.zone,
				CatchUp: timer.CatchUpSkip, Job: timer.JobTemplate{Topic: topic, CallbackURL: "http://127.0.0.1:9/"}})
			if err != nil {
				t.Fatal(err)
			}
			// Passes a second apart around each occurrence; the idle hours
			// between are skipped, as a running toc would pass them.
			for !now.After(to) {
				if _, err := m.RunOnce(t.Context()); err != nil {
					t.Fatal(err)
				}
				sc, err := s.GetSchedule(t.Context(), v.ID)
				if err != nil {
					t.Fatal(err)
				}
				now = now.Add(time.Second)
				if skip := sc.Next.Add(-5 * time.Second); skip.After(now) {
					now = skip
				}
			}
			jobs, err := s.ListJobs(t.Context(), timer.JobQuery{Topic: topic, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				got = append(got, j.DueAt.In(loc).Format(time.RFC3339))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("jobs due\n %v\nwant\n %v", got, tt.want)
			}
		})
	}
}

// testUpgradeScheduleOwner: a schedule written before 0023 reads back
// with no owner and nothing skipped, and its skips count from there.
func testUpgradeScheduleOwner(t *testing.T, s *Store) {
	ctx := t.Context()
	if err := s.migrateTo(ctx, 21, false); err != nil {
		t.Fatalf("migrate to 0021: %v", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO toc_schedules (schedule_id, topic, callback, cron, catch_up, next_at, gmt_create, gmt_modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, 7, "old", "https://example.com/hook", "* * * * *", 1, base.UnixMilli(), base.UnixMilli(), base.UnixMilli())
	if err != nil {
		t.Fatalf("insert a 0021 schedule: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate to the last: %v", err)
	}
	old, err := s.GetSchedule(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if old.Owner != "" || old.Skipped != 0 || !old.LastSkippedAt.IsZero() || old.LastSkipReason != "" || old.Job.Topic != "old" {
		t.Errorf("a 0021 schedule reads back as %+v, want no owner, nothing skipped", old)
	}
	at := base.Add(time.Minute)
	if ok, err := s.SkipOccurrences(ctx, 7, base, base.Add(time.Minute), 1, "max_pending full", at); err != nil || !ok {
		t.Fatalf("skip in the 0021 schedule: %v, %v", ok, err)
	}
	if got, err := s.GetSchedule(ctx, 7); err != nil || got.Skipped != 1 || !got.LastSkippedAt.Equal(at) || got.LastSkipReason != "max_pending full" {
		t.Errorf("after a skip: %+v, %v", got, err)
	}
}
