// The aged scenario: toc's figures on a task store that holds many
// finished jobs, as years of use leave it, and while the retirer deletes
// them (issue 33).

package main

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/internal/pause"
	"github.com/toc-project/toc/timer"
)

// The aged rows: their topics, how far back they ended, and the node
// number their ids carry.
const (
	agedTopics = 50
	// agedSpan is how long before the fill the aged rows were created,
	// one after the other; a row ends up to about 11 minutes after it
	// was created, so agedSlack keeps every end in the past.
	agedSpan  = 48 * time.Hour
	agedSlack = 15 * time.Minute
	// agedNode is the node number of the aged rows' ids: live tocs lease
	// the lowest free numbers, and the aged ids are in the past anyway.
	agedNode = timer.MaxNode
	// agedChunk is how many rows one INSERT ... SELECT writes.
	agedChunk = 20000
	// agedFillConns is how many connections fill the store at once.
	agedFillConns = 4
	// agedRetention is the retention of the deleting phase: about half
	// of the aged rows ended longer ago.
	agedRetention = "24h"
)

// idEpochMs is timer's id epoch (timer/id.go), 2025-01-01 UTC, in ms.
const idEpochMs = 1735689600000

// agedID is the job id that timer.IDGen of node makes in shard at ms
// (Unix milliseconds) for the seq-th id of that millisecond: the layout
// of timer/id.go, which agedInsert computes in SQL too
// (TestAgedIDLayout holds the two to timer.IDGen).
func agedID(ms int64, seq, shard, node int) timer.JobID {
	return timer.JobID(1<<62 | uint64(ms-idEpochMs)<<21 | uint64(seq&511)<<12 | uint64(shard&15)<<8 | uint64(node&255))
}

// retentionArgs are toc serve's --retain-* flags, each set to d.
func retentionArgs(d string) []string {
	var args []string
	for _, st := range []string{"done", "cancelled", "expired", "dead", "purged"} {
		args = append(args, "--retain-"+st, d)
	}
	return args
}

// restartToc stops the toc the bench measures and starts it again with
// its arguments and extra, named name (for --profile).
func (b *bench) restartToc(ctx context.Context, name string, extra ...string) error {
	if b.toc == nil || len(b.serveArgs) == 0 {
		return errors.New("needs the toc serve the bench starts (--stack real)")
	}
	b.toc.stop()
	t, err := b.runToc(ctx, name, append(slices.Clone(b.serveArgs), extra...)...)
	if err != nil {
		return fmt.Errorf("restart toc %s: %w", strings.Join(extra, " "), err)
	}
	b.closers = append(b.closers, t.stop)
	b.toc, b.url, b.tocPID, b.pprof = t, t.url, t.pid, t.pprof
	return nil
}

// openStores opens the task store's shards, in order.
func (b *bench) openStores() ([]*sql.DB, error) {
	var dbs []*sql.DB
	for _, dsn := range b.dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			closeStores(dbs)
			return nil, err
		}
		db.SetMaxOpenConns(agedFillConns + 2)
		dbs = append(dbs, db)
	}
	return dbs, nil
}

func closeStores(dbs []*sql.DB) {
	for _, db := range dbs {
		db.Close()
	}
}

// countRows counts the rows of toc_jobs over every shard.
func countRows(ctx context.Context, dbs []*sql.DB) (int64, error) {
	return countTable(ctx, dbs, "toc_jobs")
}

// countAttempts counts the rows of the attempt history over every
// shard: toc_attempts's and the packs of toc_done_attempts.
func countAttempts(ctx context.Context, dbs []*sql.DB) (int64, error) {
	rows, err := countTable(ctx, dbs, "toc_attempts")
	if err != nil {
		return 0, err
	}
	packs, err := countTable(ctx, dbs, "toc_done_attempts")
	return rows + packs, err
}

func countTable(ctx context.Context, dbs []*sql.DB, table string) (int64, error) {
	var sum int64
	for i, db := range dbs {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			return 0, fmt.Errorf("count the rows of %s in shard %d: %w", table, i, err)
		}
		sum += n
	}
	return sum, nil
}

