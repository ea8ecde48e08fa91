package ratelog_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/ratelog"
)

// clock is a fake clock that tests move by hand, between log calls.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) advance(d time.Duration) { c.now = c.now.Add(d) }

// newLogger returns a logger through a rate-limiting handler over a text
// handler without times, its output, and its clock.
func newLogger(tb testing.TB, cfg ratelog.Config) (*slog.Logger, *bytes.Buffer, *clock) {
	tb.Helper()
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = c.Now
	var buf bytes.Buffer
	text := slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})
	return slog.New(ratelog.New(text, cfg)), &buf, c
}

// step is one log call at an offset from the previous step.
type step struct {
	after time.Duration
	level slog.Level
	msg   string
	args  []any
}

func warn(after time.Duration, msg string, args ...any) step {
	return step{after: after, level: slog.LevelWarn, msg: msg, args: args}
}

func TestHandler(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name  string
		cfg   ratelog.Config
		steps []step
		want  []string // lines written, without level= and time
	}{
		{
			name:  "first passes, repeats within the interval are dropped",
			steps: []step{warn(0, "redis down"), warn(s, "redis down"), warn(8*s, "redis down")},
			want:  []string{`msg="redis down"`},
		},
		{
			name: "after the interval the next one passes with the count",
			steps: []step{warn(0, "redis down"), warn(s, "redis down"), warn(s, "redis down"),
				warn(8*s, "redis down"), warn(s, "redis down")},
			want: []string{`msg="redis down"`, `msg="redis down" suppressed=2`},
		},
		{
			name:  "nothing dropped: no count",
			steps: []step{warn(0, "slow"), warn(10*s, "slow")},
			want:  []string{`msg=slow`, `msg=slow`},
		},
		{
			name:  "another message is another repeat",
			steps: []step{warn(0, "a"), warn(0, "b"), warn(s, "a")},
			want:  []string{`msg=a`, `msg=b`},
		},
		{
			name: "the dep value tells repeats apart",
			steps: []step{warn(0, "call failed", "dep", "redis"), warn(0, "call failed", "dep", "mysql"),
				warn(0, "call failed", "dep", "redis"), warn(0, "call failed")},
			want: []string{`msg="call failed" dep=redis`, `msg="call failed" dep=mysql`, `msg="call failed"`},
		},
		{
			name:  "other attributes do not",
			steps: []step{warn(0, "call failed", "job", 1), warn(0, "call failed", "job", 2)},
			want:  []string{`msg="call failed" job=1`},
		},
		{
			name:  "a key of one's own",
			cfg:   ratelog.Config{Key: "host"},
			steps: []step{warn(0, "open", "host", "a"), warn(0, "open", "host", "b"), warn(0, "open", "host", "a")},
			want:  []string{`msg=open host=a`, `msg=open host=b`},
		},
		{
			name:  "an interval of one's own",
			cfg:   ratelog.Config{Interval: time.Minute},
			steps: []step{warn(0, "x"), warn(30*s, "x"), warn(30*s, "x")},
			want:  []string{`msg=x`, `msg=x suppressed=1`},
		},
		{
			name: "errors are limited like warnings",
			steps: []step{{level: slog.LevelError, msg: "e"}, {level: slog.LevelError, msg: "e"},
				{after: 10 * s, level: slog.LevelError, msg: "e"}},
			want: []string{`msg=e`, `msg=e suppressed=1`},
		},
		{
			name: "info and debug pass through",
			steps: []step{{level: slog.LevelInfo, msg: "i"}, {level: slog.LevelInfo, msg: "i"},
				{level: slog.LevelDebug, msg: "d"}, {level: slog.LevelDebug, msg: "d"}},
			want: []string{`msg=i`, `msg=i`, `msg=d`, `msg=d`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, buf, c := newLogger(t, tt.cfg)
			for _, st := range tt.steps {
				c.advance(st.after)
				log.Log(t.Context(), st.level, st.msg, st.args...)
			}
			if got := lines(buf); !equal(got, tt.want) {
				t.Errorf("logged\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// lines returns the lines of buf without their level= field.
func lines(buf *bytes.Buffer) []string {
	var out []string
	for l := range strings.Lines(buf.String()) {
		_, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
		out = append(out, rest)
	}
	return out
}

func equal(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) && len(a) == len(b) }

// TestWithAttrsAndGroup: derived handlers keep their attributes and group,
// read the key from WithAttrs, and share the counts of their parent.
func TestWithAttrsAndGroup(t *testing.T) {
	log, buf, c := newLogger(t, ratelog.Config{})
	redis := log.With("dep", "redis")
	mysql := log.With("dep", "mysql")
	redis.Warn("call failed")
	mysql.Warn("call failed")
	redis.Warn("call failed")                 // dropped: same dep as the first
	log.Warn("call failed", "dep", "redis")   // dropped: same repeat, shared counts
	log.WithGroup("g").Warn("other", "n", 1)  // passes, grouped
	log.With("req", 7).Warn("call failed")    // passes: no dep
	log.With("req", 8).Warn("call failed")    // dropped: per-request loggers share counts
	redis.With("req", 9).Warn("call failed")  // dropped: dep inherited
	redis.Warn("call failed", "dep", "mysql") // dropped: the record's dep wins
	redis.WithGroup("g").Warn("call failed")  // dropped: dep from before the group
	c.advance(ratelog.DefaultInterval)
	redis.WithGroup("g").Warn("call failed", "n", 2)
	want := []string{
		`msg="call failed" dep=redis`,
		`msg="call failed" dep=mysql`,
		`msg=other g.n=1`,
		`msg="call failed" req=7`,
		`msg="call failed" dep=redis g.n=2 g.suppressed=4`,
	}
	if got := lines(buf); !equal(got, want) {
		t.Errorf("logged\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestEnabled: the wrapped handler's level decides.
func TestEnabled(t *testing.T) {
	h := ratelog.New(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}), ratelog.Config{})
	ctx := t.Context()
	if h.Enabled(ctx, slog.LevelInfo) || !h.Enabled(ctx, slog.LevelWarn) {
		t.Errorf("Enabled(Info) = %v, Enabled(Warn) = %v; want false, true", h.Enabled(ctx, slog.LevelInfo), h.Enabled(ctx, slog.LevelWarn))
	}
}

// TestConcurrent: of many goroutines warning at once within one interval,
// exactly one record passes; after it, one more carries every other count.
func TestConcurrent(t *testing.T) {
	log, buf, c := newLogger(t, ratelog.Config{})
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			log.Warn("busy", "dep", "redis", "i", i%2)
			log.With("dep", "redis").WithGroup("g").Info("info passes")
		})
	}
	wg.Wait()
	c.advance(ratelog.DefaultInterval)
	log.Warn("busy", "dep", "redis")
	got := lines(buf)
	var warns, infos int
	for _, l := range got {
		switch {
		case strings.HasPrefix(l, "msg=busy"):
			warns++
		case strings.HasPrefix(l, `msg="info passes"`):
			infos++
		}
	}
	if warns != 2 || infos != n || got[len(got)-1] != fmt.Sprintf("msg=busy dep=redis suppressed=%d", n-1) {
		t.Errorf("%d warnings and %d infos passed, last %q; want 2, %d, suppressed=%d", warns, infos, got[len(got)-1], n, n-1)
	}
}

// TestBounded: past the tracked limit, new repeats pass rather than grow
// memory, and old ones that have nothing to report are forgotten.
func TestBounded(t *testing.T) {
	log, buf, c := newLogger(t, ratelog.Config{})
	ctx := t.Context()
	for i := range 5000 {
		log.WarnContext(ctx, fmt.Sprintf("m%d", i))
	}
	log.Warn("m4999") // beyond the limit: not tracked, passes again
	log.Warn("m0")    // tracked: dropped
	c.advance(ratelog.DefaultInterval)
	log.Warn("new") // the expired ones are forgotten; this one is tracked
	log.Warn("new")
	got := lines(buf)
	if len(got) != 5002 || got[5000] != "msg=m4999" || got[5001] != "msg=new" {
		t.Errorf("%d lines, from 5000 on %q; want 5002, m4999 then new", len(got), got[min(5000, len(got)):])
	}
}

func TestLimiterPerKey(t *testing.T) {
	now := time.Unix(1000, 0)
	l := ratelog.NewLimiter(10*time.Second, func() time.Time { return now })
	steps := []struct {
		after      time.Duration
		key        string
		pass       bool
		suppressed int
	}{
		{0, "zk", true, 0},
		{time.Second, "zk", false, 0},
		{0, "topics", true, 0}, // another dependency has its own interval
		{time.Second, "zk", false, 0},
		{8 * time.Second, "zk", true, 2}, // 10 s after the first: reports the two held back
		{0, "zk", false, 0},
		{10 * time.Second, "zk", true, 1},
		{10 * time.Second, "zk", true, 0},
		{0, "topics", true, 0},
	}
	for i, st := range steps {
		now = now.Add(st.after)
		if pass, n := l.Allow(st.key); pass != st.pass || n != st.suppressed {
			t.Errorf("step %d: Allow(%q) = %v, %d; want %v, %d", i, st.key, pass, n, st.pass, st.suppressed)
		}
	}
}

func TestLimiterLogReportsSuppressed(t *testing.T) {
	now := time.Unix(1000, 0)
	l := ratelog.NewLimiter(time.Minute, func() time.Time { return now })
	var lines []string
	emit := func(msg string, args ...any) { lines = append(lines, fmt.Sprint(append([]any{msg}, args...)...)) }
	for range 4 {
		l.Log(emit, "publish", "publish failed", "err", "boom")
	}
	now = now.Add(time.Minute)
	l.Log(emit, "publish", "publish failed", "err", "boom")
	want := []string{
		fmt.Sprint("publish failed", "err", "boom"),
		fmt.Sprint("publish failed", "err", "boom", ratelog.SuppressedKey, 3),
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
}

// Unlimited's logger passes every record, repeats within the interval
// included, to the handler the limited one wraps, with its attributes.
func TestUnlimited(t *testing.T) {
	log, buf, _ := newLogger(t, ratelog.Config{})
	log = log.With("path", "tokens.json")
	for _, reason := range []string{"bad role", "bad role", "truncated"} {
		ratelog.Unlimited(log).Error("tokens file refused", "err", reason)
	}
	if got := strings.Count(buf.String(), "tokens file refused"); got != 3 {
		t.Errorf("%d records passed, want 3:\n%s", got, buf.String())
	}
	if !strings.Contains(buf.String(), "path=tokens.json") {
		t.Errorf("the logger's attributes were lost:\n%s", buf.String())
	}
	plain := slog.New(slog.DiscardHandler)
	if ratelog.Unlimited(plain) != plain {
		t.Error("a logger without a limit is not returned as it is")
	}
}
