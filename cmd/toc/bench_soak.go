// The soak scenario: toc at a steady rate for an hour or more with a
// short retention, to see that its store, memory and lateness level off
// (issue 33).

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// soakCancelLead is how long before its due time a job that the soak
// cancels is scheduled; it is cancelled a second or two later.
const soakCancelLead = 10 * time.Second

// soakWindowStats is what the soak saw in one window.
type soakWindowStats struct {
	from, to  time.Duration // since the soak began
	ids       []string      // the jobs that fire, acknowledged
	errs      int           // failed scheduling requests
	cancelled []string      // jobs scheduled and then cancelled
	dying     []string      // jobs whose callback always fails
	rss       any           // toc's RSS in MB at the window's end
	rows      int64         // rows of toc_jobs and the attempt history at the window's end; -1: unknown
	attempts  int64         // of which the attempt history's (toc_attempts, toc_done_attempts)
	deleted   float64       // rows the retirer deleted in the window
	probe     *soakProbe
}

// soak schedules --soak-rate jobs a second for --duration, with toc's
// every retention at --soak-retention: most fire and end done, one in 20
// is cancelled before its due time, one in 100 goes to a callback that
// always fails and dies after 2 attempts. It reports every --soak-window
// and the whole run, with its verdicts, and fails if a job was lost,
// fired early or twice, or fired though cancelled.
func (b *bench) soak(ctx context.Context) ([]result, error) {
	if b.toc == nil || len(b.dsns) == 0 {
		fmt.Fprintln(b.log, "soak: skipped (it restarts toc with a short retention and counts the task store's rows; use --stack real)")
		return nil, nil
	}
	cfg := b.cfg
	if err := b.restartToc(ctx, "toc-soak", retentionArgs(cfg.soakRetention.String())...); err != nil {
		return nil, err
	}
	dbs, err := b.openStores()
	if err != nil {
		return nil, err
	}
	defer closeStores(dbs)
	fail, err := newFailReceiver()
	if err != nil {
		return nil, err
	}
	defer fail.close()
	topic, dyingTopic := b.topic("soak"), b.topic("soakdying")
	if err := b.putTopic(ctx, dyingTopic, `{"max_attempts": 2, "retry": {"base_ms": 100, "max_ms": 200}}`); err != nil {
		return nil, err
	}
	cancelRate, dyingRate := max(1, cfg.soakRate/20), max(1, cfg.soakRate/100)
	mainRate := max(1, cfg.soakRate-cancelRate-dyingRate)
	fmt.Fprintf(b.log, "soak: %v at %d jobs/s (%d/s fire, %d/s cancelled, %d/s die), retention %v, windows of %v\n",
		cfg.soakDuration, mainRate+cancelRate+dyingRate, mainRate, cancelRate, dyingRate, cfg.soakRetention, cfg.soakWindow)

	const metric = "toc_retention_deleted_total"
	deleted0, err := b.metricSum(ctx, metric)
	if err != nil {
		return nil, err
	}
	var windows []*soakWindowStats
	start := time.Now()
	lastDeleted := deleted0
	probe := b.probeSoak(ctx, dbs, nil, 0)
	for from := time.Duration(0); from < cfg.soakDuration && ctx.Err() == nil; from += cfg.soakWindow {
		w := &soakWindowStats{from: from, to: min(cfg.soakDuration, from+cfg.soakWindow), rows: -1}
		d := w.to - w.from
		sideCtx, stopSide := context.WithCancel(ctx)
		side := make(chan struct{})
		go func() {
			defer close(side)
			w.cancelled, w.dying = b.soakSide(sideCtx, topic, dyingTopic, fail.url, cancelRate, dyingRate)
		}()
		w.ids, w.errs = b.steadyOver(ctx, []string{topic}, mainRate, d, 0, cfg.lead)
		stopSide()
		<-side
		w.rss = vmRSS(b.tocPID)
		jobs, err1 := countRows(ctx, dbs)
		attempts, err2 := countAttempts(ctx, dbs)
		if err := errors.Join(err1, err2); err == nil {
			w.rows, w.attempts = jobs+attempts, attempts
		} else {
			fmt.Fprintf(b.log, "soak: %v\n", err)
		}
		if n, err := b.metricSum(ctx, metric); err == nil {
			w.deleted, lastDeleted = n-lastDeleted, n
		}
		w.probe = b.probeSoak(ctx, dbs, probe, len(w.ids)+len(w.cancelled)+len(w.dying))
		probe = w.probe
		windows = append(windows, w)
		if len(windows) > 1 {
			b.logSoakWindow(windows[len(windows)-2])
		}
	}
	if len(windows) == 0 {
		return nil, ctx.Err()
	}
	// Every job that fires is due by the lead after the end; the last
	// cancelled ones soakCancelLead after it.
	var all, cancelled, dying []string
	for _, w := range windows {
		all, cancelled, dying = append(all, w.ids...), append(cancelled, w.cancelled...), append(dying, w.dying...)
	}
	b.recv.waitArrived(ctx, all, time.Now().Add(cfg.lead+time.Minute))
	wait := time.Until(start.Add(cfg.soakDuration + soakCancelLead + 3*time.Second))
	select {
	case <-ctx.Done():
	case <-time.After(wait):
	}
	fail.waitCalled(ctx, dying, 2, time.Now().Add(30*time.Second))
	b.logSoakWindow(windows[len(windows)-1])
	took := time.Since(start)

	var res []result
	for i, w := range windows {
		res = append(res, b.soakWindowResult(i, w))
	}
	sum := b.soakSummary(windows, all, cancelled, dying, fail, took)
	deletedTotal, _ := b.metricSum(ctx, metric)
	sum.Extra["deleted_total"] = int64(deletedTotal - deleted0)
	for _, st := range []string{"done", "cancelled", "dead"} {
		if n, err := b.metricSum(ctx, metric, `status="`+st+`"`); err == nil {
			sum.Extra["deleted_"+st] = int64(n)
		}
	}
	res = append(res, sum)
	for _, k := range []string{"verdict_rows", "verdict_rss", "verdict_p99"} {
		fmt.Fprintf(b.log, "soak: %s: %v\n", k, sum.Extra[k])
	}
	bad := *sum.Lost + *sum.Dups + *sum.Early + sum.Extra["cancelled_arrived"].(int) + sum.Extra["dying_never_called"].(int)
	if bad > 0 {
		return res, fmt.Errorf("%d lost, %d fired twice, %d early, %d fired though cancelled, %d dying jobs never called",
			*sum.Lost, *sum.Dups, *sum.Early, sum.Extra["cancelled_arrived"], sum.Extra["dying_never_called"])
	}
	return res, nil
}

