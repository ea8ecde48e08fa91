// The task store contract, continued: concurrency keys, of which one job
// of a topic at a time holds each (timer.HoldsKey), and Fire leaves the
// others pending.

package timertest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// keyed returns a pending job of topic with concurrency key ckey, due at
// base.
func keyed(id timer.JobID, topic, ckey string) *timer.Job {
	j := newJob(id, topic, 0)
	j.ConcurrencyKey = ckey
	return j
}

// firing returns which of ids are firing.
func firing(t *testing.T, s timer.Store, ids ...timer.JobID) []timer.JobID {
	t.Helper()
	var out []timer.JobID
	for _, id := range ids {
		if mustGet(t, s, id).Status == timer.StatusFiring {
			out = append(out, id)
		}
	}
	return out
}

// A job's concurrency key is stored and read back, by id and in a batch.
func testConcurrencyKeyStored(t *testing.T, s timer.Store) {
	mustInsert(t, s, keyed(1, "t", "account-7"), newJob(2, "t", 0))
	if got := mustGet(t, s, 1).ConcurrencyKey; got != "account-7" {
		t.Errorf("ConcurrencyKey = %q, want account-7", got)
	}
	if got := mustGet(t, s, 2).ConcurrencyKey; got != "" {
		t.Errorf("ConcurrencyKey of a job without one = %q", got)
	}
	js, err := s.GetMany(t.Context(), []timer.JobID{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if want := map[timer.JobID]string{1: "account-7"}[j.ID]; j.ConcurrencyKey != want {
			t.Errorf("GetMany: job %d has key %q, want %q", j.ID, j.ConcurrencyKey, want)
		}
	}
}

// Fire moves one job of a key to firing and leaves the others of the key
// pending (busy), in one call or several, while the first holds the key:
// firing, or pending after a failed attempt. Other keys, other topics
// and jobs without a key are not held up. Done, dead and cancelled
// release the key; a job replayed from dead holds nothing until it fires.
func testFireBusy(t *testing.T, s timer.Store) {
	ctx := t.Context()
	mustInsert(t, s, keyed(1, "t", "k"), keyed(2, "t", "k"), keyed(3, "t", "k"),
		keyed(4, "u", "k"), newJob(5, "t", 0), keyed(6, "t", "j"), newJob(7, "t", 0))
	now := base.Add(time.Second)
	n, err := s.Fire(ctx, []timer.JobID{1, 2, 3, 4, 5, 6, 7}, now, now)
	if err != nil || n != 5 {
		t.Fatalf("Fire = %d, %v; want 5 (one of k in t, k in u, j, the two without a key)", n, err)
	}
	holders := firing(t, s, 1, 2, 3)
	if len(holders) != 1 {
		t.Fatalf("firing of key k in t: %v, want exactly one", holders)
	}
	if got := firing(t, s, 4, 5, 6, 7); len(got) != 4 {
		t.Errorf("firing of the others: %v, want all of 4, 5, 6, 7", got)
	}
	h := holders[0]
	waiting := slices.DeleteFunc([]timer.JobID{1, 2, 3}, func(id timer.JobID) bool { return id == h })
	busy := func(when string) {
		t.Helper()
		if n, err := s.Fire(ctx, waiting, now, now); err != nil || n != 0 {
			t.Errorf("%s: Fire of the waiting jobs = %d, %v; want 0", when, n, err)
		}
		for _, id := range waiting {
			if j := mustGet(t, s, id); j.Status != timer.StatusPending || j.Version != 1 {
				t.Errorf("%s: waiting job %d is %s at version %d, want pending at 1", when, id, j.Status, j.Version)
			}
		}
	}
	busy("holder firing")
	// The holder fired again (its worker died) stays the holder.
	if n, err := s.Fire(ctx, []timer.JobID{h}, now, now); err != nil || n != 1 {
		t.Errorf("Fire of the firing holder = %d, %v; want 1", n, err)
	}
	// A failed attempt waiting for its retry still holds the key, and
	// its retry fires.
	if ok, err := s.Fail(ctx, h, timer.Failure{Attempts: 1, Error: "503", Status: 503, RetryAt: now}, now); !ok || err != nil {
		t.Fatalf("Fail = %t, %v", ok, err)
	}
	busy("holder waiting for its retry")
	if n, err := s.Fire(ctx, append([]timer.JobID{h}, waiting...), now, now); err != nil || n != 1 {
		t.Errorf("Fire of the retried holder with the waiting jobs = %d, %v; want 1 (the holder)", n, err)
	}
	busy("holder retried")
	// Done releases the key: the next fires, one of the two.
	if n, err := s.Complete(ctx, []timer.Completion{{ID: h, Attempts: 2}}, now); n != 1 || err != nil {
		t.Fatalf("Complete = %d, %v", n, err)
	}
	if n, err := s.Fire(ctx, waiting, now, now); err != nil || n != 1 {
		t.Fatalf("Fire after the holder is done = %d, %v; want 1", n, err)
	}
	next := firing(t, s, waiting...)
	if len(next) != 1 {
		t.Fatalf("firing after the holder is done: %v, want one", next)
	}
	last := slices.DeleteFunc(slices.Clone(waiting), func(id timer.JobID) bool { return id == next[0] })[0]
	// Dead releases it.
	if ok, err := s.Fail(ctx, next[0], timer.Failure{Attempts: 1, Error: "gave up", Dead: true}, now); !ok || err != nil {
		t.Fatalf("Fail(dead) = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{last}, now, now); err != nil || n != 1 {
		t.Fatalf("Fire after the holder died = %d, %v; want 1", n, err)
	}
	// A replayed dead job (no attempts) holds nothing, so it is busy
	// behind the firing one; a cancel of a holder waiting for its retry
	// releases the key.
	if ok, err := s.Replay(ctx, next[0], now, now); !ok || err != nil {
		t.Fatalf("Replay = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{next[0]}, now, now); err != nil || n != 0 {
		t.Errorf("Fire of the replayed job behind a holder = %d, %v; want 0", n, err)
	}
	if ok, err := s.Fail(ctx, last, timer.Failure{Attempts: 1, Error: "503", RetryAt: now.Add(time.Hour)}, now); !ok || err != nil {
		t.Fatalf("Fail = %t, %v", ok, err)
	}
	if ok, err := s.Transition(ctx, last, timer.StatusPending, timer.StatusCancelled, now); !ok || err != nil {
		t.Fatalf("cancel of a holder waiting for its retry = %t, %v", ok, err)
	}
	if n, err := s.Fire(ctx, []timer.JobID{next[0]}, now, now); err != nil || n != 1 {
		t.Errorf("Fire after the holder was cancelled = %d, %v; want 1", n, err)
	}
}

// Fire calls racing over the jobs of one key move one of them to firing,
// never two: the store referees.
func testFireBusyRace(t *testing.T, s timer.Store) {
	const n = 8
	js := make([]*timer.Job, n)
	for i := range js {
		js[i] = keyed(timer.JobID(i+1), "t", "k")
	}
	mustInsert(t, s, js...)
	now := base.Add(time.Second)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.Fire(t.Context(), []timer.JobID{timer.JobID(i + 1)}, now, now); err != nil {
				t.Errorf("Fire(%d): %v", i+1, err)
			}
		})
	}
	wg.Wait()
	ids := make([]timer.JobID, n)
	for i := range ids {
		ids[i] = timer.JobID(i + 1)
	}
	if got := firing(t, s, ids...); len(got) != 1 {
		t.Errorf("firing after %d racing Fire calls: %v, want exactly one", n, got)
	}
}
