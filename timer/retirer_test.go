package timer_test

import (
	"cmp"
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

// retireBase is the retirer tests' start: when their jobs end.
var retireBase = time.UnixMilli(1_800_000_000_000)

// retireClock is a settable clock.
type retireClock struct{ ns atomic.Int64 }

func newRetireClock(t time.Time) *retireClock { c := &retireClock{}; c.set(t); return c }
func (c *retireClock) set(t time.Time)        { c.ns.Store(t.UnixNano()) }
func (c *retireClock) now() time.Time         { return time.Unix(0, c.ns.Load()) }
func (c *retireClock) after(d time.Duration)  { c.set(retireBase.Add(d)) }

// twoStores opens a store of two shards, each a database of its own, of
// the kind named.
func twoStores(t *testing.T, kind string) *shard.Store {
	t.Helper()
	var shards []*taskdb.Store
	for i := range 2 {
		var (
			s   *taskdb.Store
			err error
		)
		if kind == "SQLite" {
			s, err = taskdb.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "toc.db"), taskdb.Config{})
		} else {
			s, err = taskdb.OpenMySQL(t.Context(), testenv.MariaDB(t).NewDatabase(t), taskdb.Config{MaxOpenConns: 4})
		}
		if err != nil {
			t.Fatalf("open shard %d: %v", i, err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("migrate shard %d: %v", i, err)
		}
		shards = append(shards, s)
	}
	st, err := shard.New(shards, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// ended inserts a job of topic into shard that ended in st at
// retireBase (pending and firing ones too, as they are), in group
// ("" for none), and returns its id.
func ended(t *testing.T, s *shard.Store, g *timer.IDGen, shardN int, topic string, st timer.Status, group string) timer.JobID {
	t.Helper()
	ctx := t.Context()
	j := &timer.Job{ID: g.NextIn(shardN), Topic: topic, Status: st, DueAt: retireBase, MaxAttempts: 3,
		CallbackURL: "http://127.0.0.1:1/hook", CreatedAt: retireBase.Add(-time.Minute), UpdatedAt: retireBase, GroupID: group}
	if st == timer.StatusFiring {
		j.Status = timer.StatusPending
	}
	if err := s.Insert(ctx, []*timer.Job{j}); err != nil {
		t.Fatalf("insert a %s job: %v", st, err)
	}
	if st == timer.StatusFiring {
		if n, err := s.Fire(ctx, []timer.JobID{j.ID}, retireBase, retireBase); n != 1 || err != nil {
			t.Fatalf("Fire = %d, %v", n, err)
		}
	}
	return j.ID
}

// alive returns which of ids still have a row.
func alive(t *testing.T, s *shard.Store, ids ...timer.JobID) []timer.JobID {
	t.Helper()
	var out []timer.JobID
	for _, id := range ids {
		_, err := s.Get(t.Context(), id)
		switch {
		case err == nil:
			out = append(out, id)
		case !errors.Is(err, timer.ErrNotFound):
			t.Fatalf("get job %d: %v", id, err)
		}
	}
	return out
}

func TestRetirer(t *testing.T) {
	for _, kind := range []string{"SQLite", "MariaDB"} {
		for _, way := range []string{"list", "catalog"} {
			t.Run(kind+"/"+way, func(t *testing.T) {
				t.Parallel()
				testRetirer(t, twoStores(t, kind), way == "catalog")
			})
		}
	}
}

// A store under the default retention, over two shards: each finished
// status retires after its own retention, globally and per topic, while
// pending and firing jobs, the dead letters of the last 30 days and the
// members of an open group stay; a pass by a new retirer (a restart)
// goes on where the last left off; a retirer owning one shard retires
// only that one's jobs. With catalog, the retirers find the topics'
// retention through a Catalog never refreshed, so by looking each up.
func testRetirer(t *testing.T, s *shard.Store, catalog bool) {
	ctx := t.Context()
	c := newRetireClock(retireBase)
	for _, tp := range []timer.Topic{
		{Name: "t", Slots: 8},
		{Name: "short", Slots: 8, Retention: timer.Retention{Done: time.Hour}},
		{Name: "keep", Slots: 8, Retention: timer.Retention{Done: timer.KeepForever, Dead: timer.KeepForever}},
	} {
		if _, _, err := s.PutTopic(ctx, tp); err != nil {
			t.Fatalf("put topic %s: %v", tp.Name, err)
		}
	}
	g := timer.NewIDGen(1, c.now)
	type row struct {
		id     timer.JobID
		topic  string
		status timer.Status
	}
	var rows []row
	for sh := range 2 {
		for _, topic := range []string{"t", "short", "keep"} {
			for _, st := range []timer.Status{timer.StatusPending, timer.StatusFiring, timer.StatusDone, timer.StatusCancelled,
				timer.StatusExpired, timer.StatusDead, timer.StatusPurged} {
				for range 3 { // more than a batch of 2
					rows = append(rows, row{ended(t, s, g, sh, topic, st, ""), topic, st})
				}
			}
		}
	}
	// A group still open: its ended member stays past retention, until
	// the group completes.
	if err := s.CreateGroup(ctx, &timer.Group{ID: "g1", CreatedAt: retireBase}); err != nil {
		t.Fatal(err)
	}
	member := ended(t, s, g, 1, "t", timer.StatusDone, "g1")
	ent := &timer.AuditEntry{At: retireBase, Who: "ops", Action: "topic.pause", Topic: "t"}
	if err := s.AppendAudit(ctx, ent); err != nil {
		t.Fatal(err)
	}

	newRetirer := func(owner timer.ShardOwner) *timer.Retirer {
		cfg := timer.RetirerConfig{Retention: timer.DefaultRetention(), AuditRetention: timer.DefaultAuditRetention,
			Batch: 2, Duty: 1, Now: c.now, Owner: owner}
		if catalog {
			cfg.Topics = timer.NewCatalog(s, 0, c.now)
		}
		r, err := timer.NewRetirer(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// kept returns the rows still held that should be, by the
	// retention: those that ended within it or never end.
	check := func(when string, gone func(r row) bool) {
		t.Helper()
		var ids, want []timer.JobID
		for _, r := range rows {
			ids = append(ids, r.id)
			if !gone(r) {
				want = append(want, r.id)
			}
		}
		if got := alive(t, s, ids...); !slices.Equal(got, want) {
			t.Errorf("%s: %d jobs held, want %d", when, len(got), len(want))
			for _, r := range rows {
				if slices.Contains(got, r.id) != slices.Contains(want, r.id) {
					t.Errorf("  %s job of %s in shard %d: held %v", r.status, r.topic, r.id.Shard(), slices.Contains(got, r.id))
				}
			}
		}
	}
	live := func(r row) bool { return r.status == timer.StatusPending || r.status == timer.StatusFiring }

	// 30 minutes on: nothing is past any retention.
	c.after(30 * time.Minute)
	if n, err := newRetirer(nil).RunOnce(ctx); n != 0 || err != nil {
		t.Fatalf("a pass at 30 min = %d, %v; want nothing deleted", n, err)
	}
	// 2 hours on: only the done jobs of "short" (1 h).
	c.after(2 * time.Hour)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	check("at 2 h", func(r row) bool { return r.topic == "short" && r.status == timer.StatusDone })

	// 25 hours on, by a retirer owning shard 1 only: its done,
	// cancelled, expired and purged jobs go, but for "keep"'s done ones.
	c.after(25 * time.Hour)
	if _, err := newRetirer(owner{1: true}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	day := func(r row) bool {
		switch {
		case live(r), r.status == timer.StatusDead:
			return false
		case r.topic == "keep" && r.status == timer.StatusDone:
			return false
		}
		return true
	}
	check("at 25 h, shard 1 retired", func(r row) bool {
		return (r.topic == "short" && r.status == timer.StatusDone) || (r.id.Shard() == 1 && day(r))
	})
	// Then every shard, by another retirer (a restart).
	r := newRetirer(nil)
	if _, err := r.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	check("at 25 h", day)
	if got := alive(t, s, member); len(got) != 1 {
		t.Errorf("the done member of an open group was deleted")
	}
	// The survey: nothing past retention is held but the open group's
	// member.
	for _, st := range r.Survey() {
		want := int64(0)
		if st.Topic == "t" && st.Status == timer.StatusDone {
			want = 1
		}
		if st.Backlog != want {
			t.Errorf("survey: %d %s jobs of %s past retention after a pass; want %d", st.Backlog, st.Status, st.Topic, want)
		}
	}

	// Day 29: the dead letters are still held, listable and replayable.
	c.after(29 * 24 * time.Hour)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	check("on day 29", day)
	var replay timer.JobID
	for _, r := range rows {
		if r.topic == "t" && r.status == timer.StatusDead {
			replay = r.id
		}
	}
	sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := sched.Replay(ctx, replay, time.Time{}, 0); err != nil || j.Status != timer.StatusPending {
		t.Fatalf("replay a dead letter on day 29 = %+v, %v", j, err)
	}

	// Day 31: the dead letters go, but for "keep"'s and the replayed one,
	// pending now; the open group's member still stays. Once the group
	// completes, its member goes at the next pass, and the group's row
	// the pass after the done retention, its members gone.
	c.after(31 * 24 * time.Hour)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	check("on day 31", func(r row) bool {
		if r.id == replay || live(r) {
			return false
		}
		if r.status == timer.StatusDead {
			return r.topic != "keep"
		}
		return day(r)
	})
	if got := alive(t, s, member); len(got) != 1 {
		t.Errorf("the done member of an open group was deleted on day 31")
	}
	if _, err := s.SealGroup(ctx, "g1", c.now()); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompleteGroup(ctx, "g1", map[timer.Status]int64{timer.StatusDone: 1}, c.now()); !ok || err != nil {
		t.Fatalf("CompleteGroup = %v, %v", ok, err)
	}
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := alive(t, s, member); len(got) != 0 {
		t.Errorf("the done member of a complete group outlived its retention")
	}
	if _, err := s.GetGroup(ctx, "g1"); err != nil {
		t.Errorf("the group's row went before the done retention passed: %v", err)
	}
	c.after(32*24*time.Hour + time.Minute)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetGroup(ctx, "g1"); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("the group's row a day after it completed, its members gone: %v; want not found", err)
	}

	// The audit log: kept 90 days.
	audit := func() int {
		es, err := s.ListAudit(ctx, timer.AuditQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}
	c.after(89 * 24 * time.Hour)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil || audit() != 1 {
		t.Errorf("on day 89: %d audit entries, %v; want 1", audit(), err)
	}
	c.after(91 * 24 * time.Hour)
	if _, err := newRetirer(nil).RunOnce(ctx); err != nil || audit() != 0 {
		t.Errorf("on day 91: %d audit entries, %v; want 0", audit(), err)
	}
}

// An idempotency key is reserved while its job's row lives: the same key
// answers the job until it retires, and makes a new job after.
func TestRetiredKeyIsFree(t *testing.T) {
	for _, kind := range []string{"SQLite", "MariaDB"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := twoStores(t, kind)
			c := newRetireClock(retireBase)
			sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			req := timer.Request{Topic: "orders", Key: "order-1", Delay: time.Minute, CallbackURL: "http://127.0.0.1:1/hook"}
			first, err := sched.Schedule(ctx, req)
			if err != nil || !first.Created {
				t.Fatalf("schedule = %+v, %v", first, err)
			}
			if _, err := sched.Cancel(ctx, first.Job.ID); err != nil {
				t.Fatal(err)
			}
			r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Now: c.now, Duty: 1})
			if err != nil {
				t.Fatal(err)
			}
			c.after(23 * time.Hour)
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if again, err := sched.Schedule(ctx, req); err != nil || again.Created || again.Job.ID != first.Job.ID {
				t.Errorf("the key within the retention = %+v, %v; want the cancelled job", again, err)
			}
			c.after(25 * time.Hour)
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			again, err := sched.Schedule(ctx, req)
			if err != nil || !again.Created || again.Job.ID == first.Job.ID {
				t.Errorf("the key after its job retired = %+v, %v; want a new job", again, err)
			}
		})
	}
}

// The retirer yields to a late fire path before each batch, for at most
// a second: with the fire path on time it asks once a batch; with it
// always late it still deletes everything, a batch after each wait.
func TestRetirerYieldsToLateness(t *testing.T) {
	ctx := t.Context()
	s := twoStores(t, "SQLite")
	c := newRetireClock(retireBase)
	g := timer.NewIDGen(1, c.now)
	for _, late := range []time.Duration{0, 50 * time.Millisecond} {
		c.set(retireBase)
		var ids []timer.JobID
		for range 5 {
			ids = append(ids, ended(t, s, g, 0, "t", timer.StatusDone, ""))
		}
		c.after(24*time.Hour + time.Minute)
		var asked atomic.Int64
		r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 2, Duty: 1, Now: c.now,
			Lateness: func() time.Duration { asked.Add(1); return late }})
		if err != nil {
			t.Fatal(err)
		}
		n, err := r.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Three batches (2, 2 and 1 rows): on time, one ask each and one
		// more for the window's end; late, a yield asks every 50 ms for a
		// second before each.
		onTime := asked.Load() == 4
		waited := asked.Load() >= 3*20
		if n != 5 || (late == 0 && !onTime) || (late > 0 && !waited) {
			t.Errorf("lateness %v: deleted %d, asked %d times; want 5 deleted, 4 asks on time, 60 or more late", late, n, asked.Load())
		}
		if left := alive(t, s, ids...); len(left) != 0 {
			t.Errorf("lateness %v: left %v", late, left)
		}
	}
}

