package taskdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// The benchmarks run on both backends: SQLite in a temp dir, MariaDB on
// the test's own mariadbd (skipped without one).
var benchBackends = []struct {
	name string
	open func(testing.TB) *Store
}{
	{"sqlite", openSQLite},
	{"mariadb", openMariaDB},
}

// BenchmarkInsert1000 inserts 1,000 jobs of 100-byte payloads per op.
func BenchmarkInsert1000(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			rows := insertThousands(b, s)
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// insertThousands inserts 1,000 jobs of 100-byte payloads into s per op
// of b and returns how many it inserted.
func insertThousands(b *testing.B, s *Store) int {
	payload := make([]byte, 100)
	next := timer.JobID(1)
	for b.Loop() {
		js := jobs(next, 1000, "bench")
		for _, j := range js {
			j.Payload = payload
		}
		next += 1000
		if err := s.Insert(b.Context(), js); err != nil {
			b.Fatal(err)
		}
	}
	return int(next - 1)
}

// BenchmarkInsertIndexCost is BenchmarkInsert1000 on MariaDB with every
// index of toc_jobs, then with toc_jobs_dead as before migration 0030,
// then without some, then with the primary key alone: what the indexes
// cost an INSERT (for the batch target of issue 17 and issue 35; the
// indexes dropped here are all in use). The variant persistent keeps
// every index but stores the columns the virtual ones index: it tells
// what the index entries cost from what computing virtual columns does.
func BenchmarkInsertIndexCost(b *testing.B) {
	// Indexes with an entry for every row, though most rows leave them NULL.
	mostlyNull := []string{"toc_jobs_group", "toc_jobs_ck_held", "toc_jobs_topic_key"}
	dropIndexes := func(names ...string) []string {
		alter := make([]string, len(names))
		for i, n := range names {
			alter[i] = "DROP INDEX " + n
		}
		return alter
	}
	for _, v := range []struct {
		name  string
		alter []string
	}{
		{"all", nil},
		{"with_0030s_dead", []string{"ADD INDEX toc_jobs_dead (dead_topic, dead_at, job_id)"}},
		{"without_key", dropIndexes(mostlyNull[2])},
		{"without_group", dropIndexes(mostlyNull[0])},
		{"without_ck_held", dropIndexes(mostlyNull[1])},
		{"without_group_ck_held", dropIndexes(mostlyNull[:2]...)},
		{"without_group_ck_held_key", dropIndexes(mostlyNull...)},
		{"without_overdue", dropIndexes("toc_jobs_overdue")},
		{"without_virtual", dropIndexes(virtualIndexes...)},
		{"persistent", persistentColumns},
		{"with_0032s_ended", []string{"ADD INDEX toc_jobs_ended (ended_topic, ended_status, ended_at, job_id)"}},
		{"primary_key_only", dropIndexes(slices.Concat(mostlyNull, []string{"toc_jobs_topic_due", "toc_jobs_topic_biz", "toc_jobs_overdue"})...)},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := openMariaDB(b)
			alterTable(b, s, "toc_jobs", v.alter)
			cpu := serverCPUFunc(b, s)
			before := cpu()
			rows := insertThousands(b, s)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(rows), "µs/row")
			b.ReportMetric(float64((cpu()-before).Microseconds())/float64(rows), "mariadbd-µs/row")
		})
	}
}

// virtualIndexes are toc_jobs' indexes on virtual columns: NULL for a
// job that has no concurrency key, group or deadline.
var virtualIndexes = []string{"toc_jobs_ck_held", "toc_jobs_group", "toc_jobs_overdue"}

// dropVirtualIndexes drops virtualIndexes in one ALTER.
var dropVirtualIndexes = "DROP INDEX " + strings.Join(virtualIndexes, ", DROP INDEX ")

// persistentColumns turns the columns of virtualIndexes into stored
// (PERSISTENT) ones with the same expressions, and indexes them again.
var persistentColumns = []string{
	dropVirtualIndexes,
	"DROP COLUMN ck_held, DROP COLUMN group_status, DROP COLUMN waiting_deadline",
	"ADD COLUMN ck_held VARBINARY(128) AS (IF(status = 0 AND (fired = 1 OR attempts > 0) AND concurrency_key <> '', concurrency_key, NULL)) PERSISTENT, " +
		"ADD COLUMN group_status TINYINT UNSIGNED AS (IF(group_id IS NULL, NULL, status)) PERSISTENT, " +
		"ADD COLUMN waiting_deadline BIGINT AS (IF(status = 0 AND fired = 0, expire_at, NULL)) PERSISTENT",
	"ADD UNIQUE INDEX toc_jobs_ck_held (topic, ck_held), ADD INDEX toc_jobs_group (group_id, group_status), " +
		"ADD INDEX toc_jobs_overdue (waiting_deadline, job_id)",
}

