// Package cron reads cron expressions for timer's schedules
// (timer.CronParser), with github.com/robfig/cron/v3: 5 fields (minute
// hour day-of-month month day-of-week), or 6 with seconds first.
//
// # Daylight saving
//
// Occurrences are wall-clock times in the schedule's zone, as robfig/cron
// computes them. On the day a zone springs forward, a time in the hour
// that does not exist (02:30 in America/New_York on 2026-03-08) has no
// occurrence: a daily 30 2 * * * skips that day. On the day it falls
// back, a time in the hour that happens twice (01:30 on 2026-11-01)
// occurs twice, an hour apart: a daily 30 1 * * * fires at 01:30 EDT and
// again at 01:30 EST. Expressions that name no hour (every minute, every
// second) follow absolute time through both changes. The tests in this
// package hold that behaviour.
package cron

import (
	"time"

	robfig "github.com/robfig/cron/v3"

	"github.com/toc-project/toc/timer"
)

var _ timer.CronParser = Parse

// parser reads 5 fields, or 6 with seconds first; no descriptors
// (@daily): the API promises fields, and every_ms is the interval form.
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour | robfig.Dom | robfig.Month | robfig.Dow)

// Parse implements timer.CronParser.
func Parse(expr string, loc *time.Location) (timer.Recurrence, error) {
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, err
	}
	return inZone{s: s, loc: loc}, nil
}

// inZone reads times in loc: robfig's Next works in the zone of the time
// it is given.
type inZone struct {
	s   robfig.Schedule
	loc *time.Location
}

// Next returns the first occurrence strictly after t, or the zero time
// when there is none within five years (robfig's bound).
func (z inZone) Next(t time.Time) time.Time {
	return z.s.Next(t.In(z.loc))
}
