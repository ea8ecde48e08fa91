// The task store contract, continued: status changes, scans and topics.

package timertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/timer"
)

func testTransition(t *testing.T, s timer.Store) {
	statuses := []timer.Status{timer.StatusPending, timer.StatusDone, timer.StatusCancelled, timer.StatusDead}
	id := timer.JobID(0)
	for _, in := range statuses {
		for _, from := range statuses {
			for _, to := range statuses {
				id++
				j := newJob(id, "t", 0)
				j.Status = in
				mustInsert(t, s, j)
				now := base.Add(time.Minute)
				ok, err := s.Transition(t.Context(), id, from, to, now)
				if err != nil {
					t.Fatalf("Transition: %v", err)
				}
				if ok != (in == from) {
					t.Errorf("job in %s: Transition(%s → %s) = %t, want %t", in, from, to, ok, in == from)
				}
				got := mustGet(t, s, id)
				wantStatus, wantModified := in, base
				if ok {
					wantStatus, wantModified = to, now
				}
				if got.Status != wantStatus || !got.UpdatedAt.Equal(wantModified) {
					t.Errorf("job in %s after %s → %s: status %s updated %v, want %s %v",
						in, from, to, got.Status, got.UpdatedAt, wantStatus, wantModified)
				}
			}
		}
	}
	if ok, err := s.Transition(t.Context(), 9999, timer.StatusPending, timer.StatusDone, base); ok || err != nil {
		t.Errorf("Transition of a missing job = %t, %v", ok, err)
	}
	if _, err := s.Transition(t.Context(), 1, timer.StatusPending, 9, base); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("Transition to status 9 = %v, want ErrInvalid", err)
	}
}

func testComplete(t *testing.T, s timer.Store) {
	js := jobs(1, 2100, "t")
	js[1].Status = timer.StatusDone
	js[2].Status = timer.StatusCancelled
	js[3].Status = timer.StatusDead
	mustInsert(t, s, js...)
	now := base.Add(time.Hour)

	done := []timer.Completion{{ID: 1, Attempts: 1, Status: 204}, {ID: 2, Attempts: 5}, {ID: 3, Attempts: 5}, {ID: 4, Attempts: 5}, {ID: 9999, Attempts: 1}}
	n, err := s.Complete(t.Context(), done, now)
	if err != nil || n != 1 {
		t.Fatalf("Complete = %d, %v; want 1", n, err)
	}
	if got := mustGet(t, s, 1); got.Status != timer.StatusDone || got.Attempts != 1 || got.LastStatus != 204 || !got.UpdatedAt.Equal(now) {
		t.Errorf("completed job: status %s attempts %d last status %d updated %v; want done, 1, 204", got.Status, got.Attempts, got.LastStatus, got.UpdatedAt)
	}
	for id, st := range map[timer.JobID]timer.Status{2: timer.StatusDone, 3: timer.StatusCancelled, 4: timer.StatusDead} {
		if got := mustGet(t, s, id); got.Status != st || got.Attempts != 0 || !got.UpdatedAt.Equal(base) {
			t.Errorf("job %d not pending: status %s attempts %d updated %v; want untouched", id, got.Status, got.Attempts, got.UpdatedAt)
		}
	}
	if n, err := s.Complete(t.Context(), done, now); err != nil || n != 0 {
		t.Errorf("Complete again = %d, %v; want 0", n, err)
	}

	// Many, over several statements, with distinct attempt counts and
	// receivers' statuses.
	done = done[:0]
	for id := timer.JobID(5); id <= 2100; id++ {
		done = append(done, timer.Completion{ID: id, Attempts: int(id % 9), Status: 200 + int(id%3)})
	}
	if n, err := s.Complete(t.Context(), done, now); err != nil || n != len(done) {
		t.Fatalf("Complete(%d) = %d, %v", len(done), n, err)
	}
	ids := make([]timer.JobID, len(done))
	for i, c := range done {
		ids[i] = c.ID
	}
	got, err := s.GetMany(t.Context(), ids)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("GetMany = %d jobs, %v; want %d", len(got), err, len(ids))
	}
	for _, j := range got {
		if j.Status != timer.StatusDone || j.Attempts != int(j.ID%9) || j.LastStatus != 200+int(j.ID%3) {
			t.Errorf("job %d: status %s attempts %d last status %d, want done %d %d", j.ID, j.Status, j.Attempts, j.LastStatus, j.ID%9, 200+j.ID%3)
		}
	}
	if _, err := s.Complete(t.Context(), []timer.Completion{{ID: 1, Attempts: -1}}, now); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("Complete with negative attempts = %v, want ErrInvalid", err)
	}
	if _, err := s.Complete(t.Context(), []timer.Completion{{ID: 1, Attempts: 1, Status: 1000}}, now); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("Complete with status 1000 = %v, want ErrInvalid", err)
	}
}

