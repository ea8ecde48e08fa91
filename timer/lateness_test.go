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