// storeSize returns InnoDB's estimate of toc_jobs's rows and of its
// bytes (rows and indexes), summed over the shards.
func storeSize(ctx context.Context, dbs []*sql.DB) (rows, bytes int64, err error) {
	for i, db := range dbs {
		var r, d, x int64
		err := db.QueryRowContext(ctx, `SELECT TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'toc_jobs'`).Scan(&r, &d, &x)
		if err != nil {
			return 0, 0, fmt.Errorf("size of shard %d: %w", i, err)
		}
		rows, bytes = rows+r, bytes+d+x
	}
	return rows, bytes, nil
}

// metricSum sums the series of a counter or gauge of toc's /metrics
// whose labels hold every one of match (`status="done"`; none: all).
func (b *bench) metricSum(ctx context.Context, name string, match ...string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[:end+1], rest[end+1:]
		}
		if !allIn(labels, match) {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 {
			v, err := strconv.ParseFloat(f[0], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum, sc.Err()
}

func allIn(s string, subs []string) bool {
	for _, m := range subs {
		if !strings.Contains(s, m) {
			return false
		}
	}
	return true
}

// secondP99s groups the arrived jobs of ids by the second they were due
// in (Unix seconds) and returns each second's p99 lateness in ms.
func (r *benchReceiver) secondP99s(ids []string) map[int64]float64 {
	bySec := map[int64][]time.Duration{}
	r.mu.Lock()
	for _, id := range ids {
		if a, found := r.arrivals[id]; found {
			s := a.due.Unix()
			bySec[s] = append(bySec[s], a.at.Sub(a.due))
		}
	}
	r.mu.Unlock()
	out := make(map[int64]float64, len(bySec))
	for s, lat := range bySec {
		out[s] = distOf(lat).P99
	}
	return out
}

// worstSecond returns the largest of the p99 lateness of the seconds the
// arrived jobs of ids were due in, in ms, and when that second began, in
// seconds after the first; ok is false when none arrived.
func (r *benchReceiver) worstSecond(ids []string) (p99 float64, at float64, ok bool) {
	bySec := r.secondP99s(ids)
	if len(bySec) == 0 {
		return 0, 0, false
	}
	first := slices.Min(slices.Collect(maps.Keys(bySec)))
	p99 = math.Inf(-1)
	for s, q := range bySec {
		if q > p99 || q == p99 && float64(s-first) < at {
			p99, at = q, float64(s-first)
		}
	}
	return p99, at, true
}

// aged runs the aged scenario's phases (--aged-phase): the runs on an
// empty store, the fill, the runs on the aged store with toc keeping
// every row, and fire at 1,000/s while toc deletes the half of them past
// a 24 h retention.
func (b *bench) aged(ctx context.Context) ([]result, error) {
	if b.toc == nil || len(b.dsns) == 0 {
		fmt.Fprintln(b.log, "aged: skipped (it fills the task store by SQL and restarts toc; use --stack real)")
		return nil, nil
	}
	phase := b.cfg.agedPhase
	if phase == "upgrading" {
		return b.agedUpgrading(ctx)
	}
	// Empty and aged alike: toc keeps every ended row.
	if err := b.restartToc(ctx, "toc-aged", retentionArgs("0")...); err != nil {
		return nil, err
	}
	dbs, err := b.openStores()
	if err != nil {
		return nil, err
	}
	defer closeStores(dbs)
	var res []result
	if phase == "empty" || phase == "all" {
		r, err := b.agedRuns(ctx, "empty", dbs)
		res = append(res, r...)
		if err != nil || phase == "empty" {
			return res, err
		}
	}
	fill, err := b.fillAged(ctx, dbs, b.cfg.agedRows)
	if err != nil {
		return res, err
	}
	res = append(res, fill)
	b.settle(ctx, dbs)
	label := fmt.Sprintf("aged %s", shortCount(b.cfg.agedRows))
	if phase == "aged" || phase == "all" {
		r, err := b.agedRuns(ctx, label, dbs)
		res = append(res, r...)
		if err != nil {
			return res, err
		}
	}
	if phase == "migrating" || phase == "all" {
		r, err := b.agedMigrating(ctx, dbs, label+" migrating")
		if err != nil {
			return res, err
		}
		res = append(res, r)
	}
	if phase == "deleting" || phase == "all" {
		r, err := b.agedDeleting(ctx, dbs, label)
		res = append(res, r...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// shortCount writes n as 20M, 200k or 512.
func shortCount(n int) string {
	switch {
	case n >= 1e6 && n%1e5 == 0:
		return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + "M"
	case n >= 1e3 && n%100 == 0:
		return strconv.FormatFloat(float64(n)/1e3, 'f', -1, 64) + "k"
	}
	return strconv.Itoa(n)
}

// agedRuns runs, labelled phase: fire at 1,000 and 5,000/s, single
// schedules from 64 clients, batches of 1,000 from 4, and the drain. The
// scheduled jobs' topics are paused afterwards, so that they do not come
// due during a later phase.
func (b *bench) agedRuns(ctx context.Context, phase string, dbs []*sql.DB) ([]result, error) {
	var res []result
	mark := innodbMark(ctx, dbs)
	add := func(r result) {
		r.Scenario, r.Name = "aged", phase+": "+r.Name
		if r.Extra == nil {
			r.Extra = map[string]any{}
		}
		r.Extra["phase"] = phase
		r.Extra["innodb"] = innodbSince(ctx, dbs, mark)
		mark = innodbMark(ctx, dbs)
		res = append(res, r)
		p99 := latP99(r)
		fmt.Fprintf(b.log, "aged: %s: %.0f/s, p99 %.2f ms\n", r.Name, r.Rate, p99)
	}
	for _, rate := range []int{1000, 5000} {
		add(b.fireRun(ctx, fmt.Sprintf("fire %d/s", rate), rate, nil))
	}
	due := scheduleDue()
	add(b.scheduleSingle(ctx, 64, due))
	single := b.lastTopic("sched")
	add(b.scheduleBatches(ctx, 4, due))
	batch := b.lastTopic("batch")
	for _, t := range []string{single, batch} {
		if _, err := b.post(ctx, "/v1/topics/"+t+"/pause", nil, nil); err != nil {
			return res, fmt.Errorf("pause %s: %w", t, err)
		}
	}
	drain, err := b.drain(ctx)
	if err != nil {
		return res, err
	}
	for _, r := range drain {
		add(r)
	}
	return res, ctx.Err()
}

// lastTopic is the name b.topic(kind) gave last.
func (b *bench) lastTopic(kind string) string {
	return fmt.Sprintf("bench-%s-%d", kind, b.topicSeq)
}

// fillAged writes n finished jobs into the task store by SQL, spread over
// the shards: ended over the past 48 hours (each created up to 11
// minutes before it ended), over agedTopics topics, done 80%, cancelled
// 10%, expired 5%, dead 5%, with 300-byte payloads and time-ordered ids
// of node agedNode. Each shard's rows are written by INSERT ... SELECT
// from MariaDB's sequence tables, in order of creation, agedChunk rows a
// statement, over agedFillConns connections.
func (b *bench) fillAged(ctx context.Context, dbs []*sql.DB, n int) (result, error) {
	for i := range agedTopics {
		if err := b.putTopic(ctx, agedTopic(i), `{}`); err != nil {
			return result{}, err
		}
	}
	before, _, err := storeSize(ctx, dbs)
	if err != nil {
		return result{}, err
	}
	now := time.Now()
	t0 := now.Add(-agedSpan - agedSlack).UnixMilli()
	// Under v0.1.0's schema (the upgrading phase) there is no toc_dead:
	// its dead are written as v0.1.0 wrote them, and migration 0032
	// copies them there.
	deadTable := make([]bool, len(dbs))
	for s, db := range dbs {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'toc_dead'").Scan(&n); err != nil {
			return result{}, fmt.Errorf("look for toc_dead on shard %d: %w", s, err)
		}
		deadTable[s] = n > 0
	}
	type chunk struct{ shard, lo, hi, of int }
	var chunks []chunk
	for s := range dbs {
		of := n / len(dbs)
		if s < n%len(dbs) {
			of++
		}
		for lo := 0; lo < of; lo += agedChunk {
			chunks = append(chunks, chunk{s, lo, min(of, lo+agedChunk), of})
		}
	}
	var (
		next    atomic.Int64
		written atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		fillErr error
	)
	start := time.Now()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				w := written.Load()
				fmt.Fprintf(b.log, "aged: %d of %d rows written, %.0f rows/s\n", w, n, float64(w)/time.Since(start).Seconds())
			}
		}
	}()
	for range agedFillConns {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(chunks) || ctx.Err() != nil {
					return
				}
				c := chunks[i]
				stmts := agedInsert(c.shard, c.lo, c.hi, c.of, t0)
				if !deadTable[c.shard] {
					stmts = stmts[:1]
				}
				for _, stmt := range stmts {
					if _, err := dbs[c.shard].ExecContext(ctx, stmt); err != nil {
						mu.Lock()
						fillErr = cmpErr(fillErr, fmt.Errorf("fill shard %d rows %d..%d: %w", c.shard, c.lo, c.hi, err))
						mu.Unlock()
						next.Store(int64(len(chunks)))
						return
					}
				}
				written.Add(int64(c.hi - c.lo))
			}
		})
	}
	wg.Wait()
	close(stop)
	took := time.Since(start)
	if fillErr == nil {
		fillErr = ctx.Err()
	}
	if fillErr != nil {
		return result{}, fillErr
	}
	extra := map[string]any{"shards": len(dbs), "topics": agedTopics, "rows_before_estimate": before}
	if rows, bytes, err := storeSize(ctx, dbs); err == nil {
		extra["store_mb"], extra["rows_estimate"] = mb(bytes), rows
		if rows > 0 {
			extra["bytes_per_row"] = bytes / rows
		}
	}
	r := result{Scenario: "aged", Name: fmt.Sprintf("fill %s finished rows by SQL", shortCount(n)), Count: n,
		Seconds: took.Seconds(), Rate: float64(n) / took.Seconds(), Extra: extra}
	fmt.Fprintf(b.log, "aged: filled %d rows in %v: %.0f rows/s\n", n, took.Round(time.Second), r.Rate)
	return r, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func agedTopic(i int) string { return fmt.Sprintf("aged-%02d", i) }