func testFail(t *testing.T, s timer.Store) {
	done := newJob(3, "t", 0)
	done.Status = timer.StatusDone
	mustInsert(t, s, newJob(1, "t", 0), newJob(2, "t", 0), done)
	now := base.Add(time.Minute)
	tests := []struct {
		id         timer.JobID
		attempts   int
		dead       bool
		ok         bool
		wantStatus timer.Status
	}{
		{1, 1, false, true, timer.StatusPending},
		{1, 2, false, true, timer.StatusPending},
		{2, 16, true, true, timer.StatusDead},
		{2, 17, false, false, timer.StatusDead}, // dead is not pending
		{3, 1, false, false, timer.StatusDone},
		{9, 1, true, false, 0},
	}
	for _, tc := range tests {
		msg := fmt.Sprintf("attempt %d failed", tc.attempts)
		ok, err := s.Fail(t.Context(), tc.id, timer.Failure{Attempts: tc.attempts, Error: msg, Status: 500 + tc.attempts, Dead: tc.dead}, now)
		if err != nil || ok != tc.ok {
			t.Errorf("Fail(%d, %d, dead %t) = %t, %v; want %t", tc.id, tc.attempts, tc.dead, ok, err, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		got := mustGet(t, s, tc.id)
		if got.Status != tc.wantStatus || got.Attempts != tc.attempts || got.LastError != msg || got.LastStatus != 500+tc.attempts || !got.UpdatedAt.Equal(now) {
			t.Errorf("job %d: status %s attempts %d error %q status %d updated %v", tc.id, got.Status, got.Attempts, got.LastError, got.LastStatus, got.UpdatedAt)
		}
	}
}

func testFailTruncatesError(t *testing.T, s timer.Store) {
	tests := []struct {
		name, lastErr string
	}{
		{"ascii", strings.Repeat("x", 3000)},
		{"two-byte runes", strings.Repeat("é", 700)},
		{"three-byte runes", "a" + strings.Repeat("時", 500)},
		{"four-byte runes", "ab" + strings.Repeat("🚀", 400)},
		{"invalid UTF-8", "bad \xff\xfe byte"},
		{"short", "timeout"},
	}
	for i, tc := range tests {
		id := timer.JobID(i + 1)
		mustInsert(t, s, newJob(id, "t", 0))
		if ok, err := s.Fail(t.Context(), id, timer.Failure{Attempts: 1, Error: tc.lastErr}, base); !ok || err != nil {
			t.Fatalf("%s: Fail = %t, %v", tc.name, ok, err)
		}
		got := mustGet(t, s, id).LastError
		if len(got) > 1024 || !utf8.ValidString(got) || len(got) < min(len(tc.lastErr), 1024)-3 {
			t.Errorf("%s: stored %d bytes (valid UTF-8: %t)", tc.name, len(got), utf8.ValidString(got))
		}
		if utf8.ValidString(tc.lastErr) && !strings.HasPrefix(tc.lastErr, got) {
			t.Errorf("%s: stored %q, not a prefix of the error", tc.name, got)
		}
	}
	// Insert cuts LastError the same way.
	j := newJob(100, "t", 0)
	j.LastError = strings.Repeat("🚀", 400)
	mustInsert(t, s, j)
	if got := mustGet(t, s, 100).LastError; got != strings.Repeat("🚀", 256) {
		t.Errorf("inserted LastError is %d bytes, want 1024", len(got))
	}
}

func testReschedule(t *testing.T, s timer.Store) {
	done := newJob(2, "t", 0)
	done.Status = timer.StatusDone
	mustInsert(t, s, newJob(1, "t", 0), done)
	due, now := base.Add(time.Hour+time.Millisecond), base.Add(time.Minute)
	if ok, err := s.Reschedule(t.Context(), 1, due, now); !ok || err != nil {
		t.Fatalf("Reschedule pending = %t, %v", ok, err)
	}
	if got := mustGet(t, s, 1); !got.DueAt.Equal(due) || !got.UpdatedAt.Equal(now) || got.Status != timer.StatusPending {
		t.Errorf("rescheduled job: due %v updated %v status %s", got.DueAt, got.UpdatedAt, got.Status)
	}
	// The same due time again still reports the match.
	if ok, err := s.Reschedule(t.Context(), 1, due, now); !ok || err != nil {
		t.Errorf("Reschedule to the same time = %t, %v; want true", ok, err)
	}
	for _, id := range []timer.JobID{2, 3} {
		if ok, err := s.Reschedule(t.Context(), id, due, now); ok || err != nil {
			t.Errorf("Reschedule job %d = %t, %v; want false", id, ok, err)
		}
	}
	if got := mustGet(t, s, 2); !got.DueAt.Equal(base) {
		t.Errorf("done job was rescheduled to %v", got.DueAt)
	}
}

func testReplay(t *testing.T, s timer.Store) {
	mustInsert(t, s, newJob(1, "t", 0), newJob(2, "t", 0))
	if ok, err := s.Fail(t.Context(), 1, timer.Failure{Attempts: 16, Error: "gave up", Dead: true}, base); !ok || err != nil {
		t.Fatalf("Fail = %t, %v", ok, err)
	}
	due, now := base.Add(time.Hour), base.Add(time.Minute)
	if ok, err := s.Replay(t.Context(), 2, due, now); ok || err != nil {
		t.Errorf("Replay pending = %t, %v; want false", ok, err)
	}
	if ok, err := s.Replay(t.Context(), 1, due, now); !ok || err != nil {
		t.Fatalf("Replay dead = %t, %v", ok, err)
	}
	got := mustGet(t, s, 1)
	if got.Status != timer.StatusPending || got.Attempts != 0 || got.LastError != "" || !got.DueAt.Equal(due) || !got.UpdatedAt.Equal(now) {
		t.Errorf("replayed job: status %s attempts %d error %q due %v updated %v",
			got.Status, got.Attempts, got.LastError, got.DueAt, got.UpdatedAt)
	}
	if ok, err := s.Replay(t.Context(), 1, due, now); ok || err != nil {
		t.Errorf("Replay again = %t, %v; want false", ok, err)
	}
}

func testScanPending(t *testing.T, s timer.Store) {
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "a", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "b", Slots: 64}); err != nil {
		t.Fatal(err)
	}
	withBiz := newJob(3, "b", 20)
	withBiz.BizID, withBiz.Attempts, withBiz.Priority = 77, 3, timer.PriorityHigh
	withBiz.Payload = make([]byte, 1000)
	notPending := []*timer.Job{newJob(10, "a", 5), newJob(11, "a", 5), newJob(12, "a", 5)}
	notPending[0].Status, notPending[1].Status, notPending[2].Status = timer.StatusDone, timer.StatusCancelled, timer.StatusDead
	mustInsert(t, s, append(notPending,
		newJob(1, "a", 10), withBiz, newJob(2, "a", 20),
		newJob(4, "orphan", 30), // its topic has no row
		newJob(5, "a", 100),     // at before: excluded
		newJob(6, "a", 101),     // after before
	)...)

	got, err := s.ScanPending(ctx, timer.ScanQuery{Before: base.Add(100 * time.Millisecond), Limit: 100})
	if err != nil {
		t.Fatalf("ScanPending: %v", err)
	}
	at := func(ms int64) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	want := []timer.Timer{
		{ID: 1, Topic: "a", Slots: 8, Basis: 1, DueAt: at(10)},
		{ID: 2, Topic: "a", Slots: 8, Basis: 2, DueAt: at(20)},
		{ID: 3, Topic: "b", Slots: 64, Basis: 77, DueAt: at(20), Attempt: 3, Priority: timer.PriorityHigh},
		{ID: 4, Topic: "orphan", Slots: 0, Basis: 4, DueAt: at(30)},
	}
	if !equalTimers(got, want) {
		t.Errorf("ScanPending =\n%v\nwant\n%v", got, want)
	}
	if _, err := s.ScanPending(ctx, timer.ScanQuery{Before: base}); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("ScanPending(limit 0) = %v, want ErrInvalid", err)
	}
}

