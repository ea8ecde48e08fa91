package slots

import (
	"fmt"
	"testing"
	"time"
)

func TestLogLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &logLimiter{every: 10 * time.Second, now: func() time.Time { return now }}
	steps := []struct {
		after      time.Duration
		key        string
		ok         bool
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
		if ok, n := l.allow(st.key); ok != st.ok || n != st.suppressed {
			t.Errorf("step %d: allow(%q) = %v, %d; want %v, %d", i, st.key, ok, n, st.ok, st.suppressed)
		}
	}
}

func TestLogLimiterLogReportsSuppressed(t *testing.T) {
	now := time.Unix(1000, 0)
	l := &logLimiter{every: time.Minute, now: func() time.Time { return now }}
	var lines []string
	emit := func(msg string, args ...any) { lines = append(lines, fmt.Sprint(append([]any{msg}, args...)...)) }
	for range 4 {
		l.log(emit, "publish", "publish failed", "err", "boom")
	}
	now = now.Add(time.Minute)
	l.log(emit, "publish", "publish failed", "err", "boom")
	want := []string{
		fmt.Sprint("publish failed", "err", "boom"),
		fmt.Sprint("publish failed", "err", "boom", "suppressed", 3),
	}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Fatalf("logged %q, want %q", lines, want)
	}
}
