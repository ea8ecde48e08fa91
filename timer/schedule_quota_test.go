package timer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/cron"
)

// skipCount is an Observer that counts the skipped occurrences.
type skipCount struct {
	timer.NopObserver
	n      atomic.Int64
	reason atomic.Value
}

func (c *skipCount) OccurrencesSkipped(_, reason string, n int) {
	c.reason.Store(reason)
	c.n.Add(int64(n))
}

// warnLog records the messages of the Warn records written through it.
type warnLog struct {
	mu    sync.Mutex
	lines []slog.Record
}

func (l *warnLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		l.mu.Lock()
		l.lines = append(l.lines, r.Clone())
		l.mu.Unlock()
	}
	return nil
}
func (l *warnLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *warnLog) WithGroup(string) slog.Handler      { return l }

// skipped returns the attributes of the skip lines written so far.
func (l *warnLog) skipped() []map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]string
	for _, r := range l.lines {
		if !strings.Contains(r.Message, "skipped") {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		out = append(out, attrs)
	}
	return out
}

// pendingQuota is an Admit as the API's gate is: it refuses, with an
// error wrapping timer.ErrQuota, an occurrence of an owner that has max
// pending jobs of the schedule's topic or more.
func pendingQuota(e *schedEnv, max int) func(context.Context, *timer.Schedule) error {
	return func(ctx context.Context, s *timer.Schedule) error {
		jobs, err := e.store.ListJobs(ctx, timer.JobQuery{Topic: s.Job.Topic, Limit: timer.MaxJobPage})
		if err != nil {
			return err
		}
		n := 0
		for _, j := range jobs {
			if j.Status == timer.StatusPending {
				n++
			}
		}
		if n >= max {
			return fmt.Errorf("token %s holds %d of its max_pending %d: %w", s.Owner, n, max, timer.ErrQuota)
		}
		return nil
	}
}

