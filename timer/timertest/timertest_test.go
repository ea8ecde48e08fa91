package timertest_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

func TestFakeStore(t *testing.T) {
	timertest.TestStore(t, func(t *testing.T) timer.Store { return timertest.NewStore() })
}

func TestFakeIndex(t *testing.T) {
	timertest.TestIndex(t, func(t *testing.T) timertest.IndexLeaser { return timertest.NewIndex() })
}

func TestStoreHooks(t *testing.T) {
	ctx := t.Context()
	s := timertest.NewStore()
	boom := errors.New("boom")
	s.FailNext("Insert", boom, 2)
	j := &timer.Job{ID: 1, Topic: "t", DueAt: time.UnixMilli(1500)}
	for range 2 {
		if err := s.Insert(ctx, []*timer.Job{j}); !errors.Is(err, boom) {
			t.Fatalf("Insert = %v, want boom", err)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("a failed Insert wrote %d jobs", s.Len())
	}
	if err := s.Insert(ctx, []*timer.Job{j}); err != nil {
		t.Fatalf("third Insert = %v", err)
	}
	if n := s.Calls("Insert"); n != 3 {
		t.Errorf("Calls(Insert) = %d, want 3", n)
	}
	if _, err := s.Get(ctx, 1); err != nil || s.Calls("Get") != 1 || s.Calls("Fail") != 0 {
		t.Errorf("Get = %v; calls Get %d, Fail %d", err, s.Calls("Get"), s.Calls("Fail"))
	}
	// The clock fills a zero CreatedAt, in whole milliseconds.
	s.Now = func() time.Time { return time.UnixMicro(5_000_123) }
	if err := s.Insert(ctx, []*timer.Job{{ID: 2, Topic: "t"}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, 2); !got.CreatedAt.Equal(time.UnixMilli(5000)) || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v; want 5s", got.CreatedAt, got.UpdatedAt)
	}
	// What Get returns is a copy.
	got, _ := s.Get(ctx, 1)
	got.Status, got.Topic = timer.StatusDone, "x"
	if again, _ := s.Get(ctx, 1); again.Status != timer.StatusPending || again.Topic != "t" {
		t.Errorf("changing a returned job changed the store: %+v", again)
	}
}

func TestIndexHooks(t *testing.T) {
	ctx := t.Context()
	x := timertest.NewIndex()
	s := timer.Slot{Topic: "orders"}
	boom := errors.New("boom")
	x.FailNext("Claim", boom, 1)
	due := time.UnixMilli(10_000)
	timers := []timer.Timer{
		{ID: 1, Topic: "orders", Slots: 1, Basis: 1, DueAt: due},
		{ID: 2, Topic: "orders", Slots: 1, Basis: 2, DueAt: due.Add(time.Second), Attempt: 3, Priority: timer.PriorityHigh},
		{ID: 3, Topic: "orders", Slots: 1, Basis: 3, DueAt: due},
	}
	if _, err := x.Add(ctx, timers); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Claim(ctx, s, due, 1, time.Second); !errors.Is(err, boom) {
		t.Fatalf("Claim = %v, want boom", err)
	}
	if x.Len(s) != 3 || x.Calls("Claim") != 1 || x.Calls("Add") != 1 {
		t.Fatalf("after a failed Claim: Len %d, Calls(Claim) %d, Calls(Add) %d", x.Len(s), x.Calls("Claim"), x.Calls("Add"))
	}
	want := []timertest.Entry{
		{ID: 1, At: due},
		{ID: 3, At: due},
		{ID: 2, Priority: timer.PriorityHigh, At: due.Add(time.Second), Attempt: 3},
	}
	if got := x.Due(s); !slices.EqualFunc(got, want, sameEntry) {
		t.Errorf("Due = %+v, want %+v", got, want)
	}
	c, err := x.Claim(ctx, s, due, 1, time.Second)
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("Claim = %+v, %v", c, err)
	}
	if got := x.Leased(s); !slices.Equal(got, c.Leases) {
		t.Errorf("Leased = %+v, want %+v", got, c.Leases)
	}
	if o, err := x.Retry(ctx, c.Leases[0], due, 1, due.Add(time.Minute)); err != nil || o != timer.Buried {
		t.Fatalf("Retry = %v, %v", o, err)
	}
	if got := x.Dead(s); !slices.EqualFunc(got, []timertest.Entry{{ID: 1, At: due.Add(time.Minute), Attempt: 1}}, sameEntry) {
		t.Errorf("Dead = %+v", got)
	}
	if x.Len(s) != 2 || len(x.Leased(s)) != 0 || x.Len(timer.Slot{Topic: "none"}) != 0 {
		t.Errorf("Len %d, Leased %v", x.Len(s), x.Leased(s))
	}
}

func sameEntry(a, b timertest.Entry) bool {
	return a.ID == b.ID && a.Priority == b.Priority && a.At.Equal(b.At) && a.Attempt == b.Attempt
}

func TestFakeForecaster(t *testing.T) {
	timertest.TestForecaster(t, func(t *testing.T) timertest.Forecaster { return timertest.NewStore() })
}

func TestFakeAttemptLog(t *testing.T) {
	timertest.TestAttemptLog(t, func(t *testing.T) timer.AttemptLog { return timertest.NewStore() })
}

func TestFakeScheduleStore(t *testing.T) {
	timertest.TestScheduleStore(t, func(t *testing.T) timer.ScheduleStore { return timertest.NewStore() })
}

func TestFakeGroupStore(t *testing.T) {
	timertest.TestGroupStore(t, func(t *testing.T) timertest.GroupStore { return timertest.NewStore() })
}

func TestFakeAuditLog(t *testing.T) {
	timertest.TestAuditLog(t, func(t *testing.T) timer.AuditLog { return timertest.NewStore() })
}
