// The aged scenario's migrating phase: a migration that builds an index
// of toc_jobs, applied by toc migrate to the aged table while jobs fire.

package main

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

// agedUnmigrate takes migration 0025's toc_jobs part back out of a
// store: its index of end times and the virtual columns under it (the
// rest of 0025 is IF NOT EXISTS, so applying it again only rebuilds
// these), and 0027, which redefines them, with it. Both are online:
// dropping an index and virtual columns copies nothing.
var agedUnmigrate = []string{
	"ALTER TABLE toc_jobs DROP INDEX IF EXISTS toc_jobs_ended, ALGORITHM = NOCOPY, LOCK = NONE",
	"ALTER TABLE toc_jobs DROP COLUMN IF EXISTS ended_topic, DROP COLUMN IF EXISTS ended_status, DROP COLUMN IF EXISTS ended_at, ALGORITHM = INPLACE, LOCK = NONE",
	"DELETE FROM toc_schema_migrations WHERE version IN (25, 27)",
}

// migrateRun is what one toc migrate did.
type migrateRun struct {
	took time.Duration
	out  []byte
	err  error
}

// agedMigrating takes migrations 0025 and 0027 back out of the aged
// store, then fires 1,000 jobs a second while toc migrate applies them
// again (see migrateUnderFire).
func (b *bench) agedMigrating(ctx context.Context, dbs []*sql.DB, phase string) (result, error) {
	for i, db := range dbs {
		for _, stmt := range agedUnmigrate {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return result{}, fmt.Errorf("take migrations 0025 and 0027 back out of shard %d: %w", i, err)
			}
		}
	}
	r, err := b.migrateUnderFire(ctx, dbs, b.dsns, phase, "0025 and 0027 (toc_jobs_ended and its virtual columns)")
	if err != nil {
		return r, err
	}
	// 0025 and 0027 build toc_jobs_ended again, which 0032 had dropped
	// from this store: drop it once more, so that the phases after run on
	// this build's schema.
	for i, db := range dbs {
		if _, err := db.ExecContext(ctx, "ALTER TABLE toc_jobs DROP INDEX IF EXISTS toc_jobs_ended, ALGORITHM = NOCOPY, LOCK = NONE"); err != nil {
			return result{}, fmt.Errorf("drop toc_jobs_ended again on shard %d: %w", i, err)
		}
	}
	return r, nil
}

// migrateUnderFire fires 1,000 jobs a second through the toc the bench
// measures, in runs of --duration back to back, while toc migrate (this
// binary) brings the store at dsns (dbs) to this build's schema from the
// second second on, until it is done. It reports the lateness over every
// run, the worst second, each second's trace, and how long the
// migration, described by what, took.
func (b *bench) migrateUnderFire(ctx context.Context, dbs []*sql.DB, dsns []string, phase, what string) (result, error) {
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	args := []string{"migrate"}
	for _, dsn := range dsns {
		args = append(args, "--mysql-dsn", dsn)
	}
	migrated := make(chan migrateRun, 1)
	go func() {
		if pause.For(ctx, 2*time.Second) != nil {
			migrated <- migrateRun{err: ctx.Err()}
			return
		}
		start := time.Now()
		out, err := exec.CommandContext(ctx, exe, args...).CombinedOutput()
		migrated <- migrateRun{took: time.Since(start), out: out, err: err}
	}()
	mark := innodbMark(ctx, dbs)
	traceCtx, stopTrace := context.WithCancel(ctx)
	trace := make(chan []traceSecond, 1)
	go func() { trace <- b.traceSeconds(traceCtx, dbs) }()
	waits := make(chan []lockWait, 1)
	go func() { waits <- sampleLockWaits(traceCtx, dbs[0]) }()
	var (
		ids  []string
		errs int
		m    migrateRun
		done bool
	)
	t0 := time.Now()
	for !done && ctx.Err() == nil {
		r, runIDs := b.fireRunIDs(ctx, "fire 1000/s", 1000, nil)
		ids, errs = append(ids, runIDs...), errs+r.Errors
		select {
		case m = <-migrated:
			done = true
		default:
		}
	}
	took := time.Since(t0)
	stopTrace()
	if m.err != nil {
		return result{}, fmt.Errorf("toc migrate on the aged store: %w\n%s", m.err, m.out)
	}
	extra := map[string]any{"phase": phase, "migration": what,
		"migration_s": math.Round(m.took.Seconds()*10) / 10, "runs_s": math.Round(took.Seconds())}
	if p99, at, ok := b.recv.worstSecond(ids); ok {
		extra["max_1s_p99_ms"], extra["max_1s_p99_at_s"] = p99, at
	}
	extra["innodb"] = innodbSince(ctx, dbs, mark)
	if w := <-waits; len(w) > 0 {
		extra["lock_waits"] = w
	}
	extra["seconds"] = b.traced(<-trace, b.recv.secondP99s(ids))
	r := b.steadyResult("aged", phase+": fire 1000/s", ids, errs, took, extra)
	p99 := latP99(r)
	fmt.Fprintf(b.log, "aged: %s: migration %s took %v; fire 1000/s meanwhile p99 %.2f ms (%s)\n",
		phase, what, m.took.Round(100*time.Millisecond), p99, strings.TrimSpace(string(m.out)))
	return r, nil
}

// lockWait is a moment of a migration when statements waited for
// toc_jobs's metadata lock: how many, and what the longest-running
// statement that did not wait was (the one they queue behind, or the
// ALTER that waits for it).
type lockWait struct {
	AtS     float64 `json:"at_s"`
	Waiting int     `json:"waiting"`
	Longest string  `json:"longest"`
	LongMS  float64 `json:"longest_ms"`
}

// sampleLockWaits reads shard 0's process list every 100 ms until ctx is
// done and returns the samples in which a statement waited for a
// metadata lock, at most 40.
func sampleLockWaits(ctx context.Context, db *sql.DB) []lockWait {
	var out []lockWait
	t0 := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(out) < 40 {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		rows, err := db.QueryContext(ctx, `SELECT TIME_MS, COALESCE(STATE, ''), LEFT(COALESCE(INFO, ''), 160) FROM information_schema.PROCESSLIST
			WHERE COMMAND NOT IN ('Sleep', 'Daemon', 'Binlog Dump') AND ID <> CONNECTION_ID()`)
		if err != nil {
			continue
		}
		w := lockWait{AtS: math.Round(time.Since(t0).Seconds()*10) / 10}
		for rows.Next() {
			var ms float64
			var state, info string
			if rows.Scan(&ms, &state, &info) != nil {
				continue
			}
			if strings.Contains(state, "metadata lock") {
				w.Waiting++
			} else if ms > w.LongMS {
				w.Longest, w.LongMS = state+": "+info, math.Round(ms)
			}
		}
		rows.Close()
		if w.Waiting > 0 {
			out = append(out, w)
		}
	}
	return out
}
