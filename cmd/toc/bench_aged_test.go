package main

import (
	"database/sql"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// The aged rows' ids are those timer.IDGen makes: the first id of a
// millisecond, of node agedNode, in each shard.
func TestAgedIDLayout(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 123e6, time.UTC)
	for _, shard := range []int{0, 1, 7, 15} {
		want := timer.NewIDGen(agedNode, func() time.Time { return at }).NextIn(shard)
		if got := agedID(at.UnixMilli(), 0, shard, agedNode); got != want {
			t.Errorf("shard %d: agedID %d, timer.IDGen %d", shard, got, want)
		}
		if got := agedID(at.UnixMilli(), 0, shard, agedNode).Shard(); got != shard {
			t.Errorf("shard %d: the id names shard %d", shard, got)
		}
	}
	g := timer.NewIDGen(agedNode, func() time.Time { return at })
	g.Next()
	if got, want := agedID(at.UnixMilli(), 1, 0, agedNode), g.Next(); got != want {
		t.Errorf("second id of a millisecond: agedID %d, timer.IDGen %d", got, want)
	}
}

// The aged fill writes its rows by SQL as agedInsert says: the ids it
// computes in SQL are agedID's, every status has its share, about half
// ended more than 24 h ago, every end is in the past, and every row is in
// the retirer's terms ended, at its gmt_modified.
func TestBenchAgedFill(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && !testenv.Required() {
		t.Skip("toc bench needs redis-server and mariadbd (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	dsn := testenv.MariaDB(t).NewDatabase(t)
	if out, err := exec.Command(tocBin, "migrate", "--mysql-dsn", dsn).CombinedOutput(); err != nil {
		t.Fatalf("toc migrate: %v\n%s", err, out)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 10000
	t0 := time.Now().Add(-agedSpan - agedSlack).UnixMilli()
	for lo := 0; lo < n; lo += 4000 {
		for _, stmt := range agedInsert(1, lo, min(n, lo+4000), n, t0) {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	var first, firstCreate int64
	if err := db.QueryRow("SELECT job_id, gmt_create FROM toc_jobs ORDER BY job_id LIMIT 1").Scan(&first, &firstCreate); err != nil {
		t.Fatal(err)
	}
	if want := agedID(firstCreate, 0, 1, agedNode); timer.JobID(first) != want {
		t.Errorf("first id %d, want agedID %d", first, want)
	}
	byStatus := map[int]int{}
	rows, err := db.Query("SELECT status, COUNT(*) FROM toc_jobs GROUP BY status")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st, c int
		if err := rows.Scan(&st, &c); err != nil {
			t.Fatal(err)
		}
		byStatus[st] = c
	}
	rows.Close()
	for st, want := range map[int]int{2: n * 80 / 100, 3: n * 10 / 100, 6: n * 5 / 100, 4: n * 5 / 100} {
		if byStatus[st] != want {
			t.Errorf("status %d: %d rows, want %d (%v)", st, byStatus[st], want, byStatus)
		}
	}
	var old, future, topics, payload, badOrder int
	now := time.Now().UnixMilli()
	if err := db.QueryRow(`SELECT SUM(gmt_modified < ?), SUM(gmt_modified > ?), COUNT(DISTINCT topic), MIN(LENGTH(payload)),
		SUM(gmt_create > action_time OR (status <> 3 AND gmt_modified < action_time))
		FROM toc_jobs`, now-24*3600*1000, now).Scan(&old, &future, &topics, &payload, &badOrder); err != nil {
		t.Fatal(err)
	}
	if old < n*45/100 || old > n*55/100 {
		t.Errorf("%d of %d rows ended more than 24 h ago, want about half", old, n)
	}
	if future != 0 || topics != agedTopics || payload != 300 || badOrder != 0 {
		t.Errorf("%d rows end in the future, %d topics, shortest payload %d bytes, %d rows out of order; want 0, %d, 300, 0",
			future, topics, payload, badOrder, agedTopics)
	}
	var ended int
	// A row but the dead by due time (a cancelled one, ended before it,
	// once that too is past), the dead in toc_dead at their end.
	if err := db.QueryRow(`SELECT COUNT(*) FROM toc_jobs WHERE (status IN (2, 6) AND gmt_modified >= action_time) OR status = 3
		OR (status = 4 AND EXISTS (SELECT 1 FROM toc_dead d WHERE d.job_id = toc_jobs.job_id AND d.died_at = gmt_modified AND d.topic = toc_jobs.topic))`).Scan(&ended); err != nil || ended != n {
		t.Errorf("%d rows in the retirer's terms (%v), want %d", ended, err, n)
	}
	var dead int
	if err := db.QueryRow("SELECT COUNT(*) FROM toc_dead").Scan(&dead); err != nil || dead != n*5/100 {
		t.Errorf("toc_dead holds %d entries (%v), want one for each dead row, %d", dead, err, n*5/100)
	}
}

// Issue 34, item 2, the CI version of the 10-million-row check: the aged
// bench's migrating phase on a million rows takes migration 0025 back
// out of the table and applies it with toc migrate while jobs fire at
// 1,000/s. The migration completes online (the bench fails if it does
// not) and no job is lost, early or fired twice; BENCHMARKS.md has the
// 10-million-row figures.
func TestBenchAgedMigrating(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && !testenv.Required() {
		t.Skip("toc bench needs redis-server and mariadbd (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	t.Parallel() // beside TestBenchSoakShort, which leaves half the machine idle
	out := filepath.Join(t.TempDir(), "aged.json")
	// --short: the fill's dirty pages are given 20 s to reach the disk,
	// not 2 minutes; the figures need the wait, the check does not.
	cmd := exec.Command(tocFastBin(t), "bench", "--short", "--scenarios", "aged", "--aged-rows", "1000000", "--aged-phase", "migrating", "--json", out)
	for _, r := range migrationRuns(t, cmd, out) {
		t.Logf("%s: migration 0025 on a million rows took %v s; %d jobs fired meanwhile, worst second's p99 %v ms",
			r.Name, r.Extra["migration_s"], r.Count, r.Extra["max_1s_p99_ms"])
	}
}

// migrationRuns runs cmd, a toc bench of the aged scenario that writes
// its JSON to out, and returns its runs under a migration (those that
// report migration_s): there must be one, and each must have fired jobs,
// none lost, early or twice.
func migrationRuns(t *testing.T, cmd *exec.Cmd, out string) []result {
	t.Helper()
	report, data, output := runBenchCmd(t, cmd, out)
	var runs []result
	for _, r := range report.Results {
		if _, ok := r.Extra["migration_s"].(float64); !ok {
			continue
		}
		runs = append(runs, r)
		if r.Count == 0 || r.Lost == nil || *r.Lost != 0 || r.Early == nil || *r.Early != 0 || r.Dups == nil || *r.Dups != 0 {
			t.Errorf("%s: %d jobs, lost %v, early %v, twice %v; want some, and none of those", r.Name, r.Count, r.Lost, r.Early, r.Dups)
		}
	}
	if len(runs) == 0 {
		t.Errorf("no run under a migration in %s\n%s", data, output)
	}
	return runs
}

// Issue 34, item 2, a migration from the oldest schema: the aged bench's
// upgrading phase starts v0.1.0 on databases of its own, fills them under
// v0.1.0's schema, and fires 1,000 jobs/s through it while this build's
// toc migrate brings the schema to this build's. The migration completes
// online and no job is lost, early or fired twice; BENCHMARKS.md has
// the 10-million-row figures.
func TestBenchAgedUpgrading(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil && !testenv.Required() {
		t.Skip("toc bench needs redis-server and mariadbd (TOC_REQUIRE_INTEGRATION=1 makes this a failure)")
	}
	t.Parallel() // beside TestBenchSoakShort
	release := buildRelease(t, previousRelease, "v0.1.0")
	out := filepath.Join(t.TempDir(), "aged.json")
	cmd := exec.Command(tocFastBin(t), "bench", "--short", "--scenarios", "aged", "--aged-rows", "200000",
		"--aged-phase", "upgrading", "--aged-release", release, "--json", out)
	// toc migrate under v0.1.0 leaves the contract migrations for after.
	want := taskdb.SchemaVersion()
	for slices.Contains(taskdb.ContractMigrations(), want) {
		want--
	}
	for _, r := range migrationRuns(t, cmd, out) {
		from, to := r.Extra["from_schema"], r.Extra["to_schema"]
		if from != float64(21) || to != float64(want) {
			t.Errorf("%s: migrated schema %v to %v, want v0.1.0's 21 to this build's %d, its contract migrations left", r.Name, from, to, want)
		}
		t.Logf("%s: schema %v to %v on 200,000 rows took %v s; %d jobs fired meanwhile, worst second's p99 %v ms",
			r.Name, from, to, r.Extra["migration_s"], r.Count, r.Extra["max_1s_p99_ms"])
	}
}
