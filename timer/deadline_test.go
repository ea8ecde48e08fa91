package timer_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// expiredCount counts the Expired events.
type expiredCount struct {
	timer.NopObserver
	n atomic.Int64
}

func (e *expiredCount) Expired(string) { e.n.Add(1) }

// scheduleWith schedules one job of topic due after delay with its own
// deadline rule.
func (r *rig) scheduleWith(t *testing.T, req timer.Request) *timer.Job {
	t.Helper()
	req.CallbackURL = "http://localhost/hook"
	res, err := r.sched.Schedule(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Job
}

// A job held back past its deadline (here the worker did not run) is
// never called: it ends expired with the reason, its lease acked, and
// counted; a job beside it without a deadline fires late as before.
func TestStepsExpiredJobNeverFires(t *testing.T) {
	obs := &expiredCount{}
	r := newRig(t, timer.WorkerConfig{Observer: obs})
	ctx := t.Context()
	late := r.scheduleWith(t, timer.Request{Topic: "orders", Delay: 10 * time.Millisecond, Expiry: timer.ExpireAfter(time.Second)})
	plain := r.scheduleWith(t, timer.Request{Topic: "orders", Delay: 10 * time.Millisecond})
	if !late.ExpireAt.Equal(late.DueAt.Add(time.Second)) {
		t.Fatalf("deadline %v, want due %v + 1s", late.ExpireAt, late.DueAt)
	}
	r.clock.Advance(2 * time.Second)
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatalf("fired %d, want only the job without a deadline", fired)
	}
	if ds := r.handler.deliveries(late.ID); len(ds) != 0 {
		t.Fatalf("the job past its deadline was called %d times", len(ds))
	}
	j, _ := r.store.Get(ctx, late.ID)
	if j.Status != timer.StatusExpired || !strings.Contains(j.LastError, "deadline passed") || j.Attempts != 0 {
		t.Fatalf("row: %s, %d attempts, %q; want expired, 0 attempts, the reason", j.Status, j.Attempts, j.LastError)
	}
	if s := r.status(t, plain.ID); s != timer.StatusDone {
		t.Fatalf("the job without a deadline is %s, want done", s)
	}
	if obs.n.Load() != 1 {
		t.Fatalf("Expired counted %d, want 1", obs.n.Load())
	}
	r.clock.Advance(time.Minute) // past any lease: nothing comes back
	if claimed, fired := r.steps.Step(ctx); claimed != 0 || fired != 0 || r.steps.Held() != 0 {
		t.Fatalf("after expiry: claimed %d, fired %d, held %d; want nothing left in Redis", claimed, fired, r.steps.Held())
	}
	if _, err := r.sched.Cancel(ctx, late.ID); !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("cancel of an expired job: %v, want a conflict", err)
	}
	if _, err := r.sched.Reschedule(ctx, late.ID, time.Time{}, time.Second); !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("reschedule of an expired job: %v, want a conflict", err)
	}
}

// A job claimed in time whose call would start past its deadline (the
// worker held it too long) is not called: the executor checks at the
// call's start.
func TestStepsExpiresAtCallStart(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	j := r.scheduleWith(t, timer.Request{Topic: "orders", Delay: 10 * time.Millisecond, Expiry: timer.ExpireAfter(0)})
	r.clock.Advance(9 * time.Millisecond) // within the look-ahead: claimed, fired in the row, not called
	if claimed := r.steps.Claim(ctx); claimed != 1 {
		t.Fatalf("claimed %d, want 1", claimed)
	}
	if s := r.status(t, j.ID); s != timer.StatusFiring {
		t.Fatalf("claimed ahead, the job is %s, want firing", s)
	}
	r.clock.Advance(2 * time.Millisecond) // 1 ms past the due time: late
	r.steps.Fire(ctx)
	r.steps.Complete(ctx)
	if ds := r.handler.deliveries(j.ID); len(ds) != 0 {
		t.Fatalf("called %d times past a must-not-be-late deadline", len(ds))
	}
	if s := r.status(t, j.ID); s != timer.StatusExpired {
		t.Fatalf("job is %s, want expired", s)
	}
	if r.steps.Held() != 0 {
		t.Fatalf("worker holds %d leases", r.steps.Held())
	}
}

