package timer

import (
	"testing"
	"time"
)

// Lateness counts fall in their buckets, leave the window after five
// minutes, and read back as percentiles by bucket bound.
func TestLatenessWindow(t *testing.T) {
	var l lateness
	t0 := time.Unix(6000, 0)
	for i := range 98 {
		l.observe(time.Duration(i%3)*time.Millisecond, t0) // 0, 1, 2 ms
	}
	l.observe(700*time.Millisecond, t0.Add(time.Minute))
	l.observe(2*time.Minute, t0.Add(2*time.Minute))
	c := l.counts(t0.Add(2 * time.Minute))
	if c == nil || c[0] != 33 || c[1] != 33 || c[2] != 32 || c[9] != 1 || c[15] != 1 {
		t.Fatalf("counts %v", c)
	}
	if p, ok := LatenessQuantile(c, .5); !ok || p != 2*time.Millisecond {
		t.Errorf("p50 = %v, %v; want the 2 ms bucket", p, ok)
	}
	if p, _ := LatenessQuantile(c, .99); p != time.Second {
		t.Errorf("p99 = %v, want the 1 s bucket", p)
	}
	if p, _ := LatenessQuantile(c, .999); p != time.Minute {
		t.Errorf("p99.9 = %v, want 60 s and more", p)
	}
	// Five minutes on, the first minute's counts are gone.
	if c := l.counts(t0.Add(5 * time.Minute)); c == nil || c[0] != 0 || c[9] != 1 {
		t.Errorf("counts after 5 min %v", c)
	}
	if c := l.counts(t0.Add(time.Hour)); c != nil {
		t.Errorf("counts an hour on %v, want none", c)
	}
	if _, ok := LatenessQuantile(nil, .5); ok {
		t.Error("a percentile of nothing")
	}
}

// recentLate keeps the largest lateness of its tick and the one before,
// and forgets older ones.
func TestRecentLate(t *testing.T) {
	var r recentLate
	at := time.UnixMilli(1_800_000_000_000)
	if got := r.max(at); got != 0 {
		t.Fatalf("nothing observed: %v", got)
	}
	r.observe(7*time.Millisecond, at)
	r.observe(2*time.Millisecond, at.Add(10*time.Millisecond))
	for _, c := range []struct {
		after time.Duration
		want  time.Duration
	}{{0, 7 * time.Millisecond}, {recentTick, 7 * time.Millisecond}, {2 * recentTick, 0}, {time.Hour, 0}} {
		if got := r.max(at.Add(c.after)); got != c.want {
			t.Errorf("max %v after = %v, want %v", c.after, got, c.want)
		}
	}
	r.observe(time.Millisecond, at.Add(recentTick))
	if got := r.max(at.Add(recentTick)); got != 7*time.Millisecond {
		t.Errorf("the tick before still counts: %v", got)
	}
	r.observe(time.Millisecond, at.Add(3*recentTick))
	if got := r.max(at.Add(3 * recentTick)); got != time.Millisecond {
		t.Errorf("two ticks on, the old ones are gone: %v", got)
	}
}