func equalTimers(a, b []timer.Timer) bool {
	return slices.EqualFunc(a, b, func(x, y timer.Timer) bool {
		return x.ID == y.ID && x.Topic == y.Topic && x.Slots == y.Slots && x.Basis == y.Basis &&
			x.DueAt.Equal(y.DueAt) && x.Attempt == y.Attempt && x.Priority == y.Priority
	})
}

func testScanPendingPaging(t *testing.T, s timer.Store) {
	ctx := t.Context()
	var topics []string
	for i := range 40 {
		topics = append(topics, fmt.Sprintf("t%02d", i))
	}
	for _, name := range topics {
		if _, err := s.EnsureTopic(ctx, timer.Topic{Name: name, Slots: 4}); err != nil {
			t.Fatal(err)
		}
	}
	// 300 jobs over 20 due times a second apart and 40 topics (more than
	// a store may list at once), ids shuffled against both, a third of
	// them not pending (a whole topic, t06, among them), a quarter due at
	// or after before; and one due before the Unix epoch.
	before := base.Add(10 * time.Second)
	early := newJob(1000, "t03", 0)
	early.DueAt = time.UnixMilli(-1000)
	js := []*timer.Job{early}
	all := []timer.Timer{{ID: 1000, Topic: "t03", Slots: 4, Basis: 1000, DueAt: early.DueAt}}
	notPending := []timer.Status{timer.StatusDone, timer.StatusCancelled, timer.StatusDead}
	for i, n := range rand.Perm(300) {
		j := newJob(timer.JobID(n+1), topics[n%40], int64(i%20)*1000-5000)
		if n%3 == 0 || j.Topic == "t06" {
			j.Status = notPending[n%9/3]
		}
		if j.Status == timer.StatusPending && j.DueAt.Before(before) {
			all = append(all, timer.Timer{ID: j.ID, Topic: j.Topic, Slots: 4, Basis: uint64(j.ID), DueAt: j.DueAt})
		}
		js = append(js, j)
	}
	mustInsert(t, s, js...)
	slices.SortFunc(all, timer.CompareScan)
	since := base.Add(-2 * time.Second)
	for _, q := range []timer.ScanQuery{{Before: before}, {Since: since, Before: before}} {
		want := slices.DeleteFunc(slices.Clone(all), func(tm timer.Timer) bool { return tm.DueAt.Before(q.Since) })
		for _, limit := range []int{1, 7, 1000} {
			var got []timer.Timer
			q.After, q.Limit = timer.ScanCursor{}, limit
			for pages := 0; ; pages++ {
				page, err := s.ScanPending(ctx, q)
				if err != nil {
					t.Fatalf("ScanPending: %v", err)
				}
				if len(page) > limit || pages > len(want)+1 {
					t.Fatalf("limit %d: page of %d after %d pages", limit, len(page), pages)
				}
				got = append(got, page...)
				if len(page) < limit {
					break
				}
				q.After = timer.ScanCursorOf(page[len(page)-1])
			}
			if !equalTimers(got, want) {
				t.Errorf("since %v, limit %d: scanned %d timers, want %d in order", q.Since, limit, len(got), len(want))
			}
		}
	}
}