// materializer returns a materializer of e's store with cfg, on e's
// clock, making jobs with a scheduler of its own.
func (e *schedEnv) materializer(t testing.TB, cfg timer.MaterializerConfig) *timer.Materializer {
	t.Helper()
	cfg.Cron, cfg.Now = cron.Parse, func() time.Time { return e.now }
	m, err := timer.NewMaterializer(e.store, mustScheduler(t, e), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *schedEnv) schedule(t testing.TB, id timer.ScheduleID) *timer.Schedule {
	t.Helper()
	sc, err := e.store.GetSchedule(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A schedule every second whose owner may hold 3 pending jobs: the first
// 3 occurrences become jobs, each later one is skipped. The cursor moves
// past the skipped ones as past those made, the schedule counts them,
// with when and why, the observer counts them as pending_quota, and the
// log says so once a minute, not once a pass.
func TestMaterializeSkipsOverQuota(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	obs, log := &skipCount{}, &warnLog{}
	e.m = e.materializer(t, timer.MaterializerConfig{Admit: pendingQuota(e, 3), Observer: obs, Logger: slog.New(log)})
	v := e.create(t, timer.Schedule{Cron: "* * * * * *", Owner: "team-a"})
	if v.Owner != "team-a" || e.schedule(t, v.ID).Owner != "team-a" {
		t.Fatalf("owner %q, stored %q; want team-a", v.Owner, e.schedule(t, v.ID).Owner)
	}

	e.run(t, t0.Add(10*time.Second)) // passes at 0.1 s .. 9.1 s, each looking 3 s ahead
	if got, want := e.due(t, "rec", v.ID), seconds(t0, 1, 2, 3); !sameTimes(got, want) {
		t.Fatalf("jobs due at %v, want %v (the quota's 3)", got, want)
	}
	sc := e.schedule(t, v.ID)
	const skipped = 12 - 3 // occurrences 1..12 s were reached, 3 made
	if sc.Skipped != skipped || obs.n.Load() != skipped || obs.reason.Load() != timer.SkipPendingQuota {
		t.Errorf("skipped %d, observed %d (%v); want %d, %s", sc.Skipped, obs.n.Load(), obs.reason.Load(), skipped, timer.SkipPendingQuota)
	}
	if !sc.Next.Equal(t0.Add(13 * time.Second)) {
		t.Errorf("cursor %v, want past the skipped occurrences, at 13 s", sc.Next)
	}
	if !sc.LastSkippedAt.Equal(t0.Add(9100*time.Millisecond)) || sc.LastSkipReason != "token team-a holds 3 of its max_pending 3: over quota" {
		t.Errorf("last skip at %v for %q", sc.LastSkippedAt, sc.LastSkipReason)
	}
	lines := log.skipped()
	if len(lines) != 1 || lines[0]["schedule"] != v.ID.String() || lines[0]["reason"] != timer.SkipPendingQuota || lines[0]["skipped"] != "1" {
		t.Fatalf("skip log lines %v; want one, of schedule %s, 1 skipped, reason pending_quota", lines, v.ID)
	}

	// Over a minute after the line (written at 1.1 s): 13..59 s were
	// missed, and dropped (catch-up skip); 60..64 s are reached.
	e.now = t0.Add(61*time.Second + 200*time.Millisecond)
	e.pass(t)
	lines = log.skipped()
	if len(lines) != 2 || lines[1]["skipped"] != "13" {
		t.Errorf("skip log lines %v; want a second, counting the 8 quiet ones and the 5 of this pass", lines)
	}
	if sc := e.schedule(t, v.ID); sc.Skipped != skipped+5 || obs.n.Load() != skipped+5 {
		t.Errorf("skipped %d, observed %d; want %d", sc.Skipped, obs.n.Load(), skipped+5)
	}
}

// An Admit error that is not a quota's (the owner's count could not be
// read) skips nothing: the pass reports it, that schedule's cursor stays,
// other schedules go on, and the next pass, admitted, makes every
// occurrence.
func TestMaterializeAdmitErrorRetries(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	obs := &skipCount{}
	var fail atomic.Bool
	fail.Store(true)
	away := errors.New("task store away")
	e.m = e.materializer(t, timer.MaterializerConfig{Observer: obs, Admit: func(_ context.Context, s *timer.Schedule) error {
		if s.Owner == "broken" && fail.Load() {
			return away
		}
		return nil
	}})
	v := e.create(t, timer.Schedule{Cron: "* * * * * *", Owner: "broken"})
	other := e.create(t, timer.Schedule{Cron: "* * * * * *", Owner: "fine"})
	for range 3 {
		if _, err := e.m.RunOnce(t.Context()); !errors.Is(err, away) {
			t.Fatalf("pass: %v, want the admit error", err)
		}
		e.now = e.now.Add(500 * time.Millisecond)
	}
	sc := e.schedule(t, v.ID)
	if got := e.due(t, "rec", v.ID); len(got) != 0 || sc.Skipped != 0 || obs.n.Load() != 0 || !sc.Next.Equal(t0.Add(time.Second)) {
		t.Fatalf("after refused passes: jobs %v, skipped %d, observed %d, cursor %v; want none, 0, 0, 1 s", got, sc.Skipped, obs.n.Load(), sc.Next)
	}
	if got, want := e.due(t, "rec", other.ID), seconds(t0, 1, 2, 3, 4); !sameTimes(got, want) {
		t.Errorf("the other schedule's jobs %v, want %v: one owner's failure held it up", got, want)
	}
	fail.Store(false)
	e.pass(t) // at 1.6 s: 1 s is not yet missed (Late 2 s), so 1..4 s fire
	if got, want := e.due(t, "rec", v.ID), seconds(t0, 1, 2, 3, 4); !sameTimes(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
	if sc := e.schedule(t, v.ID); sc.Skipped != 0 || !sc.LastSkippedAt.IsZero() || sc.LastSkipReason != "" {
		t.Errorf("skipped %d at %v for %q; want none", sc.Skipped, sc.LastSkippedAt, sc.LastSkipReason)
	}
}

// Two members skip the same occurrences at once: the one whose cursor
// move wins counts them, the other counts nothing, so the schedule and
// the metric count each occurrence once.
func TestMaterializeSkipCountedOnce(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	quota := func(ctx context.Context, s *timer.Schedule) error {
		return fmt.Errorf("max_pending 0: %w", timer.ErrQuota)
	}
	obsA, obsB := &skipCount{}, &skipCount{}
	b := e.materializer(t, timer.MaterializerConfig{Admit: quota, Observer: obsB})
	var once sync.Once
	a := e.materializer(t, timer.MaterializerConfig{Observer: obsA, Admit: func(ctx context.Context, s *timer.Schedule) error {
		// Member b runs a whole pass while a is in the middle of its
		// own, from the same cursor.
		once.Do(func() {
			if _, err := b.RunOnce(ctx); err != nil {
				t.Error(err)
			}
		})
		return quota(ctx, s)
	}})
	v := e.create(t, timer.Schedule{Cron: "* * * * * *"})
	if _, err := a.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	sc := e.schedule(t, v.ID)
	if sc.Skipped != 3 || obsA.n.Load()+obsB.n.Load() != 3 || obsB.n.Load() != 3 {
		t.Errorf("skipped %d, observed %d by the loser and %d by the winner; want 3, 0, 3", sc.Skipped, obsA.n.Load(), obsB.n.Load())
	}
	if !sc.Next.Equal(t0.Add(4*time.Second)) || len(e.due(t, "rec", v.ID)) != 0 {
		t.Errorf("cursor %v, jobs %v; want 4 s, none", sc.Next, e.due(t, "rec", v.ID))
	}
}

// The reason kept is the error's message, cut to MaxSkipReasonBytes on a
// character boundary.
func TestSkipReasonCut(t *testing.T) {
	e := newSchedEnv(t, t0.Add(100*time.Millisecond))
	long := strings.Repeat("é", timer.MaxSkipReasonBytes) // 2 bytes each
	e.m = e.materializer(t, timer.MaterializerConfig{Admit: func(context.Context, *timer.Schedule) error {
		return fmt.Errorf("x%s: %w", long, timer.ErrQuota)
	}})
	v := e.create(t, timer.Schedule{Cron: "* * * * * *"})
	e.pass(t)
	r := e.schedule(t, v.ID).LastSkipReason
	if len(r) != timer.MaxSkipReasonBytes-1 || !utf8.ValidString(r) || !strings.HasPrefix(r, "xé") {
		t.Errorf("reason of %d bytes (valid UTF-8: %v), want %d", len(r), utf8.ValidString(r), timer.MaxSkipReasonBytes-1)
	}
}