// A retirer that is behind does not yield: with ten batches or more
// past retention it deletes without asking the fire path; under ten it
// asks before each batch again. (The soak at 1,000 jobs/s, on a machine
// where the fire path was always over 5 ms late, saw a retirer that
// yielded before every batch fall behind the load.)
func TestRetirerBehindDoesNotYield(t *testing.T) {
	ctx := t.Context()
	s := twoStores(t, "SQLite")
	c := newRetireClock(retireBase)
	g := timer.NewIDGen(1, c.now)
	var ids []timer.JobID
	for range 25 {
		ids = append(ids, ended(t, s, g, 0, "t", timer.StatusDone, ""))
	}
	c.after(24*time.Hour + time.Minute)
	var asked atomic.Int64
	// Late at every other ask: a yield costs one wait of 50 ms.
	r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 2, Duty: 1, Now: c.now,
		Lateness: func() time.Duration {
			if asked.Add(1)%2 == 1 {
				return time.Second
			}
			return 0
		}})
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 13 batches and the last look: the first three with 25, 23 and 21
	// rows left (ten batches or more) ask nothing; the ten after them and
	// the last look ask twice each.
	if n != 25 || asked.Load() != 22 {
		t.Errorf("deleted %d, asked %d times; want 25 deleted and 22 asks", n, asked.Load())
	}
	if left := alive(t, s, ids...); len(left) != 0 {
		t.Errorf("left %v", left)
	}
}

