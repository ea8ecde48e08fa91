package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
)

// fakeLeases serves the lease routes of one pull topic from a queue of
// due jobs, and records what its workers did.
type fakeLeases struct {
	t     testing.TB
	url   string
	limit int // the most jobs out at once that the test allows

	mu      sync.Mutex
	due     []client.LeasedJob
	added   chan struct{} // closed and replaced when a job is added
	out     map[string]bool
	asked   []int // max of each lease call
	acked   []uint64
	nacks   map[uint64]nackBody
	extends map[string]int
	// refuse, when set, answers the nth lease call (1 for the first)
	// instead: a status and the API's error code, or 0.
	refuse func(n int) (int, string)
	// extendAnswer, when set, answers an extend instead.
	extendAnswer func() (int, string)
	// batches are the sizes of the calls acking many; batchAcks turns
	// that call on (else it is a 404, as from a toc without it).
	batches   []int
	batchAcks bool

	// settled receives each job acked or nacked, polling each lease call
	// that waits for a job, extended each token extended.
	settled  chan uint64
	polling  chan int
	extended chan string
}

type nackBody struct {
	DelayMS *int64 `json:"delay_ms"`
	Error   string `json:"error"`
}

func newFakeLeases(t *testing.T, limit int, jobs int) *fakeLeases {
	t.Helper()
	f := &fakeLeases{t: t, limit: limit, added: make(chan struct{}), out: map[string]bool{}, nacks: map[uint64]nackBody{}, extends: map[string]int{},
		settled: make(chan uint64, 100), polling: make(chan int, 100), extended: make(chan string, 100)}
	for i := range jobs {
		f.add(uint64(i + 1))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/topics/orders/leases", f.lease)
	mux.HandleFunc("POST /v1/leases/ack", f.ackMany)
	mux.HandleFunc("POST /v1/leases/{token}/{action}", f.settle)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return f
}

func (f *fakeLeases) add(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.due = append(f.due, client.LeasedJob{ID: id, Topic: "orders", FireAt: time.Now().UTC(), Attempt: 1, Payload: json.RawMessage(`{"n":1}`)})
	close(f.added)
	f.added = make(chan struct{})
}

func apiError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":"fake %d"}}`, code, status)
}

