// Package ratelog keeps a repeating warning from flooding the log: it wraps
// a [slog.Handler] so that a record at Warn or above passes at most once per
// interval for the same message and the same value of one key (default
// "dep", the dependency that failed).
//
// # What passes
//
//   - Records below Warn (Info, Debug) always pass.
//   - The first Warn or Error of a message and key value passes. Others
//     with the same message and key value are dropped until the interval
//     has passed since the last one that passed; then the next one passes
//     and carries suppressed=N, the count dropped in between.
//   - The key's value is read from the record's attributes, else from those
//     given to WithAttrs; groups are not looked into, and a record without
//     the key is told apart by its message alone.
//
// Every handler derived with WithAttrs or WithGroup shares the counts of
// the one it came from, so a logger built per request is limited too. The
// handler is safe for concurrent use; its clock is injectable for tests.
package ratelog

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"
)

const (
	// DefaultInterval is how often a repeating warning passes at most.
	DefaultInterval = 10 * time.Second
	// DefaultKey is the attribute whose value tells repeats apart, besides
	// the message.
	DefaultKey = "dep"
	// SuppressedKey is the attribute that carries the count of records
	// dropped since the last one that passed.
	SuppressedKey = "suppressed"
	// maxTracked bounds the message and key pairs held at once; past it,
	// records of new pairs pass unlimited rather than grow memory.
	maxTracked = 4096
)

// Config configures a Handler. The zero value is valid.
type Config struct {
	// Interval is the least time between two records that pass for the
	// same message and key value. Default DefaultInterval.
	Interval time.Duration
	// Key is the attribute whose value, with the message, identifies a
	// repeat. Default DefaultKey.
	Key string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Handler is a slog.Handler that rate-limits records at Warn and above and
// hands what passes to the handler it wraps.
type Handler struct {
	next slog.Handler
	key  string
	lim  *Limiter
	// keyVal is the key's value given to WithAttrs, if any.
	keyVal    string
	hasKeyVal bool
}

var _ slog.Handler = (*Handler)(nil)

// New wraps next.
func New(next slog.Handler, cfg Config) *Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{next: next, key: cmp.Or(cfg.Key, DefaultKey), lim: NewLimiter(cfg.Interval, cfg.Now)}
}

// Enabled reports whether the wrapped handler handles records at level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle passes r on unless it repeats a Warn or Error that passed less
// than the interval ago.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	rep := repeat{msg: r.Message, keyVal: h.keyVal, hasKeyVal: h.hasKeyVal}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == h.key {
			rep.keyVal, rep.hasKeyVal = a.Value.Resolve().String(), true
			return false
		}
		return true
	})
	pass, suppressed := h.lim.Allow(rep.String())
	if !pass {
		return nil
	}
	if suppressed > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int(SuppressedKey, suppressed))
	}
	return h.next.Handle(ctx, r)
}

// Unlimited returns a logger of l's handler without its rate limit, for
// records that are each an event to keep rather than the repeats of a
// loop (a tokens file refused on reload, with its reason): l itself when
// its handler is not a Handler.
func Unlimited(l *slog.Logger) *slog.Logger {
	if h, ok := l.Handler().(*Handler); ok {
		return slog.New(h.next)
	}
	return l
}

// WithAttrs returns a handler with attrs, sharing h's counts.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h2 := *h
	h2.next = h.next.WithAttrs(attrs)
	for _, a := range attrs {
		if a.Key == h.key {
			h2.keyVal, h2.hasKeyVal = a.Value.Resolve().String(), true
		}
	}
	return &h2
}

// WithGroup returns a handler with group name open, sharing h's counts.
func (h *Handler) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.next = h.next.WithGroup(name)
	return &h2
}

// repeat identifies records that are repeats of each other.
type repeat struct {
	msg       string
	keyVal    string
	hasKeyVal bool
}

// String is the repeat as a Limiter key.
func (r repeat) String() string {
	if !r.hasKeyVal {
		return r.msg
	}
	return r.msg + "\x00" + r.keyVal
}

// window is the state of one key: when it last passed and how many were
// dropped since.
type window struct {
	passed     time.Time
	suppressed int
}

// Limiter lets something through per key at most once per interval and
// counts what it holds back: the one rate limit behind Handler, and behind
// loops that limit their own lines (the ZooKeeper client's, at debug
// level). A key names one failing dependency or condition. It is safe for
// concurrent use.
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu   sync.Mutex
	seen map[string]*window
}

// NewLimiter returns a limiter of interval (default DefaultInterval) on
// the clock now (default time.Now).
func NewLimiter(interval time.Duration, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{interval: cmp.Or(interval, DefaultInterval), now: now, seen: map[string]*window{}}
}

// Allow reports whether something under key passes now and, if so, how
// many under key were held back since the last one passed.
func (l *Limiter) Allow(key string) (pass bool, suppressed int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.seen[key]
	if !ok {
		if len(l.seen) >= maxTracked {
			l.forget(now)
		}
		if len(l.seen) < maxTracked {
			l.seen[key] = &window{passed: now}
		}
		return true, 0
	}
	if now.Sub(w.passed) < l.interval {
		w.suppressed++
		return false, 0
	}
	suppressed = w.suppressed
	w.passed, w.suppressed = now, 0
	return true, suppressed
}

// Log passes msg and args to emit (a logger's Warn, Info or Debug) if
// Allow lets key through, adding SuppressedKey with the count held back
// since the last one when there were any.
func (l *Limiter) Log(emit func(msg string, args ...any), key, msg string, args ...any) {
	pass, n := l.Allow(key)
	if !pass {
		return
	}
	if n > 0 {
		args = append(args, SuppressedKey, n)
	}
	emit(msg, args...)
}

// forget drops the keys whose interval has passed with none dropped: the
// next one would pass anyway, with nothing to report.
func (l *Limiter) forget(now time.Time) {
	for key, w := range l.seen {
		if w.suppressed == 0 && now.Sub(w.passed) >= l.interval {
			delete(l.seen, key)
		}
	}
}