// A retirer losing ground works more of its time. A pass that starts
// ten batches or more behind looks every retireLook whether the sweep's
// front (the end of the oldest job it has yet to read) moved as far as
// the clock: not as far doubles the duty (up to all its time), more than
// twice as far halves it (down to Duty). So a database too slow for the
// deletes at Duty cannot make the store grow without bound (the soak at
// 1,000 jobs/s beside CI's other tests fell further behind every pass at
// 0.25), and a backlog that shrinks (an aged store, whose front runs
// hours ahead of the clock) is worked off at Duty.
func TestRetirerLosingGroundWorksMore(t *testing.T) {
	r, err := timer.NewRetirer(&endedRows{}, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 500, Duty: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	const look = 10 * time.Second
	for i, c := range []struct {
		duty  float64
		moved time.Duration
		want  float64
	}{
		{0.25, 5 * time.Second, 0.5}, // losing ground
		{0.5, 0, 1},
		{1, time.Second, 1},          // all its time at most
		{1, 15 * time.Second, 1},     // keeping up, not far ahead: as it was
		{0.5, 20 * time.Second, 0.5}, // twice as far: as it was
		{1, 21 * time.Second, 0.5},   // more than twice
		{0.5, time.Hour, 0.25},       // far ahead
		{0.25, 24 * time.Hour, 0.25}, // Duty at least
	} {
		if got := r.NextDuty(c.duty, c.moved, look); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("look %d: at duty %v, the front moved %v in %v: duty %v, want %v", i+1, c.duty, c.moved, look, got, c.want)
		}
	}
	// A pass starts at Duty, and looks only when ten batches or more are
	// past retention.
	if duty, looks := r.Plan(0, 4_999); duty != 0.25 || looks {
		t.Errorf("4,999 rows past retention: duty %v, looks %v; want 0.25, no looks", duty, looks)
	}
	if duty, looks := r.Plan(0, 5_000); duty != 0.25 || !looks {
		t.Errorf("5,000 rows past retention: duty %v, looks %v; want 0.25, looks", duty, looks)
	}
}

