// Recurring schedules: a job template fired at each occurrence of a cron
// expression in a time zone, or every so many milliseconds. The
// Materializer turns occurrences into ordinary jobs ahead of time; this
// file holds what a schedule is, its rules and its occurrences.

package timer

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ScheduleID identifies a schedule: a number from the same generator as
// job ids (IDGen), unique across members, written as a decimal string
// outside Go.
type ScheduleID uint64

// String returns the decimal form of id.
func (id ScheduleID) String() string { return strconv.FormatUint(uint64(id), 10) }

// Valid reports whether id is in the range of ids: 1 to 2^63-1.
func (id ScheduleID) Valid() bool { return JobID(id).Valid() }

// ParseScheduleID parses the decimal form of a schedule id.
func ParseScheduleID(s string) (ScheduleID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || !ScheduleID(n).Valid() {
		return 0, fmt.Errorf("schedule id %q: %w", s, ErrInvalid)
	}
	return ScheduleID(n), nil
}

// CatchUp is what a schedule does with the occurrences it missed while
// no toc ran (or the task store was away): found more than
// MaterializerConfig.Late after their time. The numeric codes are stored
// in the task store and must not change.
type CatchUp uint8

// Catch-up policies.
const (
	// CatchUpSkip drops every missed occurrence.
	CatchUpSkip CatchUp = 0
	// CatchUpLast fires the latest missed occurrence once, late, and
	// drops the others: a cron daemon's usual answer to downtime.
	CatchUpLast CatchUp = 1
	// CatchUpAll fires every missed occurrence, late, up to MaxCatchUp of
	// them (the earliest); the rest are dropped.
	CatchUpAll CatchUp = 2
)

// DefaultCatchUp is the policy of a schedule created without one.
const DefaultCatchUp = CatchUpLast

// MaxCatchUp bounds how many missed occurrences CatchUpAll fires after
// one outage, so that a schedule every second that was down a week does
// not flood its receiver with 600,000 jobs.
const MaxCatchUp = 1000

// String returns the name the API uses.
func (c CatchUp) String() string {
	switch c {
	case CatchUpSkip:
		return "skip"
	case CatchUpLast:
		return "last"
	case CatchUpAll:
		return "all"
	}
	return "catch_up(" + strconv.Itoa(int(c)) + ")"
}

// ParseCatchUp parses a policy name; "" is DefaultCatchUp.
func ParseCatchUp(s string) (CatchUp, error) {
	switch s {
	case "skip":
		return CatchUpSkip, nil
	case "last":
		return CatchUpLast, nil
	case "all":
		return CatchUpAll, nil
	case "":
		return DefaultCatchUp, nil
	}
	return 0, invalid("catch_up", "must be skip, last or all")
}

// Valid reports whether c is one of the three policies.
func (c CatchUp) Valid() bool { return c <= CatchUpAll }

// Bounds of a schedule.
const (
	// MinEvery is the shortest every_ms: a job a second, the finest a
	// cron expression can say too.
	MinEvery = time.Second
	// MaxEvery is the longest every_ms: about a year.
	MaxEvery = 366 * 24 * time.Hour
	// MaxCronBytes bounds a cron expression, MaxTimeZoneBytes a zone name.
	MaxCronBytes     = 256
	MaxTimeZoneBytes = 64
)

// JobTemplate is what each occurrence of a schedule becomes: the fields of
// a Request but its time and idempotency key, which the occurrence gives.
type JobTemplate struct {
	Topic       string
	BizID       uint64
	BizType     uint64
	CallbackURL string
	Payload     []byte
	// MaxAttempts defaults to the topic's default when zero.
	MaxAttempts int
	Priority    Priority
	// Expiry and NoExpiry are the occurrences' deadline rule, as a
	// Request's.
	Expiry   Expiry
	NoExpiry bool
	// ConcurrencyKey is every occurrence's job's (Job.ConcurrencyKey):
	// with one, a schedule's jobs never overlap, the next waiting for the
	// one before to end.
	ConcurrencyKey string
}

