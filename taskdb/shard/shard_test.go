package shard

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// openShards opens n fresh, migrated databases of the package's mariadbd
// as the shards of one Store, its map recorded.
func openShards(t *testing.T, n int) (*Store, []string) {
	t.Helper()
	dsns := make([]string, n)
	for i := range dsns {
		dsns[i] = testenv.MariaDB(t).NewDatabase(t)
	}
	return openDSNs(t, dsns), dsns
}

func openDSNs(t *testing.T, dsns []string) *Store {
	t.Helper()
	s, err := OpenMySQL(t.Context(), dsns, taskdb.Config{MaxOpenConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteMap(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// The task store contract on two databases, every test's jobs spread
// over both (see spread).
func TestStoreOnTwoShards(t *testing.T) {
	timertest.TestStore(t, func(t *testing.T) timer.Store {
		s, _ := openShards(t, 2)
		return spread{Store: s, keyed: &sync.Map{}}
	})
}

// Schedules on two databases: all in shard 0.
func TestScheduleStoreOnTwoShards(t *testing.T) {
	timertest.TestScheduleStore(t, func(t *testing.T) timer.ScheduleStore {
		s, _ := openShards(t, 2)
		return s
	})
}

// Groups on two databases: the rows in shard 0, the members in both,
// counted and checked over both.
func TestGroupStoreOnTwoShards(t *testing.T) {
	timertest.TestGroupStore(t, func(t *testing.T) timertest.GroupStore {
		s, _ := openShards(t, 2)
		return s
	})
}

// The attempt history on two databases: split by shard, read from the
// job's shard, pruned on both.
func TestAttemptLogOnTwoShards(t *testing.T) {
	timertest.TestAttemptLog(t, func(t *testing.T) timer.AttemptLog {
		s, _ := openShards(t, 2)
		return s
	})
}

// The forecast on two databases: each shard counts its jobs, the sums
// are the topic's, and a shard that stops at the limit bounds what is
// whole.
func TestForecasterOnTwoShards(t *testing.T) {
	timertest.TestForecaster(t, func(t *testing.T) timertest.Forecaster {
		s, _ := openShards(t, 2)
		return s
	})
}

// countRows returns how many job rows each shard holds.
func countRows(t *testing.T, s *Store) []int {
	t.Helper()
	out := make([]int, s.Shards())
	for i := range out {
		n, err := s.Shard(i).CountByStatus(t.Context(), "orders")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range n {
			out[i] += int(c)
		}
	}
	return out
}

// Jobs placed through the scheduler: those of one business id share a
// shard, jobs with neither key nor business id spread evenly, and an id
// says its shard.
func TestPlacement(t *testing.T) {
	s, _ := openShards(t, 2)
	ctx := t.Context()
	sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(2 * time.Hour)
	shardOfBiz := map[uint64]int{}
	for i := range 400 {
		biz := uint64(i%40 + 1)
		r, err := sched.Schedule(ctx, timer.Request{Topic: "orders", BizID: biz, FireAt: due, CallbackURL: "https://example.com/h"})
		if err != nil {
			t.Fatal(err)
		}
		sh := r.Job.ID.Shard()
		if prev, ok := shardOfBiz[biz]; ok && prev != sh {
			t.Fatalf("business id %d in shards %d and %d", biz, prev, sh)
		}
		shardOfBiz[biz] = sh
		if _, err := s.Shard(sh).Get(ctx, r.Job.ID); err != nil {
			t.Fatalf("job %v not in shard %d: %v", r.Job.ID, sh, err)
		}
	}
	if c := countRows(t, s); c[0] == 0 || c[1] == 0 {
		t.Errorf("rows per shard %v: business ids did not spread", c)
	}
	before := countRows(t, s)
	for range 200 {
		if _, err := sched.Schedule(ctx, timer.Request{Topic: "orders", FireAt: due, CallbackURL: "https://example.com/h"}); err != nil {
			t.Fatal(err)
		}
	}
	after := countRows(t, s)
	if a, b := after[0]-before[0], after[1]-before[1]; a != 100 || b != 100 {
		t.Errorf("200 jobs without key or business id went %d and %d, want 100 each", a, b)
	}
	// An idempotency key finds its job, in whichever shard.
	for i := range 20 {
		key := string(rune('a'+i)) + "-key"
		r1, err := sched.Schedule(ctx, timer.Request{Topic: "orders", Key: key, FireAt: due, CallbackURL: "https://example.com/h"})
		if err != nil || !r1.Created {
			t.Fatalf("first %s: %+v, %v", key, r1, err)
		}
		r2, err := sched.Schedule(ctx, timer.Request{Topic: "orders", Key: key, FireAt: due, CallbackURL: "https://example.com/h"})
		if err != nil || r2.Created || r2.Job.ID != r1.Job.ID {
			t.Fatalf("repeat %s: %+v, %v; want job %v again", key, r2, err, r1.Job.ID)
		}
	}
}

// Jobs of one concurrency key go to one shard whatever their idempotency
// keys and business ids, so that the shard's unique index referees the
// key: Fire over both shards moves one job of each key to firing. A job
// with both keys is found by its idempotency key, and a retry of its
// request is caught.
func TestPlacementConcurrencyKey(t *testing.T) {
	s, _ := openShards(t, 2)
	ctx := t.Context()
	sched, err := timer.NewScheduler(s, timertest.NewIndex(), timer.SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(2 * time.Hour)
	shardOf := map[string]int{}
	var ids []timer.JobID
	for i := range 120 {
		ck := fmt.Sprintf("account-%d", i%12)
		req := timer.Request{Topic: "orders", Key: fmt.Sprintf("req-%d", i), BizID: uint64(i + 1), ConcurrencyKey: ck,
			FireAt: due, CallbackURL: "https://example.com/h"}
		r, err := sched.Schedule(ctx, req)
		if err != nil || !r.Created {
			t.Fatalf("schedule %d: %+v, %v", i, r, err)
		}
		sh := r.Job.ID.Shard()
		if prev, ok := shardOf[ck]; ok && prev != sh {
			t.Fatalf("concurrency key %s in shards %d and %d", ck, prev, sh)
		}
		shardOf[ck] = sh
		ids = append(ids, r.Job.ID)
		again, err := sched.Schedule(ctx, req)
		if err != nil || again.Created || again.Job.ID != r.Job.ID {
			t.Fatalf("retry of request %d: %+v, %v; want job %v again", i, again, err, r.Job.ID)
		}
		if j, err := s.GetByKey(ctx, "orders", req.Key); err != nil || j.ID != r.Job.ID {
			t.Fatalf("GetByKey(%s) = %v, %v", req.Key, j, err)
		}
	}
	if c := countRows(t, s); c[0] == 0 || c[1] == 0 {
		t.Errorf("rows per shard %v: concurrency keys did not spread", c)
	}
	if n, err := s.Fire(ctx, ids, due.Add(time.Second), time.Now()); err != nil || n != 12 {
		t.Fatalf("Fire of 120 jobs over 12 keys = %d, %v; want 12", n, err)
	}
	js, err := s.GetMany(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	perKey := map[string]int{}
	for _, j := range js {
		if j.Status == timer.StatusFiring {
			perKey[j.ConcurrencyKey]++
		}
	}
	for ck, n := range perKey {
		if n != 1 {
			t.Errorf("key %s has %d jobs firing", ck, n)
		}
	}
}

// A batch across shards that one shard refuses writes nothing anywhere:
// the rows committed on the other shard are taken back.
func TestInsertAcrossShardsAllOrNothing(t *testing.T) {
	s, _ := openShards(t, 2)
	ctx := t.Context()
	g := timer.NewIDGen(1, nil)
	job := func(shard int) *timer.Job {
		return &timer.Job{ID: g.NextIn(shard), Topic: "orders", Status: timer.StatusPending, DueAt: time.Now().Add(time.Hour),
			MaxAttempts: 3, CallbackURL: "https://example.com/h"}
	}
	taken := job(1)
	if err := s.Insert(ctx, []*timer.Job{taken}); err != nil {
		t.Fatal(err)
	}
	batch := []*timer.Job{job(0), job(0), job(1), taken}
	if err := s.Insert(ctx, batch); !errors.Is(err, timer.ErrConflict) {
		t.Fatalf("Insert with a taken id in shard 1 = %v, want ErrConflict", err)
	}
	if c := countRows(t, s); c[0] != 0 || c[1] != 1 {
		t.Errorf("rows per shard after the refused batch %v, want [0 1]", c)
	}
	if err := s.Insert(ctx, batch[:3]); err != nil {
		t.Fatal(err)
	}
	if c := countRows(t, s); c[0] != 2 || c[1] != 2 {
		t.Errorf("rows per shard %v, want [2 2]", c)
	}
}

// Every process must be given the shards a store recorded, in order.
func TestMapCheck(t *testing.T) {
	ctx := t.Context()
	_, dsns := openShards(t, 2)
	if err := openDSNs(t, dsns).CheckMap(ctx, false); err != nil {
		t.Fatalf("the recorded map: %v", err)
	}
	open := func(dsns ...string) *Store {
		s, err := OpenMySQL(ctx, dsns, taskdb.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var me *MapError
	if err := open(dsns[1], dsns[0]).CheckMap(ctx, true); !errors.As(err, &me) || me.Shard != 0 {
		t.Errorf("shards swapped: %v, want a MapError of shard 0", err)
	}
	if err := open(dsns[0]).CheckMap(ctx, true); !errors.As(err, &me) || me.Shard != 0 {
		t.Errorf("one of two: %v, want a MapError of shard 0", err)
	}
	fresh := testenv.MariaDB(t).NewDatabase(t)
	three := open(dsns[0], dsns[1], fresh)
	if err := three.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := three.CheckMap(ctx, true); !errors.As(err, &me) || me.Shard != 0 {
		t.Errorf("a third shard without toc migrate: %v, want a MapError", err)
	}
	// toc migrate records the map of three, remembering the two.
	if wrote, err := three.WriteMap(ctx); err != nil || !wrote {
		t.Fatalf("WriteMap of three = %v, %v", wrote, err)
	}
	if err := open(dsns[0], dsns[1], fresh).CheckMap(ctx, false); err != nil {
		t.Errorf("the map of three: %v", err)
	}
	if err := open(dsns[0], dsns[1]).CheckMap(ctx, false); !errors.As(err, &me) {
		t.Errorf("two of three: %v, want a MapError", err)
	}
	if _, err := open(dsns[0], dsns[1]).WriteMap(ctx); err == nil {
		t.Error("WriteMap removed a shard")
	}
	m, err := three.Shard(2).ShardMap(ctx)
	if err != nil || m.Shards != 3 || m.Shard != 2 || len(m.Earlier) != 1 || m.Earlier[0] != 2 {
		t.Errorf("shard 2's map = %+v, %v", m, err)
	}
	// One database that recorded nothing is a store from before shards.
	one := open(testenv.MariaDB(t).NewDatabase(t))
	if err := one.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := one.CheckMap(ctx, false); err != nil {
		t.Errorf("one unrecorded database: %v", err)
	}
}

// Processes that start together on shards with no map agree on one.
func TestFirstMapRace(t *testing.T) {
	ctx := t.Context()
	dsns := []string{testenv.MariaDB(t).NewDatabase(t), testenv.MariaDB(t).NewDatabase(t)}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := OpenMySQL(ctx, dsns, taskdb.Config{})
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.CheckMap(ctx, true)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
}

// The audit log on two databases: all in shard 0.
func TestAuditLogOnTwoShards(t *testing.T) {
	timertest.TestAuditLog(t, func(t *testing.T) timer.AuditLog {
		s, _ := openShards(t, 2)
		return s
	})
}

// FireNew on two shards fires the jobs each shard inserted, as GetMany
// reads them, and leaves the rest to Fire.
func TestFireNewOnTwoShards(t *testing.T) {
	s, _ := openShards(t, 2)
	ctx := t.Context()
	g := timer.NewIDGen(1, nil)
	now := time.Now()
	var ids []timer.JobID
	for i := range 4 {
		j := &timer.Job{ID: g.NextIn(i % 2), Topic: "orders", Status: timer.StatusPending, DueAt: now,
			MaxAttempts: 3, CallbackURL: "https://example.com/h", Payload: []byte(`{"n":1}`)}
		if err := s.Insert(ctx, []*timer.Job{j}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	unknown := g.NextIn(1) // no row
	fired, rest, err := s.FireNew(ctx, append(slices.Clone(ids), unknown), now.Add(time.Second), now)
	if err != nil || len(fired) != len(ids) || !slices.Equal(rest, []timer.JobID{unknown}) {
		t.Fatalf("FireNew = %d jobs, rest %v, %v; want %d, rest [%d]", len(fired), rest, err, len(ids), unknown)
	}
	rows, err := s.GetMany(ctx, ids)
	if err != nil || len(rows) != len(ids) {
		t.Fatalf("GetMany = %d, %v", len(rows), err)
	}
	for _, row := range rows {
		i := slices.IndexFunc(fired, func(j *timer.Job) bool { return j.ID == row.ID })
		if i < 0 || !reflect.DeepEqual(fired[i], row) || row.Status != timer.StatusFiring {
			t.Errorf("row %+v, FireNew's job %d", *row, i)
		}
	}
}