// clockedRows is an endedRows whose every delete moves the retirer's
// clock on by step: a database that takes step a batch.
type clockedRows struct {
	endedRows
	c    *retireClock
	step time.Duration
}

func (s *clockedRows) DeleteEnded(ctx context.Context, ids []timer.JobID, until time.Time) (int, error) {
	s.c.set(s.c.now().Add(s.step))
	return s.endedRows.DeleteEnded(ctx, ids, until)
}

// A pass that starts behind goes on to its end, however long, changing
// its duty as it goes: it never starts again from the oldest row, which
// on an aged store walked over the rows just deleted (not yet purged by
// the database) and made the fire path late. The shard's next pass
// starts at the duty this one ended at, at once while the shard is still
// behind.
func TestRetirerBehindGoesOn(t *testing.T) {
	ctx := t.Context()
	c := newRetireClock(retireBase.Add(24*time.Hour + time.Minute))
	s := &clockedRows{c: c, step: time.Minute}
	add := func(n int, end func(i int) time.Time) {
		for i := range n {
			s.rows = append(s.rows, endedRow{timer.EndedJob{ID: timer.JobID(len(s.rows) + 1), EndedAt: end(i)}, "t", timer.StatusDone})
		}
	}
	// 200 jobs that ended together, and 100 half an hour later, which come
	// past retention while the first pass deletes at a minute a batch.
	add(200, func(int) time.Time { return retireBase })
	add(100, func(int) time.Time { return retireBase.Add(30 * time.Minute) })
	r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 5, Duty: 0.25, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r.SetLook(time.Nanosecond) // a look before every batch
	// Forty batches in one pass: the front stands still while the clock
	// moves, so the duty doubles to all the retirer's time.
	if n, err := r.RunOnce(ctx); n != 200 || err != nil || r.Duty(0) != 1 || !r.Again() {
		t.Fatalf("200 jobs past retention, a minute a batch: deleted %d, %v, duty %v, again %v; want 200, duty 1, again: 100 more came past retention", n, err, r.Duty(0), r.Again())
	}
	if duty, _ := r.Plan(0, 100); duty != 1 {
		t.Errorf("the next pass starts at duty %v, want 1, where the last ended", duty)
	}
	if n, err := r.RunOnce(ctx); n != 100 || err != nil || r.Again() {
		t.Fatalf("the next pass: deleted %d, %v, again %v; want 100, caught up", n, err, r.Again())
	}
	// 100 jobs that ended an hour apart: the front runs hours ahead of the
	// clock, so the duty halves back to Duty.
	add(100, func(i int) time.Time { return retireBase.Add(-time.Duration(100-i) * time.Hour) })
	if n, err := r.RunOnce(ctx); n != 100 || err != nil || r.Duty(0) != 0.25 {
		t.Fatalf("100 jobs an hour apart: deleted %d, %v, duty %v; want 100, duty 0.25", n, err, r.Duty(0))
	}
}

