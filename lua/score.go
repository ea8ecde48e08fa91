package lua

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Limits of the score encoding.
const (
	// AttemptBits is how many low bits of a score hold the attempt.
	AttemptBits = 7
	// MaxAttempt is the highest attempt count a score can hold.
	MaxAttempt = 1<<AttemptBits - 1
	// MaxMillis is the highest Unix millisecond a score can hold, so that
	// every score stays below 2^53, where float64 is exact.
	MaxMillis = 1<<(53-AttemptBits) - 1
)

// ErrRange means a time or an attempt count does not fit a score.
var ErrRange = errors.New("out of score range")

// Score encodes ms and attempt as a sorted-set score: ms*128 + attempt.
// It returns an error wrapping ErrRange when ms is negative or above
// MaxMillis, or attempt is outside 0..MaxAttempt.
func Score(ms int64, attempt int) (float64, error) {
	n, err := scoreInt(ms, attempt)
	return float64(n), err
}

func scoreInt(ms int64, attempt int) (int64, error) {
	if ms < 0 || ms > MaxMillis {
		return 0, fmt.Errorf("time %d ms: %w (0..%d)", ms, ErrRange, int64(MaxMillis))
	}
	if attempt < 0 || attempt > MaxAttempt {
		return 0, fmt.Errorf("attempt %d: %w (0..%d)", attempt, ErrRange, MaxAttempt)
	}
	return ms<<AttemptBits | int64(attempt), nil
}

// SplitScore decodes a score made by Score. It returns an error wrapping
// ErrRange when score is not an integer in 0..MaxMillis*128+MaxAttempt.
func SplitScore(score float64) (ms int64, attempt int, err error) {
	if !(score >= 0 && score < 1<<53) || score != math.Trunc(score) {
		return 0, 0, fmt.Errorf("score %v: %w", score, ErrRange)
	}
	ms, attempt = splitInt(int64(score))
	return ms, attempt, nil
}

// splitInt decodes a score that a script returned as an integer reply.
func splitInt(n int64) (ms int64, attempt int) {
	return n >> AttemptBits, int(n & MaxAttempt)
}

// checkMillis returns an error unless ms fits a score.
func checkMillis(what string, ms int64) error {
	if ms < 0 || ms > MaxMillis {
		return fmt.Errorf("%s %d ms: %w (0..%d)", what, ms, ErrRange, int64(MaxMillis))
	}
	return nil
}

// formatScore writes a score as the decimal integer Redis reads exactly.
func formatScore(n int64) string { return strconv.FormatInt(n, 10) }

// FormatScore returns the score of ms and attempt (see Score) as the
// decimal integer Redis reads exactly, for ZRANGEBYSCORE bounds and
// cursors outside the scripts. It fails as Score does.
func FormatScore(ms int64, attempt int) (string, error) {
	n, err := scoreInt(ms, attempt)
	if err != nil {
		return "", err
	}
	return formatScore(n), nil
}

// ParseScore decodes a score in the one form FormatScore writes it: a
// decimal integer without sign or leading zeros. It returns an error
// wrapping ErrRange for anything else.
func ParseScore(s string) (ms int64, attempt int, err error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || formatScore(n) != s || n < 0 || n > MaxMillis<<AttemptBits|MaxAttempt {
		return 0, 0, fmt.Errorf("score %q: %w", s, ErrRange)
	}
	ms, attempt = splitInt(n)
	return ms, attempt, nil
}

// ScoreBound returns the score bound "due at or before ms", for
// ZRANGEBYSCORE outside scripts: ms*128 + 127 as a decimal string.
func ScoreBound(ms int64) (string, error) { return FormatScore(ms, MaxAttempt) }

// Head is the lowest entry of a sorted set, decoded; OK is false when the
// set is empty.
type Head struct {
	Ms      int64
	Attempt int
	OK      bool
}

// headOf decodes a score reply that is nil for an empty set.
func headOf(v any) (Head, error) {
	if v == nil {
		return Head{}, nil
	}
	n, ok := v.(int64)
	if !ok || n < 0 {
		return Head{}, fmt.Errorf("score reply %v (%T): not a score", v, v)
	}
	ms, attempt := splitInt(n)
	return Head{Ms: ms, Attempt: attempt, OK: true}, nil
}

// Earliest returns the lowest of heads by ms, then attempt; OK is false
// when none is.
func Earliest(heads ...Head) Head {
	var low Head
	for _, h := range heads {
		if h.OK && (!low.OK || h.Ms < low.Ms || (h.Ms == low.Ms && h.Attempt < low.Attempt)) {
			low = h
		}
	}
	return low
}
