package timer_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// recorder is a Handler that remembers every delivery and decides each
// attempt's outcome with fail (nil: always succeed).
type recorder struct {
	mu    sync.Mutex
	fires map[timer.JobID][]delivery
	fail  func(d timer.Delivery) error
	// want, when set, is closed over: done is closed once every id in it
	// has had a successful delivery.
	want map[timer.JobID]bool
	done chan struct{}
}

type delivery struct {
	at      time.Time
	due     time.Time
	attempt int
	err     error
}

func newRecorder() *recorder {
	return &recorder{fires: make(map[timer.JobID][]delivery), done: make(chan struct{})}
}

func (r *recorder) Fire(ctx context.Context, d timer.Delivery) error {
	now := time.Now()
	var err error
	if r.fail != nil {
		err = r.fail(d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fires[d.Job.ID] = append(r.fires[d.Job.ID], delivery{at: now, due: d.Job.DueAt, attempt: d.Attempt, err: err})
	if err == nil && r.want != nil && r.want[d.Job.ID] {
		delete(r.want, d.Job.ID)
		if len(r.want) == 0 {
			close(r.done)
		}
	}
	return err
}

// expect arms done for ids.
func (r *recorder) expect(ids []timer.JobID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.want = make(map[timer.JobID]bool, len(ids))
	for _, id := range ids {
		if !slices.ContainsFunc(r.fires[id], func(d delivery) bool { return d.err == nil }) {
			r.want[id] = true
		}
	}
	r.done = make(chan struct{})
	if len(r.want) == 0 {
		close(r.done)
	}
}

// wait blocks until every expected id fired, or fails the test after
// limit (a safety net, not a measurement).
func (r *recorder) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	select {
	case <-done:
	case <-time.After(limit):
		r.mu.Lock()
		defer r.mu.Unlock()
		t.Fatalf("%d jobs never fired within %v", len(r.want), limit)
	}
}

func (r *recorder) deliveries(id timer.JobID) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.fires[id])
}

// stack is a task store on a fresh MariaDB database and a queue on a real
// Redis (one redis-server or a Redis Cluster), with a key prefix of its
// own.
type stack struct {
	store   *taskdb.Store
	rdb     redis.UniversalClient
	queue   *prepare.Index
	redis   *testenv.RedisServer  // one server; nil on a cluster
	cluster *testenv.RedisCluster // nil on one server
	prefix  string
}

// backend is the Redis a stack runs on.
type backend int

const (
	sharedRedis   backend = iota // the package's redis-server
	ownRedis                     // a redis-server of the test's own, to kill or flush
	sharedCluster                // the package's Redis Cluster, 3 masters and 3 replicas
)

func (b backend) String() string { return [...]string{"redis", "own-redis", "cluster"}[b] }

// eachRedis runs fn on one redis-server (single) and on a Redis Cluster,
// which refuses any command whose keys span two hash slots: every
// acceptance test proves the engine keeps its keys in one slot.
func eachRedis(t *testing.T, single backend, fn func(t *testing.T, b backend)) {
	for _, b := range []backend{single, sharedCluster} {
		t.Run(b.String(), func(t *testing.T) { fn(t, b) })
	}
}

func newStack(t *testing.T, b backend) *stack {
	t.Helper()
	ctx := t.Context()
	store, err := taskdb.OpenMySQL(ctx, testenv.MariaDB(t).NewDatabase(t), taskdb.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s := &stack{store: store, prefix: fmt.Sprintf("t%d:", time.Now().UnixNano())}
	switch b {
	case sharedRedis:
		s.redis = testenv.Redis(t)
	case ownRedis:
		s.redis = testenv.NewRedis(t)
	case sharedCluster:
		s.cluster = testenv.SharedRedisCluster(t)
	}
	if s.cluster != nil {
		s.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.cluster.Addrs()})
	} else {
		s.rdb = redis.NewClient(&redis.Options{Addr: s.redis.Addr})
	}
	t.Cleanup(func() { s.rdb.Close() })
	if s.queue, err = prepare.New(s.rdb, prepare.Config{Prefix: s.prefix}); err != nil {
		t.Fatal(err)
	}
	return s
}