// alterTable applies each of alter to table of s, in order.
func alterTable(b *testing.B, s *Store, table string, alter []string) {
	for _, a := range alter {
		if _, err := s.db.ExecContext(b.Context(), "ALTER TABLE "+table+" "+a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertColumns is BenchmarkInsert1000 on MariaDB with its
// jobs' INSERT naming every column, as Insert did before it left out
// the columns no job of a chunk sets, and as Insert does now (9 of 22
// for these jobs), with what each cost mariadbd in CPU a row and what it
// cost this process (own: building the statement, the driver).
func BenchmarkInsertColumns(b *testing.B) {
	for _, every := range []bool{true, false} {
		b.Run(map[bool]string{true: "every_column", false: "set_columns"}[every], func(b *testing.B) {
			s := openMariaDB(b)
			payload := []byte(`{"bench":true}`)
			next := timer.JobID(1)
			cpu, own := serverCPU(b, s), ownCPU(b)
			for b.Loop() {
				js := jobs(next, 1000, "bench")
				for _, j := range js {
					j.Payload = payload
				}
				next += 1000
				q, args := s.insertStatement(js, 0)
				if every {
					rows := make([][jobColumns]any, len(js))
					for i, j := range js {
						rows[i] = s.rowValues(j, 0)
					}
					var all [jobColumns]bool
					for c := range all {
						all[c] = true
					}
					q, args = insertSQL(rows, all)
				}
				if _, err := s.db.ExecContext(b.Context(), q, args...); err != nil {
					b.Fatal(err)
				}
			}
			rows := float64(next - 1)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/rows, "µs/row")
			b.ReportMetric(float64((serverCPU(b, s)-cpu).Microseconds())/rows, "mariadbd-µs/row")
			b.ReportMetric(float64((ownCPU(b)-own).Microseconds())/rows, "own-µs/row")
		})
	}
}

// ownCPU is the CPU time this process has used: in a benchmark of the
// store, what toc's side of a statement costs (building it, the driver,
// the garbage it leaves), beside what it costs mariadbd.
func ownCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the CPU time the mariadbd behind s has used, read from
// /proc in clock ticks of 10 ms.
func serverCPU(tb testing.TB, s *Store) time.Duration {
	tb.Helper()
	return serverCPUFunc(tb, s)()
}

// serverCPUFunc returns a function that reads serverCPU, having looked
// the mariadbd behind s up once.
func serverCPUFunc(tb testing.TB, s *Store) func() time.Duration {
	tb.Helper()
	var pidFile string
	if err := s.db.QueryRowContext(tb.Context(), "SELECT @@pid_file").Scan(&pidFile); err != nil {
		tb.Fatal(err)
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Fatal(err)
	}
	statFile := "/proc/" + strings.TrimSpace(string(pid)) + "/stat"
	return func() time.Duration {
		stat, err := os.ReadFile(statFile)
		if err != nil {
			tb.Fatal(err)
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		user, err1 := strconv.Atoi(f[11])
		sys, err2 := strconv.Atoi(f[12])
		if err := errors.Join(err1, err2); err != nil {
			tb.Fatal(err)
		}
		return time.Duration(user+sys) * 10 * time.Millisecond
	}
}

// BenchmarkGetMany100 reads 100 of 10,000 jobs per op.
func BenchmarkGetMany100(b *testing.B) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.open(b)
			mustInsert(b, s, jobs(1, 10_000, "bench")...)
			ids := make([]timer.JobID, 100)
			n := 0
			for b.Loop() {
				for i := range ids {
					ids[i] = timer.JobID(n%10_000 + 1)
					n += 97
				}
				got, err := s.GetMany(b.Context(), ids)
				if err != nil || len(got) == 0 {
					b.Fatalf("GetMany = %d jobs, %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkComplete completes 100, then 1,000 pending jobs per op, the
// sizes of the completer's batches at a trickle and in a drain.
func BenchmarkComplete(b *testing.B) {
	for _, be := range benchBackends {
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/%d", be.name, size), func(b *testing.B) {
				s := be.open(b)
				done := make([]timer.Completion, size)
				next := timer.JobID(1)
				for b.Loop() {
					b.StopTimer()
					mustInsert(b, s, jobs(next, size, "bench")...)
					for i := range done {
						done[i] = timer.Completion{ID: next + timer.JobID(i), Attempts: 1, Status: 200}
					}
					next += timer.JobID(size)
					b.StartTimer()
					n, err := s.Complete(b.Context(), done, base)
					if err != nil || n != len(done) {
						b.Fatalf("Complete = %d, %v", n, err)
					}
				}
				b.ReportMetric(float64(next-1)/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}

// BenchmarkListJobsMillion searches a MariaDB store of 1,000,000 pending
// jobs (10,000 business ids, 100 jobs each; half in topic "big", the rest
// over 20 topics): a business id's jobs of a topic, and the first page
// (100) of a topic's pending jobs, as GET /v1/jobs asks for them, and the
// big topic's counts as GET /v1/topics/{topic}/stats (and the dashboard's
// topics page) makes them: bounded at a request, whole in the background.
// Filling the store takes a minute or so.
func BenchmarkListJobsMillion(b *testing.B) {
	s := openMariaDB(b)
	const n, batch = 1_000_000, 4000
	payload := make([]byte, 100)
	for lo := 0; lo < n; lo += batch {
		js := jobs(timer.JobID(lo+1), batch, "")
		for i, j := range js {
			k := lo + i
			j.Topic = "t" + strconv.Itoa(k%20)
			if k%2 == 0 {
				j.Topic = "big"
			}
			j.BizID = uint64(k%10_000 + 1)
			j.DueAt = base.Add(time.Duration(k) * time.Millisecond)
			j.Payload = payload
		}
		mustInsert(b, s, js...)
	}
	if _, err := s.db.ExecContext(b.Context(), "ANALYZE TABLE toc_jobs"); err != nil {
		b.Fatal(err)
	}
	for name, q := range map[string]timer.JobQuery{
		"biz_id":           {Topic: "t7", BizID: 4328, Limit: 100},
		"pending_page":     {Topic: "t7", Statuses: []timer.Status{timer.StatusPending}, Limit: 100},
		"big_pending_page": {Topic: "big", Statuses: []timer.Status{timer.StatusPending}, Limit: 100},
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				got, err := s.ListJobs(b.Context(), q)
				if err != nil || len(got) == 0 {
					b.Fatalf("ListJobs = %d, %v", len(got), err)
				}
			}
		})
	}
	// What a request for the big topic's stats costs: each count stops
	// past 10,000 (cmd/toc's liveCountMax) and the database estimates.
	b.Run("big_topic_counts_request", func(b *testing.B) {
		for b.Loop() {
			for _, st := range []timer.Status{timer.StatusPending, timer.StatusDead} {
				if c, exact, err := s.CountJobs(b.Context(), "big", st, 10_000); err != nil || exact != (st == timer.StatusDead) {
					b.Fatalf("CountJobs(%s) = %d, %t, %v", st, c, exact, err)
				}
			}
		}
	})
	// What the background recount costs, once a minute at most.
	b.Run("big_topic_counts_whole", func(b *testing.B) {
		for b.Loop() {
			for _, st := range []timer.Status{timer.StatusPending, timer.StatusDead} {
				if c, _, err := s.CountJobs(b.Context(), "big", st, 0); err != nil || (st == timer.StatusPending) != (c == n/2) {
					b.Fatalf("CountJobs(%s) = %d, %v", st, c, err)
				}
			}
		}
	})
}

// BenchmarkForecast counts the pending jobs of a topic, as GET
// /v1/topics/{topic}/forecast does, on a MariaDB store of n jobs, half of
// them in the topic (one every 2 ms), the rest in another: 1,000 buckets
// over the whole topic, and 24 over an hour of it. The million takes a
// minute or so to fill; run the small one with
// -bench 'BenchmarkForecast/jobs=100000$'. Measured: 0.8 µs a job
// counted, 0.4 s for the 500,000 of the million.
func BenchmarkForecast(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("jobs="+strconv.Itoa(n), func(b *testing.B) {
			s := openMariaDB(b)
			const batch = 4000
			for lo := 0; lo < n; lo += batch {
				js := jobs(timer.JobID(lo+1), batch, "big")
				for i, j := range js {
					j.DueAt = base.Add(time.Duration(lo+i) * time.Millisecond)
					if (lo+i)%2 == 1 {
						j.Topic = "other"
					}
				}
				mustInsert(b, s, js...)
			}
			if _, err := s.db.ExecContext(b.Context(), "ANALYZE TABLE toc_jobs"); err != nil {
				b.Fatal(err)
			}
			whole := time.Duration(n) * time.Millisecond
			for name, q := range map[string]timer.ForecastQuery{
				"whole_1000_buckets": {Topic: "big", From: base, To: base.Add(whole), Step: whole / 1000},
				"tenth_24_buckets":   {Topic: "big", From: base, To: base.Add(whole / 10), Step: whole / 240},
			} {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						f, err := s.Forecast(b.Context(), q, timer.MaxForecastJobs)
						if err != nil || !f.CountedTo.IsZero() {
							b.Fatalf("Forecast = %+v, %v", f.CountedTo, err)
						}
					}
					jobs := q.To.Sub(q.From).Milliseconds() / 2
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(jobs), "ns/job")
				})
			}
		})
	}
}

