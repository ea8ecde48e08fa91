// This file owns how the cluster's loops wait and log when a dependency
// fails: the retry timings, backoff with jitter, and the rate limit of
// their warnings.

package slots

import (
	"context"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"time"
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

// warn logs msg and err under key, rate-limited (see logLimiter).
func (c *Cluster) warn(key, msg string, err error) {
	c.limit.log(c.log.Warn, key, msg, "err", err)
}

// logLimiter lets a message through per key at most once per every, and
// counts the ones it holds back. A key names one failing dependency or
// condition, so a loop that fails on every pass logs one line per interval.
type logLimiter struct {
	every time.Duration
	now   func() time.Time // time.Now when nil
	mu    sync.Mutex
	keys  map[string]limitState
}

type limitState struct {
	last       time.Time // when a message under the key last went through
	suppressed int       // messages held back since
}

// allow reports whether a message under key may go through now and, if
// so, how many under key were held back since the last one.
func (l *logLimiter) allow(key string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	st, seen := l.keys[key]
	if seen && now.Sub(st.last) < l.every {
		st.suppressed++
		l.keys[key] = st
		return false, 0
	}
	if l.keys == nil {
		l.keys = make(map[string]limitState)
	}
	l.keys[key] = limitState{last: now}
	return true, st.suppressed
}

// log passes msg and args to emit (a logger's Warn, Info or Debug) if
// allow lets key through, adding "suppressed", the count of messages held
// back since the last one, when there were any.
func (l *logLimiter) log(emit func(msg string, args ...any), key, msg string, args ...any) {
	ok, n := l.allow(key)
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	emit(msg, args...)
}

// zkLogger sends the client library's messages to slog at debug level,
// rate-limited per message format: its reconnect loop logs each attempt.
type zkLogger struct {
	log   *slog.Logger
	limit *logLimiter
}

func (l zkLogger) Printf(format string, args ...any) {
	l.limit.log(l.log.Debug, "zk: "+format, "zookeeper client", "detail", fmt.Sprintf(format, args...))
}