// flushAll deletes every key of the stack's Redis (every master's).
func (s *stack) flushAll(t *testing.T) {
	t.Helper()
	if s.cluster != nil {
		s.cluster.FlushAll(t)
		return
	}
	s.redis.FlushAll(t)
}

// start runs an engine over s until the test ends (or stop is called).
func (s *stack) start(t *testing.T, h timer.Handler, cfg timer.Config) (e *timer.Engine, stop func()) {
	t.Helper()
	e, err := timer.New(s.store, s.queue, h, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return e, stop
}

func schedule(t *testing.T, e *timer.Engine, reqs []timer.Request) []timer.JobID {
	t.Helper()
	var ids []timer.JobID
	for chunk := range slices.Chunk(reqs, 1000) {
		res, err := e.ScheduleBatch(t.Context(), chunk)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids = append(ids, r.Job.ID)
		}
	}
	return ids
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// Acceptance 3: 10,000 jobs due across 5 seconds all fire; duplicates and
// lateness are reported, not asserted.
func TestEngineFiresEveryJob(t *testing.T) { eachRedis(t, sharedRedis, testEngineFiresEveryJob) }

func testEngineFiresEveryJob(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	e, _ := s.start(t, rec, timer.Config{})

	const n = 10000
	first := time.Now().Add(time.Second)
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "orders", FireAt: first.Add(time.Duration(i) * 5 * time.Second / n)}
	}
	ids := schedule(t, e, reqs)
	rec.expect(ids)
	rec.wait(t, 60*time.Second)

	var lateness []time.Duration
	dups := 0
	for _, id := range ids {
		ds := rec.deliveries(id)
		dups += len(ds) - 1
		for _, d := range ds {
			if d.at.Before(d.due) {
				t.Errorf("job %d fired %v early", id, d.due.Sub(d.at))
			}
		}
		lateness = append(lateness, ds[0].at.Sub(ds[0].due))
	}
	slices.Sort(lateness)
	t.Logf("%d jobs fired, %d duplicates; lateness p50 %v p99 %v max %v",
		n, dups, percentile(lateness, .5), percentile(lateness, .99), lateness[len(lateness)-1])
	waitStatus(t, s.store, ids, timer.StatusDone)
}

// waitStatus waits until every job's row has status want: rows are marked
// done just after the handler returns.
func waitStatus(t *testing.T, store *taskdb.Store, ids []timer.JobID, want timer.Status) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, err := store.GetMany(t.Context(), ids)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for _, j := range jobs {
			if j.Status != want {
				bad++
			}
		}
		if bad == 0 && len(jobs) == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs not %s (%d rows)", bad, len(ids), want, len(jobs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var errBoom = errors.New("receiver said no")

// Acceptance 4: retries with growing delays, then done; exhausted attempts
// end in Dead with status dead; replay brings the job back and it fires.
func TestEngineRetriesThenBuries(t *testing.T) {
	eachRedis(t, sharedRedis, testEngineRetriesThenBuries)
}

