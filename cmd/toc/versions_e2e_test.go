package main

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
	"github.com/toc-project/toc/internal/testenv"
)

// Versioned changes on the real stack (toc serve on MariaDB and
// redis-server): a PATCH or DELETE whose If-Match is stale gets 412 and
// changes nothing (the job keeps its due time and status, fires when it
// should, and a cancelled one stays cancelled); of changes racing with
// the same version, exactly one succeeds.
func TestVersionedChanges(t *testing.T) {
	p := serveOn(t, "--redis-addr", testenv.Redis(t).Addr)
	r := newReceiver(t, e2eSecret)
	hook := r.srv.URL + "/hook"
	c, err := client.New(p.url, client.WithToken(p.token),
		client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	schedule := func(w client.When) *client.Job {
		t.Helper()
		j, _, err := c.Schedule(ctx, client.JobRequest{Topic: "versions", CallbackURL: hook, FireAt: w.FireAt, Delay: w.Delay})
		if err != nil || j.Version != 1 {
			t.Fatalf("schedule: %+v, %v; want version 1", j, err)
		}
		return j
	}
	get := func(id uint64) *client.Job {
		t.Helper()
		j, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	stale := func(what string, err error, current int64) {
		t.Helper()
		e, ok := errors.AsType[*client.Error](err)
		if !errors.Is(err, client.ErrVersionMismatch) || !ok || e.Status != http.StatusPreconditionFailed || e.CurrentVersion != current {
			t.Fatalf("%s: %v; want 412 version_mismatch at version %d", what, err, current)
		}
	}

	// kept: one client moves it; another, still holding version 1, tries
	// to move and to cancel it.
	kept := schedule(client.After(time.Hour))
	moved, err := c.Reschedule(ctx, kept.ID, client.After(2*time.Hour), client.IfMatch(1))
	if err != nil || moved.Version != 2 {
		t.Fatalf("reschedule at version 1: %+v, %v", moved, err)
	}
	_, err = c.Reschedule(ctx, kept.ID, client.After(0), client.IfMatch(1))
	stale("stale reschedule", err, 2)
	_, err = c.Cancel(ctx, kept.ID, client.IfMatch(1))
	stale("stale cancel", err, 2)
	if j := get(kept.ID); j.Status != client.StatusPending || !j.FireAt.Equal(moved.FireAt) || j.Version != 2 {
		t.Fatalf("after stale changes: %s due %v version %d; want pending, due %v, version 2", j.Status, j.FireAt, j.Version, moved.FireAt)
	}
	status, etag := getETag(t, p, kept.ID)
	if status != http.StatusOK || etag != `"2"` {
		t.Fatalf("GET: %d, ETag %q; want 200 and \"2\"", status, etag)
	}

	// gone: cancelled at version 1; a stale reschedule due at once is
	// refused, and so is one at its version now (it is cancelled).
	gone := schedule(client.After(time.Hour))
	if j, err := c.Cancel(ctx, gone.ID, client.IfMatch(1)); err != nil || j.Status != client.StatusCancelled || j.Version != 2 {
		t.Fatalf("cancel at version 1: %+v, %v", j, err)
	}
	_, err = c.Reschedule(ctx, gone.ID, client.After(0), client.IfMatch(1))
	stale("stale reschedule of a cancelled job", err, 2)
	if _, err := c.Reschedule(ctx, gone.ID, client.After(0), client.IfMatch(2)); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("reschedule of a cancelled job at its version: %v; want 409", err)
	}
	if j := get(gone.ID); j.Status != client.StatusCancelled || !j.FireAt.Equal(gone.FireAt) || j.Version != 2 {
		t.Fatalf("cancelled job after refused changes: %s due %v version %d", j.Status, j.FireAt, j.Version)
	}

	// kept, moved at its version now, fires; so does a job due after the
	// time gone's stale reschedule asked for, and gone does not.
	if _, err := c.Reschedule(ctx, kept.ID, client.After(0), client.IfMatch(2)); err != nil {
		t.Fatal(err)
	}
	last := schedule(client.After(500 * time.Millisecond))
	r.wait(t, r.expect([]string{strconv.FormatUint(kept.ID, 10), strconv.FormatUint(last.ID, 10)}), time.Minute)
	r.mu.Lock()
	calls := len(r.arrived[strconv.FormatUint(gone.ID, 10)])
	r.mu.Unlock()
	if calls != 0 {
		t.Errorf("the cancelled job fired %d times", calls)
	}
	// Fired and done: two changes more (firing, done).
	if j := get(kept.ID); j.Status != client.StatusDone || j.Version != 5 {
		t.Errorf("fired job: %s at version %d; want done at 5", j.Status, j.Version)
	}

	// The race: changes with the same If-Match, at once; one wins.
	raced := schedule(client.After(time.Hour))
	const racers = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []*client.Job
		errs []error
	)
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			j, err := c.Reschedule(ctx, raced.ID, client.After(time.Duration(i+2)*time.Hour), client.IfMatch(1))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, j)
			} else {
				errs = append(errs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d of %d reschedules at version 1 succeeded, want 1 (errors %v)", len(won), racers, errs)
	}
	for _, err := range errs {
		stale("a loser of the race", err, 2)
	}
	if j := get(raced.ID); j.Version != 2 || !j.FireAt.Equal(won[0].FireAt) {
		t.Errorf("raced job: version %d due %v; want 2 and the winner's %v", j.Version, j.FireAt, won[0].FireAt)
	}
}

// getETag answers GET /v1/jobs/{id}'s status and ETag header.
func getETag(t *testing.T, p *proc, id uint64) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", p.url+"/v1/jobs/"+strconv.FormatUint(id, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := (&http.Client{Transport: contract.Shared(t).Transport(t, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("ETag")
}