func (f *fakeLeases) lease(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Max     int   `json:"max"`
		WaitMS  int64 `json:"wait_ms"`
		LeaseMS int64 `json:"lease_ms"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Max < 1 || req.LeaseMS < 1000 {
		f.t.Errorf("lease request %+v: %v", req, err)
		apiError(w, http.StatusBadRequest, client.CodeInvalid)
		return
	}
	f.mu.Lock()
	f.asked = append(f.asked, req.Max)
	n := len(f.asked)
	if len(f.out)+req.Max > f.limit {
		f.t.Errorf("lease call %d asks for %d jobs with %d out: more than the %d the worker may run", n, req.Max, len(f.out), f.limit)
	}
	refuse := f.refuse
	f.mu.Unlock()
	if refuse != nil {
		if status, code := refuse(n); status != 0 {
			apiError(w, status, code)
			return
		}
	}
	wait := time.NewTimer(time.Duration(req.WaitMS) * time.Millisecond)
	defer wait.Stop()
	for {
		f.mu.Lock()
		k := min(req.Max, len(f.due))
		jobs := f.due[:k:k]
		f.due = f.due[k:]
		added := f.added
		var leases []client.Lease
		for _, j := range jobs {
			token := fmt.Sprintf("orders.%032x", j.ID)
			f.out[token] = true
			leases = append(leases, client.Lease{Token: token, ExpiresAt: time.Now().Add(time.Duration(req.LeaseMS) * time.Millisecond), Job: j})
		}
		f.mu.Unlock()
		if len(leases) > 0 {
			json.NewEncoder(w).Encode(map[string]any{"leases": leases})
			return
		}
		select {
		case f.polling <- n:
		default:
		}
		select {
		case <-added:
		case <-wait.C:
			json.NewEncoder(w).Encode(map[string]any{"leases": []client.Lease{}})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeLeases) settle(w http.ResponseWriter, r *http.Request) {
	token, action := r.PathValue("token"), r.PathValue("action")
	var id uint64
	fmt.Sscanf(strings.TrimPrefix(token, "orders."), "%x", &id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.out[token] {
		apiError(w, http.StatusConflict, client.CodeLeaseEnded)
		return
	}
	switch action {
	case "ack":
		f.acked = append(f.acked, id)
	case "nack":
		var b nackBody
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			f.t.Errorf("nack body: %v", err)
		}
		f.nacks[id] = b
	case "extend":
		var b struct {
			LeaseMS int64 `json:"lease_ms"`
		}
		json.NewDecoder(r.Body).Decode(&b)
		if f.extendAnswer != nil {
			status, code := f.extendAnswer()
			apiError(w, status, code)
			return
		}
		f.extends[token]++
		f.extended <- token
		fmt.Fprintf(w, `{"token":%q,"state":"leased","expires_at":%q}`, token, time.Now().Add(time.Duration(b.LeaseMS)*time.Millisecond).UTC().Format(time.RFC3339Nano))
		return
	default:
		http.NotFound(w, r)
		return
	}
	delete(f.out, token)
	fmt.Fprintf(w, `{"token":%q,"state":"%sed"}`, token, action)
	f.settled <- id
}

func (f *fakeLeases) ackMany(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []string `json:"tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Tokens) == 0 {
		f.t.Errorf("ack of many: %v %v", req, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.batchAcks {
		apiError(w, http.StatusNotFound, client.CodeNotFound)
		return
	}
	f.batches = append(f.batches, len(req.Tokens))
	type answer struct {
		Token string            `json:"token"`
		State string            `json:"state,omitempty"`
		Error map[string]string `json:"error,omitempty"`
	}
	var out struct {
		Leases []answer `json:"leases"`
	}
	for _, token := range req.Tokens {
		if !f.out[token] {
			out.Leases = append(out.Leases, answer{Token: token, Error: map[string]string{"code": client.CodeLeaseEnded, "message": "fake"}})
			continue
		}
		var id uint64
		fmt.Sscanf(strings.TrimPrefix(token, "orders."), "%x", &id)
		delete(f.out, token)
		f.acked = append(f.acked, id)
		f.settled <- id
		out.Leases = append(out.Leases, answer{Token: token, State: "acked"})
	}
	json.NewEncoder(w).Encode(out)
}

// client is a client of the fake that sends each call once, so that the
// retries seen are Work's own.
func (f *fakeLeases) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(f.url, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// work runs Work on the fake's topic in the background; the channel
// receives its error.
func (f *fakeLeases) work(t *testing.T, ctx context.Context, handler func(context.Context, client.Lease) error, o client.WorkOptions) <-chan error {
	t.Helper()
	o.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	done := make(chan error, 1)
	go func() { done <- f.client(t).Work(ctx, "orders", handler, o) }()
	return done
}

// settleAndStop waits for n jobs to be settled, then stops Work by its
// context, which must make it return nil.
func (f *fakeLeases) settleAndStop(t *testing.T, n int, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	for range n {
		wait(t, f.settled, "a job settled")
	}
	stop()
	if err := wait(t, done, "Work to return"); err != nil {
		t.Errorf("Work stopped by its context: %v, want nil", err)
	}
}

// wait receives from ch, failing the test after a generous while.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// A handler's nil acks its job, an error nacks it with the error and the
// delay RetryAfter asks for, a panic nacks it too, and Work returns nil
// once stopped.
func TestWorkAcksAndNacks(t *testing.T) {
	f := newFakeLeases(t, 2, 3)
	ctx, stop := context.WithCancel(t.Context())
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		switch l.Job.ID {
		case 2:
			return client.RetryAfter(5*time.Second, errors.New("inventory down"))
		case 3:
			panic("boom")
		}
		return nil
	}, client.WorkOptions{Concurrency: 2})
	f.settleAndStop(t, 3, stop, done)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != 1 || f.acked[0] != 1 {
		t.Errorf("acked %v, want [1]", f.acked)
	}
	if n := f.nacks[2]; n.DelayMS == nil || *n.DelayMS != 5000 || n.Error != "inventory down" {
		t.Errorf("nack of job 2 = %+v, want delay 5000 and its error", n)
	}
	if n := f.nacks[3]; n.DelayMS != nil || n.Error != "panic: boom" {
		t.Errorf("nack of job 3 = %+v, want the topic's backoff and the panic", n)
	}
}