func testEngineRetriesThenBuries(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	// A job fails its attempts below its biz_type, known before it is
	// scheduled (99: always); replay flips doomed jobs to succeed.
	var replayed atomic.Bool
	rec.fail = func(d timer.Delivery) error {
		if d.Attempt < int(d.Job.BizType) && !(d.Job.BizType == 99 && replayed.Load()) {
			return errBoom
		}
		return nil
	}
	policy := timer.RetryPolicy{Base: 40 * time.Millisecond, Max: time.Second}
	e, _ := s.start(t, rec, timer.Config{Worker: timer.WorkerConfig{Retry: policy}})

	ids := schedule(t, e, []timer.Request{
		{Topic: "retry", Delay: 0, BizType: 5},                  // fails attempts 1-4, succeeds on 5
		{Topic: "retry", Delay: 0, BizType: 99, MaxAttempts: 3}, // always fails
	})
	flaky, doomed := ids[0], ids[1]

	rec.expect([]timer.JobID{flaky})
	rec.wait(t, 30*time.Second)
	ds := rec.deliveries(flaky)
	if len(ds) != 5 {
		t.Fatalf("flaky job: %d deliveries, want 5", len(ds))
	}
	for i := 1; i < len(ds); i++ {
		if ds[i].attempt != i+1 {
			t.Errorf("delivery %d has attempt %d", i, ds[i].attempt)
		}
		// After failed attempt n the wait is at least half of Base·2^(n-1).
		floor := policy.Base << (i - 1) / 2
		if gap := ds[i].at.Sub(ds[i-1].at); gap < floor {
			t.Errorf("retry %d came after %v, before the backoff floor %v", i, gap, floor)
		}
	}
	waitStatus(t, s.store, []timer.JobID{flaky}, timer.StatusDone)
	if j, _ := s.store.Get(t.Context(), flaky); j.Attempts != 5 {
		t.Errorf("flaky job: attempts %d, want 5", j.Attempts)
	}

	waitStatus(t, s.store, []timer.JobID{doomed}, timer.StatusDead)
	j, err := s.store.Get(t.Context(), doomed)
	if err != nil {
		t.Fatal(err)
	}
	if j.Attempts != 3 || j.LastError != errBoom.Error() {
		t.Errorf("dead job: attempts %d last error %q", j.Attempts, j.LastError)
	}
	if got := len(rec.deliveries(doomed)); got != 3 {
		t.Errorf("dead job delivered %d times, want 3", got)
	}
	waitForgotten(t, s, "retry")

	// Replay: it comes back pending with attempts reset, and fires.
	replayed.Store(true)
	j, err = e.Replay(t.Context(), doomed, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != timer.StatusPending || j.Attempts != 0 {
		t.Errorf("replayed job: status %s attempts %d", j.Status, j.Attempts)
	}
	rec.expect([]timer.JobID{doomed})
	rec.wait(t, 10*time.Second)
	waitStatus(t, s.store, []timer.JobID{doomed}, timer.StatusDone)
	if n := deadSetSize(t, s, "retry"); n != 0 {
		t.Errorf("Dead sets after replay hold %d", n)
	}
}

// waitForgotten waits until topic's Dead sets are empty: the worker
// clears a buried job from Redis once its row says dead (the row is the
// dead-letter record).
func waitForgotten(t *testing.T, s *stack, topic string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); deadSetSize(t, s, topic) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("topic %s's Dead sets still hold %d", topic, deadSetSize(t, s, topic))
		}
	}
}

// deadSetSize counts the members of topic's Dead sets.
func deadSetSize(t *testing.T, s *stack, topic string) int64 {
	t.Helper()
	var n int64
	for i := range timer.DefaultSlots {
		n += s.rdb.ZCard(t.Context(), slots.Keys(s.prefix, topic, i).Dead).Val()
	}
	return n
}

// Acceptance 5: a worker stopped mid-batch without acking loses nothing:
// every job it held fires later through lease expiry.
func TestEngineStoppedWorkerLeasesExpire(t *testing.T) {
	eachRedis(t, sharedRedis, testEngineStoppedWorkerLeasesExpire)
}

func testEngineStoppedWorkerLeasesExpire(t *testing.T, b backend) {
	s := newStack(t, b)
	cfg := timer.Config{Worker: timer.WorkerConfig{
		Lease:          3 * time.Second,
		AttemptTimeout: 500 * time.Millisecond,
		Grace:          50 * time.Millisecond,
		Concurrency:    16,
		BatchSize:      20,
	}}

	// The first worker's handler hangs until shutdown cuts it off.
	started := make(chan timer.JobID, 1000)
	hang := timer.HandlerFunc(func(ctx context.Context, d timer.Delivery) error {
		started <- d.Job.ID
		<-ctx.Done()
		return ctx.Err()
	})
	e1, stop1 := s.start(t, hang, cfg)
	const n = 200
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "lease"}
	}
	ids := schedule(t, e1, reqs)
	for range cfg.Worker.Concurrency {
		<-started // the pool is full: the worker holds leases it will not ack
	}
	stop1()
	leased, _, _, _ := s.leaseCounts(t, "lease")
	if leased == 0 {
		t.Fatal("no leases held after the worker stopped")
	}
	t.Logf("stopped worker left %d leases", leased)

	rec := newRecorder()
	rec.expect(ids)
	s.start(t, rec, cfg)
	rec.wait(t, 30*time.Second)
	waitStatus(t, s.store, ids, timer.StatusDone)
}