// BenchmarkFireCycle runs the task store's side of firing jobs on
// MariaDB, a batch per op, in the worker's order: Fire, GetMany, Complete
// and RecordAttempts. It reports what each step cost mariadbd in CPU a
// job (summed over the ops, from /proc's 10 ms ticks: run enough of them,
// -benchtime 500x), for the drain target of issue 17: in batches of 200
// (about what the drain's loader takes at once) and of 1,000; and in
// batches of 200 on other schemas, for issue 35: as before migration
// 0028, with toc_jobs_status_due as before 0029 (a store upgraded but not
// yet contracted), with toc_jobs_topic_due as narrow as before 0028, with
// no index that holds status at all; without the three indexes on
// virtual columns, or without each alone; with toc_jobs_ended as before
// migration 0032 (a store upgraded but not yet contracted); with the
// three indexes' columns stored (persistent); and without toc_attempts'
// index by start. The last
// variant packs a successful first attempt into the job row, as issue 35
// proposed: two columns the done UPDATE fills job by job, and no attempt
// row.
//
// Variants run one after the other in one process drift with the
// machine, the first the most: to compare two, run each alone, in turn
// (-test.bench 'FireCycle/^batch=200$/^as_it_is$', then the other).
// batch=200/as_it_is is batch=200 under a name that can be picked so.
func BenchmarkFireCycle(b *testing.B) {
	for _, v := range []struct {
		name     string
		batch    int
		alter    []string
		attempts []string
		packed   bool
		rows     bool // the successes' attempts as rows of toc_attempts, not packed
	}{
		{name: "batch=200", batch: 200},
		{name: "batch=1000", batch: 1000},
		{name: "batch=200/as_it_is", batch: 200},
		{name: "batch=200/before_0028", batch: 200, alter: []string{"DROP INDEX toc_jobs_topic_due, ADD INDEX toc_jobs_topic_due (topic, status, action_time, job_id)",
			"ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts, priority, window_ms)"}},
		{name: "batch=200/with_status_due", batch: 200, alter: []string{"ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts, priority, window_ms)"}},
		{name: "batch=200/narrow_topic_due", batch: 200, alter: []string{"DROP INDEX toc_jobs_topic_due, ADD INDEX toc_jobs_topic_due (topic, status, action_time, job_id)"}},
		{name: "batch=200/without_status_indexes", batch: 200, alter: []string{"DROP INDEX toc_jobs_topic_due"}},
		{name: "batch=200/without_virtual_indexes", batch: 200, alter: []string{dropVirtualIndexes}},
		{name: "batch=200/without_overdue", batch: 200, alter: []string{"DROP INDEX toc_jobs_overdue"}},
		{name: "batch=200/without_ck_held", batch: 200, alter: []string{"DROP INDEX toc_jobs_ck_held"}},
		{name: "batch=200/without_group", batch: 200, alter: []string{"DROP INDEX toc_jobs_group"}},
		{name: "batch=200/with_ended", batch: 200, alter: []string{"ADD INDEX toc_jobs_ended (ended_topic, ended_status, ended_at, job_id)"}},
		{name: "batch=200/attempt_rows", batch: 200, rows: true},
		{name: "batch=200/without_attempts_started", batch: 200, rows: true, attempts: []string{"DROP INDEX toc_attempts_started"}},
		{name: "batch=200/persistent", batch: 200, alter: persistentColumns},
		{name: "batch=200/packed_first_attempt", batch: 200, packed: true, alter: []string{
			"ADD COLUMN first_started BIGINT NOT NULL DEFAULT 0, ADD COLUMN first_ms INT NOT NULL DEFAULT 0"}},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := openMariaDB(b)
			ctx := b.Context()
			alterTable(b, s, "toc_jobs", v.alter)
			alterTable(b, s, "toc_attempts", v.attempts)
			cpu := serverCPUFunc(b, s)
			steps := fireCycle(s, v.rows)
			if v.packed {
				steps = append(steps[:2], packedComplete(s))
			}
			spent := make([]time.Duration, len(steps))
			payload := []byte(`{"bench":true}`)
			ids := make([]timer.JobID, v.batch)
			next := timer.JobID(1)
			for b.Loop() {
				b.StopTimer()
				js := jobs(next, v.batch, "bench")
				for i, j := range js {
					j.Payload = payload
					j.CallbackURL = "http://localhost:9000/hook"
					ids[i] = j.ID
				}
				next += timer.JobID(v.batch)
				mustInsert(b, s, js...)
				b.StartTimer()
				for i, st := range steps {
					before := cpu()
					if err := st.run(ctx, ids); err != nil {
						b.Fatalf("%s: %v", st.name, err)
					}
					spent[i] += cpu() - before
				}
			}
			n := float64(next - 1)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/job")
			for i, st := range steps {
				b.ReportMetric(float64(spent[i].Microseconds())/n, st.name+"-mariadbd-µs/job")
			}
		})
	}
}