func testTopics(t *testing.T, s timer.Store) {
	ctx := t.Context()
	got, err := s.EnsureTopic(ctx, timer.Topic{Name: "b", Slots: 32, CreatedAt: base})
	if err != nil || got.Name != "b" || got.Slots != 32 || !got.CreatedAt.Equal(base) {
		t.Fatalf("EnsureTopic(b) = %+v, %v", got, err)
	}
	// The first slot count and creation time win.
	got, err = s.EnsureTopic(ctx, timer.Topic{Name: "b", Slots: 128, CreatedAt: base.Add(time.Hour)})
	if err != nil || got.Slots != 32 || !got.CreatedAt.Equal(base) {
		t.Errorf("EnsureTopic(b) again = %+v, %v; want 32 slots", got, err)
	}
	// Zero slots means the default.
	if got, err := s.EnsureTopic(ctx, timer.Topic{Name: "a"}); err != nil || got.Slots != timer.DefaultSlots {
		t.Errorf("EnsureTopic(a) = %+v, %v; want %d slots", got, err, timer.DefaultSlots)
	}
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "B", Slots: 1}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []timer.Topic{{Name: "c", Slots: 3}, {Name: "c", Slots: -1}, {Name: "c", Slots: 2 * timer.MaxSlots}, {Name: "", Slots: 1}} {
		if _, err := s.EnsureTopic(ctx, bad); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("EnsureTopic(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if got, err := s.Topic(ctx, "a"); err != nil || got.Slots != timer.DefaultSlots {
		t.Errorf("Topic(a) = %+v, %v", got, err)
	}
	all, err := s.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range all {
		names = append(names, tp.Name)
	}
	if want := []string{"B", "a", "b"}; !slices.Equal(names, want) {
		t.Errorf("Topics = %q, want %q", names, want)
	}
}

