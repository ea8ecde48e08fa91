// The hostile scenario: what a client with a valid token can do to
// everyone else's firing by creating topics.

package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// hostileBatch is how many topics one of the hostile client's batch calls
// creates: one job each, the largest batch toc takes.
const hostileBatch = 1000

// hostile measures a steady topic's lateness (200 jobs/s) alone, then
// while another client creates --hostile-topics topics on first use in
// batch calls of 1,000 jobs, one new topic a job, and then after it.
// The hostile jobs are due ten minutes on (inside the default horizon,
// so each topic gets a timer in Redis) and do not fire during the run.
// Past toc's --max-topics the calls are refused, which the result counts.
func (b *bench) hostile(ctx context.Context) ([]result, error) {
	const steadyRate = 200
	n, phase := b.cfg.hostileTopics, b.cfg.duration
	steadyT, prefix := b.topic("steady"), b.topic("hostile")
	var res []result
	steady := func(name string, d time.Duration, extra map[string]any) {
		ids, errs := b.steady(ctx, steadyT, steadyRate, d)
		b.recv.waitArrived(ctx, ids, time.Now().Add(fireLead+30*time.Second))
		res = append(res, b.steadyResult("hostile", name, ids, errs, d, extra))
	}

	steady(fmt.Sprintf("steady %d/s alone", steadyRate), phase, nil)

	m := b.mark(ctx)
	var (
		wg                sync.WaitGroup
		created, refused  int
		calls, failed     int
		floodStart, ended time.Time
	)
	wg.Go(func() {
		floodStart = time.Now()
		due := floodStart.Add(10 * time.Minute)
		for first := 0; first < n && ctx.Err() == nil; first += hostileBatch {
			k := min(hostileBatch, n-first)
			dues := make([]time.Time, k)
			for i := range dues {
				dues[i] = due
			}
			calls++
			ids, err := b.postBatch(ctx, b.recv.url, dues, func(i int) string { return fmt.Sprintf("%s-%d", prefix, first+i) })
			if err != nil {
				failed++
				refused += k
				continue
			}
			created += len(ids)
		}
		ended = time.Now()
	})
	steady(fmt.Sprintf("steady %d/s while %d topics are created", steadyRate, n), 2*phase, nil)
	wg.Wait()
	use := b.useSince(ctx, m)
	took := ended.Sub(floodStart)
	use["batch_calls"], use["calls_refused"], use["topics_refused"] = calls, failed, refused
	use["create_seconds"] = math.Round(took.Seconds()*10) / 10
	res = append(res, result{Scenario: "hostile", Name: fmt.Sprintf("%d topics created in batch calls of %d", n, hostileBatch),
		Count: created, Errors: failed, Seconds: took.Seconds(), Rate: float64(created) / took.Seconds(), Extra: use})

	steady(fmt.Sprintf("steady %d/s after", steadyRate), phase, nil)
	return res, nil
}