// agedInsert is the INSERT ... SELECT that writes rows lo..hi-1 of the of
// rows of shard. Row i was created at t0 + i*agedSpan/of (ms), and is,
// by i mod 20: done (0..15), cancelled (16, 17), expired (18) or dead
// (19); its topic is (i div 20) mod agedTopics, so that every topic has
// rows of every status. It was due 1 s to 10 min after it was created;
// a done job ended a few ms after its due time, a cancelled one halfway
// to it, an expired one 60 s after it (its expire_after_ms), a dead one
// after three attempts 3 s after it. One in five has an idempotency key,
// one in four a business id, one in two a traceparent. The dead are
// recorded in toc_dead too, by a second statement, as toc records them
// when they die (where the schema has it).
func agedInsert(shard, lo, hi, of int, t0 int64) []string {
	// c: created (ms), k: i mod 20, lead: due - created.
	src := fmt.Sprintf(`SELECT seq AS i, %d + seq * %d DIV %d AS c, seq MOD 20 AS k, 1000 + (seq * 7919) MOD 600000 AS lead
		FROM seq_%d_to_%d`, t0, agedSpan.Milliseconds(), of, lo, hi-1)
	id := fmt.Sprintf(`(1 << 62) | ((c - %d) << 21) | ((i MOD 512) << 12) | (%d << 8) | %d`, idEpochMs, shard, agedNode)
	topic := fmt.Sprintf(`CONCAT('aged-', LPAD((i DIV 20) MOD %d, 2, '0'))`, agedTopics)
	status := `CASE WHEN k < 16 THEN 2 WHEN k < 18 THEN 3 WHEN k = 18 THEN 6 ELSE 4 END`
	ended := `CASE WHEN k < 16 THEN c + lead + 5 + i MOD 50 WHEN k < 18 THEN c + lead DIV 2 WHEN k = 18 THEN c + lead + 60005 ELSE c + lead + 3020 END`
	dead := fmt.Sprintf(`INSERT INTO toc_dead (topic, died_at, job_id) SELECT %s, %s, %s FROM (%s) g WHERE k = 19`, topic, ended, id, src)
	return []string{fmt.Sprintf(`INSERT INTO toc_jobs (job_id, topic, idem_key, biz_id, biz_type, status, action_time, attempts, max_attempts,
	last_error, last_status, callback, payload, gmt_create, gmt_modified, priority, fired, traceparent, version,
	expire_after_ms, expire_at, window_ms, concurrency_key, group_id)
SELECT %s,
	%s,
	IF(i MOD 5 = 1, CONCAT('order-', LPAD(i, 12, '0')), NULL),
	IF(i MOD 4 = 0, 1000000 + i, 0), IF(i MOD 4 = 0, 1, 0),
	%s,
	c + lead + IF(k = 19, 3000, 0),
	CASE WHEN k < 16 THEN 1 WHEN k = 19 THEN 3 ELSE 0 END,
	IF(k = 19, 3, 16),
	CASE WHEN k = 18 THEN 'deadline passed (expire_after_ms 60000): not fired in time' WHEN k = 19 THEN 'HTTP 500 from the callback on attempt 3 of 3' ELSE '' END,
	CASE WHEN k < 16 THEN 200 WHEN k = 19 THEN 500 ELSE 0 END,
	'http://127.0.0.1:9/hook/aged',
	CONCAT(RPAD(CONCAT('{"order":', i, ',"note":"'), 298, 'x'), '"}'),
	c, %s, 0, 0,
	IF(i MOD 2 = 0, CONCAT('00-', MD5(i), '-', LEFT(SHA1(i), 16), '-01'), ''),
	CASE WHEN k < 16 THEN 3 WHEN k = 19 THEN 7 ELSE 2 END,
	IF(k = 18, 60000, NULL), IF(k = 18, c + lead + 60000, NULL),
	0, '', NULL
FROM (%s) g`, id, topic, status, ended, src), dead}
}