func (s *stack) leaseCounts(t *testing.T, topic string) (leased, stored, dead int64, next time.Time) {
	t.Helper()
	stored, leased, dead, next, err := s.queue.Stats(t.Context(), topic, timer.DefaultSlots)
	if err != nil {
		t.Fatal(err)
	}
	return leased, stored, dead, next
}

// Acceptance 6: FLUSHALL while 5,000 jobs are pending; the backstop
// restores them and every one fires.
func TestEngineBackstopRestoresAfterFlush(t *testing.T) {
	eachRedis(t, ownRedis, testEngineBackstopRestoresAfterFlush)
}

func testEngineBackstopRestoresAfterFlush(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	// The periodic full scan is an hour away: the restore must come from
	// the backstop noticing the loss.
	e, _ := s.start(t, rec, timer.Config{Backstop: timer.BackstopConfig{
		Interval:     100 * time.Millisecond,
		FullInterval: time.Hour,
	}})
	const n = 5000
	due := time.Now().Add(10 * time.Second) // all still pending at the flush, even on a loaded machine
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "flush", FireAt: due.Add(time.Duration(i%1000) * time.Millisecond)}
	}
	ids := schedule(t, e, reqs)
	// A batch's Redis write that overran its 50 ms (a loaded machine, the
	// race detector) left its timers to the backstop, which restores them
	// within its interval: wait for all of them before the flush. The
	// overrun write may land after the restore and add copies in other
	// buckets (harmless, lua/add.lua), so more than n is as good.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, stored, _, _ := s.leaseCounts(t, "flush")
		if stored >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d timers in Redis before the flush, want %d", stored, n)
		}
	}
	s.flushAll(t)
	if _, stored, _, _ := s.leaseCounts(t, "flush"); stored != 0 {
		t.Fatalf("%d timers in Redis after the flush", stored)
	}
	rec.expect(ids)
	rec.wait(t, 60*time.Second)
	waitStatus(t, s.store, ids, timer.StatusDone)
}

// Acceptance 7: a job cancelled before it is due never reaches the handler;
// a rescheduled one fires at the new time only.
func TestEngineCancelAndReschedule(t *testing.T) {
	eachRedis(t, sharedRedis, testEngineCancelAndReschedule)
}

func testEngineCancelAndReschedule(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	e, _ := s.start(t, rec, timer.Config{})
	ctx := t.Context()

	soon := time.Now().Add(2 * time.Second)
	ids := schedule(t, e, []timer.Request{
		{Topic: "cancel", FireAt: soon, BizID: 42},
		{Topic: "cancel", FireAt: soon, BizID: 42}, // same slot as the first
		{Topic: "cancel", FireAt: soon},
		{Topic: "cancel", FireAt: soon.Add(2 * time.Hour)}, // beyond the horizon
	})
	cancelled, moved, control, far := ids[0], ids[1], ids[2], ids[3]

	j, err := e.Cancel(ctx, cancelled)
	if err != nil || j.Status != timer.StatusCancelled {
		t.Fatalf("cancel: %v, %v", j, err)
	}
	if _, err := e.Cancel(ctx, cancelled); !errors.Is(err, timer.ErrConflict) {
		t.Errorf("second cancel: %v, want ErrConflict", err)
	}
	later := soon.Add(time.Second)
	if _, err := e.Reschedule(ctx, moved, later, 0); err != nil {
		t.Fatal(err)
	}
	// A job beyond the horizon is rescheduled into it, and fires.
	if _, err := e.Reschedule(ctx, far, later, 0); err != nil {
		t.Fatal(err)
	}

	rec.expect([]timer.JobID{moved, control, far})
	rec.wait(t, 10*time.Second)
	if ds := rec.deliveries(cancelled); len(ds) != 0 {
		t.Errorf("cancelled job fired %d times", len(ds))
	}
	for _, id := range []timer.JobID{moved, far} {
		ds := rec.deliveries(id)
		if len(ds) != 1 || ds[0].at.Before(later) {
			t.Errorf("rescheduled job %d: deliveries %+v, want one at or after %v", id, ds, later)
		}
	}
	if _, err := e.Cancel(ctx, timer.JobID(12345)); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("cancel unknown: %v, want ErrNotFound", err)
	}
}