// keptRows is a clockedRows whose groups are none of them complete: the
// retirer keeps their members.
type keptRows struct{ clockedRows }

func (s *keptRows) GetGroup(_ context.Context, id string) (*timer.Group, error) {
	return &timer.Group{ID: id}, nil
}

// Rows the retirer keeps (the members of a group not yet complete) count
// in the backlog, but a pass that deleted fewer than ten batches does not
// go again at once however many of them there are: they would keep the
// retirer going round without a pause.
func TestRetirerKeptRowsDoNotSpin(t *testing.T) {
	c := newRetireClock(retireBase.Add(24*time.Hour + time.Minute))
	s := &keptRows{clockedRows{c: c, step: time.Millisecond}}
	for i := range 120 {
		group := "g"
		if i%6 == 0 {
			group = "" // 20 of them free to go
		}
		s.rows = append(s.rows, endedRow{timer.EndedJob{ID: timer.JobID(i + 1), EndedAt: retireBase, Group: group}, "t", timer.StatusDone})
	}
	r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 5, Duty: 1, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.RunOnce(t.Context()); n != 20 || err != nil || r.Again() {
		t.Fatalf("120 jobs past retention, 100 of them kept: deleted %d, %v, again %v; want 20, and a pause before the next pass", n, err, r.Again())
	}
}

// endedRows is a RetireStore in memory that records the order of its
// deletes: for the sweep's order, which a database only shows as speed.
type endedRows struct {
	rows    []endedRow
	deleted []endedRow // in the order DeleteEnded removed them
}

