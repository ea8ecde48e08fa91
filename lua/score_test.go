package lua

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestScore(t *testing.T) {
	y2400 := time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	tests := []struct {
		ms      int64
		attempt int
		want    float64
		err     bool
	}{
		{ms: 0, attempt: 0, want: 0},
		{ms: 0, attempt: 127, want: 127},
		{ms: 1, attempt: 0, want: 128},
		{ms: y2400, attempt: 3, want: float64(y2400*128 + 3)},
		{ms: MaxMillis, attempt: 0, want: 1<<53 - 128},
		{ms: MaxMillis, attempt: MaxAttempt, want: 1<<53 - 1},
		{ms: -1, err: true},
		{ms: MaxMillis + 1, err: true},
		{ms: math.MinInt64, err: true},
		{ms: math.MaxInt64, err: true},
		{ms: 0, attempt: -1, err: true},
		{ms: 0, attempt: 128, err: true},
	}
	for _, tt := range tests {
		got, err := Score(tt.ms, tt.attempt)
		if tt.err {
			if !errors.Is(err, ErrRange) {
				t.Errorf("Score(%d, %d) = %v, %v; want ErrRange", tt.ms, tt.attempt, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Score(%d, %d) = %v, %v; want %v", tt.ms, tt.attempt, got, err, tt.want)
			continue
		}
		ms, attempt, err := SplitScore(got)
		if err != nil || ms != tt.ms || attempt != tt.attempt {
			t.Errorf("SplitScore(%v) = %d, %d, %v; want %d, %d", got, ms, attempt, err, tt.ms, tt.attempt)
		}
	}
	if MaxMillis != 1<<46-1 {
		t.Errorf("MaxMillis = %d, want 2^46-1", int64(MaxMillis))
	}
	if y := time.UnixMilli(MaxMillis).UTC().Year(); y != 4199 {
		t.Errorf("MaxMillis is in year %d, want 4199 as documented", y)
	}
}

func TestSplitScoreRejects(t *testing.T) {
	for _, s := range []float64{-1, -0.5, 0.5, 1 << 53, 1<<53 + 2, math.Inf(1), math.Inf(-1), math.NaN(), 128.25} {
		if ms, a, err := SplitScore(s); !errors.Is(err, ErrRange) {
			t.Errorf("SplitScore(%v) = %d, %d, %v; want ErrRange", s, ms, a, err)
		}
	}
}

// FuzzScore checks that Score accepts exactly the documented range, that
// SplitScore inverts it, and that scores order by ms then attempt.
func FuzzScore(f *testing.F) {
	f.Add(int64(0), 0, int64(0), 1)
	f.Add(int64(MaxMillis), 127, int64(MaxMillis-1), 127)
	f.Add(int64(1<<46), 0, int64(-1), 0)
	f.Add(int64(5), 128, int64(5), -1)
	f.Fuzz(func(t *testing.T, ms1 int64, a1 int, ms2 int64, a2 int) {
		s1, err1 := Score(ms1, a1)
		s2, err2 := Score(ms2, a2)
		in1 := ms1 >= 0 && ms1 <= MaxMillis && a1 >= 0 && a1 <= MaxAttempt
		in2 := ms2 >= 0 && ms2 <= MaxMillis && a2 >= 0 && a2 <= MaxAttempt
		if (err1 == nil) != in1 || (err2 == nil) != in2 {
			t.Fatalf("Score accepted out of range or rejected in range: (%d,%d) %v, (%d,%d) %v", ms1, a1, err1, ms2, a2, err2)
		}
		if !in1 || !in2 {
			return
		}
		for _, c := range []struct {
			s  float64
			ms int64
			a  int
		}{{s1, ms1, a1}, {s2, ms2, a2}} {
			ms, a, err := SplitScore(c.s)
			if err != nil || ms != c.ms || a != c.a {
				t.Fatalf("SplitScore(Score(%d, %d)) = %d, %d, %v", c.ms, c.a, ms, a, err)
			}
			if c.s >= 1<<53 || float64(int64(c.s)) != c.s {
				t.Fatalf("score %v of (%d, %d) is not exact", c.s, c.ms, c.a)
			}
		}
		less := ms1 < ms2 || (ms1 == ms2 && a1 < a2)
		if (s1 < s2) != less {
			t.Fatalf("order: (%d,%d)=%v vs (%d,%d)=%v", ms1, a1, s1, ms2, a2, s2)
		}
		// "Due at or before ms2" holds exactly when ms1 <= ms2.
		bound, err := ScoreBound(ms2)
		if err != nil {
			t.Fatal(err)
		}
		if b := float64(ms2*128 + 127); bound != formatScore(int64(b)) || (s1 <= b) != (ms1 <= ms2) {
			t.Fatalf("bound %s of %d misplaces (%d, %d)", bound, ms2, ms1, a1)
		}
	})
}

func TestFormatParseScore(t *testing.T) {
	for _, c := range []struct {
		ms      int64
		attempt int
		text    string
	}{{0, 0, "0"}, {1, 3, "131"}, {MaxMillis, MaxAttempt, "9007199254740991"}} {
		got, err := FormatScore(c.ms, c.attempt)
		if err != nil || got != c.text {
			t.Errorf("FormatScore(%d, %d) = %q, %v; want %q", c.ms, c.attempt, got, err, c.text)
		}
		if ms, a, err := ParseScore(c.text); err != nil || ms != c.ms || a != c.attempt {
			t.Errorf("ParseScore(%q) = %d, %d, %v", c.text, ms, a, err)
		}
	}
	if _, err := FormatScore(-1, 0); !errors.Is(err, ErrRange) {
		t.Errorf("FormatScore(-1, 0) = %v, want ErrRange", err)
	}
	for _, s := range []string{"", "-1", "+1", "01", "1.0", "1e3", " 1", "9007199254740992", "99999999999999999999"} {
		if _, _, err := ParseScore(s); !errors.Is(err, ErrRange) {
			t.Errorf("ParseScore(%q) = %v, want ErrRange", s, err)
		}
	}
}