// Work never holds more jobs than it has handlers: each lease call asks
// for the idle ones only (the fake fails the test otherwise).
func TestWorkConcurrencyBound(t *testing.T) {
	const concurrency, jobs = 3, 12
	f := newFakeLeases(t, concurrency, jobs)
	ctx, stop := context.WithCancel(t.Context())
	var (
		mu       sync.Mutex
		running  int
		most     int
		released = make(chan struct{})
		started  = make(chan struct{}, jobs)
	)
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		started <- struct{}{}
		<-released
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	}, client.WorkOptions{Concurrency: concurrency})
	for range concurrency {
		wait(t, started, "a handler to start")
	}
	close(released)
	for range jobs {
		wait(t, f.settled, "a job settled")
	}
	stop()
	wait(t, done, "Work to return")
	if most != concurrency {
		t.Errorf("at most %d handlers ran at once, want %d", most, concurrency)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != jobs {
		t.Errorf("acked %d jobs, want %d", len(f.acked), jobs)
	}
}

// With MaxJobs, Work leases that many jobs, no more, and returns once
// they are handled.
func TestWorkMaxJobs(t *testing.T) {
	f := newFakeLeases(t, 3, 5)
	err := wait(t, f.work(t, t.Context(), func(context.Context, client.Lease) error { return nil }, client.WorkOptions{Concurrency: 3, MaxJobs: 4}), "Work to return")
	if err != nil {
		t.Fatalf("Work: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	asked := 0
	for _, n := range f.asked {
		asked += n
	}
	if len(f.acked) != 4 || asked != 4 || len(f.due) != 1 {
		t.Errorf("acked %v, asked for %v jobs, %d left due; want 4 acked of 4 asked for, 1 left", f.acked, f.asked, len(f.due))
	}
}

// A handler that outlives half its lease has it extended, and its job
// is acked when it ends.
func TestWorkExtendsSlowHandler(t *testing.T) {
	f := newFakeLeases(t, 1, 1)
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		for range 2 { // extended twice: the first extension is extended too
			select {
			case <-f.extended:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return nil
	}, client.WorkOptions{Lease: time.Second})
	if id := wait(t, f.settled, "the job settled"); id != 1 {
		t.Fatalf("settled job %d, want 1", id)
	}
	stop()
	wait(t, done, "Work to return")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != 1 {
		t.Errorf("acked %v, nacked %v: want job 1 acked after its extensions", f.acked, f.nacks)
	}
}

// A job handed to a long-poll that waited longer than the lease keeps
// its whole lease: the lease starts when toc hands the job, not when the
// call was sent. (It was counted from the call: the handler's context of
// the first job after a quiet spell ended at once.)
func TestWorkLeaseAfterALongWait(t *testing.T) {
	f := newFakeLeases(t, 1, 0)
	ctx, stop := context.WithCancel(t.Context())
	cause := make(chan error, 1)
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
			cause <- nil
			return nil
		}
	}, client.WorkOptions{Lease: time.Second, Wait: time.Minute})
	wait(t, f.polling, "a lease call waiting")
	time.Sleep(1200 * time.Millisecond) // longer than the lease
	f.add(1)
	if err := wait(t, cause, "the handler to end"); err != nil {
		t.Errorf("the handler's context ended with %v though its lease had a second left", err)
	}
	f.settleAndStop(t, 1, stop, done)
}

