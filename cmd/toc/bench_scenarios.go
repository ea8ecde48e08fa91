package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/prepare"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// jobJSON is one job of a scheduling request, written by hand: the load
// generator must not be the bottleneck.
func (b *bench) jobJSON(buf *bytes.Buffer, topic string, due time.Time) {
	jobJSONTo(buf, topic, due, b.callbackOf(topic))
}

// callbackOf is the callback URL of topic's jobs: the receiver's, none
// for a topic delivered by a message broker (the bus scenario's).
func (b *bench) callbackOf(topic string) string {
	if b.busTopics[topic] {
		return ""
	}
	return b.recv.url
}

// jobJSONTo writes a job of topic due at due, calling url back (none for
// "").
func jobJSONTo(buf *bytes.Buffer, topic string, due time.Time, url string) {
	buf.WriteString(`{"topic":"`)
	buf.WriteString(topic)
	buf.WriteString(`","fire_at":"`)
	buf.WriteString(due.UTC().Format("2006-01-02T15:04:05.000Z"))
	if url != "" {
		buf.WriteString(`","callback_url":"`)
		buf.WriteString(url)
	}
	buf.WriteString(`","payload":{"bench":true}}`)
}

type batchAnswer struct {
	Results []struct {
		ID    string `json:"id"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"results"`
}

// scheduleBatch schedules one job of topic per due time in one request.
func (b *bench) scheduleBatch(ctx context.Context, topic string, dues []time.Time) ([]string, error) {
	return b.scheduleBatchTo(ctx, topic, b.callbackOf(topic), dues)
}

// scheduleBatchTo is scheduleBatch with another callback URL.
func (b *bench) scheduleBatchTo(ctx context.Context, topic, url string, dues []time.Time) ([]string, error) {
	return b.postBatch(ctx, url, dues, func(int) string { return topic })
}

// postBatch schedules job i in topic topicOf(i), due at dues[i], with
// callback url, in one request, and returns their ids in order.
func (b *bench) postBatch(ctx context.Context, url string, dues []time.Time, topicOf func(i int) string) ([]string, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"jobs":[`)
	for i, d := range dues {
		if i > 0 {
			buf.WriteByte(',')
		}
		jobJSONTo(&buf, topicOf(i), d, url)
	}
	buf.WriteString(`]}`)
	var ans batchAnswer
	if _, err := b.post(ctx, "/v1/jobs/batch", buf.Bytes(), &ans); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(ans.Results))
	for _, r := range ans.Results {
		if r.Error != nil {
			return ids, fmt.Errorf("batch item: %s", r.Error.Message)
		}
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// load schedules n jobs of topic, job i due at due(i), in batches of
// 1,000 sent by conc clients, and returns their ids in order.
func (b *bench) load(ctx context.Context, topic string, n int, due func(i int) time.Time, conc int) ([]string, error) {
	ids := make([]string, n)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		loadErr error
	)
	for range conc {
		wg.Go(func() {
			for {
				start := int(next.Add(1000)) - 1000
				if start >= n || ctx.Err() != nil {
					return
				}
				end := min(n, start+1000)
				dues := make([]time.Time, end-start)
				for i := range dues {
					dues[i] = due(start + i)
				}
				got, err := b.scheduleBatch(ctx, topic, dues)
				if err != nil {
					mu.Lock()
					loadErr = err
					mu.Unlock()
					return
				}
				copy(ids[start:end], got)
			}
		})
	}
	wg.Wait()
	return ids, loadErr
}

// hammer runs call from conc clients for d and returns the latency of
// each successful call, the calls made and the errors.
func hammer(ctx context.Context, conc int, d time.Duration, call func(ctx context.Context, n int) error) ([]time.Duration, int, int, time.Duration) {
	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   atomic.Int64
		seq    atomic.Int64
		wg     sync.WaitGroup
		start  = time.Now()
		stopAt = start.Add(d)
	)
	for range conc {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				t0 := time.Now()
				if err := call(ctx, int(seq.Add(1))); err != nil {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, len(lat) + int(errs.Load()), int(errs.Load()), time.Since(start)
}

// scheduleDue returns the due time of the scheduling scenarios' job n:
// in 30 to 40 minutes, within the horizon (so Redis is written too), not
// firing during the bench.
func scheduleDue() func(n int) time.Time {
	base := time.Now().Add(30 * time.Minute)
	return func(n int) time.Time { return base.Add(time.Duration(n%600000) * time.Millisecond) }
}

// schedule measures POST /v1/jobs at each concurrency and POST
// /v1/jobs/batch of 1,000.
func (b *bench) schedule(ctx context.Context) ([]result, error) {
	var res []result
	due := scheduleDue()
	for _, c := range b.cfg.concurrency {
		res = append(res, b.scheduleSingle(ctx, c, due))
	}
	batchConc := []int{4}
	if !b.cfg.short {
		batchConc = []int{1, 4}
	}
	for _, c := range batchConc {
		res = append(res, b.scheduleBatches(ctx, c, due))
	}
	return res, nil
}

// scheduleBatches measures POST /v1/jobs/batch of 1,000 jobs of a fresh
// topic, due at due(n), from conc clients for the run's duration.
func (b *bench) scheduleBatches(ctx context.Context, conc int, due func(n int) time.Time) result {
	topic := b.topic("batch")
	cpu := b.cpuMark(ctx)
	lat, count, errs, took := hammer(ctx, conc, b.cfg.duration, func(ctx context.Context, n int) error {
		dues := make([]time.Time, 1000)
		for i := range dues {
			dues[i] = due(n*1000 + i)
		}
		_, err := b.scheduleBatch(ctx, topic, dues)
		return err
	})
	r := result{Scenario: "schedule", Name: fmt.Sprintf("schedule batch=1000 c=%d", conc),
		Count: (count - errs) * 1000, Errors: errs, Seconds: took.Seconds(), Rate: float64((count-errs)*1000) / took.Seconds(), Latency: distOf(lat),
		Extra: b.cpuPerJob(ctx, cpu, (count-errs)*1000)}
	r.Extra["requests"] = count
	return r
}

// scheduleSingle measures POST /v1/jobs, one job of a fresh topic, with
// neither business id nor key, due at due(n), from conc clients for the
// run's duration.
func (b *bench) scheduleSingle(ctx context.Context, conc int, due func(n int) time.Time) result {
	topic := b.topic("sched")
	cpu := b.cpuMark(ctx)
	lat, count, errs, took := hammer(ctx, conc, b.cfg.duration, func(ctx context.Context, n int) error {
		var buf bytes.Buffer
		b.jobJSON(&buf, topic, due(n))
		_, err := b.post(ctx, "/v1/jobs", buf.Bytes(), nil)
		return err
	})
	return result{Scenario: "schedule", Name: fmt.Sprintf("schedule single c=%d", conc),
		Count: count, Errors: errs, Seconds: took.Seconds(), Rate: float64(count-errs) / took.Seconds(), Latency: distOf(lat),
		Extra: b.cpuPerJob(ctx, cpu, count-errs)}
}

// fireLead is how far ahead of its due time a steady run schedules a
// job, unless the fire scenario's --lead says otherwise.
const fireLead = time.Second

// fire schedules jobs at a steady rate, each due --lead after it is
// scheduled, optionally over a store holding many far-future jobs, and
// measures when their webhooks arrive.
func (b *bench) fire(ctx context.Context) ([]result, error) {
	var res []result
	for _, rate := range b.cfg.rates {
		pending := b.cfg.pending
		if pending < 0 {
			pending = 0
			if !b.cfg.short && rate == 5000 {
				pending = 1000000
			}
		}
		extra := map[string]any{"pending": pending}
		if pending > 0 {
			far := time.Now().Add(48 * time.Hour)
			t0 := time.Now()
			if _, err := b.load(ctx, b.topic("far"), pending, func(i int) time.Time { return far.Add(time.Duration(i) * time.Millisecond) }, 4); err != nil {
				return nil, fmt.Errorf("preload %d pending jobs: %w", pending, err)
			}
			extra["preload_rate_per_s"] = int(float64(pending) / time.Since(t0).Seconds())
		}
		name := fmt.Sprintf("fire %d/s pending=%d", rate, pending)
		if b.cfg.lead != fireLead {
			name += " lead=" + b.cfg.lead.String()
		}
		res = append(res, b.fireRun(ctx, name, rate, extra))
	}
	return res, nil
}

// fireRun schedules rate jobs a second of a fresh topic for the run's
// duration, each due --lead after it is scheduled, and reports their
// lateness, with the worst of the p99s of the seconds they were due in.
func (b *bench) fireRun(ctx context.Context, name string, rate int, extra map[string]any) result {
	r, _ := b.fireRunIDs(ctx, name, rate, extra)
	return r
}

// fireRunIDs is fireRun, which also returns the ids of the jobs it sent.
func (b *bench) fireRunIDs(ctx context.Context, name string, rate int, extra map[string]any) (result, []string) {
	topic := b.topic("fire")
	ids, errs := b.steadyOver(ctx, []string{topic}, rate, b.cfg.duration, 0, b.cfg.lead)
	b.recv.waitArrived(ctx, ids, time.Now().Add(b.cfg.lead+30*time.Second))
	if extra == nil {
		extra = map[string]any{}
	}
	if p99, at, ok := b.recv.worstSecond(ids); ok {
		extra["max_1s_p99_ms"], extra["max_1s_p99_at_s"] = p99, at
	}
	return b.steadyResult("fire", name, ids, errs, b.cfg.duration, extra), ids
}

// steadyResult is the result of a steady run that sent ids over d with
// errs failed requests: the calls' lateness and what was lost, fired
// twice or early, as the receiver saw them.
func (b *bench) steadyResult(scenario, name string, ids []string, errs int, d time.Duration, extra map[string]any) result {
	lat, lost, dups, early, _ := b.recv.outcome(ids)
	return result{Scenario: scenario, Name: name, Count: len(ids), Errors: errs, Seconds: d.Seconds(),
		Rate: float64(len(lat)) / d.Seconds(), Latency: distOf(lat), Lost: intp(lost), Dups: intp(dups), Early: intp(early), Extra: extra}
}

// steady schedules rate jobs a second of topic for d, in a batch every
// 10 ms, each due fireLead after its batch is sent.
func (b *bench) steady(ctx context.Context, topic string, rate int, d time.Duration) ([]string, int) {
	return b.steadyOver(ctx, []string{topic}, rate, d, 0, fireLead)
}

// steadyOver is steady over many topics: job k goes to topics[k mod
// len(topics)], and is due lead plus (k mod 1000)/1000 of spread after
// its batch is sent.
func (b *bench) steadyOver(ctx context.Context, topics []string, rate int, d, spread, lead time.Duration) ([]string, int) {
	const tick = 10 * time.Millisecond
	var (
		mu   sync.Mutex
		ids  []string
		errs int
		wg   sync.WaitGroup
		sem  = make(chan struct{}, 16)
	)
	start := time.Now()
	sent := 0
	t := time.NewTicker(tick)
	defer t.Stop()
	for now := start; now.Sub(start) < d && ctx.Err() == nil; now = <-t.C {
		want := int(float64(rate) * now.Add(tick).Sub(start).Seconds())
		n := want - sent
		if n <= 0 {
			continue
		}
		first := sent
		sent = want
		dues := make([]time.Time, n)
		for i := range dues {
			k := first + i
			dues[i] = now.Add(lead + time.Duration(i)*tick/time.Duration(n) + time.Duration(k%1000)*spread/1000)
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			got, err := b.postBatch(ctx, b.callbackOf(topics[0]), dues, func(i int) string { return topics[(first+i)%len(topics)] })
			mu.Lock()
			defer mu.Unlock()
			ids = append(ids, got...)
			if err != nil {
				errs++
			}
		})
	}
	wg.Wait()
	return ids, errs
}

// drain schedules N jobs due at one instant and measures how long firing
// them all takes.
func (b *bench) drain(ctx context.Context) ([]result, error) {
	r, err := b.drainTopic(ctx, b.topic("drain"), b.cfg.drainJobs)
	if err != nil {
		return nil, err
	}
	return []result{r}, nil
}

// drainTopic is drain of n jobs of topic.
func (b *bench) drainTopic(ctx context.Context, topic string, n int) (result, error) {
	due := time.Now().Add(2*time.Second + time.Duration(n)*time.Second/25000).Truncate(time.Millisecond)
	ids, err := b.load(ctx, topic, n, func(int) time.Time { return due }, 4)
	if err != nil {
		return result{}, err
	}
	late := time.Since(due)
	// The stack's CPU is read from the due time on, when the drain begins.
	select {
	case <-ctx.Done():
	case <-time.After(-late):
	}
	cpu := b.cpuMark(ctx)
	b.recv.waitArrived(ctx, ids, due.Add(5*time.Minute))
	lat, lost, dups, early, last := b.recv.outcome(ids)
	extra := b.cpuPerJob(ctx, cpu, len(lat))
	if late > 0 {
		extra["scheduling_ended_after_due_ms"] = late.Milliseconds()
	}
	took := last.Sub(due)
	return result{Scenario: "drain", Name: fmt.Sprintf("drain %d due at once", n),
		Count: n, Seconds: took.Seconds(), Rate: float64(len(lat)) / took.Seconds(), Latency: distOf(lat),
		Lost: intp(lost), Dups: intp(dups), Early: intp(early), Extra: extra}, nil
}

// memory measures Redis bytes per pending job within the horizon, Redis
// memory with most jobs beyond the horizon, and toc's RSS.
func (b *bench) memory(ctx context.Context) ([]result, error) {
	if b.rdb == nil {
		fmt.Fprintln(b.log, "memory: skipped (no access to toc's Redis; use --stack real or --redis-addr)")
		return nil, nil
	}
	total := b.cfg.memoryJobs
	near := total / 10
	base, err := b.usedMemory(ctx)
	if err != nil {
		return nil, err
	}
	replBase, err := b.replicationMemory(ctx)
	if err != nil {
		return nil, err
	}
	topicNear := b.topic("memnear")
	soon := time.Now().Add(30 * time.Minute)
	t0 := time.Now()
	if _, err := b.load(ctx, topicNear, near, func(i int) time.Time { return soon.Add(time.Duration(i%1200000) * time.Millisecond) }, 4); err != nil {
		return nil, err
	}
	afterNear, err := b.usedMemory(ctx)
	if err != nil {
		return nil, err
	}
	replNear, err := b.replicationMemory(ctx)
	if err != nil {
		return nil, err
	}
	// The jobs wait in later buckets (slots.KeySet.Later): the encoding
	// reported is that of slot 0's first one.
	keys := slots.Keys(slots.DefaultPrefix, topicNear, 0)
	enc := ""
	if first, err := b.rdb.ZRange(ctx, keys.Later, 0, 0).Result(); err == nil && len(first) == 1 {
		enc, _ = b.rdb.ObjectEncoding(ctx, keys.LaterBucket(first[0])).Result()
	}
	// The replicas' buffers fill with the stream of writes up to their
	// cap, whatever the jobs held: not the jobs' memory.
	repl := replNear - replBase
	perJob := float64(afterNear-base-repl) / float64(near)
	far := time.Now().Add(25 * time.Hour)
	if _, err := b.load(ctx, b.topic("memfar"), total-near, func(i int) time.Time { return far.Add(time.Duration(i) * time.Millisecond) }, 4); err != nil {
		return nil, err
	}
	loadRate := float64(total) / time.Since(t0).Seconds()
	afterAll, err := b.usedMemory(ctx)
	if err != nil {
		return nil, err
	}
	rss := vmRSS(b.tocPID)
	return []result{
		{Scenario: "memory", Name: "redis bytes per job in horizon", Count: near,
			Extra: map[string]any{"bytes_per_job": int(perJob), "zset_encoding": enc, "replication_buffers_mb": mb(repl)}},
		{Scenario: "memory", Name: fmt.Sprintf("memory with %d pending, 90%% > 1 day", total), Count: total, Rate: loadRate,
			Extra: map[string]any{"redis_mb_for_these_jobs": mb(afterAll - base), "redis_used_mb": mb(afterAll), "redis_used_mb_before": mb(base), "toc_rss_mb": rss}},
	}, nil
}

// recover schedules N jobs within the horizon, flushes Redis, and
// measures how long the backstop takes to restore them.
func (b *bench) recover(ctx context.Context) ([]result, error) {
	if b.rdb == nil {
		fmt.Fprintln(b.log, "recover: skipped (no access to toc's Redis; use --stack real or --redis-addr)")
		return nil, nil
	}
	n := b.cfg.recoverJobs
	topic := b.topic("recover")
	soon := time.Now().Add(40 * time.Minute)
	if _, err := b.load(ctx, topic, n, func(i int) time.Time { return soon.Add(time.Duration(i%900000) * time.Millisecond) }, 4); err != nil {
		return nil, err
	}
	index, err := prepare.New(b.rdb, prepare.Config{})
	if err != nil {
		return nil, err
	}
	count := func() (int64, error) {
		waiting, _, _, _, err := index.Stats(ctx, topic, timer.DefaultSlots)
		return waiting, err
	}
	if got, err := count(); err != nil || got != int64(n) {
		return nil, fmt.Errorf("before the flush: %d of %d timers in Redis (%v)", got, n, err)
	}
	if err := b.flushAll(ctx); err != nil {
		return nil, err
	}
	t0 := time.Now()
	for {
		got, err := count()
		if err != nil {
			return nil, err
		}
		if got >= int64(n) {
			break
		}
		if time.Since(t0) > 10*time.Minute {
			return nil, fmt.Errorf("after 10 min only %d of %d timers were restored", got, n)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	took := time.Since(t0)
	return []result{{Scenario: "recover", Name: fmt.Sprintf("recover %d after FLUSHALL", n), Count: n,
		Seconds: took.Seconds(), Rate: float64(n) / took.Seconds(), Extra: map[string]any{"restore_seconds": took.Round(10 * time.Millisecond).Seconds()}}}, nil
}

// putTopic sets a topic's settings.
func (b *bench) putTopic(ctx context.Context, topic, settings string) error {
	_, err := b.send(ctx, "PUT", "/v1/topics/"+topic, []byte(settings), nil)
	return err
}

// fairness reproduces the fairness issue's acceptance 1 and 3 on the
// stack: a flood of jobs due at one instant in a rate-limited topic beside
// a steady topic, then a topic with a slow receiver and max_in_flight 10
// beside a fast one. It reports the flood's dispatch rate and the steady
// and fast topics' lateness, each also without the other topic.
func (b *bench) fairness(ctx context.Context) ([]result, error) {
	const steadyRate = 200
	n, limit := b.cfg.floodJobs, b.cfg.floodRate
	flood, steadyT := b.topic("flood"), b.topic("steady")
	if err := b.putTopic(ctx, flood, fmt.Sprintf(`{"rate_limit": %d}`, limit)); err != nil {
		return nil, err
	}
	var res []result
	report := func(name string, ids []string, errs int, d time.Duration, extra map[string]any) {
		res = append(res, b.steadyResult("fairness", name, ids, errs, d, extra))
	}

	alone := b.cfg.duration
	ids, errs := b.steady(ctx, steadyT, steadyRate, alone)
	b.recv.waitArrived(ctx, ids, time.Now().Add(fireLead+30*time.Second))
	report(fmt.Sprintf("steady %d/s alone", steadyRate), ids, errs, alone, nil)

	due := time.Now().Add(2*time.Second + time.Duration(n)*time.Second/25000).Truncate(time.Millisecond)
	floodIDs, err := b.load(ctx, flood, n, func(int) time.Time { return due }, 4)
	if err != nil {
		return nil, err
	}
	time.Sleep(time.Until(due.Add(-fireLead)))
	drain := time.Duration(float64(n) / float64(limit) * float64(time.Second))
	ids, errs = b.steady(ctx, steadyT, steadyRate, drain)
	b.recv.waitArrived(ctx, floodIDs, due.Add(drain+time.Minute))
	b.recv.waitArrived(ctx, ids, time.Now().Add(30*time.Second))
	report(fmt.Sprintf("steady %d/s beside the flood", steadyRate), ids, errs, drain, nil)
	first, last := b.recv.span(floodIDs)
	lat, lost, dups, early, _ := b.recv.outcome(floodIDs)
	took := last.Sub(first)
	res = append(res, result{Scenario: "fairness", Name: fmt.Sprintf("flood %d due at once, rate_limit %d/s", n, limit),
		Count: n, Seconds: took.Seconds(), Rate: float64(len(lat)-1) / took.Seconds(), Latency: distOf(lat),
		Lost: intp(lost), Dups: intp(dups), Early: intp(early),
		Extra: map[string]any{"rate_vs_limit_pct": math.Round(1000*(float64(len(lat)-1)/took.Seconds()/float64(limit)-1)) / 10}})

	// A receiver that takes 5 s a call, limited to 10 calls at once.
	slow, fast := b.topic("slow"), b.topic("fast")
	if err := b.putTopic(ctx, slow, `{"max_in_flight": 10, "callback_timeout_ms": 10000, "lease_ms": 30000}`); err != nil {
		return nil, err
	}
	dues := make([]time.Time, 100)
	for i := range dues {
		dues[i] = time.Now().Add(fireLead)
	}
	b.recv.mostAsleep.Store(0)
	if _, err := b.scheduleBatchTo(ctx, slow, b.recv.url+"?sleep_ms=5000", dues); err != nil {
		return nil, err
	}
	ids, errs = b.steady(ctx, fast, steadyRate, alone)
	b.recv.waitArrived(ctx, ids, time.Now().Add(fireLead+30*time.Second))
	report(fmt.Sprintf("fast %d/s beside a 5 s receiver", steadyRate), ids, errs, alone,
		map[string]any{"slow_calls_at_once_max": b.recv.mostAsleep.Load(), "slow_max_in_flight": 10})
	return res, nil
}