// settle waits, up to 2 minutes (20 s with --short), until InnoDB has
// written most of the fill's dirty pages out, so that the runs after it
// do not measure the flushing of the fill.
func (b *bench) settle(ctx context.Context, dbs []*sql.DB) {
	limit := 2 * time.Minute
	if b.cfg.short {
		limit = 20 * time.Second
	}
	start := time.Now()
	for {
		var worst float64
		for _, db := range dbs {
			dirty, err1 := globalStatus(ctx, db, "Innodb_buffer_pool_pages_dirty")
			total, err2 := globalStatus(ctx, db, "Innodb_buffer_pool_pages_total")
			if err1 != nil || err2 != nil || total == 0 {
				return
			}
			worst = max(worst, dirty/total)
		}
		if worst < 0.05 || time.Since(start) > limit || ctx.Err() != nil {
			fmt.Fprintf(b.log, "aged: %.1f%% of the buffer pool dirty after %v of settling\n", 100*worst, time.Since(start).Round(time.Second))
			return
		}
		time.Sleep(time.Second)
	}
}

// innodbCounters are the InnoDB status counters an aged run reports as
// their change over the run, to tell what a tail came from: pages read
// from disk (the buffer pool missed), waits for a free page (a user
// thread had to flush one) and pages written.
var innodbCounters = []string{"Innodb_buffer_pool_reads", "Innodb_buffer_pool_wait_free", "Innodb_buffer_pool_pages_flushed"}