// soakSide schedules, each second until ctx is done, cancelRate jobs of
// topic due soakCancelLead later, cancelling those of the second before,
// and dyingRate jobs of dyingTopic to the failing callback url, due a
// second later. It returns the jobs it cancelled and the dying ones.
func (b *bench) soakSide(ctx context.Context, topic, dyingTopic, url string, cancelRate, dyingRate int) (cancelled, dying []string) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		pending []string
	)
	cancel := func(ids []string) {
		wg.Go(func() {
			for _, id := range ids {
				// The cancel must land even as the window ends: it has its
				// own context.
				cctx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				_, err := b.send(cctx, http.MethodDelete, "/v1/jobs/"+id, nil, nil)
				done()
				if err == nil {
					mu.Lock()
					cancelled = append(cancelled, id)
					mu.Unlock()
				}
			}
		})
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for ctx.Err() == nil {
		now := time.Now()
		dues := make([]time.Time, cancelRate)
		for i := range dues {
			dues[i] = now.Add(soakCancelLead + time.Duration(i)*time.Second/time.Duration(cancelRate))
		}
		if ids, err := b.scheduleBatch(ctx, topic, dues); err == nil {
			cancel(pending)
			pending = ids
		}
		dues = make([]time.Time, dyingRate)
		for i := range dues {
			dues[i] = now.Add(time.Second + time.Duration(i)*time.Second/time.Duration(dyingRate))
		}
		if ids, err := b.scheduleBatchTo(ctx, dyingTopic, url, dues); err == nil {
			dying = append(dying, ids...)
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	cancel(pending)
	wg.Wait()
	return cancelled, dying
}

// soakWindowResult is the result row of window i.
func (b *bench) soakWindowResult(i int, w *soakWindowStats) result {
	r := b.steadyResult("soak", fmt.Sprintf("soak window %d (%v-%v)", i+1, w.from, w.to), w.ids, w.errs, w.to-w.from, nil)
	r.Extra = map[string]any{"toc_rss_mb": w.rss, "rows": w.rows, "attempt_rows": w.attempts, "deleted": int64(w.deleted),
		"cancelled": len(w.cancelled), "dying": len(w.dying)}
	if p := w.probe; p != nil {
		r.Extra["toc_p99_ms"], r.Extra["bench_heap_mb"], r.Extra["bench_gcs"] = p.tocP99, p.benchHeapMB, p.benchGCs
		r.Extra["innodb_history"], r.Extra["redis_mb"] = p.history, p.redisMB
		for k, v := range p.cpu {
			r.Extra[k] = v
		}
	}
	return r
}

func (b *bench) logSoakWindow(w *soakWindowStats) {
	lat, lost, _, _, _ := b.recv.outcome(w.ids)
	p99 := 0.0
	if d := distOf(lat); d != nil {
		p99 = d.P99
	}
	fmt.Fprintf(b.log, "soak: %v-%v: %d fired, %d lost, p99 %.2f ms, toc RSS %v MB, %d rows (%d of them attempts), %d deleted\n",
		w.from, w.to, len(lat), lost, p99, w.rss, w.rows, w.attempts, int64(w.deleted))
	if w.probe != nil {
		fmt.Fprintf(b.log, "soak: %v-%v: %v\n", w.from, w.to, w.probe)
	}
}

// soakSummary is the run's result row: every job it scheduled, what was
// lost, early or twice, and the verdicts on rows, RSS and p99.
func (b *bench) soakSummary(windows []*soakWindowStats, all, cancelled, dying []string, fail *failReceiver, took time.Duration) result {
	cfg := b.cfg
	lat, lost, dups, early, _ := b.recv.outcome(all)
	_, notArrived, _, _, _ := b.recv.outcome(cancelled)
	cancelledArrived := len(cancelled) - notArrived
	calls := fail.callsOf(dying)
	never, over := 0, 0
	for _, n := range calls {
		switch {
		case n == 0:
			never++
		case n > 2:
			over++
		}
	}
	errs := 0
	for _, w := range windows {
		errs += w.errs
	}
	scheduled := len(all) + len(cancelled) + len(dying)
	first, last := windows[0], windows[len(windows)-1]
	r := result{Scenario: "soak", Name: fmt.Sprintf("soak %v at %d/s, retention %v", cfg.soakDuration, cfg.soakRate, cfg.soakRetention),
		Count: len(all), Errors: errs, Seconds: took.Seconds(), Rate: float64(len(lat)) / cfg.soakDuration.Seconds(), Latency: distOf(lat),
		Lost: intp(lost + never), Dups: intp(dups + over), Early: intp(early),
		Extra: map[string]any{"scheduled": scheduled, "cancelled": len(cancelled), "cancelled_arrived": cancelledArrived,
			"dying": len(dying), "dying_never_called": never, "dying_called_more_than_twice": over,
			"rows_end": last.rows, "attempt_rows_end": last.attempts, "toc_rss_mb_end": last.rss}}

	// Rows level off: after the first retention period, the last
	// window's count is not above the most of the windows before it, plus
	// 10%.
	var maxRows int64 = -1
	for _, w := range windows[:len(windows)-1] {
		if w.to >= cfg.soakRetention && w.rows > maxRows {
			maxRows = w.rows
		}
	}
	switch {
	case last.rows < 0:
		r.Extra["verdict_rows"] = "unknown (no row count)"
	case maxRows < 0:
		r.Extra["verdict_rows"] = fmt.Sprintf("unknown (no window but the last ends after the first retention period); %d rows at the end", last.rows)
	case float64(last.rows) <= 1.1*float64(maxRows):
		r.Extra["verdict_rows"] = fmt.Sprintf("levels off: %d rows at the end, at most 110%% of the earlier most, %d", last.rows, maxRows)
	default:
		r.Extra["verdict_rows"] = fmt.Sprintf("GROWS: %d rows at the end, above 110%% of the earlier most, %d", last.rows, maxRows)
	}
	r.Extra["rows_max_earlier"] = maxRows

	// RSS and p99: first window against the last, within 10%.
	flat := func(name string, a, z float64, unit string) string {
		if a <= 0 || len(windows) < 2 {
			return fmt.Sprintf("unknown (%s %.2f%s first, %.2f%s last)", name, a, unit, z, unit)
		}
		pct := math.Round(1000*(z/a-1)) / 10
		word := "flat"
		if math.Abs(pct) > 10 {
			word = "NOT FLAT"
		}
		return fmt.Sprintf("%s: %.2f%s first window, %.2f%s last (%+.1f%%)", word, a, unit, z, unit, pct)
	}
	rss := func(w *soakWindowStats) float64 {
		v, _ := w.rss.(float64)
		return v
	}
	p99 := func(w *soakWindowStats) float64 {
		l, _, _, _, _ := b.recv.outcome(w.ids)
		if d := distOf(l); d != nil {
			return d.P99
		}
		return 0
	}
	r.Extra["verdict_rss"] = flat("RSS", rss(first), rss(last), " MB")
	r.Extra["verdict_p99"] = flat("p99", p99(first), p99(last), " ms")
	return r
}

// failReceiver is a webhook endpoint that answers every call 422, and
// counts the calls of each job. A 4xx fails the attempt but shows the
// host up to toc's circuit breaker, so that each job burns its attempts
// and dies; a 5xx would open the breaker, which defers the jobs without
// calling (http/webhook's breaker).
type failReceiver struct {
	srv *http.Server
	url string

	mu    sync.Mutex
	calls map[string]int
}

func newFailReceiver() (*failReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failing receiver: %w", err)
	}
	f := &failReceiver{url: "http://" + ln.Addr().String() + "/fail", calls: map[string]int{}}
	f.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.calls[r.Header.Get("webhook-id")]++
		f.mu.Unlock()
		http.Error(w, "the soak's failing receiver", http.StatusUnprocessableEntity)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := f.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "soak: failing receiver: %v\n", err)
		}
	}()
	return f, nil
}

func (f *failReceiver) close() { f.srv.Close() }

// callsOf returns how many calls each of ids had.
func (f *failReceiver) callsOf(ids []string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = f.calls[id]
	}
	return out
}

// waitCalled waits until every one of ids had n calls, or until
// deadline.
func (f *failReceiver) waitCalled(ctx context.Context, ids []string, n int, deadline time.Time) {
	for ctx.Err() == nil && time.Now().Before(deadline) {
		done := true
		for _, c := range f.callsOf(ids) {
			if c < n {
				done = false
				break
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