type endedRow struct {
	timer.EndedJob
	topic string
	st    timer.Status
}

func (s *endedRows) Topics(context.Context) ([]timer.Topic, error) { return nil, nil }

func (s *endedRows) EndedClasses(context.Context) ([]timer.EndedClass, error) {
	var out []timer.EndedClass
	for _, r := range s.rows {
		i := slices.IndexFunc(out, func(c timer.EndedClass) bool { return c.Topic == r.topic && c.Status == r.st })
		switch {
		case i < 0:
			out = append(out, timer.EndedClass{Topic: r.topic, Status: r.st, Oldest: r.EndedAt})
		case r.EndedAt.Before(out[i].Oldest):
			out[i].Oldest = r.EndedAt
		}
	}
	return out, nil
}

func (s *endedRows) EndedJobs(_ context.Context, topic string, st timer.Status, before time.Time, after timer.EndedJob, limit int) ([]timer.EndedJob, error) {
	var out []timer.EndedJob
	for _, r := range s.rows {
		past := r.EndedAt.After(after.EndedAt) || (r.EndedAt.Equal(after.EndedAt) && r.ID > after.ID)
		if r.topic == topic && r.st == st && r.EndedAt.Before(before) && past {
			out = append(out, r.EndedJob)
		}
	}
	slices.SortFunc(out, func(a, b timer.EndedJob) int { return cmp.Or(a.EndedAt.Compare(b.EndedAt), cmp.Compare(a.ID, b.ID)) })
	return out[:min(limit, len(out))], nil
}

func (s *endedRows) DeleteEnded(_ context.Context, ids []timer.JobID, until time.Time) (int, error) {
	n := 0
	s.rows = slices.DeleteFunc(s.rows, func(r endedRow) bool {
		if !slices.Contains(ids, r.ID) || r.EndedAt.After(until) {
			return false
		}
		s.deleted = append(s.deleted, r)
		n++
		return true
	})
	return n, nil
}

func (s *endedRows) CountEnded(_ context.Context, topic string, st timer.Status, before time.Time, _ int64) (int64, bool, error) {
	var n int64
	for _, r := range s.rows {
		if r.topic == topic && r.st == st && r.EndedAt.Before(before) {
			n++
		}
	}
	return n, true, nil
}

// The retirer deletes in order of end time over every topic and status
// together, a window of end times at a time: every job of a window goes
// before any of the next, not class by class (all of one topic's jobs,
// then all of the next's), which would read the pages of the indexes
// that lead with status or time once for each topic.
func TestRetirerSweepsByEndTime(t *testing.T) {
	s := &endedRows{}
	id := timer.JobID(0)
	for sec := range 300 {
		for _, topic := range []string{"a", "b", "c"} {
			for _, st := range []timer.Status{timer.StatusDone, timer.StatusCancelled} {
				id++
				s.rows = append(s.rows, endedRow{timer.EndedJob{ID: id, EndedAt: retireBase.Add(time.Duration(sec) * time.Second)}, topic, st})
			}
		}
	}
	c := newRetireClock(retireBase.Add(24*time.Hour + 250*time.Second))
	r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 7, Duty: 1, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.RunOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Those that ended in the first 250 s are past the day's retention.
	if want := 250 * 6; n != want || len(s.deleted) != want || len(s.rows) != 300*6-want {
		t.Fatalf("deleted %d (%d recorded), %d left; want %d, %d left", n, len(s.deleted), len(s.rows), want, 300*6-want)
	}
	// Sparse windows (far fewer than 10,000 jobs) double from a minute:
	// [0, 1m), [1m, 3m), [3m, 7m).
	window := func(end time.Time) int {
		switch at := end.Sub(retireBase); {
		case at < time.Minute:
			return 0
		case at < 3*time.Minute:
			return 1
		}
		return 2
	}
	last := 0
	for i, d := range s.deleted {
		w := window(d.EndedAt)
		if w < last {
			t.Fatalf("delete %d: %s %s ended at +%v, in window %d, after a job of window %d", i, d.topic, d.st, d.EndedAt.Sub(retireBase), w, last)
		}
		last = w
	}
}

// listCounter counts the store's lists of every topic.
type listCounter struct {
	*shard.Store
	lists atomic.Int64
}

func (l *listCounter) Topics(ctx context.Context) ([]timer.Topic, error) {
	l.lists.Add(1)
	return l.Store.Topics(ctx)
}