func testConcurrentWriters(t *testing.T, s timer.Store) {
	const writers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := timer.JobID(w*each + i + 1)
				j := newJob(id, "t", int64(i))
				j.Key = id.String()
				if err := s.Insert(t.Context(), []*timer.Job{j}); err != nil {
					errs <- fmt.Errorf("writer %d: insert: %w", w, err)
					return
				}
				if _, err := s.Get(t.Context(), id); err != nil {
					errs <- fmt.Errorf("writer %d: read own insert: %w", w, err)
					return
				}
				if i%2 == 0 {
					if ok, err := s.Fail(t.Context(), id, timer.Failure{Attempts: 1, Error: "x"}, base); !ok || err != nil {
						errs <- fmt.Errorf("writer %d: fail = %t, %w", w, ok, err)
						return
					}
				}
			}
			batch := jobs(timer.JobID(10_000+w*100), 100, "t")
			if err := s.Insert(t.Context(), batch); err != nil {
				errs <- fmt.Errorf("writer %d: insert batch: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := countJobs(t, s, append(idRange(1, writers*each), idRange(10_000, writers*100)...)); n != writers*(each+100) {
		t.Errorf("%d jobs, want %d", n, writers*(each+100))
	}
}

func testPutTopic(t *testing.T, s timer.Store) {
	ctx := t.Context()
	got, created, err := s.PutTopic(ctx, timer.Topic{Name: "pay", Slots: 32, MaxAttempts: 5})
	if err != nil || !created || got.Slots != 32 || got.MaxAttempts != 5 {
		t.Fatalf("create: %+v %v %v", got, created, err)
	}
	// Same slots (or none given): the defaults change, nothing is created.
	got, created, err = s.PutTopic(ctx, timer.Topic{Name: "pay", MaxAttempts: 9})
	if err != nil || created || got.Slots != 32 || got.MaxAttempts != 9 {
		t.Fatalf("update: %+v %v %v", got, created, err)
	}
	if got, err := s.Topic(ctx, "pay"); err != nil || got.MaxAttempts != 9 {
		t.Fatalf("Topic after update: %+v %v", got, err)
	}
	// Another slot count is refused and changes nothing.
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "pay", Slots: 64, MaxAttempts: 1}); !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("slot change: %v, want ErrConflict", err)
	}
	if got, _ := s.Topic(ctx, "pay"); got.Slots != 32 || got.MaxAttempts != 9 {
		t.Fatalf("after a refused change: %+v", got)
	}
	// EnsureTopic keeps what PutTopic stored.
	if got, err := s.EnsureTopic(ctx, timer.Topic{Name: "pay", Slots: 4}); err != nil || got.Slots != 32 || got.MaxAttempts != 9 {
		t.Fatalf("EnsureTopic: %+v %v", got, err)
	}
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "bad", MaxAttempts: timer.MaxAttemptsLimit + 1}); !errors.Is(err, timer.ErrInvalid) {
		t.Fatalf("max attempts out of range: %v", err)
	}

	// Limits are stored whole and replaced whole.
	limits := timer.Limits{
		RateLimit: 2500.5, Burst: 300, MaxInFlight: 10, Weight: 3,
		Retry:           timer.RetryPolicy{Base: 250 * time.Millisecond, Max: time.Minute},
		Lease:           45 * time.Second,
		CallbackTimeout: 20 * time.Second,
		LatenessSLO:     15 * time.Millisecond,
	}
	got, _, err = s.PutTopic(ctx, timer.Topic{Name: "pay", MaxAttempts: 9, Limits: limits})
	if err != nil || got.Limits != limits {
		t.Fatalf("put limits: %+v %v, want %+v", got.Limits, err, limits)
	}
	if all, err := s.Topics(ctx); err != nil || len(all) == 0 || all[len(all)-1].Limits != limits {
		t.Fatalf("Topics after put limits: %+v %v", all, err)
	}
	got, _, err = s.PutTopic(ctx, timer.Topic{Name: "pay", Limits: timer.Limits{RateLimit: 1}})
	if err != nil || got.Limits != (timer.Limits{RateLimit: 1}) || got.MaxAttempts != 0 {
		t.Fatalf("replace limits: %+v %v", got, err)
	}
	_, _, err = s.PutTopic(ctx, timer.Topic{Name: "pay", Limits: timer.Limits{RateLimit: -1}})
	if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "rate_limit" {
		t.Fatalf("negative rate limit: %v, want a FieldError on rate_limit", err)
	}
	if got, _ := s.Topic(ctx, "pay"); got.RateLimit != 1 {
		t.Fatalf("a refused put changed the topic: %+v", got)
	}
}