// innodbMark reads innodbCounters, summed over the shards; nil when a
// shard does not answer.
func innodbMark(ctx context.Context, dbs []*sql.DB) map[string]float64 {
	m := map[string]float64{}
	for _, db := range dbs {
		for _, name := range innodbCounters {
			v, err := globalStatus(ctx, db, name)
			if err != nil {
				return nil
			}
			m[name] += v
		}
	}
	return m
}

// innodbSince is the change of innodbCounters since mark, with the
// undo history InnoDB has yet to purge now (trx_rseg_history_len).
func innodbSince(ctx context.Context, dbs []*sql.DB, mark map[string]float64) map[string]any {
	now := innodbMark(ctx, dbs)
	if now == nil || mark == nil {
		return nil
	}
	out := map[string]any{}
	for _, name := range innodbCounters {
		out[strings.ToLower(strings.TrimPrefix(name, "Innodb_buffer_pool_"))] = int64(now[name] - mark[name])
	}
	var history int64
	for _, db := range dbs {
		var n int64
		if db.QueryRowContext(ctx, "SELECT `count` FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'").Scan(&n) == nil {
			history += n
		}
	}
	out["purge_history"] = history
	return out
}

func globalStatus(ctx context.Context, db *sql.DB, name string) (float64, error) {
	var k string
	var v float64
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v)
	return v, err
}