// Request returns the request of the occurrence of schedule id at t: due
// at t, under the idempotency key ScheduleKey(id, t).
func (j JobTemplate) Request(id ScheduleID, t time.Time) Request {
	return Request{
		Topic:       j.Topic,
		Key:         ScheduleKey(id, t),
		BizID:       j.BizID,
		BizType:     j.BizType,
		FireAt:      t,
		CallbackURL: j.CallbackURL,
		Payload:     j.Payload,
		MaxAttempts: j.MaxAttempts,
		Priority:    j.Priority,
		Expiry:      j.Expiry,
		NoExpiry:    j.NoExpiry,

		ConcurrencyKey: j.ConcurrencyKey,
	}
}

// ScheduleKey is the idempotency key of the job of schedule id's
// occurrence at t: "schedule:<id>:<t in Unix ms>". However many members
// or restarts materialize the occurrence, the key lets one job exist.
// GET /v1/jobs?topic=…&key=… finds it.
func ScheduleKey(id ScheduleID, t time.Time) string {
	return "schedule:" + id.String() + ":" + strconv.FormatInt(CeilMillis(t), 10)
}

// Schedule is a recurring job: the row of toc_schedules.
type Schedule struct {
	ID  ScheduleID
	Job JobTemplate
	// Cron is a cron expression of 5 fields (minute hour day-of-month
	// month day-of-week) or 6 (seconds first), read in TimeZone (an IANA
	// name; "" is UTC). Every, when Cron is "", spaces occurrences from
	// StartAt (or from when the schedule was created) instead.
	Cron     string
	TimeZone string
	Every    time.Duration
	// StartAt and EndAt bound the occurrences, both included; zero: none.
	StartAt, EndAt time.Time
	CatchUp        CatchUp
	// Paused schedules make no job; resuming one starts again from the
	// first occurrence after the resume (those of the pause are dropped).
	Paused bool
	// Next is the cursor: the earliest occurrence not yet materialized
	// into a job; zero when none is left (past EndAt).
	Next      time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
	// Owner is the name of the token that created the schedule ("" when
	// the API asks for none), at most MaxOwnerBytes: whose quotas its
	// occurrences are admitted against (MaterializerConfig.Admit).
	Owner string
	// Skipped counts the occurrences that made no job because a quota
	// refused them (IsQuota); LastSkippedAt and LastSkipReason (at most
	// MaxSkipReasonBytes) tell when the last was and why, zero and ""
	// before the first. The Materializer sets them, with the cursor.
	Skipped        int64
	LastSkippedAt  time.Time
	LastSkipReason string
}

// Bounds of a schedule's owner and skip reason, as stored.
const (
	MaxOwnerBytes      = 128
	MaxSkipReasonBytes = 256
)

// Recurrence is a rule of occurrences.
type Recurrence interface {
	// Next returns the first occurrence strictly after t, or the zero
	// time when there is none (within the rule's own search bound).
	Next(t time.Time) time.Time
}

// CronParser reads a cron expression (5 fields, or 6 with seconds first)
// in loc. Its error is the parser's message; the caller names the field.
// Package timer/cron has one; timer leaves the grammar to it.
type CronParser func(expr string, loc *time.Location) (Recurrence, error)

// every is the Recurrence of every_ms: anchor + k*step, k ≥ 0.
type every struct {
	anchor time.Time
	step   time.Duration
}

func (e every) Next(t time.Time) time.Time {
	if t.Before(e.anchor) {
		return e.anchor
	}
	k := t.Sub(e.anchor)/e.step + 1
	return e.anchor.Add(k * e.step)
}

// bounded is a Recurrence cut to [start, end] (zero: unbounded).
type bounded struct {
	r          Recurrence
	start, end time.Time
}

func (b bounded) Next(t time.Time) time.Time {
	if !b.start.IsZero() && t.Before(b.start) {
		t = b.start.Add(-time.Nanosecond)
	}
	n := b.r.Next(t)
	if n.IsZero() || (!b.end.IsZero() && n.After(b.end)) || !ValidDue(n) {
		return time.Time{}
	}
	return n
}

// location reads a time zone name: "" is UTC, "Local" (the machine's,
// which members need not share) is refused.
func location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" || len(name) > MaxTimeZoneBytes {
		return nil, invalid("time_zone", "must be an IANA time zone name, like Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, invalid("time_zone", "unknown IANA time zone %q", name)
	}
	return loc, nil
}

