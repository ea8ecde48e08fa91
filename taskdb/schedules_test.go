package taskdb

import (
	"context"
	"strings"
	"sync"
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
