package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// keyReceiver holds each call 20-50 ms and records, per concurrency key
// (the payload's "k"), how many calls are in at once: two of one key at
// once is an overlap. A job whose payload says "fail" fails its first
// call with a 500.
type keyReceiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	inFlight map[string]int
	calls    map[string]int       // by job id
	doneAt   map[string]time.Time // by job id: when its call was answered 204
	overlaps []string
	peak     int // the most calls in at once, over all keys
	now      int
}

func newKeyReceiver(t *testing.T) *keyReceiver {
	r := &keyReceiver{inFlight: map[string]int{}, calls: map[string]int{}, doneAt: map[string]time.Time{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *keyReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var msg struct {
		ID      string `json:"id"`
		Payload struct {
			K    string `json:"k"`
			Fail bool   `json:"fail"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.ID == "" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	k := msg.Payload.K
	r.mu.Lock()
	r.calls[msg.ID]++
	first := r.calls[msg.ID] == 1
	r.now++
	r.peak = max(r.peak, r.now)
	if k != "" {
		r.inFlight[k]++
		if r.inFlight[k] > 1 {
			r.overlaps = append(r.overlaps, fmt.Sprintf("key %s: %d calls in flight at once (job %s)", k, r.inFlight[k], msg.ID))
		}
	}
	r.mu.Unlock()

	time.Sleep(time.Duration(20+rand.IntN(31)) * time.Millisecond)

	r.mu.Lock()
	defer r.mu.Unlock()
	r.now--
	if k != "" {
		r.inFlight[k]--
	}
	if msg.Payload.Fail && first {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if _, ok := r.doneAt[msg.ID]; !ok {
		r.doneAt[msg.ID] = time.Now()
	}
	w.WriteHeader(http.StatusNoContent)
}

// answered reports how many of ids were answered 204.
func (r *keyReceiver) answered(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := r.doneAt[id]; ok {
			n++
		}
	}
	return n
}

// Item 3 of issue 18: jobs of one concurrency key are never in flight at
// once across a 3-member cluster, checked at the receiver; jobs of other
// keys and without one go on meanwhile; a job that fails holds its key
// through its retry; waiting for a busy key costs no attempt.
func TestClusterConcurrencyKeys(t *testing.T) {
	const (
		keys    = 15
		perKey  = 20
		unkeyed = 100
	)
	_, members := startCluster(t, 3)
	r := newKeyReceiver(t)
	hook := r.srv.URL + "/hook"
	topic := map[string]any{"slots": 16, "retry": map[string]any{"base_ms": 100, "max_ms": 200}}
	if status, body := members[0].call(t, "PUT", "/v1/topics/serial", topic); status != http.StatusCreated {
		t.Fatalf("put topic: %d %v", status, body)
	}
	waitSettled(t, members, 3, 16, 30*time.Second)

	// All due at once, through all three members: keyed jobs in turn
	// over the keys, every fifth failing once; the unkeyed ones among them.
	due := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	var jobs []map[string]any
	wantAttempts := map[int]int{}
	added := 0
	for i := range keys * perKey {
		fail := i%5 == 0
		wantAttempts[len(jobs)] = 1 + boolInt(fail)
		jobs = append(jobs, map[string]any{"topic": "serial", "fire_at": due.Format(time.RFC3339Nano), "callback_url": hook,
			"concurrency_key": fmt.Sprintf("acct-%d", i%keys), "payload": map[string]any{"k": fmt.Sprintf("acct-%d", i%keys), "fail": fail}})
		if i%3 == 0 && added < unkeyed {
			added++
			wantAttempts[len(jobs)] = 1
			jobs = append(jobs, map[string]any{"topic": "serial", "fire_at": due.Format(time.RFC3339Nano), "callback_url": hook})
		}
	}
	for len(jobs) < keys*perKey+unkeyed {
		wantAttempts[len(jobs)] = 1
		jobs = append(jobs, map[string]any{"topic": "serial", "fire_at": due.Format(time.RFC3339Nano), "callback_url": hook})
	}
	var ids, keyedIDs, unkeyedIDs []string
	for part := range 3 {
		lo, hi := part*len(jobs)/3, (part+1)*len(jobs)/3
		status, body := members[part].call(t, "POST", "/v1/jobs/batch", map[string]any{"jobs": jobs[lo:hi]})
		if status != http.StatusOK {
			t.Fatalf("batch: %d %v", status, body)
		}
		for i, item := range body["results"].([]any) {
			id := item.(map[string]any)["id"].(string)
			ids = append(ids, id)
			if jobs[lo+i]["concurrency_key"] != nil {
				keyedIDs = append(keyedIDs, id)
			} else {
				unkeyedIDs = append(unkeyedIDs, id)
			}
		}
	}

	for deadline := time.Now().Add(2 * time.Minute); r.answered(ids) < len(ids); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs answered within 2 minutes", r.answered(ids), len(ids))
		}
	}

	r.mu.Lock()
	for _, o := range r.overlaps {
		t.Error(o)
	}
	var lastKeyed, lastUnkeyed time.Time
	for _, id := range keyedIDs {
		lastKeyed = latest(lastKeyed, r.doneAt[id])
	}
	for _, id := range unkeyedIDs {
		lastUnkeyed = latest(lastUnkeyed, r.doneAt[id])
	}
	peak := r.peak
	r.mu.Unlock()
	t.Logf("%d keyed jobs over %d keys and %d unkeyed, all due at once: keyed done %v after the due time, unkeyed %v; at most %d calls in at once",
		len(keyedIDs), keys, len(unkeyedIDs), lastKeyed.Sub(due).Round(time.Millisecond), lastUnkeyed.Sub(due).Round(time.Millisecond), peak)
	if !lastUnkeyed.Before(lastKeyed) {
		t.Errorf("the last unkeyed job was answered at %v, after the last keyed one at %v: unkeyed jobs waited for the keys", lastUnkeyed, lastKeyed)
	}

	// Every job ends done, its attempts those it was answered: waiting
	// for a busy key counted none.
	var wrong []string
	for i, id := range ids {
		status, body := members[i%3].call(t, "GET", "/v1/jobs/"+id, nil)
		if status != http.StatusOK || body["status"] != "done" {
			t.Errorf("job %s: %d %v, want done", id, status, body)
			continue
		}
		if got := int(body["attempts"].(float64)); got != wantAttempts[i] && len(wrong) < 10 {
			wrong = append(wrong, fmt.Sprintf("job %s (key %q): %d attempts, want %d", id, body["concurrency_key"], got, wantAttempts[i]))
		}
	}
	slices.Sort(wrong)
	for _, w := range wrong {
		t.Error(w)
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
