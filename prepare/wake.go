package prepare

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Waker timing.
const (
	// wakeMinBackoff and wakeMaxBackoff bound the wait before Wakes
	// subscribes again after an error; the wait doubles from the first to
	// the second while errors repeat, which also paces the warnings.
	wakeMinBackoff = 50 * time.Millisecond
	wakeMaxBackoff = 5 * time.Second
	// wakePingEvery is how long a quiet subscription waits before it
	// pings the server; a second quiet period without even the pong means
	// the connection is dead.
	wakePingEvery = 30 * time.Second
)

// Wakes implements timer.Waker: it subscribes to the wake channel and calls
// fn, from its own goroutine, for each well-formed "<topic> <slot> <due
// ms>" message, until ctx is done; then it returns nil. fn should return
// quickly: messages wait while it runs. On any other error Wakes logs a
// warning and subscribes again after a backoff. Messages published while
// it is not subscribed are lost: wake-ups are hints. After a
// subscription was lost, Wakes calls fn with a zero Wake once subscribed
// again, and the worker rescans its slots.
func (q *Index) Wakes(ctx context.Context, fn func(timer.Wake)) error {
	backoff := wakeMinBackoff
	resubscribed := false
	for {
		heard, err := q.listen(ctx, fn, resubscribed)
		resubscribed = resubscribed || heard
		if ctx.Err() != nil {
			return nil
		}
		if heard {
			backoff = wakeMinBackoff
		}
		q.cfg.Logger.WarnContext(ctx, "wake subscription failed; subscribing again",
			"channel", q.cfg.WakeChannel, "retry_in", backoff, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, wakeMaxBackoff)
	}
}

// listen runs one subscription until it fails or ctx is done. heard
// reports whether the subscription was confirmed.
//
// When resync is set (an earlier subscription was lost), it calls fn with
// a zero Wake once subscribed: wake-ups published meanwhile were lost, and
// the worker rescans its slots.
func (q *Index) listen(ctx context.Context, fn func(timer.Wake), resync bool) (heard bool, err error) {
	ps := q.client.Subscribe(ctx)
	defer ps.Close()
	// Receive does not watch ctx: closing the subscription interrupts it.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()

	if err := ps.Subscribe(ctx, q.cfg.WakeChannel); err != nil {
		return false, fmt.Errorf("subscribe %s: %w", q.cfg.WakeChannel, err)
	}
	quiet := 0
	for {
		msg, err := ps.ReceiveTimeout(ctx, wakePingEvery)
		if isTimeout(err) && quiet == 0 {
			quiet++
			if err := ps.Ping(ctx); err != nil {
				return heard, fmt.Errorf("ping %s: %w", q.cfg.WakeChannel, err)
			}
			continue
		}
		if err != nil {
			return heard, fmt.Errorf("receive on %s: %w", q.cfg.WakeChannel, err)
		}
		quiet = 0
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && !heard {
				heard = true
				if resync {
					fn(timer.Wake{})
				}
				if q.subscribed != nil {
					q.subscribed()
				}
			}
		case *redis.Message:
			if w, ok := ParseWake(m.Payload); ok {
				fn(w)
			}
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ParseWake parses a wake message, "<topic> <slot> <due ms>", as the add
// script publishes it. It reports false for anything else.
func ParseWake(s string) (timer.Wake, bool) {
	topic, rest, ok := strings.Cut(s, " ")
	if !ok || !slots.ValidTopic(topic) {
		return timer.Wake{}, false
	}
	slotStr, msStr, ok := strings.Cut(rest, " ")
	if !ok {
		return timer.Wake{}, false
	}
	slot, err := strconv.Atoi(slotStr)
	if err != nil || slot < 0 || slot >= slots.Max || strconv.Itoa(slot) != slotStr {
		return timer.Wake{}, false
	}
	ms, err := strconv.ParseInt(msStr, 10, 64)
	if err != nil || ms < 0 || ms > lua.MaxMillis || strconv.FormatInt(ms, 10) != msStr {
		return timer.Wake{}, false
	}
	return timer.Wake{Slot: timer.Slot{Topic: topic, Index: slot}, DueAt: timer.TimeOf(ms)}, true
}
