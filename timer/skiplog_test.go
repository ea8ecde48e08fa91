package timer

import (
	"log/slog"
	"testing"
	"time"
)

// The skip log forgets schedules it logged an interval ago or more: ten
// intervals of 5,000 other schedules skipping each leave it holding at
// most twice the 5,000 skipping at a time, not the 50,000 that ever did.
func TestSkipLogForgets(t *testing.T) {
	var l skipLog
	log := slog.New(slog.DiscardHandler)
	now := time.Unix(1_800_000_000, 0)
	const each = 5000
	most := 0
	for k := range 10 {
		at := now.Add(time.Duration(k) * SkipLogInterval)
		for i := range each {
			l.note(log, ScheduleID(k*each+i+1), 1, "full", at)
			most = max(most, len(l.last))
		}
	}
	if most > 2*each || len(l.quiet) != 0 {
		t.Errorf("up to %d schedules remembered (%d quiet now), want at most %d", most, len(l.quiet), 2*each)
	}
}