// agedWarm is how long after its restart toc runs before a deleting
// phase's fire run begins (at least: the deleting run also waits for the
// first delete), so that the run does not measure toc's start.
const agedWarm = 10 * time.Second

// agedDeleting runs fire at 1,000/s twice, each on a toc restarted for
// it: first keeping every row (the control, labelled "restarted,
// keeping"), then with a 24 h retention of every status, so that the
// retirer deletes the aged rows that ended longer ago, labelled
// "deleting". The deleting run reports the rows deleted during it (from
// toc_retention_deleted_total) and its p99 over the control's.
func (b *bench) agedDeleting(ctx context.Context, dbs []*sql.DB, label string) ([]result, error) {
	control, err := b.restartedRun(ctx, dbs, label+" restarted, keeping", "0")
	if err != nil {
		return nil, err
	}
	r, err := b.restartedRun(ctx, dbs, label+" deleting", agedRetention)
	if err != nil {
		return []result{control}, err
	}
	if control.Latency != nil && r.Latency != nil {
		r.Extra["p99_over_control_ms"] = math.Round((r.Latency.P99-control.Latency.P99)*100) / 100
		fmt.Fprintf(b.log, "aged: deleting p99 %.2f ms against %.2f ms keeping, just before\n", r.Latency.P99, control.Latency.P99)
	}
	return []result{control, r}, nil
}

// restartedRun restarts toc with retention (a duration, "0" keeps
// forever), waits agedWarm and, when toc deletes, until it has begun to,
// and runs fire at 1,000/s, tracing each second (traceSeconds). It
// reports the rows deleted during the run.
func (b *bench) restartedRun(ctx context.Context, dbs []*sql.DB, phase, retention string) (result, error) {
	if err := b.restartToc(ctx, "toc-"+strings.ReplaceAll(phase, " ", "-"), retentionArgs(retention)...); err != nil {
		return result{}, err
	}
	restarted := time.Now()
	const metric = "toc_retention_deleted_total"
	started := false
	for deadline := time.Now().Add(2 * time.Minute); retention != "0" && time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		if n, err := b.metricSum(ctx, metric); err == nil && n > 0 {
			started = true
			break
		}
	}
	if retention != "0" && !started {
		fmt.Fprintln(b.log, "aged: toc deleted nothing within 2 minutes of its start; fire runs anyway")
	}
	if err := pause.For(ctx, time.Until(restarted.Add(agedWarm))); err != nil {
		return result{}, err
	}
	backlog, _ := b.metricSum(ctx, "toc_retention_backlog")
	d0, err := b.metricSum(ctx, metric)
	if err != nil {
		return result{}, err
	}
	t0, mark := time.Now(), innodbMark(ctx, dbs)
	traceCtx, stopTrace := context.WithCancel(ctx)
	trace := make(chan []traceSecond, 1)
	go func() { trace <- b.traceSeconds(traceCtx, dbs) }()
	r, ids := b.fireRunIDs(ctx, "fire 1000/s", 1000, nil)
	stopTrace()
	r.Extra["innodb"] = innodbSince(ctx, dbs, mark)
	r.Extra["seconds"] = b.traced(<-trace, b.recv.secondP99s(ids))
	d1, err := b.metricSum(ctx, metric)
	if err != nil {
		return result{}, err
	}
	took := time.Since(t0)
	r.Scenario, r.Name = "aged", phase+": "+r.Name
	r.Extra["phase"] = phase
	r.Extra["deleted_during_run"] = int64(d1 - d0)
	r.Extra["deleted_per_s"] = math.Round((d1 - d0) / took.Seconds())
	if retention != "0" {
		r.Extra["deleting_before_run"] = started
		r.Extra["deleted_before_run"] = int64(d0)
		r.Extra["backlog_at_start"] = int64(backlog)
	}
	if rows, _, err := storeSize(ctx, dbs); err == nil {
		r.Extra["rows_estimate_after"] = rows
	}
	p99 := latP99(r)
	fmt.Fprintf(b.log, "aged: %s: p99 %.2f ms; %d rows deleted during the run, %.0f/s\n", r.Name, p99, int64(d1-d0), (d1-d0)/took.Seconds())
	return r, nil
}