// cycleStep is a step of the fire cycle: what it is called, and what it
// asks of the store for a batch of ids.
type cycleStep struct {
	name string
	run  func(context.Context, []timer.JobID) error
}

// fireCycle is what the worker asks of s for a batch of jobs it fires,
// in order, each step checking that every job took it: the successes'
// attempts packed with their done mark, or, with rows, as a build before
// toc_done_attempts wrote them, a row each in toc_attempts.
func fireCycle(s *Store, rows bool) []cycleStep {
	steps := []cycleStep{
		{"fire", func(ctx context.Context, ids []timer.JobID) error {
			n, err := s.Fire(ctx, ids, base.Add(time.Hour), base)
			return tookAll("fired", n, ids, err)
		}},
		{"get_many", func(ctx context.Context, ids []timer.JobID) error {
			js, err := s.GetMany(ctx, ids)
			return tookAll("read", len(js), ids, err)
		}},
		{"complete", func(ctx context.Context, ids []timer.JobID) error {
			done := make([]timer.Completion, len(ids))
			for i, id := range ids {
				done[i] = timer.Completion{ID: id, Attempts: 1, Status: 200}
				if !rows {
					done[i].Attempt = &timer.Attempt{Job: id, Attempt: 1, StartedAt: base, Duration: time.Millisecond, StatusCode: 200}
				}
			}
			n, err := s.Complete(ctx, done, base)
			return tookAll("completed", n, ids, err)
		}},
	}
	if rows {
		steps = append(steps, cycleStep{"attempts", func(ctx context.Context, ids []timer.JobID) error {
			as := make([]timer.Attempt, len(ids))
			for i, id := range ids {
				as[i] = timer.Attempt{Job: id, Attempt: 1, StartedAt: base, Duration: time.Millisecond, StatusCode: 200}
			}
			return s.RecordAttempts(ctx, as)
		}})
	}
	return steps
}

