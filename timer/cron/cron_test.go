package cron_test

import (
	"testing"
	"time"

	"github.com/toc-project/toc/timer/cron"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// next lists the n occurrences of expr in zone after from (RFC 3339 with
// offset), each as RFC 3339 in the zone.
func next(t *testing.T, expr, zone, from string, n int) []string {
	t.Helper()
	r, err := cron.Parse(expr, mustZone(t, zone))
	if err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339, from)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for range n {
		at = r.Next(at)
		out = append(out, at.Format(time.RFC3339))
	}
	return out
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The occurrences across both daylight-saving changes of 2026, in New
// York (spring forward 2026-03-08 02:00 EST → 03:00 EDT; fall back
// 2026-11-01 02:00 EDT → 01:00 EST) and Berlin (2026-03-29 02:00 → 03:00;
// 2026-10-25 03:00 → 02:00): what the package doc promises.
func TestDaylightSaving(t *testing.T) {
	for _, tt := range []struct {
		name, expr, zone, from string
		want                   []string
	}{{
		name: "02:30 daily skips the day 02:30 does not exist",
		expr: "30 2 * * *", zone: "America/New_York", from: "2026-03-07T00:00:00-05:00",
		want: []string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00", "2026-03-10T02:30:00-04:00"},
	}, {
		name: "01:30 daily fires twice the day 01:30 happens twice",
		expr: "30 1 * * *", zone: "America/New_York", from: "2026-10-31T00:00:00-04:00",
		want: []string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"},
	}, {
		name: "02:30 daily on the fall-back day, an hour that happens once",
		expr: "30 2 * * *", zone: "America/New_York", from: "2026-10-31T12:00:00-04:00",
		want: []string{"2026-11-01T02:30:00-05:00", "2026-11-02T02:30:00-05:00"},
	}, {
		name: "hourly follows absolute time through spring forward",
		expr: "0 * * * *", zone: "America/New_York", from: "2026-03-08T00:30:00-05:00",
		want: []string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"},
	}, {
		name: "hourly follows absolute time through fall back",
		expr: "0 * * * *", zone: "America/New_York", from: "2026-11-01T00:30:00-04:00",
		want: []string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00", "2026-11-01T02:00:00-05:00"},
	}, {
		name: "09:00 on weekdays keeps 09:00 local across the change",
		expr: "0 9 * * 1-5", zone: "Europe/Berlin", from: "2026-03-27T00:00:00+01:00",
		want: []string{"2026-03-27T09:00:00+01:00", "2026-03-30T09:00:00+02:00"},
	}, {
		name: "02:30 in Berlin: skipped in spring, twice in autumn",
		expr: "0 30 2 * * *", zone: "Europe/Berlin", from: "2026-03-28T12:00:00+01:00",
		want: []string{"2026-03-30T02:30:00+02:00"},
	}, {
		name: "02:30 in Berlin on the fall-back day",
		expr: "0 30 2 * * *", zone: "Europe/Berlin", from: "2026-10-24T12:00:00+02:00",
		want: []string{"2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00", "2026-10-26T02:30:00+01:00"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			if got := next(t, tt.expr, tt.zone, tt.from, len(tt.want)); !equal(got, tt.want) {
				t.Errorf("%s in %s after %s:\n got %v\nwant %v", tt.expr, tt.zone, tt.from, got, tt.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, expr := range []string{"* * * * *", "*/5 * * * * *", "0 0 9 * * MON-FRI", "15 10 1 1 *"} {
		if _, err := cron.Parse(expr, time.UTC); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
	}
	for _, expr := range []string{"", "* * * *", "* * * * * * *", "61 * * * *", "@daily", "@every 5s", "bad"} {
		if _, err := cron.Parse(expr, time.UTC); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", expr)
		}
	}
}