// checkAgedSoak checks the flags of the aged and soak scenarios.
func (c *benchConfig) checkAgedSoak() error {
	if !slices.Contains([]string{"empty", "aged", "migrating", "deleting", "all", "upgrading"}, c.agedPhase) {
		return fmt.Errorf("--aged-phase: %q, want empty, aged, migrating, deleting, all or upgrading", c.agedPhase)
	}
	if c.agedPhase == "upgrading" && c.agedRelease == "" {
		return errors.New("--aged-phase upgrading needs --aged-release, the toc binary of the release to upgrade from")
	}
	for flag, d := range map[string]time.Duration{"--soak-retention": c.soakRetention, "--soak-window": c.soakWindow, "--duration": c.soakDuration} {
		if d <= 0 {
			return fmt.Errorf("%s: %v, want a positive duration", flag, d)
		}
	}
	return nil
}

// traceSecond is one second of the deleting phase: the p99 lateness of
// the jobs due in it, the rows toc deleted and InnoDB's work.
type traceSecond struct {
	At       int64   `json:"at"` // Unix seconds
	P99      float64 `json:"p99_ms"`
	Deleted  int64   `json:"deleted"`
	Reads    int64   `json:"reads"`
	Flushed  int64   `json:"flushed"`
	WaitFree int64   `json:"wait_free"`
	Fsyncs   int64   `json:"fsyncs"`
	History  int64   `json:"purge_history"`
	Dirty    int64   `json:"dirty_pages"`
}

// traceCounters are the counters traceSeconds reads each second, by the
// field of traceSecond they fill.
var traceCounters = []string{"Innodb_buffer_pool_reads", "Innodb_buffer_pool_pages_flushed", "Innodb_buffer_pool_wait_free", "Innodb_data_fsyncs"}

// traceSeconds samples, each second until ctx ends, toc's deleted rows
// and InnoDB's counters (their change over the second), the purge
// history and the dirty pages.
func (b *bench) traceSeconds(ctx context.Context, dbs []*sql.DB) []traceSecond {
	read := func() (traceSecond, []float64) {
		var t traceSecond
		t.At = time.Now().Unix()
		d, _ := b.metricSum(ctx, "toc_retention_deleted_total")
		t.Deleted = int64(d)
		vals := make([]float64, len(traceCounters))
		for _, db := range dbs {
			for i, name := range traceCounters {
				v, _ := globalStatus(ctx, db, name)
				vals[i] += v
			}
			dirty, _ := globalStatus(ctx, db, "Innodb_buffer_pool_pages_dirty")
			t.Dirty += int64(dirty)
			var h int64
			if db.QueryRowContext(ctx, "SELECT `count` FROM information_schema.INNODB_METRICS WHERE name = 'trx_rseg_history_len'").Scan(&h) == nil {
				t.History += h
			}
		}
		return t, vals
	}
	var out []traceSecond
	prev, pv := read()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-tick.C:
		}
		cur, cv := read()
		if ctx.Err() != nil {
			return out
		}
		s := cur
		s.At = prev.At
		s.Deleted = cur.Deleted - prev.Deleted
		s.Reads, s.Flushed, s.WaitFree, s.Fsyncs = int64(cv[0]-pv[0]), int64(cv[1]-pv[1]), int64(cv[2]-pv[2]), int64(cv[3]-pv[3])
		out = append(out, s)
		prev, pv = cur, cv
	}
}

// traced puts each second's p99 into trace and logs the five worst
// seconds.
func (b *bench) traced(trace []traceSecond, p99 map[int64]float64) []traceSecond {
	for i := range trace {
		trace[i].P99 = p99[trace[i].At]
	}
	worst := slices.Clone(trace)
	slices.SortFunc(worst, func(a, b traceSecond) int { return cmp.Compare(b.P99, a.P99) })
	for _, t := range worst[:min(5, len(worst))] {
		fmt.Fprintf(b.log, "aged: second %d: p99 %.1f ms, %d deleted, %d reads, %d flushed, %d wait_free, %d fsyncs, history %d, dirty %d\n",
			t.At-trace[0].At, t.P99, t.Deleted, t.Reads, t.Flushed, t.WaitFree, t.Fsyncs, t.History, t.Dirty)
	}
	return trace
}