// tookAll is err, or an error if a step of the fire cycle did what to n
// of ids, not to all of them.
func tookAll(what string, n int, ids []timer.JobID, err error) error {
	if err == nil && n != len(ids) {
		err = fmt.Errorf("%s %d of %d jobs", what, n, len(ids))
	}
	return err
}

// packedComplete is the fire cycle's step that replaces complete and
// attempts when a successful first attempt is packed into the job row:
// one UPDATE that moves the jobs to done, as Complete does, and writes
// each job's start and duration, picked from two lists by its place among
// the ids (ELT(FIELD())). Columns that are NOT NULL keep the row's size,
// so InnoDB updates it in place: from NULL, the same UPDATE cost MariaDB
// more than the attempt row it saves. A join on a derived table of the
// values cost more than ELT(FIELD()).
func packedComplete(s *Store) cycleStep {
	return cycleStep{"complete_packed", func(ctx context.Context, ids []timer.JobID) error {
		list := idList(ids)
		var started, took strings.Builder
		for i := range ids {
			if i > 0 {
				started.WriteString(", ")
				took.WriteString(", ")
			}
			started.WriteString(strconv.FormatInt(base.UnixMilli()+int64(i), 10))
			took.WriteString(strconv.Itoa(1 + i%7))
		}
		q := "UPDATE toc_jobs SET version = version + 1, status = 2, attempts = 1, last_status = 200, fired = 0, gmt_modified = ?, first_started = ELT(FIELD(job_id, " +
			list + "), " + started.String() + "), first_ms = ELT(FIELD(job_id, " + list + "), " + took.String() + ") WHERE +status = 0 AND job_id IN (" + list + ")"
		n, err := s.exec(ctx, q, base.UnixMilli())
		return tookAll("completed", int(n), ids, err)
	}}
}