// Recurrence returns the occurrences of s within its bounds, or a
// *FieldError naming the field that keeps it from having any.
func (s *Schedule) Recurrence(parse CronParser) (Recurrence, error) {
	var r Recurrence
	switch {
	case s.Cron != "" && s.Every != 0:
		return nil, invalid("cron", "give cron or every_ms, not both")
	case s.Cron != "":
		if len(s.Cron) > MaxCronBytes {
			return nil, invalid("cron", "longer than %d bytes", MaxCronBytes)
		}
		if strings.Contains(s.Cron, "TZ=") {
			return nil, invalid("cron", "give the zone in time_zone, not in the expression")
		}
		loc, err := location(s.TimeZone)
		if err != nil {
			return nil, err
		}
		if parse == nil {
			return nil, invalid("cron", "this toc reads no cron expressions")
		}
		if r, err = parse(s.Cron, loc); err != nil {
			return nil, invalid("cron", "%v", err)
		}
	case s.Every != 0:
		switch {
		case s.TimeZone != "":
			return nil, invalid("time_zone", "applies to cron only; every_ms counts in absolute time")
		case s.Every < MinEvery || s.Every > MaxEvery:
			return nil, invalid("every_ms", "must be within %d..%d", MinEvery.Milliseconds(), MaxEvery.Milliseconds())
		case s.Every%time.Millisecond != 0:
			return nil, invalid("every_ms", "must be whole milliseconds")
		}
		anchor := s.StartAt
		if anchor.IsZero() {
			anchor = s.CreatedAt
		}
		r = every{anchor: TimeOf(CeilMillis(anchor)), step: s.Every}
	default:
		return nil, invalid("cron", "one of cron or every_ms is required")
	}
	return bounded{r: r, start: s.StartAt, end: s.EndAt}, nil
}

// Validate checks a new schedule's fields at now, naming the first bad
// one as the API does (the template's as "job.<field>"), and returns its
// recurrence.
func (s *Schedule) Validate(parse CronParser, now time.Time) (Recurrence, error) {
	switch {
	case !s.StartAt.IsZero() && !ValidDue(s.StartAt):
		return nil, invalid("start_at", "%s", DueRange())
	case !s.EndAt.IsZero() && !ValidDue(s.EndAt):
		return nil, invalid("end_at", "%s", DueRange())
	case !s.EndAt.IsZero() && !s.StartAt.IsZero() && !s.EndAt.After(s.StartAt):
		return nil, invalid("end_at", "must be after start_at")
	case !s.EndAt.IsZero() && !s.EndAt.After(now):
		return nil, invalid("end_at", "is in the past")
	case !s.CatchUp.Valid():
		return nil, invalid("catch_up", "must be skip, last or all")
	}
	// The longest key an occurrence can have, at the latest due time.
	probe := s.Job.Request(ScheduleID(1<<63-1), TimeOf(MaxDueMillis))
	if err := probe.Validate(); err != nil {
		if fe, ok := errors.AsType[*FieldError](err); ok {
			return nil, invalid("job."+fe.Field, "%s", fe.Message)
		}
		return nil, err
	}
	r, err := s.Recurrence(parse)
	if err != nil {
		return nil, err
	}
	if first(r, s.StartAt, now).IsZero() {
		if s.Cron != "" && s.EndAt.IsZero() {
			return nil, invalid("cron", "has no occurrence")
		}
		return nil, invalid("end_at", "leaves no occurrence")
	}
	return r, nil
}

// first is the first occurrence of r from now on: at or after start when
// start is later than now, else strictly after now.
func first(r Recurrence, start, now time.Time) time.Time {
	if start.After(now) {
		return r.Next(start.Add(-time.Nanosecond))
	}
	return r.Next(now)
}

// Upcoming returns up to n occurrences of r from the cursor next on
// (next itself first).
func Upcoming(r Recurrence, next time.Time, n int) []time.Time {
	times := make([]time.Time, 0, n)
	for t := next; !t.IsZero() && len(times) < n; t = r.Next(t) {
		times = append(times, t)
	}
	return times
}

