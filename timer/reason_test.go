package timer_test

import (
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// An expired job's reason writes both its times to the millisecond and
// counts its attempts in proper English.
func TestExpireReasonText(t *testing.T) {
	due := time.Date(2026, 11, 26, 17, 1, 0, 0, time.UTC)
	for _, tc := range []struct {
		attempts int
		after    time.Duration
		last     string
		want     string
	}{
		{0, 5500 * time.Millisecond, "",
			"deadline passed (no attempt could start by it): due 2026-11-26T17:01:00.000Z + 5500 ms = 2026-11-26T17:01:05.500Z; 0 attempts"},
		{1, 5 * time.Second, "503 Service Unavailable",
			"deadline passed (no attempt could start by it): due 2026-11-26T17:01:00.000Z + 5000 ms = 2026-11-26T17:01:05.000Z; 1 attempt; last error: 503 Service Unavailable"},
		{2, 250 * time.Millisecond, "",
			"deadline passed (no attempt could start by it): due 2026-11-26T17:01:00.000Z + 250 ms = 2026-11-26T17:01:00.250Z; 2 attempts"},
	} {
		j := &timer.Job{DueAt: due, Attempts: tc.attempts, LastError: tc.last,
			Expiry: timer.Expiry{Set: true, After: tc.after}, ExpireAt: due.Add(tc.after)}
		if got := timer.ExpireReason(j, "no attempt could start by it"); got != tc.want {
			t.Errorf("ExpireReason, %d attempts:\n got %q\nwant %q", tc.attempts, got, tc.want)
		}
	}
}