// A lease that ends while its handler runs cancels the handler's context
// with the cause ErrLeaseLost.
func TestWorkLeaseLost(t *testing.T) {
	f := newFakeLeases(t, 1, 1)
	f.extendAnswer = func() (int, string) { return http.StatusConflict, client.CodeLeaseEnded }
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	cause := make(chan error, 1)
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}, client.WorkOptions{Lease: time.Second})
	if err := wait(t, cause, "the handler's context to end"); !errors.Is(err, client.ErrLeaseLost) {
		t.Errorf("the handler's context ended with %v, want ErrLeaseLost", err)
	}
	wait(t, f.settled, "the job nacked")
	stop()
	wait(t, done, "Work to return")
}

// Once its context is done Work abandons its long-poll, makes no other
// lease call, and returns only after the running handler has finished and
// its job is acked.
func TestWorkGracefulStop(t *testing.T) {
	f := newFakeLeases(t, 2, 1)
	ctx, stop := context.WithCancel(t.Context())
	started, finish := make(chan struct{}), make(chan struct{})
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		close(started)
		<-finish
		return ctx.Err() // nil: the handler's context lasts the grace period
	}, client.WorkOptions{Concurrency: 2})
	wait(t, started, "the handler to start")
	wait(t, f.polling, "a long-poll for the idle handler")
	stop()
	select {
	case err := <-done:
		t.Fatalf("Work returned %v while its handler ran", err)
	default:
	}
	close(finish)
	if err := wait(t, done, "Work to return"); err != nil {
		t.Errorf("Work: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != 1 {
		t.Errorf("acked %v when Work returned, want job 1", f.acked)
	}
	if len(f.asked) != 2 {
		t.Errorf("%d lease calls, want 2: none after the stop", len(f.asked))
	}
}

// A handler still running when the grace period ends has its context
// cancelled, and its job is neither acked nor nacked: its lease expires.
func TestWorkGraceEnds(t *testing.T) {
	f := newFakeLeases(t, 1, 1)
	ctx, stop := context.WithCancel(t.Context())
	started := make(chan struct{})
	done := f.work(t, ctx, func(ctx context.Context, l client.Lease) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}, client.WorkOptions{Grace: 10 * time.Millisecond})
	wait(t, started, "the handler to start")
	stop()
	wait(t, done, "Work to return")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.acked) != 0 || len(f.nacks) != 0 {
		t.Errorf("acked %v, nacked %v after the grace period: want the lease left to expire", f.acked, f.nacks)
	}
}

// A 503 of a lease call is retried after a backoff; a 4xx stops Work and
// is its error.
func TestWorkLeaseErrors(t *testing.T) {
	t.Run("503 retried", func(t *testing.T) {
		f := newFakeLeases(t, 1, 1)
		f.refuse = func(n int) (int, string) {
			if n <= 2 {
				return http.StatusServiceUnavailable, client.CodeUnavailable
			}
			return 0, ""
		}
		ctx, stop := context.WithCancel(t.Context())
		done := f.work(t, ctx, func(context.Context, client.Lease) error { return nil }, client.WorkOptions{})
		wait(t, f.settled, "the job acked")
		stop()
		if err := wait(t, done, "Work to return"); err != nil {
			t.Errorf("Work: %v", err)
		}
	})
	for _, c := range []struct {
		status int
		code   string
		is     error
	}{
		{http.StatusBadRequest, client.CodeInvalid, client.ErrInvalid},
		{http.StatusForbidden, "forbidden", nil},
		{http.StatusNotFound, client.CodeNotFound, client.ErrNotFound},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			f := newFakeLeases(t, 1, 1)
			f.refuse = func(int) (int, string) { return c.status, c.code }
			err := wait(t, f.work(t, t.Context(), func(context.Context, client.Lease) error { return nil }, client.WorkOptions{}), "Work to return")
			e, ok := errors.AsType[*client.Error](err)
			if !ok || e.Status != c.status || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("Work: %v, want the %d", err, c.status)
			}
		})
	}
}