// A job indexed without a wake-up reaching the worker (its pub/sub
// message lost) still fires, through the worker's periodic rescan.
func TestEngineRescanFindsJobsWithoutWake(t *testing.T) {
	eachRedis(t, sharedRedis, testEngineRescanFindsJobsWithoutWake)
}

func testEngineRescanFindsJobsWithoutWake(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	e, _ := s.start(t, rec, timer.Config{Worker: timer.WorkerConfig{Rescan: 200 * time.Millisecond}})
	ctx := t.Context()
	// Schedule one job so the topic exists and the worker owns its slots.
	ids := schedule(t, e, []timer.Request{{Topic: "quiet"}})
	rec.expect(ids)
	rec.wait(t, 10*time.Second)

	// Commit a row and index it through a queue that publishes elsewhere.
	topic, err := s.store.Topic(ctx, "quiet")
	if err != nil {
		t.Fatal(err)
	}
	j := &timer.Job{ID: timer.NewIDGen(9, nil).Next(), Topic: "quiet", DueAt: time.Now(), MaxAttempts: 3, CallbackURL: "x"}
	if err := s.store.Insert(ctx, []*timer.Job{j}); err != nil {
		t.Fatal(err)
	}
	mute, err := prepare.New(s.rdb, prepare.Config{Prefix: s.prefix, WakeChannel: "nobody-listens"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mute.Add(ctx, []timer.Timer{{ID: j.ID, Topic: j.Topic, Slots: topic.Slots, Basis: uint64(j.ID), DueAt: j.DueAt}}); err != nil {
		t.Fatal(err)
	}
	rec.expect([]timer.JobID{j.ID})
	rec.wait(t, 10*time.Second)
}

// A Redis failure after the commit does not fail the call: the job is
// scheduled with Redis down, and fires once Redis is back (restored by the
// backstop, which notices the restarted, empty Redis).
func TestEngineSchedulesWhileRedisIsDown(t *testing.T) {
	s := newStack(t, ownRedis)
	rec := newRecorder()
	e, _ := s.start(t, rec, timer.Config{Backstop: timer.BackstopConfig{Interval: 100 * time.Millisecond, FullInterval: time.Hour}})
	// The topic exists before Redis goes away.
	rec.expect(schedule(t, e, []timer.Request{{Topic: "down"}}))
	rec.wait(t, 10*time.Second)

	s.redis.Kill(t)
	res, err := e.Schedule(t.Context(), timer.Request{Topic: "down", Delay: 500 * time.Millisecond})
	if err != nil || !res.Created {
		t.Fatalf("schedule with Redis down: %+v, %v", res, err)
	}
	if j, err := s.store.Get(t.Context(), res.Job.ID); err != nil || j.Status != timer.StatusPending {
		t.Fatalf("the row: %+v, %v", j, err)
	}
	s.redis.Start(t)
	rec.expect([]timer.JobID{res.Job.ID})
	rec.wait(t, 30*time.Second)
	if ds := rec.deliveries(res.Job.ID); ds[0].at.Before(ds[0].due) {
		t.Errorf("fired %v early", ds[0].due.Sub(ds[0].at))
	}
}

// claimLog records when claims returned leases.
type claimLog struct {
	timer.NopObserver
	mu     sync.Mutex
	claims []time.Time
	leases []int // each claim's
}

func (c *claimLog) Claimed(_ timer.Slot, n int) {
	if n > 0 {
		c.mu.Lock()
		c.claims = append(c.claims, time.Now())
		c.leases = append(c.leases, n)
		c.mu.Unlock()
	}
}

// claimedBefore is how many leases claims returned before t.
func (c *claimLog) claimedBefore(t time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i, at := range c.claims {
		if at.Before(t) {
			n += c.leases[i]
		}
	}
	return n
}

// fireNoneEarly schedules reqs, waits until each has reached the
// handler, and fails t for each handed over before its due time.
func fireNoneEarly(t *testing.T, e *timer.Engine, rec *recorder, reqs []timer.Request) {
	t.Helper()
	ids := schedule(t, e, reqs)
	rec.expect(ids)
	rec.wait(t, 30*time.Second)
	for _, id := range ids {
		for _, d := range rec.deliveries(id) {
			if d.at.Before(d.due) {
				t.Errorf("job %d handed over %v before its due time", id, d.due.Sub(d.at))
			}
		}
	}
}

// Jobs due within the look-ahead are claimed ahead even when there are
// more of them than the worker holds leases for its calls and prefetch:
// those wait for their due time in room of their own.
func TestEngineClaimsAheadBeyondCapacity(t *testing.T) {
	eachRedis(t, sharedRedis, testEngineClaimsAheadBeyondCapacity)
}

func testEngineClaimsAheadBeyondCapacity(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	obs := &claimLog{}
	const ahead = 300 * time.Millisecond
	// At most 2 calls and 8 prefetched: 10 leases for due jobs.
	e, _ := s.start(t, rec, timer.Config{Observer: obs, Worker: timer.WorkerConfig{ClaimAhead: ahead, Concurrency: 2, BatchSize: 4}})
	rec.expect(schedule(t, e, []timer.Request{{Topic: "wide"}})) // the topic's slots exist and are owned
	rec.wait(t, 10*time.Second)
	obs.mu.Lock()
	obs.claims, obs.leases = nil, nil
	obs.mu.Unlock()

	const n = 200
	first := time.Now().Add(2 * time.Second)
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "wide", BizID: uint64(i), FireAt: first}
	}
	fireNoneEarly(t, e, rec, reqs)
	if got := obs.claimedBefore(first); got != n {
		t.Errorf("%d of the %d jobs claimed before their due time, want all", got, n)
	}
}