// ScheduleReader reads schedules.
type ScheduleReader interface {
	// GetSchedule returns one schedule, or an error wrapping ErrNotFound.
	GetSchedule(ctx context.Context, id ScheduleID) (*Schedule, error)
	// ListSchedules returns up to limit schedules with an id above after,
	// ordered by id.
	ListSchedules(ctx context.Context, after ScheduleID, limit int) ([]*Schedule, error)
	// DueSchedules returns up to limit schedules that are not paused and
	// whose cursor is set and at or before until, ordered by cursor.
	DueSchedules(ctx context.Context, until time.Time, limit int) ([]*Schedule, error)
}

// ScheduleWriter creates, advances, pauses and deletes schedules.
type ScheduleWriter interface {
	// CreateSchedule stores s; an existing id is an error wrapping
	// ErrConflict, and a schedule a row cannot hold one wrapping
	// ErrInvalid, with nothing written.
	CreateSchedule(ctx context.Context, s *Schedule) error
	// AdvanceSchedule moves the cursor of schedule id from from to to
	// (zero: none left) if it is still from, and reports whether it was:
	// the compare-and-set that keeps two materializers from skipping or
	// doubling an occurrence.
	AdvanceSchedule(ctx context.Context, id ScheduleID, from, to, now time.Time) (bool, error)
	// PauseSchedule sets whether schedule id is paused and returns it, or
	// an error wrapping ErrNotFound. Resuming (paused false) a paused
	// schedule also sets its cursor to next; resuming one that runs, or
	// pausing one that is paused, changes nothing.
	PauseSchedule(ctx context.Context, id ScheduleID, paused bool, next, now time.Time) (*Schedule, error)
	// SkipOccurrences moves the cursor of schedule id from from to to as
	// AdvanceSchedule does and, in the same compare-and-set, adds n to
	// its Skipped count and sets LastSkippedAt to now and LastSkipReason
	// to reason: of materializers that skip the same occurrences, one
	// counts them. An n below 1 or a reason longer than
	// MaxSkipReasonBytes is an error wrapping ErrInvalid, with nothing
	// written.
	SkipOccurrences(ctx context.Context, id ScheduleID, from, to time.Time, n int64, reason string, now time.Time) (bool, error)
	// DeleteSchedule removes schedule id, or returns an error wrapping
	// ErrNotFound. Jobs it made already stay.
	DeleteSchedule(ctx context.Context, id ScheduleID) error
}

// ScheduleStore keeps schedules.
type ScheduleStore interface {
	ScheduleReader
	ScheduleWriter
}

// CheckSchedule reports a schedule a row cannot hold.
func CheckSchedule(s *Schedule) error {
	switch {
	case s == nil:
		return fmt.Errorf("nil schedule: %w", ErrInvalid)
	case !s.ID.Valid():
		return fmt.Errorf("schedule id %d out of range: %w", s.ID, ErrInvalid)
	case len(s.Cron) > MaxCronBytes, len(s.TimeZone) > MaxTimeZoneBytes:
		return fmt.Errorf("schedule %s: cron or time zone too long: %w", s.ID, ErrInvalid)
	case len(s.Owner) > MaxOwnerBytes, len(s.LastSkipReason) > MaxSkipReasonBytes, s.Skipped < 0:
		return fmt.Errorf("schedule %s: owner, skip count or skip reason out of range: %w", s.ID, ErrInvalid)
	case !s.CatchUp.Valid():
		return fmt.Errorf("schedule %s: catch-up %s: %w", s.ID, s.CatchUp, ErrInvalid)
	}
	j := &Job{ID: JobID(s.ID), Topic: s.Job.Topic, CallbackURL: s.Job.CallbackURL, Payload: s.Job.Payload,
		MaxAttempts: s.Job.MaxAttempts, Priority: s.Job.Priority, ConcurrencyKey: s.Job.ConcurrencyKey}
	if err := CheckJob(j); err != nil {
		return fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	if err := s.Job.Expiry.Check("expire_after_ms"); err != nil || (s.Job.NoExpiry && s.Job.Expiry.Set) {
		return fmt.Errorf("schedule %s: deadline rule: %w", s.ID, ErrInvalid)
	}
	return nil
}
