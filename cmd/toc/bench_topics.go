package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

const (
	// topicsSettle is how long the topics scenario lets toc settle after
	// creating the topics, before it samples toc at rest.
	topicsSettle = 3 * time.Second
	// topicsSpread spreads the due times of the topics scenario's jobs
	// over fireLead to fireLead+topicsSpread after they are sent.
	topicsSpread = time.Second
	// topicsCreators is how many PUT /v1/topics/{topic} run at once.
	topicsCreators = 32
)

// topics measures what many topics cost: first N idle topics of S slots
// each (toc's CPU and memory at rest), then a steady rate of jobs spread
// uniformly over them (lateness, losses, CPU under load), unless the rate
// is 0.
func (b *bench) topics(ctx context.Context) ([]result, error) {
	n, slots := b.cfg.topics, b.cfg.topicSlots
	prefix := b.topic("many")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	t0 := time.Now()
	if err := b.createTopics(ctx, names, slots); err != nil {
		return nil, err
	}
	created := time.Since(t0)
	fmt.Fprintf(b.log, "topics: %d topics of %d slots created in %.1f s; idle for %v\n",
		n, slots, created.Seconds(), topicsSettle+b.cfg.idleWindow)
	if err := pause.For(ctx, topicsSettle); err != nil {
		return nil, err
	}
	m := b.mark(ctx)
	if err := pause.For(ctx, b.cfg.idleWindow); err != nil {
		return nil, err
	}
	idle := b.useSince(ctx, m)
	idle["create_seconds"] = math.Round(created.Seconds()*10) / 10
	idle["topic_slots"] = slots
	res := []result{{Scenario: "topics", Name: fmt.Sprintf("topics %d idle, %d slots each", n, slots), Count: n,
		Seconds: b.cfg.idleWindow.Seconds(), Rate: float64(n) / created.Seconds(), Extra: idle}}

	rate, d := b.cfg.topicsRate, b.cfg.topicsDuration
	if rate == 0 {
		return res, nil
	}
	m = b.mark(ctx)
	ids, errs := b.steadyOver(ctx, names, rate, d, topicsSpread, fireLead)
	load := b.useSince(ctx, m)
	drainStart := time.Now()
	b.recv.waitArrived(ctx, ids, drainStart.Add(fireLead+topicsSpread+b.cfg.topicsDrain))
	load["drain_seconds"] = math.Round(time.Since(drainStart).Seconds()*10) / 10
	load["drain_limit_seconds"] = (fireLead + topicsSpread + b.cfg.topicsDrain).Seconds()
	return append(res, b.steadyResult("topics", fmt.Sprintf("topics %d/s over %d topics", rate, n), ids, errs, d, load)), nil
}

// createTopics creates the topics names with slots slots each, with
// topicsCreators requests at once.
func (b *bench) createTopics(ctx context.Context, names []string, slots int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	body := fmt.Appendf(nil, `{"slots": %d}`, slots)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range topicsCreators {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(names) && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
				if _, err := b.send(ctx, "PUT", "/v1/topics/"+names[i], body, nil); err != nil {
					cancel(fmt.Errorf("create topic %s: %w", names[i], err))
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