// With a long look-ahead, one wake-up claims the jobs of many slots before
// they are due, and each job still reaches the handler at or after its due
// time.
func TestEngineClaimsAhead(t *testing.T) { eachRedis(t, sharedRedis, testEngineClaimsAhead) }

func testEngineClaimsAhead(t *testing.T, b backend) {
	s := newStack(t, b)
	rec := newRecorder()
	obs := &claimLog{}
	const ahead = 300 * time.Millisecond
	e, _ := s.start(t, rec, timer.Config{Observer: obs, Worker: timer.WorkerConfig{ClaimAhead: ahead}})
	// One job first, so that the topic's slots exist and are owned.
	rec.expect(schedule(t, e, []timer.Request{{Topic: "ahead"}}))
	rec.wait(t, 10*time.Second)
	obs.mu.Lock()
	obs.claims = nil
	obs.mu.Unlock()

	// 64 jobs over the topic's 16 slots, due within 200 ms, 2 s from now.
	const n = 64
	first := time.Now().Add(2 * time.Second)
	reqs := make([]timer.Request, n)
	for i := range reqs {
		reqs[i] = timer.Request{Topic: "ahead", BizID: uint64(i), FireAt: first.Add(time.Duration(i) * 200 * time.Millisecond / n)}
	}
	fireNoneEarly(t, e, rec, reqs)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	// Two passes over the 16 slots at most: a claim asks for twice what
	// its topic's claims took of late (one job here), so the first pass
	// takes two of each slot's four, and the next the rest.
	if len(obs.claims) == 0 || len(obs.claims) > 32 {
		t.Fatalf("%d claims returned leases, want 1 to 32 (two passes over the slots)", len(obs.claims))
	}
	if last := obs.claims[len(obs.claims)-1]; !last.Before(first) {
		t.Errorf("the last claim came %v after the first job was due, want before it", last.Sub(first))
	}
	t.Logf("%d jobs due within 200 ms: %d claims, the first %v before the first due time",
		n, len(obs.claims), first.Sub(obs.claims[0]).Round(time.Millisecond))
}