// A leased job's JSON is the webhook's body: key, biz_id and biz_type
// left out when the job has none, ids as decimal strings.
func TestLeasedJobJSON(t *testing.T) {
	fireAt := time.Date(2026, 11, 25, 3, 35, 21, 359e6, time.UTC)
	for _, c := range []struct {
		job  client.LeasedJob
		want string
	}{
		{client.LeasedJob{ID: 7, Topic: "orders", FireAt: fireAt, Attempt: 1},
			`{"id":"7","topic":"orders","fire_at":"2026-11-25T03:35:21.359Z","attempt":1,"payload":null}`},
		{client.LeasedJob{ID: 7, Topic: "orders", Key: "order-42", BizID: 18446744073709551615, BizType: 2, FireAt: fireAt, Attempt: 3, Payload: json.RawMessage(`{"a":1}`)},
			`{"id":"7","topic":"orders","key":"order-42","biz_id":"18446744073709551615","biz_type":"2","fire_at":"2026-11-25T03:35:21.359Z","attempt":3,"payload":{"a":1}}`},
	} {
		b, err := json.Marshal(c.job)
		if err != nil || string(b) != c.want {
			t.Errorf("%+v = %s, %v; want %s", c.job, b, err, c.want)
		}
		var back client.LeasedJob
		if err := json.Unmarshal(b, &back); err != nil || !back.FireAt.Equal(c.job.FireAt) || back.ID != c.job.ID || back.BizID != c.job.BizID || back.Key != c.job.Key || string(back.Payload) != string(c.job.Payload) {
			t.Errorf("%s read back as %+v, %v", b, back, err)
		}
	}
}

// Work keeps Pollers lease calls waiting at once, each for its share of
// the idle handlers, so that a job due while one call's answer is on its
// way finds another waiting.
func TestWorkPollers(t *testing.T) {
	f := newFakeLeases(t, 4, 0)
	ctx, stop := context.WithCancel(t.Context())
	done := f.work(t, ctx, func(context.Context, client.Lease) error { return nil },
		client.WorkOptions{Concurrency: 4, Wait: time.Minute})
	first, second := wait(t, f.polling, "a lease call waiting"), wait(t, f.polling, "a second lease call waiting")
	f.mu.Lock()
	asked := append([]int(nil), f.asked...)
	f.mu.Unlock()
	if first == second || len(asked) != 2 || asked[0] != 2 || asked[1] != 2 {
		t.Errorf("lease calls waiting: %d and %d, asking %v; want two calls of 2 jobs each", first, second, asked)
	}
	for id := range uint64(3) {
		f.add(id + 1)
	}
	f.settleAndStop(t, 3, stop, done)
}

// Handlers that end while an ack is under way are acked together in the
// next call; with a toc that has no such call, each is acked on its own
// (the fakes of the tests above).
func TestWorkAcksTogether(t *testing.T) {
	const jobs = 20
	f := newFakeLeases(t, jobs, jobs)
	f.batchAcks = true
	var started sync.WaitGroup
	started.Add(jobs)
	ctx, stop := context.WithCancel(t.Context())
	done := f.work(t, ctx, func(context.Context, client.Lease) error {
		started.Done()
		started.Wait() // all end at once
		return nil
	}, client.WorkOptions{Concurrency: jobs})
	f.settleAndStop(t, jobs, stop, done)
	f.mu.Lock()
	defer f.mu.Unlock()
	total := 0
	for _, n := range f.batches {
		total += n
	}
	if total != jobs || len(f.batches) >= jobs || len(f.acked) != jobs {
		t.Errorf("acks of %d jobs ending together: calls of %v, %d acked; want fewer calls than jobs", jobs, f.batches, len(f.acked))
	}
}

func TestAckLeases(t *testing.T) {
	f := newFakeLeases(t, 2, 0)
	f.batchAcks = true
	f.out["orders.00000000000000000000000000000001"] = true
	errs, err := f.client(t).AckLeases(t.Context(), []string{"orders.00000000000000000000000000000001", "orders.00000000000000000000000000000002"})
	if err != nil || len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], client.ErrLeaseEnded) || !errors.Is(errs[1], client.ErrConflict) {
		t.Errorf("AckLeases of a lease held and one ended: %v %v, want nil and ErrLeaseEnded", errs, err)
	}
}