// failingLookup finds no topic: the store cannot be read.
type failingLookup struct{}

func (failingLookup) Lookup(context.Context, string) (timer.Topic, error) {
	return timer.Topic{}, errors.New("task store down")
}

// A retirer given a Catalog finds a topic's retention there and lists no
// topic itself (a list of 100,000 topics every pass was most of an idle
// process's CPU); a topic the catalog has not seen yet, put by another
// process with a longer retention, is looked up in the store, so its jobs
// stay; a topic without a row has the global retention. A lookup that
// fails fails the pass, which then deletes nothing.
func TestRetirerFindsRetentionInCatalog(t *testing.T) {
	ctx := t.Context()
	s := &listCounter{Store: twoStores(t, "SQLite")}
	c := newRetireClock(retireBase)
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "short", Slots: 8, Retention: timer.Retention{Done: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	catalog := timer.NewCatalog(s, 0, c.now)
	if err := catalog.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "later", Slots: 8, Retention: timer.Retention{Done: timer.KeepForever}}); err != nil {
		t.Fatal(err)
	}
	g := timer.NewIDGen(1, c.now)
	short := ended(t, s.Store, g, 0, "short", timer.StatusDone, "")
	later := ended(t, s.Store, g, 1, "later", timer.StatusDone, "")
	plain := ended(t, s.Store, g, 0, "no-row", timer.StatusDone, "")
	lists := s.lists.Load()

	newRetirer := func(topics timer.TopicLookup) *timer.Retirer {
		r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Duty: 1, Now: c.now, Topics: topics})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	c.after(timer.DefaultRetainEnded + time.Hour)
	if n, err := newRetirer(failingLookup{}).RunOnce(ctx); err == nil || n != 0 {
		t.Errorf("a pass whose lookups fail = %d, %v; want an error and nothing deleted", n, err)
	}
	if got := alive(t, s.Store, short, later, plain); len(got) != 3 {
		t.Errorf("after a failed pass, %d of 3 jobs held", len(got))
	}
	if _, err := newRetirer(catalog).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := alive(t, s.Store, short, later, plain); !slices.Equal(got, []timer.JobID{later}) {
		t.Errorf("held %v after a pass past the global retention; want only %d, of the topic that keeps done jobs", got, later)
	}
	if n := s.lists.Load() - lists; n != 0 {
		t.Errorf("the retirer listed every topic %d times; want none, with a catalog", n)
	}
}

// DeleteEnded checks each row again: a job live again since it was read
// (a replayed dead letter: no end) and one that ended after until stay.
// The attempts of the jobs it deletes go with them; the live job's stay.
func TestDeleteEndedRechecks(t *testing.T) {
	for _, kind := range []string{"SQLite", "MariaDB"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := twoStores(t, kind)
			c := newRetireClock(retireBase)
			g := timer.NewIDGen(1, c.now)
			gone := ended(t, s, g, 0, "t", timer.StatusDone, "")
			live := ended(t, s, g, 0, "t", timer.StatusPending, "")
			later := ended(t, s, g, 0, "t", timer.StatusDead, "")
			var attempts []timer.Attempt
			for _, id := range []timer.JobID{gone, live, later} {
				for i := range 2 {
					attempts = append(attempts, timer.Attempt{Job: id, Attempt: i + 1, StartedAt: retireBase.Add(-time.Duration(2-i) * time.Second), StatusCode: 500})
				}
			}
			if err := s.RecordAttempts(t.Context(), attempts); err != nil {
				t.Fatal(err)
			}
			n, err := s.RetireShard(0).DeleteEnded(t.Context(), []timer.JobID{gone, live, later}, retireBase.Add(-time.Millisecond))
			if err != nil || n != 0 {
				t.Fatalf("DeleteEnded before their end = %d, %v; want 0", n, err)
			}
			n, err = s.RetireShard(0).DeleteEnded(t.Context(), []timer.JobID{gone, live, later}, retireBase)
			if err != nil || n != 2 {
				t.Fatalf("DeleteEnded at their end = %d, %v; want 2", n, err)
			}
			if got := alive(t, s, gone, live, later); !slices.Equal(got, []timer.JobID{live}) {
				t.Errorf("left %v, want only the live job %d", got, live)
			}
			for id, want := range map[timer.JobID]int{gone: 0, live: 2, later: 0} {
				got, err := s.ListAttempts(t.Context(), id)
				if err != nil || len(got) != want {
					t.Errorf("attempts of %d after DeleteEnded: %d, %v; want %d", id, len(got), err, want)
				}
			}
		})
	}
}