// scanByStatusDue is the backstop's page before migration 0029: a range
// of toc_jobs_status_due in (due time, id) order across topics.
const scanByStatusDue = selectTimer + `WHERE j.status = ? AND j.action_time < ? AND (j.action_time > ? OR (j.action_time = ? AND j.job_id > ?))
	ORDER BY j.action_time, j.job_id LIMIT ?`

// BenchmarkScanPending pages through 200,000 pending jobs, as the
// backstop's full scan after a loss of Redis does (pages of 2,000), in
// one topic, over 1,000 and over 100,000: by ScanPending, topic by topic in
// toc_jobs_topic_due, and by the page of the build before 0029 in
// toc_jobs_status_due (added back for it). It reports the time and
// mariadbd's CPU a job (issue 35).
func BenchmarkScanPending(b *testing.B) {
	const n, page = 200_000, 2000
	for _, topics := range []int{1, 1000, 100_000} {
		for _, by := range []string{"topic", "status_due"} {
			b.Run(fmt.Sprintf("topics=%d/by=%s", topics, by), func(b *testing.B) {
				s := openMariaDB(b)
				ctx := b.Context()
				for first := 0; first < n; first += 5000 {
					js := jobs(timer.JobID(first+1), 5000, "t")
					for i, j := range js {
						j.Topic = fmt.Sprint("t", (first+i)%topics)
						j.DueAt = base.Add(time.Duration(first+i) * time.Millisecond)
					}
					mustInsert(b, s, js...)
				}
				if by == "status_due" {
					if _, err := s.db.ExecContext(ctx, "ALTER TABLE toc_jobs ADD INDEX toc_jobs_status_due (status, action_time, job_id, topic, biz_id, attempts, priority, window_ms)"); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := s.db.ExecContext(ctx, "ANALYZE TABLE toc_jobs"); err != nil {
					b.Fatal(err)
				}
				end := base.Add(time.Hour)
				scan := func() (int, error) {
					var q timer.ScanQuery
					q.Before, q.Limit = end, page
					read := 0
					for {
						var ts []timer.Timer
						var err error
						if by == "topic" {
							ts, err = s.ScanPending(ctx, q)
						} else {
							due := int64(math.MinInt64)
							if q.After != (timer.ScanCursor{}) {
								due = timer.MillisOf(q.After.DueAt)
							}
							ts, err = s.scanTimers(ctx, nil, scanByStatusDue, int64(timer.StatusPending), end.UnixMilli(), due, due, int64(q.After.ID), page)
						}
						if err != nil {
							return read, err
						}
						read += len(ts)
						if len(ts) < page {
							return read, nil
						}
						q.After = timer.ScanCursorOf(ts[len(ts)-1])
					}
				}
				cpu := serverCPUFunc(b, s)
				var spent time.Duration
				for b.Loop() {
					before := cpu()
					if read, err := scan(); err != nil || read != n {
						b.Fatalf("read %d of %d jobs: %v", read, n, err)
					}
					spent += cpu() - before
				}
				jobs := float64(b.N * n)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/jobs, "ns/job")
				b.ReportMetric(float64(spent.Nanoseconds())/jobs, "mariadbd-ns/job")
			})
		}
	}
}
