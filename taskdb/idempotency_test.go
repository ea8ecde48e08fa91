package taskdb

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// A repeated key with another delay is a key mismatch over both stores:
// 10 minutes, then 2.8 hours, is not the same request; the same delay a
// few seconds later is, and answers the job as stored.
func TestRepeatedKeyDelay(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *Store{"SQLite": openSQLite, "MariaDB": openMariaDB} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			var now atomic.Int64
			now.Store(base.UnixNano())
			s, err := timer.NewScheduler(open(t), timertest.NewIndex(), timer.SchedulerConfig{Now: func() time.Time { return time.Unix(0, now.Load()) }})
			if err != nil {
				t.Fatal(err)
			}
			req := func(delay time.Duration) timer.Request {
				return timer.Request{Topic: "orders", Key: "k", Delay: delay, CallbackURL: "https://example.com/hook"}
			}
			first, err := s.Schedule(ctx, req(10*time.Minute))
			if err != nil || !first.Created {
				t.Fatalf("first = %+v, %v", first, err)
			}
			now.Store(base.Add(5 * time.Second).UnixNano())
			if res, err := s.Schedule(ctx, req(10*time.Minute)); err != nil || res.Created || res.Job.ID != first.Job.ID {
				t.Errorf("the same delay 5 s later = %+v, %v; want the first job", res, err)
			}
			if res, err := s.Schedule(ctx, req(2*time.Hour+48*time.Minute)); !timer.IsKeyMismatch(err) {
				t.Errorf("a delay of 2.8 h = %+v, %v; want a key mismatch", res, err)
			}
		})
	}
}
