package timer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// The worker's parts driven step by step against the in-memory fakes,
// with a clock that moves only when the test moves it.

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// handlerFunc counts calls per job and answers with fail (nil: success).
type handlerFunc struct {
	mu    sync.Mutex
	calls map[timer.JobID][]timer.Delivery
	fail  func(d timer.Delivery) error
}

func (h *handlerFunc) Fire(ctx context.Context, d timer.Delivery) error {
	h.mu.Lock()
	if h.calls == nil {
		h.calls = make(map[timer.JobID][]timer.Delivery)
	}
	h.calls[d.Job.ID] = append(h.calls[d.Job.ID], d)
	fail := h.fail
	h.mu.Unlock()
	if fail != nil {
		return fail(d)
	}
	return nil
}

func (h *handlerFunc) deliveries(id timer.JobID) []timer.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

// rig is a scheduler and a stepped worker over the fakes.
type rig struct {
	clock   *clock
	store   *timertest.Store
	index   *timertest.Index
	handler *handlerFunc
	sched   *timer.Scheduler
	worker  *timer.Worker
	steps   *timer.Steps
}

func newRig(t *testing.T, wc timer.WorkerConfig) *rig {
	t.Helper()
	r := &rig{
		clock:   &clock{t: time.UnixMilli(1_800_000_000_000)},
		store:   timertest.NewStore(),
		index:   timertest.NewIndex(),
		handler: &handlerFunc{},
	}
	catalog := timer.NewCatalog(r.store, 0, r.clock.Now)
	var err error
	r.sched, err = timer.NewScheduler(r.store, r.index, timer.SchedulerConfig{Now: r.clock.Now, Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	wc.Now = r.clock.Now
	r.worker, err = timer.NewWorker(r.store, r.index, r.index, r.handler, &timer.AllSlots{Catalog: catalog}, catalog, wc)
	if err != nil {
		t.Fatal(err)
	}
	r.sched.OnWake(r.worker.Wake)
	r.steps = timer.StepsOf(t.Context(), r.worker)
	return r
}

func (r *rig) schedule(t *testing.T, topic string, delay time.Duration, n int) []timer.JobID {
	t.Helper()
	ids := make([]timer.JobID, n)
	for i := range n {
		res, err := r.sched.Schedule(t.Context(), timer.Request{Topic: topic, Delay: delay, CallbackURL: "http://localhost/hook"})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Job.ID
	}
	return ids
}

func (r *rig) status(t *testing.T, id timer.JobID) timer.Status {
	t.Helper()
	j, err := r.store.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j.Status
}

// A job is claimed ahead of its due time but fired only when it is due,
// once, and ends done with its lease acked.
func TestStepsFireAtDueTime(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	ahead := timer.DefaultClaimAhead
	ids := r.schedule(t, "orders", 4*ahead, 20)

	if claimed, fired := r.steps.Step(ctx); claimed != 0 || fired != 0 {
		t.Fatalf("%v early: claimed %d, fired %d; want nothing", 4*ahead, claimed, fired)
	}
	r.clock.Advance(3 * ahead) // within the look-ahead
	if claimed, fired := r.steps.Step(ctx); claimed != 20 || fired != 0 {
		t.Fatalf("%v early: claimed %d, fired %d; want all 20 claimed ahead, none fired", ahead, claimed, fired)
	}
	r.clock.Advance(ahead)
	if _, fired := r.steps.Step(ctx); fired != 20 {
		t.Fatalf("at the due time: fired %d, want 20", fired)
	}
	for _, id := range ids {
		ds := r.handler.deliveries(id)
		if len(ds) != 1 || ds[0].Attempt != 1 || ds[0].At.Before(ds[0].Job.DueAt) {
			t.Fatalf("job %v: deliveries %+v, want one first attempt at or after its due time", id, ds)
		}
		if s := r.status(t, id); s != timer.StatusDone {
			t.Fatalf("job %v is %v, want done", id, s)
		}
	}
	if h := r.steps.Held(); h != 0 {
		t.Fatalf("worker still holds %d leases", h)
	}
}

// A failing job is retried with backoff, attempt by attempt, and buried
// when its attempts run out: the row says dead, the index holds it in
// Dead.
func TestStepsRetriesThenBuries(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Retry: timer.RetryPolicy{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	ctx := t.Context()
	r.handler.fail = func(timer.Delivery) error { return errors.New("receiver said 500") }
	res, err := r.sched.Schedule(ctx, timer.Request{Topic: "orders", CallbackURL: "http://localhost/hook", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Job.ID
	for attempt := 1; attempt <= 3; attempt++ {
		if _, fired := r.steps.Step(ctx); fired != 1 {
			t.Fatalf("attempt %d: fired %d, want 1", attempt, fired)
		}
		if _, fired := r.steps.Step(ctx); fired != 0 {
			t.Fatalf("attempt %d: fired again before the backoff", attempt)
		}
		r.clock.Advance(10 * time.Millisecond)
	}
	ds := r.handler.deliveries(id)
	for i, d := range ds {
		if d.Attempt != i+1 {
			t.Fatalf("delivery %d had attempt %d", i, d.Attempt)
		}
	}
	if len(ds) != 3 {
		t.Fatalf("%d deliveries, want 3", len(ds))
	}
	j, _ := r.store.Get(ctx, id)
	if j.Status != timer.StatusDead || j.Attempts != 3 || j.LastError == "" {
		t.Fatalf("row: status %v attempts %d error %q; want dead, 3, the error", j.Status, j.Attempts, j.LastError)
	}
	slot := timer.Slot{Topic: "orders", Index: slots.Of(uint64(id), timer.DefaultSlots)}
	if dead := r.index.Dead(slot); len(dead) != 0 {
		t.Fatalf("Dead set holds %d; the row is the record, and Redis keeps nothing of a dead job", len(dead))
	}
	if r.steps.Held() != 0 {
		t.Fatalf("worker still holds %d leases", r.steps.Held())
	}
}

// A worker that dies with jobs claimed loses nothing: once their leases
// expire, another worker sweeps them back and fires them, counting the
// lost attempt.
func TestStepsLeaseExpiry(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Lease: 3 * time.Second, AttemptTimeout: time.Second})
	ctx := t.Context()
	ids := r.schedule(t, "orders", 0, 5)
	if claimed := r.steps.Claim(ctx); claimed != 5 {
		t.Fatalf("claimed %d, want 5", claimed)
	}
	r.steps.Drop() // the worker dies mid-pass

	catalog := timer.NewCatalog(r.store, 0, r.clock.Now)
	other, err := timer.NewWorker(r.store, r.index, r.index, r.handler, &timer.AllSlots{Catalog: catalog}, catalog, timer.WorkerConfig{Now: r.clock.Now, Lease: 3 * time.Second, AttemptTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	steps := timer.StepsOf(ctx, other)
	if _, fired := steps.Step(ctx); fired != 0 {
		t.Fatalf("fired %d while the leases held", fired)
	}
	r.clock.Advance(3*time.Second + 2*timer.DefaultClaimAhead) // leases run from the claim's horizon, two look-aheads ahead
	for range 3 {                                              // sweep, then claim
		steps.Step(ctx)
	}
	r.wantRefired(t, ids)
}

// wantRefired checks that each of ids was delivered once, as attempt 2
// (its first lease was taken back), and is done.
func (r *rig) wantRefired(t *testing.T, ids []timer.JobID) {
	t.Helper()
	for _, id := range ids {
		ds := r.handler.deliveries(id)
		if len(ds) != 1 || ds[0].Attempt != 2 {
			t.Fatalf("job %v: deliveries %+v, want one, as attempt 2", id, ds)
		}
		if s := r.status(t, id); s != timer.StatusDone {
			t.Fatalf("job %v is %v, want done", id, s)
		}
	}
}

// orphaning hands a worker every slot of a catalog and says, once, that
// their last owner died (as slots.Cluster does when a member's session
// ends).
type orphaning struct {
	*timer.AllSlots
	told bool
}

var _ timer.Handover = (*orphaning)(nil)

func (o *orphaning) Orphans() []timer.Slot {
	if o.told {
		return nil
	}
	o.told = true
	slots, _, _ := o.Owned(context.Background())
	return slots
}

// A worker told that its slots' last owner died takes that owner's leases
// back at once, long before they end, and fires their jobs, each once
// more, as attempt 2.
func TestStepsReclaimsDeadOwnersLeases(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Lease: time.Hour, AttemptTimeout: time.Second})
	ctx := t.Context()
	ids := r.schedule(t, "orders", 0, 5)
	if claimed := r.steps.Claim(ctx); claimed != 5 {
		t.Fatalf("claimed %d, want 5", claimed)
	}
	r.steps.Drop() // the owner dies mid-pass, with an hour left on its leases

	catalog := timer.NewCatalog(r.store, 0, r.clock.Now)
	heir, err := timer.NewWorker(r.store, r.index, r.index, r.handler, &orphaning{AllSlots: &timer.AllSlots{Catalog: catalog}}, catalog,
		timer.WorkerConfig{Now: r.clock.Now, Lease: time.Hour, AttemptTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	steps := timer.StepsOf(ctx, heir)
	for range 3 { // reclaim, then claim and fire; the clock stands still
		steps.Step(ctx)
	}
	r.wantRefired(t, ids)
}

// A topic's in-flight cap bounds the leases the worker holds for it;
// another topic is not held up by it.
func TestStepsInFlightCap(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	if _, _, err := r.sched.PutTopic(ctx, timer.Topic{Name: "capped", Limits: timer.Limits{MaxInFlight: 2}}); err != nil {
		t.Fatal(err)
	}
	ids := append(r.schedule(t, "capped", time.Second, 10), r.schedule(t, "free", time.Second, 10)...)
	r.clock.Advance(time.Second - time.Millisecond)
	if claimed := r.steps.Claim(ctx); claimed != 12 {
		t.Fatalf("claimed %d, want 2 of the capped topic and 10 of the other", claimed)
	}
	if claimed := r.steps.Claim(ctx); claimed != 0 {
		t.Fatalf("claimed %d more at the cap", claimed)
	}
	r.clock.Advance(time.Millisecond)
	for range 10 {
		r.steps.Step(ctx)
	}
	done := 0
	for _, id := range ids {
		if r.status(t, id) == timer.StatusDone {
			done++
		}
	}
	if done != 20 {
		t.Fatalf("%d jobs done, want all 20 once the capped topic's leases were released", done)
	}
}

// A topic's rate limit spaces its claims: 100/s with a burst of 1 fires
// one job about every 10 ms, however many are due.
func TestStepsRateLimit(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	if _, _, err := r.sched.PutTopic(ctx, timer.Topic{Name: "slow", Limits: timer.Limits{RateLimit: 100, Burst: 1}}); err != nil {
		t.Fatal(err)
	}
	r.schedule(t, "slow", 0, 50)
	fired := 0
	for range 100 { // 100 ms in 1 ms steps
		_, n := r.steps.Step(ctx)
		fired += n
		r.clock.Advance(time.Millisecond)
	}
	if fired < 9 || fired > 12 {
		t.Fatalf("fired %d in 100 ms at 100/s, want about 10", fired)
	}
}

// What the row says wins over the index: a cancelled job is acked without
// a call, a job rescheduled later goes back to the index at its new time.
func TestStepsRowDecides(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	ids := r.schedule(t, "orders", 0, 2)
	cancelled, moved := ids[0], ids[1]
	now := r.clock.Now()
	if ok, err := r.store.Transition(ctx, cancelled, timer.StatusPending, timer.StatusCancelled, now); !ok || err != nil {
		t.Fatalf("cancel: %v %v", ok, err)
	}
	if ok, err := r.store.Reschedule(ctx, moved, now.Add(time.Minute), now); !ok || err != nil {
		t.Fatalf("reschedule: %v %v", ok, err)
	}
	if claimed, fired := r.steps.Step(ctx); claimed != 2 || fired != 0 {
		t.Fatalf("claimed %d fired %d, want 2 claimed and none fired", claimed, fired)
	}
	r.clock.Advance(time.Minute)
	r.steps.Step(ctx)
	if len(r.handler.deliveries(cancelled)) != 0 {
		t.Fatal("the cancelled job was called")
	}
	if ds := r.handler.deliveries(moved); len(ds) != 1 || !ds[0].Job.DueAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("moved job: deliveries %+v, want one at its new time", ds)
	}
}

// The executor turns what the handler returned into outcomes: a panic is
// a failed attempt, ErrDiscard cancels, a NotSentError puts the job back
// without counting an attempt.
func TestStepsHandlerOutcomes(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Retry: timer.RetryPolicy{Base: time.Minute, Max: time.Minute}})
	ctx := t.Context()
	ids := r.schedule(t, "orders", 0, 3)
	panics, discards, notSent := ids[0], ids[1], ids[2]
	var deferredOnce atomic.Bool
	r.handler.fail = func(d timer.Delivery) error {
		switch d.Job.ID {
		case panics:
			panic("handler bug")
		case discards:
			return fmt.Errorf("410 Gone: %w", timer.ErrDiscard)
		case notSent:
			if deferredOnce.CompareAndSwap(false, true) {
				return &timer.NotSentError{Until: d.At.Add(5 * time.Millisecond), Err: errors.New("breaker open")}
			}
		}
		return nil
	}
	r.steps.Step(ctx)
	if j, _ := r.store.Get(ctx, panics); j.Status != timer.StatusPending || j.Attempts != 1 {
		t.Fatalf("panicking job: %v after %d attempts, want pending after 1", j.Status, j.Attempts)
	}
	if j, _ := r.store.Get(ctx, discards); j.Status != timer.StatusCancelled || j.Attempts != 1 || j.LastError == "" {
		t.Fatalf("discarded job: %v after %d attempts (last error %q), want cancelled after 1, its error kept", j.Status, j.Attempts, j.LastError)
	}
	r.clock.Advance(5 * time.Millisecond)
	r.steps.Step(ctx)
	j, _ := r.store.Get(ctx, notSent)
	if j.Status != timer.StatusDone || j.Attempts != 1 {
		t.Fatalf("deferred job: %v after %d attempts, want done after 1 (the deferral is no attempt)", j.Status, j.Attempts)
	}
}

// With 3,000 topics that have nothing due, the claimer keeps no slot
// state and a pass costs nothing; a job in one of them is found by its
// wake-up alone.
func TestStepsIdleTopicsCostNothing(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	for i := range 3000 {
		if _, _, err := r.sched.PutTopic(ctx, timer.Topic{Name: fmt.Sprintf("t%04d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	r.steps.Step(ctx)
	if n := r.steps.ActiveSlots(); n != 0 {
		t.Fatalf("%d slot states with nothing due, want 0", n)
	}
	before := r.index.Calls("Claim")
	for range 100 {
		r.steps.Step(ctx)
	}
	if n := r.index.Calls("Claim") - before; n != 0 {
		t.Fatalf("%d claims in 100 idle passes, want 0", n)
	}
	ids := r.schedule(t, "t1234", 0, 1)
	if _, fired := r.steps.Step(ctx); fired != 1 || len(r.handler.deliveries(ids[0])) != 1 {
		t.Fatal("the job of one of 3,000 topics did not fire on the first pass")
	}
	if n := r.index.Calls("Claim") - before; n != 1 {
		t.Fatalf("%d claims to fire one job, want 1", n)
	}
}

// On shutdown the worker stops claiming, lets a call in flight finish
// within the grace period, and records its outcome; a call that outlasts
// the grace period is cut short and its lease left to expire. Run under
// synctest: the grace period passes without a real sleep.
func TestWorkerShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, index := timertest.NewStore(), timertest.NewIndex()
		release := make(chan struct{})
		handler := timer.HandlerFunc(func(ctx context.Context, d timer.Delivery) error {
			if d.Job.Key == "slow" {
				<-ctx.Done() // outlasts the grace period
				return ctx.Err()
			}
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		eng, err := timer.New(store, index, handler, timer.Config{Worker: timer.WorkerConfig{Grace: 5 * time.Second, AttemptTimeout: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- eng.Run(ctx) }()
		var quick, slow timer.JobID
		for _, key := range []string{"quick", "slow"} {
			res, err := eng.Schedule(t.Context(), timer.Request{Topic: "orders", Key: key, CallbackURL: "http://localhost/hook"})
			if err != nil {
				t.Fatal(err)
			}
			if key == "quick" {
				quick = res.Job.ID
			} else {
				slow = res.Job.ID
			}
		}
		time.Sleep(time.Second) // both calls are under way
		synctest.Wait()
		cancel()
		time.Sleep(time.Second) // shutting down, within the grace period
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if j, _ := store.Get(t.Context(), quick); j.Status != timer.StatusDone {
			t.Fatalf("the call that finished within the grace period left its job %v, want done", j.Status)
		}
		// Cut short, no attempt is counted; the row stays firing (a cancel
		// answers in_flight) until its lease expires and a worker fires it
		// again.
		j, _ := store.Get(t.Context(), slow)
		if j.Status != timer.StatusFiring || j.Attempts != 0 {
			t.Fatalf("the call cut short left its job %v after %d attempts, want firing with none counted", j.Status, j.Attempts)
		}
	})
}

// A paused topic claims nothing, however many of its jobs are due, and
// other topics are not held up; resumed, its due jobs fire.
func TestStepsPausedTopic(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	paused := r.schedule(t, "paused", 0, 5)
	other := r.schedule(t, "other", 0, 5)
	topic, err := r.sched.Topic(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	topic.Paused = true
	r.worker.SetTopic(topic)
	for range 3 {
		r.steps.Step(ctx)
		r.clock.Advance(time.Second)
	}
	for _, id := range paused {
		if n := len(r.handler.deliveries(id)); n != 0 {
			t.Fatalf("job %v of the paused topic fired %d times", id, n)
		}
	}
	for _, id := range other {
		if n := len(r.handler.deliveries(id)); n != 1 {
			t.Fatalf("job %v of the other topic fired %d times, want 1", id, n)
		}
	}
	topic.Paused = false
	r.worker.SetTopic(topic)
	r.steps.Step(ctx)
	for _, id := range paused {
		if n := len(r.handler.deliveries(id)); n != 1 {
			t.Fatalf("job %v fired %d times after the topic resumed, want 1", id, n)
		}
	}
}

// Cancel and reschedule win or lose against the worker's move to firing:
// before the claim a reschedule holds and the old time never fires; once
// the job is firing both answer ErrInFlight, and once done ErrAlreadyFired.
func TestStepsDefiniteCancelAndReschedule(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	ahead := timer.DefaultClaimAhead
	ids := r.schedule(t, "orders", 4*ahead, 3)
	moved, late, gone := ids[0], ids[1], ids[2]
	if _, err := r.sched.Reschedule(ctx, moved, time.Time{}, 30*time.Minute); err != nil {
		t.Fatalf("reschedule before the claim: %v", err)
	}
	if _, err := r.sched.Cancel(ctx, gone); err != nil {
		t.Fatalf("cancel before the claim: %v", err)
	}
	r.clock.Advance(3 * ahead)
	r.steps.Claim(ctx) // claimed a look-ahead early: late is firing now
	if _, err := r.sched.Cancel(ctx, late); !errors.Is(err, timer.ErrInFlight) {
		t.Fatalf("cancel of a firing job: %v, want ErrInFlight", err)
	}
	if _, err := r.sched.Reschedule(ctx, late, time.Time{}, time.Hour); !errors.Is(err, timer.ErrInFlight) {
		t.Fatalf("reschedule of a firing job: %v, want ErrInFlight", err)
	}
	r.clock.Advance(ahead)
	r.steps.Step(ctx)
	if _, err := r.sched.Cancel(ctx, late); !errors.Is(err, timer.ErrAlreadyFired) {
		t.Fatalf("cancel of a done job: %v, want ErrAlreadyFired", err)
	}
	r.clock.Advance(time.Minute)
	r.steps.Step(ctx)
	if n := len(r.handler.deliveries(moved)); n != 0 {
		t.Fatalf("the rescheduled job fired %d times at its old time", n)
	}
	if n := len(r.handler.deliveries(gone)); n != 0 {
		t.Fatalf("the cancelled job fired %d times", n)
	}
	r.clock.Advance(30 * time.Minute)
	r.steps.Step(ctx)
	if n := len(r.handler.deliveries(moved)); n != 1 {
		t.Fatalf("the rescheduled job fired %d times at its new time, want 1", n)
	}
}

// A job not sent because its host's breaker is open is pending again, so
// a cancel before its next try is definite.
func TestStepsNotSentIsPendingAgain(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	id := r.schedule(t, "orders", 0, 1)[0]
	r.handler.fail = func(d timer.Delivery) error {
		return &timer.NotSentError{Until: d.At.Add(time.Second), Err: errors.New("breaker open")}
	}
	r.steps.Step(ctx)
	if s := r.status(t, id); s != timer.StatusPending {
		t.Fatalf("a job not sent is %v, want pending", s)
	}
	if _, err := r.sched.Cancel(ctx, id); err != nil {
		t.Fatalf("cancel after a deferral: %v", err)
	}
	r.handler.fail = nil
	r.clock.Advance(time.Second)
	r.steps.Step(ctx)
	if n := len(r.handler.deliveries(id)); n != 1 { // the one deferred try
		t.Fatalf("called %d times, want only the deferred try", n)
	}
}

// batchLeaser is the fake index as a BatchClaimer that counts its round
// trips and the claims each carried, and as a BatchSweeper.
type batchLeaser struct {
	*timertest.Index
	calls, sweeps []int
}

func (b *batchLeaser) ClaimEach(ctx context.Context, now time.Time, calls []timer.ClaimCall) ([]timer.Claim, []error) {
	b.calls = append(b.calls, len(calls))
	claims, errs := make([]timer.Claim, len(calls)), make([]error, len(calls))
	for i, c := range calls {
		claims[i], errs[i] = b.Claim(ctx, c.Slot, now, c.Limit, c.Lease)
	}
	return claims, errs
}

// batchWorker is a worker of r's store and index that claims and sweeps
// through a batchLeaser.
func (r *rig) batchWorker(t *testing.T) (*batchLeaser, *timer.Worker) {
	t.Helper()
	leaser := &batchLeaser{Index: r.index}
	return leaser, r.workerOf(t, leaser)
}

// workerOf is a worker of r's store and index that claims, sweeps and
// acks through leaser.
func (r *rig) workerOf(t *testing.T, leaser timer.Leaser) *timer.Worker {
	t.Helper()
	catalog := timer.NewCatalog(r.store, 0, r.clock.Now)
	w, err := timer.NewWorker(r.store, r.index, leaser, r.handler, &timer.AllSlots{Catalog: catalog}, catalog,
		timer.WorkerConfig{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.sched.OnWake(w.Wake)
	return w
}

// headAckLeaser is a batchLeaser that is also a HeadAcker.
type headAckLeaser struct{ *batchLeaser }

func (h headAckLeaser) AckHeads(ctx context.Context, leases []timer.Lease) (int, []timer.SlotExpiry, error) {
	n, err := h.Ack(ctx, leases)
	if err != nil {
		return n, nil, err
	}
	var next []timer.SlotExpiry
	seen := map[timer.Slot]bool{}
	for _, l := range leases {
		if seen[l.Slot] {
			continue
		}
		seen[l.Slot] = true
		e := timer.SlotExpiry{Slot: l.Slot}
		if left := h.Leased(l.Slot); len(left) > 0 {
			e.NextExpiry = time.UnixMilli(int64(left[0].Token) / 128)
		}
		next = append(next, e)
	}
	return n, next, nil
}

// With a HeadAcker, a slot whose leases were all acked is not swept when
// they would have ended; one whose lease was not acked still is, and
// its job comes back.
func TestStepsNoSweepOfAckedSlots(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	leaser := headAckLeaser{&batchLeaser{Index: r.index}}
	w := r.workerOf(t, leaser)
	ctx := t.Context()
	steps := timer.StepsOf(ctx, w)
	const topics = 200
	lost := r.burstWithLostLease(t, steps, topics)
	if n := steps.Claim(ctx); n != 0 { // the next pass hears the acks
		t.Fatalf("claimed %d, want nothing", n)
	}
	if n := steps.ActiveSlots(); n != 1 {
		t.Errorf("after the acks the claimer keeps %d slots, want only the lost job's", n)
	}
	r.clock.Advance(timer.DefaultLease + time.Second)
	if n := steps.Claim(ctx); n != 1 {
		t.Fatalf("claimed %d after the leases ended, want the lost job again", n)
	}
	if !slices.Equal(leaser.sweeps, []int{1}) {
		t.Errorf("sweeps %v, want the lost job's slot alone", leaser.sweeps)
	}
	if fired := steps.Fire(ctx); fired != 1 || len(r.handler.deliveries(lost)) != 1 {
		t.Errorf("fired %d, the lost job %d times; want it once", fired, len(r.handler.deliveries(lost)))
	}
}

// A failed ack tells the claimer nothing: the leases are swept when they
// end, and their jobs, whose rows are done, are not fired again. Redis
// failing the sweeps puts the slots off briefly.
func TestStepsSweepAndAckFailures(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	w := r.workerOf(t, headAckLeaser{&batchLeaser{Index: r.index}})
	ctx := t.Context()
	steps := timer.StepsOf(ctx, w)
	ids := append(r.schedule(t, "a", time.Second, 1), r.schedule(t, "b", time.Second, 1)...)
	r.clock.Advance(time.Second)
	r.index.FailNext("Ack", errors.New("redis down"), 1)
	if claimed, fired := steps.Step(ctx); claimed != 2 || fired != 2 {
		t.Fatalf("claimed %d, fired %d; want 2 each", claimed, fired)
	}
	r.index.FailNext("Sweep", errors.New("redis down"), 2)
	r.clock.Advance(timer.DefaultLease + time.Second)
	if n := steps.Claim(ctx); n != 0 {
		t.Fatalf("claimed %d while the sweeps failed, want 0", n)
	}
	r.clock.Advance(time.Second)
	if claimed, fired := steps.Step(ctx); claimed != 2 || fired != 0 {
		t.Errorf("once the sweeps ran: claimed %d, fired %d; want both leases back, neither fired", claimed, fired)
	}
	for _, id := range ids {
		if s := r.status(t, id); s != timer.StatusDone || len(r.handler.deliveries(id)) != 1 {
			t.Errorf("job %d: %v, fired %d times; want done, once", id, s, len(r.handler.deliveries(id)))
		}
	}
}

// An ack's word that a slot holds no lease is not taken when a claim of
// the slot was answered after the ack began: the claim may have leased
// after the ack looked.
func TestStepsAckBeforeClaimKeepsTheSweep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ackedAt time.Duration // after the claim was answered
		back    int           // claims at the lease's end: the job back
	}{
		{"ack after the claim: taken", 0, 0},
		{"ack before the claim: not taken", -time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, timer.WorkerConfig{})
			w := r.workerOf(t, headAckLeaser{&batchLeaser{Index: r.index}})
			ctx := t.Context()
			steps := timer.StepsOf(ctx, w)
			r.schedule(t, "orders", time.Second, 1)
			r.clock.Advance(time.Second)
			if n := steps.Claim(ctx); n != 1 {
				t.Fatalf("claimed %d, want 1", n)
			}
			steps.Drop() // unacked: its lease ends and must be swept
			slot := r.index.Leased(timer.Slot{Topic: "orders", Index: 0})
			for i := 1; len(slot) == 0 && i < timer.DefaultSlots; i++ {
				slot = r.index.Leased(timer.Slot{Topic: "orders", Index: i})
			}
			if len(slot) != 1 {
				t.Fatalf("%d leases, want 1", len(slot))
			}
			steps.Acked(r.clock.Now().Add(tc.ackedAt), []timer.SlotExpiry{{Slot: slot[0].Slot}})
			r.clock.Advance(timer.DefaultLease + time.Second)
			if n := steps.Claim(ctx); n != tc.back {
				t.Errorf("claimed %d at the lease's end, want %d", n, tc.back)
			}
		})
	}
}

// SweepEach is the fake index as a BatchSweeper that counts its round
// trips.
func (b *batchLeaser) SweepEach(ctx context.Context, now time.Time, calls []timer.SweepCall) ([]timer.Sweep, []error) {
	b.sweeps = append(b.sweeps, len(calls))
	sweeps, errs := make([]timer.Sweep, len(calls)), make([]error, len(calls))
	for i, c := range calls {
		sweeps[i], errs[i] = b.Sweep(ctx, c.Slot, now, c.Limit)
	}
	return sweeps, errs
}

// burstWithLostLease claims a job of topic "lost" whose holder then dies
// (its lease stays until it ends), then fires and completes one job in
// each of n more topics, and returns the lost job.
func (r *rig) burstWithLostLease(t *testing.T, steps *timer.Steps, n int) timer.JobID {
	t.Helper()
	ctx := t.Context()
	lost := r.schedule(t, "lost", time.Second, 1)[0]
	r.clock.Advance(time.Second)
	if got := steps.Claim(ctx); got != 1 {
		t.Fatalf("claimed %d, want the lost job", got)
	}
	steps.Drop()
	for i := range n {
		r.schedule(t, fmt.Sprintf("t%03d", i), time.Second, 1)
	}
	r.clock.Advance(time.Second)
	if claimed, fired := steps.Step(ctx); claimed != n || fired != n {
		t.Fatalf("claimed %d, fired %d; want %d each", claimed, fired, n)
	}
	return lost
}

// When the leases of a burst over hundreds of topics would have ended,
// every slot that held one needs a sweep, nearly all to find their leases
// acked: they go in a few round trips, not one a slot, and a lease that
// did end unacked comes back and is claimed again in the same pass.
func TestStepsSweepManySlotsInFewRoundTrips(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	leaser, w := r.batchWorker(t)
	ctx := t.Context()
	steps := timer.StepsOf(ctx, w)
	const topics = 200
	lost := r.burstWithLostLease(t, steps, topics)
	if len(leaser.sweeps) != 0 {
		t.Fatalf("swept %v before any lease could end", leaser.sweeps)
	}

	r.clock.Advance(timer.DefaultLease + time.Second)
	if n := steps.Claim(ctx); n != 1 {
		t.Fatalf("claimed %d after the leases ended, want the lost job again", n)
	}
	swept := 0
	for _, n := range leaser.sweeps {
		swept += n
	}
	if swept != topics+1 || len(leaser.sweeps) > 2 {
		t.Errorf("swept %d slots in %d round trips (%v), want %d in at most 2", swept, len(leaser.sweeps), leaser.sweeps, topics+1)
	}
	if n := steps.ActiveSlots(); n != 1 {
		t.Errorf("the claimer keeps %d slots, want only the lost job's", n)
	}
	if fired := steps.Fire(ctx); fired != 1 || len(r.handler.deliveries(lost)) != 1 {
		t.Errorf("fired %d, the lost job %d times; want it once", fired, len(r.handler.deliveries(lost)))
	}
}

// With hundreds of topics holding a job or two each, a pass claims them
// in a few round trips of many claims each, not one a slot, and within
// the worker's lease room: what a claim is charged in advance shrinks to
// what claims have been taking.
func TestStepsClaimManySlotsInFewRoundTrips(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	leaser, w := r.batchWorker(t)
	const topics = 300
	for i := range topics {
		r.schedule(t, fmt.Sprintf("t%03d", i), time.Second, 1)
	}
	steps := timer.StepsOf(t.Context(), w)
	r.clock.Advance(time.Second)
	claimed := steps.Claim(t.Context())
	// The worker holds at most Concurrency + Prefetch = 264 leases.
	if want := timer.DefaultConcurrency + 2*timer.DefaultBatchSize; claimed != want {
		t.Fatalf("claimed %d, want the worker's room, %d", claimed, want)
	}
	// One a slot would be 264; each plan is bounded by the room left.
	if len(leaser.calls) > 12 || leaser.calls[0] < 100 {
		t.Errorf("%d round trips for %d claims (%v), want at most 12, the first of 100 or more", len(leaser.calls), claimed, leaser.calls)
	}
}

// A topic's lateness objective: the worker counts the calls it starts
// and those of them that start within the objective; a topic without one
// counts nothing.
func TestStepsCountLatenessObjective(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{ClaimAhead: -1})
	ctx := t.Context()
	if _, _, err := r.sched.PutTopic(ctx, timer.Topic{Name: "slo", Limits: timer.Limits{LatenessSLO: 10 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	r.schedule(t, "slo", time.Second, 2)
	r.schedule(t, "plain", time.Second, 1)
	r.clock.Advance(time.Second + 10*time.Millisecond) // 10 ms late: within
	if _, fired := r.steps.Step(ctx); fired != 3 {
		t.Fatalf("fired %d, want 3", fired)
	}
	r.schedule(t, "slo", time.Second, 1)
	r.clock.Advance(time.Second + 11*time.Millisecond) // 11 ms late: not within
	if _, fired := r.steps.Step(ctx); fired != 1 {
		t.Fatalf("fired %d, want 1", fired)
	}
	u := r.worker.Usage()
	if got := u["slo"]; got.SLOCalls != 3 || got.WithinSLO != 2 {
		t.Errorf("slo: %d calls, %d within, want 3 and 2", got.SLOCalls, got.WithinSLO)
	}
	if got := u["plain"]; got.SLOCalls != 0 || got.WithinSLO != 0 {
		t.Errorf("plain, without an objective: %d calls, %d within, want none", got.SLOCalls, got.WithinSLO)
	}
}

// Jobs of one concurrency key fire one at a time, the first holding its
// key through its failed attempt's retry; jobs of another key and without
// one fire at once; waiting for the key counts no attempt.
func TestStepsConcurrencyKey(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{Retry: timer.RetryPolicy{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}})
	ctx := t.Context()
	var (
		mu       sync.Mutex
		inFlight = map[string]int{}
		order    []timer.JobID
	)
	first := timer.JobID(0)
	r.handler.fail = func(d timer.Delivery) error {
		mu.Lock()
		k := d.Job.ConcurrencyKey
		inFlight[k]++
		if k != "" && inFlight[k] > 1 {
			t.Errorf("key %s: %d calls at once", k, inFlight[k])
		}
		if k == "k" {
			order = append(order, d.Job.ID)
		}
		mu.Unlock()
		time.Sleep(time.Millisecond) // a call that lasts, so that two at once would meet
		mu.Lock()
		inFlight[k]--
		mu.Unlock()
		if d.Job.ID == first && d.Attempt == 1 {
			return errors.New("receiver said 500")
		}
		return nil
	}
	schedule := func(ck string) timer.JobID {
		res, err := r.sched.Schedule(ctx, timer.Request{Topic: "orders", CallbackURL: "http://localhost/hook", ConcurrencyKey: ck})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job.ID
	}
	keyed := []timer.JobID{schedule("k"), schedule("k"), schedule("k")}
	first = keyed[0]
	others := []timer.JobID{schedule("j"), schedule(""), schedule("")}
	if _, fired := r.steps.Step(ctx); fired != 4 {
		t.Fatalf("first step fired %d, want 4: one of key k, the job of key j, the two without a key", fired)
	}
	for _, id := range others {
		if st := r.status(t, id); st != timer.StatusDone {
			t.Errorf("job %d of another key or none is %s after the first step, want done", id, st)
		}
	}
	for range 100 {
		r.clock.Advance(50 * time.Millisecond)
		r.steps.Step(ctx)
	}
	for _, id := range keyed {
		j, err := r.store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if id == first {
			want = 2
		}
		if j.Status != timer.StatusDone || j.Attempts != want || len(r.handler.deliveries(id)) != want {
			t.Errorf("job %d: %s after %d attempts, %d calls; want done after %d", id, j.Status, j.Attempts, len(r.handler.deliveries(id)), want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The one that failed holds the key through its retry: its two calls
	// come before the others'.
	if len(order) != 4 || order[0] != first || order[1] != first {
		t.Errorf("calls of key k in order %v, want %d twice first", order, first)
	}
	if r.steps.Held() != 0 {
		t.Errorf("worker still holds %d leases", r.steps.Held())
	}
}

// The worker runs a pass whenever it wakes, hundreds of times a second
// under load (a job scheduled, a lease freed). A busy slot is not claimed
// from in slivers, the few jobs that came within twice the look-ahead
// since the last pass, but in batches of half a look-ahead or more, while
// every job is still claimed at least a look-ahead before it is due.
func TestStepsClaimInBatchesUnderFrequentPasses(t *testing.T) {
	r := newRig(t, timer.WorkerConfig{})
	ctx := t.Context()
	ahead := timer.DefaultClaimAhead
	const n = 400 // one due every millisecond, from four look-aheads on
	first := r.clock.Now().Add(4 * ahead)
	for i := range n {
		if _, err := r.sched.Schedule(ctx, timer.Request{Topic: "orders", FireAt: first.Add(time.Duration(i) * time.Millisecond), CallbackURL: "http://localhost/hook"}); err != nil {
			t.Fatal(err)
		}
	}
	passes, claimed := 0, 0
	for r.clock.Now().Before(first.Add(n * time.Millisecond)) {
		c, _ := r.steps.Step(ctx) // a pass every millisecond
		if c > 0 {
			passes++
			claimed += c
		}
		dueSoon := min(n, max(0, int(r.clock.Now().Add(ahead).Sub(first)/time.Millisecond)+1))
		if claimed < dueSoon {
			t.Fatalf("at %v: %d claimed, but %d are due within the look-ahead", r.clock.Now().Sub(first), claimed, dueSoon)
		}
		r.clock.Advance(time.Millisecond)
	}
	if claimed != n {
		t.Fatalf("claimed %d of %d", claimed, n)
	}
	if most := 2 * n / int(ahead/2/time.Millisecond); passes > most {
		t.Errorf("%d passes claimed %d jobs, %.1f each; want at most %d passes", passes, n, float64(n)/float64(passes), most)
	}
	t.Logf("%d passes claimed %d jobs", passes, n)
}