// A store reads ended jobs by due time (a done job ends at or after its
// due time) and may not retire a job whose end is within its retention:
// a done job due long ago that ended late (its last retry) stays until
// its end is past. A job cancelled before its due time is kept until its
// due time too is past its retention: a cancel never keeps a row longer
// than the job would have lived. The survey's oldest is the earliest
// start of retention, not that of the earliest due job.
func TestRetirerDoneByDueTime(t *testing.T) {
	for _, kind := range []string{"SQLite", "MariaDB"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := twoStores(t, kind)
			ctx := t.Context()
			if _, _, err := s.PutTopic(ctx, timer.Topic{Name: "t", Slots: 8, Retention: timer.Retention{Done: time.Hour, Cancelled: time.Hour}}); err != nil {
				t.Fatal(err)
			}
			c := newRetireClock(retireBase)
			g := timer.NewIDGen(1, c.now)
			endedAt := func(st timer.Status, due, end time.Duration) timer.JobID {
				t.Helper()
				j := &timer.Job{ID: g.NextIn(0), Topic: "t", Status: st, DueAt: retireBase.Add(due), MaxAttempts: 3,
					CallbackURL: "http://127.0.0.1:1/hook", CreatedAt: retireBase.Add(-4 * time.Hour), UpdatedAt: retireBase.Add(end)}
				if err := s.Insert(ctx, []*timer.Job{j}); err != nil {
					t.Fatal(err)
				}
				return j.ID
			}
			lateRetry := endedAt(timer.StatusDone, -3*time.Hour, 0)                      // due 3 h before, ended at the base
			onTime := endedAt(timer.StatusDone, -2*time.Hour, -2*time.Hour)              // due and ended 2 h before
			lateCancel := endedAt(timer.StatusCancelled, -3*time.Hour, -2*time.Hour)     // due 3 h before, cancelled between retries an hour later
			earlyCancel := endedAt(timer.StatusCancelled, -90*time.Minute, -2*time.Hour) // cancelled 2 h before, due half an hour later
			farCancel := endedAt(timer.StatusCancelled, 30*24*time.Hour, -2*time.Hour)   // cancelled 2 h before, due in 30 days

			classes, err := s.RetireShard(0).EndedClasses(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []timer.EndedClass{
				{Topic: "t", Status: timer.StatusDone, Oldest: retireBase.Add(-2 * time.Hour)},
				{Topic: "t", Status: timer.StatusCancelled, Oldest: retireBase.Add(-2 * time.Hour)},
			}
			if !slices.EqualFunc(classes, want, func(a, b timer.EndedClass) bool {
				return a.Topic == b.Topic && a.Status == b.Status && a.Oldest.Equal(b.Oldest)
			}) {
				t.Errorf("EndedClasses = %+v, want %+v", classes, want)
			}
			n, exact, err := s.RetireShard(0).CountEnded(ctx, "t", timer.StatusDone, retireBase.Add(-time.Hour), 10)
			if n != 1 || !exact || err != nil {
				t.Errorf("CountEnded(done, an hour before the base) = %d, %v, %v; want 1, exact", n, exact, err)
			}

			r, err := timer.NewRetirer(s, timer.RetirerConfig{Retention: timer.DefaultRetention(), Batch: 2, Duty: 1, Now: c.now})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if got := alive(t, s, lateRetry, onTime, lateCancel, earlyCancel, farCancel); !slices.Equal(got, []timer.JobID{lateRetry, farCancel}) {
				t.Errorf("at the base: held %v, want the late retry %d and the cancel due in 30 days %d", got, lateRetry, farCancel)
			}
			c.after(61 * time.Minute)
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if got := alive(t, s, lateRetry, farCancel); !slices.Equal(got, []timer.JobID{farCancel}) {
				t.Errorf("61 min on: held %v, want the cancel due in 30 days %d", got, farCancel)
			}
			c.after(30*24*time.Hour + 61*time.Minute)
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if got := alive(t, s, farCancel); len(got) != 0 {
				t.Errorf("30 days on, an hour past its due time: held %v, want none", got)
			}
		})
	}
}
