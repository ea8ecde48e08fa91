// The spike scenario: jobs due at one instant with a flexible window,
// under a topic's rate limit (issue 18).

package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// spike schedules spikeJobs jobs due at one instant, each with a window
// of spikeWindow, in a topic limited to spikeRate/s, and measures where in
// its window each fired: none may fire early or after its window's end.
func (b *bench) spike(ctx context.Context) ([]result, error) {
	n, window, limit := b.cfg.spikeJobs, b.cfg.spikeWindow, b.cfg.spikeRate
	topic := b.topic("spike")
	if err := b.putTopic(ctx, topic, fmt.Sprintf(`{"rate_limit": %d}`, limit)); err != nil {
		return nil, err
	}
	due := time.Now().Add(3*time.Second + time.Duration(n)*time.Second/20000).Truncate(time.Millisecond)
	ids := make([]string, n)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		mu      sync.Mutex
		loadErr error
	)
	for range 4 {
		wg.Go(func() {
			for {
				start := int(next.Add(1000)) - 1000
				if start >= n || ctx.Err() != nil {
					return
				}
				end := min(n, start+1000)
				got, err := b.postWindowed(ctx, topic, due, window, end-start)
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
	if loadErr != nil {
		return nil, loadErr
	}
	b.recv.waitArrived(ctx, ids, due.Add(window+time.Minute))
	lat, lost, dups, early, last := b.recv.outcome(ids)
	outside := 0
	for _, d := range lat {
		if d > window {
			outside++
		}
	}
	slices.Sort(lat)
	return []result{{Scenario: "spike", Name: fmt.Sprintf("%d due at once, window %v, rate_limit %d/s", n, window, limit),
		Count: n, Seconds: last.Sub(due).Seconds(), Latency: distOf(lat),
		Lost: intp(lost), Dups: intp(dups), Early: intp(early),
		Extra: map[string]any{"outside_window": outside, "window_ms": window.Milliseconds()}}}, nil
}

// postWindowed schedules n jobs of topic due at due with window w in one
// batch, and returns their ids.
func (b *bench) postWindowed(ctx context.Context, topic string, due time.Time, w time.Duration, n int) ([]string, error) {
	var buf, one bytes.Buffer
	buf.WriteString(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		one.Reset()
		jobJSONTo(&one, topic, due, b.recv.url)
		j := bytes.TrimSuffix(one.Bytes(), []byte("}"))
		buf.Write(j)
		fmt.Fprintf(&buf, `,"window_ms":%d}`, w.Milliseconds())
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
