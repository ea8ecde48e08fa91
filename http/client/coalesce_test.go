package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// coalesceServer answers POST /v1/jobs and POST /v1/jobs/batch with a
// job whose id is the request's biz_id, refusing a job of topic "bad" as
// toc would, and records the requests. The first request waits for hold
// to close, so that the calls made meanwhile queue up.
type coalesceServer struct {
	hold       chan struct{}
	batchError string // when set, every batch is answered 503 with it

	mu      sync.Mutex
	singles []string // biz_ids of POST /v1/jobs
	batches [][]string
	first   sync.Once
}

// seen returns the requests s answered: the biz_ids of each single and
// of each batch.
func (s *coalesceServer) seen() ([]string, [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.singles, s.batches
}

func (s *coalesceServer) handle(w http.ResponseWriter, r *http.Request) {
	s.first.Do(func() { <-s.hold })
	raw, _ := io.ReadAll(r.Body)
	job := func(j map[string]any) string {
		return fmt.Sprintf(`{"id":%q,"topic":%q,"status":"pending","fire_at":"2026-11-29T10:00:00.000Z","attempts":0,"max_attempts":16,"priority":"normal",`+
			`"last_error":"","last_status":0,"callback_url":"http://localhost/hook","payload":null,"created_at":"2026-11-29T09:00:00.000Z",`+
			`"updated_at":"2026-11-29T09:00:00.000Z","version":1,"window_ms":0,"concurrency_key":""}`, j["biz_id"], j["topic"])
	}
	invalid := func(field string) string {
		return `{"error":{"code":"invalid_argument","field":"` + field + `","message":"no such topic"}}`
	}
	switch r.URL.Path {
	case "/v1/jobs":
		var j map[string]any
		json.Unmarshal(raw, &j)
		s.mu.Lock()
		s.singles = append(s.singles, j["biz_id"].(string))
		s.mu.Unlock()
		if j["topic"] == "bad" {
			answer(w, http.StatusBadRequest, invalid("topic"))
			return
		}
		answer(w, http.StatusCreated, job(j))
	case "/v1/jobs/batch":
		var b struct {
			WithJobs bool             `json:"with_jobs"`
			Jobs     []map[string]any `json:"jobs"`
		}
		json.Unmarshal(raw, &b)
		var ids, results, items []string
		for i, j := range b.Jobs {
			ids = append(ids, j["biz_id"].(string))
			results = append(results, fmt.Sprintf(`{"id":%q,"status":"pending","created":true,"job":%s}`, j["biz_id"], job(j)))
			if j["topic"] == "bad" {
				items = append(items, fmt.Sprintf(`{"index":%d,"code":"invalid_argument","field":"topic","message":"no such topic"}`, i))
			}
		}
		s.mu.Lock()
		s.batches = append(s.batches, ids)
		s.mu.Unlock()
		switch {
		case !b.WithJobs:
			answer(w, http.StatusBadRequest, invalid("with_jobs"))
		case s.batchError != "":
			answer(w, http.StatusServiceUnavailable, s.batchError)
		case items != nil:
			answer(w, http.StatusBadRequest, `{"error":{"code":"invalid_argument","field":"jobs","message":"refused","items":[`+strings.Join(items, ",")+`]}}`)
		default:
			answer(w, http.StatusOK, `{"results":[`+strings.Join(results, ",")+`]}`)
		}
	default:
		http.NotFound(w, r)
	}
}

// outcome is what one Schedule call answered.
type outcome struct {
	id      uint64
	created bool
	err     error
}

// coalesced starts a client of s with one request in flight at most,
// makes a first call that s holds, then n more at once (job i of topic
// topic(i), biz_id i+1, context ctxOf(i) when given), runs before (when
// given) once they are queued, lets s go and returns every call's
// outcome, the first's at index 0.
func coalesced(t *testing.T, s *coalesceServer, n int, topic func(i int) string, ctxOf func(i int) context.Context, before func(*coalescer)) []outcome {
	t.Helper()
	s.hold = make(chan struct{})
	c := newFake(t, s.handle, WithCoalescing(Coalescing{MaxInFlight: 1}))
	out := make([]outcome, n+1)
	var wg sync.WaitGroup
	call := func(i int, ctx context.Context, topic string) {
		j, created, err := c.Schedule(ctx, JobRequest{Topic: topic, BizID: uint64(i + 1), CallbackURL: "http://localhost/hook"})
		out[i] = outcome{created: created, err: err}
		if j != nil {
			out[i].id = j.ID
		}
	}
	wg.Go(func() { call(0, t.Context(), "orders") })
	waitFor(t, func() bool { // the first call is at the server
		c.coalescer.mu.Lock()
		defer c.coalescer.mu.Unlock()
		return c.coalescer.inFlight == 1 && len(c.coalescer.queue) == 0
	})
	for i := 1; i <= n; i++ {
		ctx := t.Context()
		if ctxOf != nil {
			ctx = ctxOf(i)
		}
		wg.Go(func() { call(i, ctx, topic(i)) })
	}
	waitFor(t, func() bool {
		c.coalescer.mu.Lock()
		defer c.coalescer.mu.Unlock()
		return len(c.coalescer.queue) == n
	})
	if before != nil {
		before(c.coalescer)
	}
	close(s.hold)
	wg.Wait()
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("timed out")
}

// Calls made while a request is under way go together in one batch, and
// each gets its own job; a lone call is a POST /v1/jobs.
func TestCoalescingBatchesConcurrentCalls(t *testing.T) {
	s := &coalesceServer{}
	out := coalesced(t, s, 10, func(int) string { return "orders" }, nil, nil)
	for i, o := range out {
		if o.err != nil || o.id != uint64(i+1) || !o.created {
			t.Errorf("call %d: job %d, created %v, %v; want job %d created", i, o.id, o.created, o.err, i+1)
		}
	}
	if singles, batches := s.seen(); len(singles) != 1 || len(batches) != 1 || len(batches[0]) != 10 {
		t.Errorf("singles %v, batches %v; want the first call alone and one batch of the 10 others", singles, batches)
	}
}

// A batch refused for some of its jobs stored nothing: each call goes
// again alone, and only the invalid one fails, with its own error.
func TestCoalescingRefusedBatchGoesAlone(t *testing.T) {
	s := &coalesceServer{}
	out := coalesced(t, s, 6, func(i int) string {
		if i == 3 {
			return "bad"
		}
		return "orders"
	}, nil, nil)
	for i, o := range out {
		if i == 3 {
			if e, ok := errors.AsType[*Error](o.err); !ok || !errors.Is(o.err, ErrInvalid) || e.Field != "topic" || e.Path != "/v1/jobs" {
				t.Errorf("the invalid call: %v, want its own 400 naming topic", o.err)
			}
			continue
		}
		if o.err != nil || o.id != uint64(i+1) {
			t.Errorf("call %d: job %d, %v; want job %d", i, o.id, o.err, i+1)
		}
	}
	if singles, batches := s.seen(); len(batches) != 1 || len(singles) != 7 {
		t.Errorf("singles %v, batches %v; want one batch, then each of its 6 calls alone", singles, batches)
	}
}

// An answer that refuses the whole request is every caller's error, and
// nothing is sent again.
func TestCoalescingUnavailableIsEveryCallersError(t *testing.T) {
	s := &coalesceServer{batchError: unavailable}
	out := coalesced(t, s, 5, func(int) string { return "orders" }, nil, nil)
	for i, o := range out[1:] {
		if !errors.Is(o.err, ErrUnavailable) {
			t.Errorf("call %d: %v, want unavailable", i+1, o.err)
		}
	}
	if singles, batches := s.seen(); len(singles) != 1 || len(batches) != 1 {
		t.Errorf("singles %v, batches %v; want nothing sent again", singles, batches)
	}
}

// A call whose context ends before its batch is sent is dropped from it:
// no job is made for it.
func TestCoalescingDropsACancelledCall(t *testing.T) {
	s := &coalesceServer{}
	ctx, cancel := context.WithCancel(t.Context())
	out := coalesced(t, s, 4, func(int) string { return "orders" }, func(i int) context.Context {
		if i == 2 {
			return ctx
		}
		return t.Context()
	}, func(k *coalescer) {
		cancel()
		waitFor(t, func() bool {
			k.mu.Lock()
			defer k.mu.Unlock()
			return len(k.queue) == 3
		})
	})
	if !errors.Is(out[2].err, context.Canceled) || out[2].id != 0 {
		t.Errorf("the cancelled call: job %d, %v; want context.Canceled", out[2].id, out[2].err)
	}
	_, batches := s.seen()
	for _, ids := range batches {
		for _, id := range ids {
			if id == "3" {
				t.Errorf("the cancelled call was sent in batch %v", ids)
			}
		}
	}
}

// Callers that call again as soon as they are answered go together:
// once a batch is answered, the next waits for its callers to call
// again, and is sent as soon as they all have. Without that they split
// into two halves taking turns.
func TestCoalescingRegroupsCallersThatCallAgain(t *testing.T) {
	s := &coalesceServer{hold: make(chan struct{})}
	close(s.hold)
	// A second: long enough that every caller is back before it ends, so
	// that the batches are sent when they are; at the end, the last
	// calls may wait it out for a caller that has finished.
	c := newFake(t, s.handle, WithCoalescing(Coalescing{MaxInFlight: 1, Regroup: time.Second}))
	const callers, calls = 8, 20
	// The callers start together: started one by one on a busy machine,
	// the first ones would each go alone and stay ahead of the others,
	// their last calls then alone too.
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			for k := range calls {
				if _, _, err := c.Schedule(t.Context(), JobRequest{Topic: "orders", BizID: uint64(i*calls + k + 1), CallbackURL: "http://localhost/hook"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	singles, batches := s.seen()
	total, full := len(singles), 0
	for _, b := range batches {
		total += len(b)
		if len(b) == callers {
			full++
		}
	}
	if total != callers*calls {
		t.Fatalf("%d jobs sent, want %d", total, callers*calls)
	}
	// The first rounds settle who goes with whom, and the last may find
	// a caller done: every round between holds every caller's call.
	if full < calls-3 {
		t.Errorf("%d batches of all %d callers in %d (singles %d); want %d or more", full, callers, len(batches), len(singles), calls-3)
	}
}

// A batch's callers that do not call again hold the next call back for
// Regroup at most.
func TestCoalescingRegroupWaitEnds(t *testing.T) {
	s := &coalesceServer{}
	s.hold = make(chan struct{})
	c := newFake(t, s.handle, WithCoalescing(Coalescing{MaxInFlight: 1, Regroup: 50 * time.Millisecond}))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			if _, _, err := c.Schedule(t.Context(), JobRequest{Topic: "orders", BizID: uint64(i + 1), CallbackURL: "http://localhost/hook"}); err != nil {
				t.Error(err)
			}
		})
		if i == 0 {
			waitFor(t, func() bool {
				c.coalescer.mu.Lock()
				defer c.coalescer.mu.Unlock()
				return c.coalescer.inFlight == 1
			})
		}
	}
	waitFor(t, func() bool {
		c.coalescer.mu.Lock()
		defer c.coalescer.mu.Unlock()
		return len(c.coalescer.queue) == 3
	})
	close(s.hold)
	wg.Wait() // the first alone, then a batch of three, after which a regroup waits for three calls
	j, _, err := c.Schedule(t.Context(), JobRequest{Topic: "orders", BizID: 9, CallbackURL: "http://localhost/hook"})
	if err != nil || j.ID != 9 {
		t.Fatalf("job %v, %v", j, err)
	}
	if singles, batches := s.seen(); len(singles) != 2 || len(batches) != 1 || len(batches[0]) != 3 {
		t.Errorf("singles %v, batches %v; want the last call alone once the wait ended", singles, batches)
	}
}
