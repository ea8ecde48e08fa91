// This file owns how the cluster's loops wait and log when a dependency
// fails: the retry timings, backoff with jitter, and the rate limit of
// their warnings.

package slots

import (
	"context"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"time"

	"github.com/toc-project/toc/internal/ratelog"
)

// Timing of a Cluster's retries and shutdown.
const (
	retryMin       = 50 * time.Millisecond
	retryMax       = 2 * time.Second
	sessionRetries = 5 * time.Second // the most Run waits between sessions
	topicTimeout   = 10 * time.Second
	deleteTimeout  = time.Second
	logEvery       = 10 * time.Second // rate limit of repeated warnings
)

// backoff is an exponential delay with jitter.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(lo, hi time.Duration) *backoff { return &backoff{min: lo, max: hi, next: lo} }

// delay returns the next delay, in [d/2, d], and doubles d up to max.
func (b *backoff) delay() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d/2 + mathrand.N(d/2+1)
}

func (b *backoff) reset() { b.next = b.min }

// wait sleeps the next delay; false if ctx was done first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// warn logs msg and err under key, at most once per logEvery (see
// ratelog.Limiter), with the dependency that failed as "dep": the task
// store for the keys that read topics, ZooKeeper for the rest.
func (c *Cluster) warn(key, msg string, err error) {
	dep := "zookeeper"
	if key == "topics" || key == "leader-topics" {
		dep = "task_store"
	}
	c.limit.Log(c.log.Warn, key, msg, "dep", dep, "err", err)
}

// zkLogger sends the client library's messages to slog at debug level,
// rate-limited per message format: its reconnect loop logs each attempt.
type zkLogger struct {
	log   *slog.Logger
	limit *ratelog.Limiter
}

func (l zkLogger) Printf(format string, args ...any) {
	l.limit.Log(l.log.Debug, "zk: "+format, "zookeeper client", "dep", "zookeeper", "detail", fmt.Sprintf(format, args...))
}