// A job whose receiver keeps failing ends expired, not dead, when its
// next retry would start past its deadline: it is not retried past it.
func TestStepsRetryPastDeadlineExpires(t *testing.T) {
	obs := &expiredCount{}
	r := newRig(t, timer.WorkerConfig{Observer: obs, Retry: timer.RetryPolicy{Base: 2 * time.Second, Max: 2 * time.Second}})
	ctx := t.Context()
	r.handler.fail = func(timer.Delivery) error { return errors.New("receiver said 503") }
	j := r.scheduleWith(t, timer.Request{Topic: "orders", Expiry: timer.ExpireAfter(3 * time.Second)})
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatal("first attempt not made")
	}
	if s := r.status(t, j.ID); s != timer.StatusPending {
		t.Fatalf("after the first failure the job is %s, want pending (its retry at +2s is within the deadline)", s)
	}
	// Retries spread by jitter; step until it has fired or ended.
	for range 20 {
		r.clock.Advance(500 * time.Millisecond)
		r.steps.Step(ctx)
	}
	got, _ := r.store.Get(ctx, j.ID)
	ds := r.handler.deliveries(j.ID)
	if got.Status != timer.StatusExpired || got.Attempts != len(ds) || !strings.Contains(got.LastError, "receiver said 503") ||
		!strings.Contains(got.LastError, "deadline passed") {
		t.Fatalf("row: %s, %d attempts (%d calls), %q; want expired with the calls counted and the reason", got.Status, got.Attempts, len(ds), got.LastError)
	}
	for _, d := range ds {
		if d.At.After(got.ExpireAt) {
			t.Fatalf("attempt %d started at %v, past the deadline %v", d.Attempt, d.At, got.ExpireAt)
		}
	}
	if obs.n.Load() != 1 || r.steps.Held() != 0 {
		t.Fatalf("Expired counted %d, held %d; want 1, 0", obs.n.Load(), r.steps.Held())
	}
}

// A topic's deadline applies to its jobs that set none; a job's own
// wins, and -1 (NoExpiry) opts out.
func TestTopicDeadlineDefault(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	if _, _, err := r.sched.PutTopic(ctx, timer.Topic{Name: "pay", Expiry: timer.ExpireAfter(5 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	def := r.scheduleWith(t, timer.Request{Topic: "pay"})
	own := r.scheduleWith(t, timer.Request{Topic: "pay", Expiry: timer.ExpireAfter(0)})
	none := r.scheduleWith(t, timer.Request{Topic: "pay", NoExpiry: true})
	batch, err := r.sched.ScheduleBatch(ctx, []timer.Request{{Topic: "pay", CallbackURL: "http://localhost/hook"}, {Topic: "new", CallbackURL: "http://localhost/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		j    *timer.Job
		want timer.Expiry
	}{
		{"topic default", def, timer.ExpireAfter(5 * time.Second)},
		{"own", own, timer.ExpireAfter(0)},
		{"opted out", none, timer.Expiry{}},
		{"batch item", batch[0].Job, timer.ExpireAfter(5 * time.Second)},
		{"topic without a default", batch[1].Job, timer.Expiry{}},
	} {
		got, err := r.store.Get(ctx, c.j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Expiry != c.want || got.ExpireAt.IsZero() == c.want.Set {
			t.Errorf("%s: deadline %+v at %v, want %+v", c.name, got.Expiry, got.ExpireAt, c.want)
		}
	}
	if _, err := r.sched.Schedule(ctx, timer.Request{Topic: "pay", CallbackURL: "http://x/", Expiry: timer.ExpireAfter(-time.Millisecond)}); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("a negative deadline: %v, want invalid", err)
	}
}

// buriedCount counts the Buried events.
type buriedCount struct {
	timer.NopObserver
	n atomic.Int64
}

func (b *buriedCount) Buried(string) { b.n.Add(1) }

// A job is counted dead once, where its row dies: a stale timer of the
// dead job (a late add after a restore had already indexed it) is
// claimed and buried again in Redis, but neither called nor counted.
func TestDeadCountedOnce(t *testing.T) {
	obs := &buriedCount{}
	r := newRig(t, timer.WorkerConfig{Observer: obs})
	ctx := t.Context()
	r.handler.fail = func(timer.Delivery) error { return errors.New("receiver said 500") }
	j := r.scheduleWith(t, timer.Request{Topic: "orders", MaxAttempts: 1})
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatal("its one attempt was not made")
	}
	if s := r.status(t, j.ID); s != timer.StatusDead || obs.n.Load() != 1 {
		t.Fatalf("after its last attempt failed: %s, counted dead %d times; want dead, once", s, obs.n.Load())
	}

	topic, err := timer.NewCatalog(r.store, 0, r.clock.Now).Lookup(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	stale := timer.Timer{ID: j.ID, Topic: j.Topic, Slots: topic.Slots, Basis: j.SlotBasis(), DueAt: j.DueAt}
	wakes, err := r.index.Add(ctx, []timer.Timer{stale})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wakes {
		r.worker.Wake(w)
	}
	r.clock.Advance(time.Millisecond)
	if claimed, _ := r.steps.Step(ctx); claimed != 1 {
		t.Fatalf("the stale timer: claimed %d, want 1", claimed)
	}
	if ds := r.handler.deliveries(j.ID); len(ds) != 1 {
		t.Fatalf("called %d times, want once", len(ds))
	}
	if s := r.status(t, j.ID); s != timer.StatusDead || obs.n.Load() != 1 || r.steps.Held() != 0 {
		t.Fatalf("after the stale timer: %s, counted dead %d times, %d held; want dead, once, none", s, obs.n.Load(), r.steps.Held())
	}
}
