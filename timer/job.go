package timer

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Errors shared by every adapter. Adapters translate their own errors
// (sql.ErrNoRows, MySQL 1062, redis.Nil) into these at their edge.
var (
	// ErrNotFound means the job, topic or dead letter does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict means the request contradicts the current state: a job
	// id or idempotency key that already exists, or a transition from a
	// status the job is not in.
	ErrConflict = errors.New("conflict")
	// ErrInvalid means the request itself is malformed.
	ErrInvalid = errors.New("invalid")
	// ErrInFlight means an attempt at the job is under way (it is firing):
	// too late to cancel or reschedule it; it may still end done. It is an
	// ErrConflict.
	ErrInFlight = fmt.Errorf("an attempt is under way: %w", ErrConflict)
	// ErrAlreadyFired means the job is done: its webhook was called and
	// answered. It is an ErrConflict.
	ErrAlreadyFired = fmt.Errorf("already fired: %w", ErrConflict)
	// ErrVersionMismatch means a change made on the condition that the job
	// is at a version found it at another: it changed since the caller
	// read it. Nothing was changed. A *VersionError wraps it.
	ErrVersionMismatch = errors.New("version mismatch")
)

// Defaults of a job and its retry policy.
const (
	DefaultMaxAttempts = 16
	// MaxAttemptsLimit is the highest max_attempts a job may have. The
	// attempt count lives in the low bits of a Redis score (see package
	// lua), which bounds it.
	MaxAttemptsLimit = 64
	// MaxPayloadBytes bounds a job's opaque payload.
	MaxPayloadBytes = 64 << 10
	// MaxKeyBytes bounds an idempotency key, and a concurrency key.
	MaxKeyBytes = 128
	// DefaultSlots is the slot count of a topic created without one.
	DefaultSlots = 16
	// MaxSlots bounds a topic's slot count.
	MaxSlots = 1 << 16
)

// JobID identifies a job. It is unsigned, below 2^63 (so it fits a signed
// 64-bit column as well), and written as a decimal string outside Go.
type JobID uint64

// String returns the decimal form of id.
func (id JobID) String() string { return strconv.FormatUint(uint64(id), 10) }

// Valid reports whether id is in the range of job ids: 1 to 2^63-1.
// Every adapter that reads an id from outside (a row, a Redis member, a
// cursor) checks it with Valid.
func (id JobID) Valid() bool { return id != 0 && id < 1<<63 }

// ParseJobID parses the decimal form of a job id.
func ParseJobID(s string) (JobID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || !JobID(n).Valid() {
		return 0, fmt.Errorf("job id %q: %w", s, ErrInvalid)
	}
	return JobID(n), nil
}

// Status is the state of a job row. The numeric codes are stored in the
// task store and must not change.
type Status uint8

// Job statuses.
//
// A job is pending until a worker is about to call its webhook: the
// worker moves it to firing with a conditional update of its row first,
// and a cancel or a reschedule wins or loses against that same update. So
// a cancel that finds the job pending is definite (the webhook is never
// called), and one that finds it firing is refused. After a failed
// attempt the job is pending again until its retry; after its last, dead.
// A dead job that is purged ends purged, kept as a record. A job with a
// deadline (Job.ExpireAt) that cannot start an attempt by it ends expired
// instead of firing late.
const (
	StatusPending   Status = 0
	StatusFiring    Status = 1
	StatusDone      Status = 2
	StatusCancelled Status = 3
	StatusDead      Status = 4
	StatusPurged    Status = 5
	StatusExpired   Status = 6
)

// String returns the status name used by the API.
func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusFiring:
		return "firing"
	case StatusDone:
		return "done"
	case StatusCancelled:
		return "cancelled"
	case StatusDead:
		return "dead"
	case StatusPurged:
		return "purged"
	case StatusExpired:
		return "expired"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Ended reports whether a job in status s has ended: it will not fire
// again unless replayed. A group is complete once every member has ended
// (see GroupCompleter); this is the one place that says which statuses
// end a job, and the task store derives its "still live" condition from
// it (LiveStatuses).
func (s Status) Ended() bool {
	switch s {
	case StatusDone, StatusCancelled, StatusDead, StatusPurged, StatusExpired:
		return true
	}
	return false
}

// Statuses lists every status a row may hold, in code order: the counts
// of a group show each of them.
var Statuses = []Status{StatusPending, StatusFiring, StatusDone, StatusCancelled, StatusDead, StatusPurged, StatusExpired}

// LiveStatuses are the statuses of Statuses that have not ended.
func LiveStatuses() []Status {
	var live []Status
	for _, s := range Statuses {
		if !s.Ended() {
			live = append(live, s)
		}
	}
	return live
}

// Job is one timeout: the row in the task store.
type Job struct {
	ID    JobID
	Topic string
	// Key is the caller's idempotency key, unique per topic; "" for none.
	Key string
	// BizID and BizType are the caller's own identifiers; 0 means none.
	// A non-zero BizID is the slot basis, so jobs of one business object
	// share a slot.
	BizID   uint64
	BizType uint64
	Status  Status
	// DueAt is when the job fires, at millisecond precision.
	DueAt time.Time
	// Attempts counts the dispatches made so far.
	Attempts    int
	MaxAttempts int
	// LastError is why the last failed attempt failed, and LastStatus the
	// HTTP status the receiver answered to the last attempt, failed or
	// not (0: no answer, or no attempt made).
	LastError  string
	LastStatus int
	// Priority orders the job among due jobs of its topic.
	Priority    Priority
	CallbackURL string
	Payload     []byte
	// TraceParent is the W3C traceparent of the request that scheduled
	// the job (see ValidTraceParent), "" for none: the worker's spans of
	// the job are its children, and its webhook carries it on.
	TraceParent string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Version counts the changes of the row a client can see: 1 for a new
	// job, moved by one at every change of its status, due time, attempts
	// or last error (see JobWriter). A change made on the condition of a
	// version (JobWriter.TransitionIf) acts only while it is unchanged.
	Version int64
	// Expiry is the job's deadline rule, its own or its topic's default
	// when it was scheduled; the zero Expiry is none.
	Expiry Expiry
	// ExpireAt is the job's deadline, its due time (when scheduled or last
	// rescheduled) plus Expiry.After: no attempt starts after it, and the
	// job ends expired instead. Zero when it has none.
	ExpireAt time.Time
	// Window is how long after DueAt the job may still fire on time: a
	// worker fires it anywhere in [DueAt, DueAt+Window], at DueAt when
	// nothing presses, and under pressure takes due jobs in the order of
	// the ends of their windows (see WindowEnd). 0 (none) is the default:
	// the job is meant to fire at DueAt. At most MaxWindow, whole ms.
	Window time.Duration
	// ConcurrencyKey names the jobs of the topic that run one at a time;
	// "" for none. While a job holds its key (HoldsKey), no other job of
	// the topic with the same key moves to firing: Fire leaves it pending.
	ConcurrencyKey string
	// GroupID names the group the job is a member of, "" for none (see
	// Group).
	GroupID string
}

// Expiry is a deadline rule: when Set, a job's webhook call must start
// within After of its due time, or the job ends expired instead of
// firing late; its retries too must start by then. After 0 says the job
// must not fire late at all: a call that would start in a later
// millisecond than the due time's is never made. The zero Expiry is none.
type Expiry struct {
	Set   bool
	After time.Duration
}

// MaxExpireAfter bounds Expiry.After.
const MaxExpireAfter = 365 * 24 * time.Hour

// ExpireAfter returns the Expiry of d: a deadline d after the due time.
func ExpireAfter(d time.Duration) Expiry { return Expiry{Set: true, After: d} }

// Check reports an Expiry out of range as a *FieldError naming field.
func (e Expiry) Check(field string) error {
	if e.Set && (e.After < 0 || e.After > MaxExpireAfter || e.After%time.Millisecond != 0) {
		return invalid(field, "must be whole milliseconds within 0..%d", MaxExpireAfter.Milliseconds())
	}
	if !e.Set && e.After != 0 {
		return invalid(field, "an unset deadline has no length")
	}
	return nil
}

// Deadline is the deadline of a job due at due under e: zero for none.
func (e Expiry) Deadline(due time.Time) time.Time {
	if !e.Set {
		return time.Time{}
	}
	return TimeOf(CeilMillis(due) + e.After.Milliseconds())
}

// Expired reports whether j has a deadline and now is past it, by the
// millisecond: an attempt starting at now would be late beyond it. The
// task stores decide by the same rule (Fire leaves such a job as it is;
// Expire ends it).
func (j *Job) Expired(now time.Time) bool {
	return !j.ExpireAt.IsZero() && MillisOf(now) > MillisOf(j.ExpireAt)
}

// reasonLayout writes the times in a job's last error: to the
// millisecond, always three digits, as the API writes times.
const reasonLayout = "2006-01-02T15:04:05.000Z07:00"

// ExpireReason is the last error an expired job keeps: why it expired,
// with its deadline, attempts and the last attempt's error, its times to
// the millisecond.
func ExpireReason(j *Job, why string) string {
	attempts := "attempts"
	if j.Attempts == 1 {
		attempts = "attempt"
	}
	msg := fmt.Sprintf("deadline passed (%s): due %s + %d ms = %s; %d %s",
		why, j.DueAt.UTC().Format(reasonLayout), j.Expiry.After.Milliseconds(),
		j.ExpireAt.UTC().Format(reasonLayout), j.Attempts, attempts)
	if j.LastError != "" {
		msg += "; last error: " + j.LastError
	}
	return msg

}

// MaxWindow bounds a job's flexible window (Job.Window).
const MaxWindow = 24 * time.Hour

// WindowEnd is the end of j's window: the latest time its first attempt
// is on time. It is DueAt for a job without a window.
func (j *Job) WindowEnd() time.Time { return j.DueAt.Add(j.Window) }

// ValidWindow reports whether w is a window a job may have: whole
// milliseconds within 0..MaxWindow.
func ValidWindow(w time.Duration) bool {
	return w >= 0 && w <= MaxWindow && w%time.Millisecond == 0
}

// HoldsKey reports whether j holds its concurrency key: it has one, and
// it is firing (an attempt under way, or one whose worker died and whose
// lease has yet to be taken over), or pending after a failed attempt,
// waiting for its retry. A job done, dead, cancelled, or pending with no
// attempt made holds nothing. So the next job of the key waits until the
// previous one is done, retried out (dead) or cancelled; a job that was
// never tried waits without holding the key.
func HoldsKey(j *Job) bool {
	if j.ConcurrencyKey == "" {
		return false
	}
	return j.Status == StatusFiring || (j.Status == StatusPending && j.Attempts > 0)
}

// AnyVersion is the version condition that every version of a job meets:
// a change made without one.
const AnyVersion int64 = 0

// VersionError is why a change on the condition of a version was
// refused: job ID is at version Have, not Want. It wraps
// ErrVersionMismatch.
type VersionError struct {
	ID         JobID
	Want, Have int64
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("job %d is at version %d, not %d: it changed since it was read", e.ID, e.Have, e.Want)
}

// Unwrap makes the error match ErrVersionMismatch.
func (e *VersionError) Unwrap() error { return ErrVersionMismatch }

// SlotBasis is the number a job's slot is computed from: BizID when the
// caller gave one, else the job id.
func (j *Job) SlotBasis() uint64 { return SlotBasis(j.ID, j.BizID) }

// SlotBasis returns bizID when it is non-zero, else the job id.
func SlotBasis(id JobID, bizID uint64) uint64 {
	if bizID != 0 {
		return bizID
	}
	return uint64(id)
}

// Topic is a named group of jobs with its own slot count, defaults and
// dispatch limits. A zero limit or default means "the worker's default"
// (unlimited, for the limits).
type Topic struct {
	Name string
	// Slots is a power of two, fixed when the topic is created: changing
	// it would move every job to another slot.
	Slots int
	// MaxAttempts is the default of the topic's jobs; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	Limits
	// Paused topics accept jobs and fire none; their due jobs wait in
	// Redis and fire when the topic is resumed.
	Paused    bool
	CreatedAt time.Time
	// Expiry is the deadline rule of the topic's jobs that set none of
	// their own (Request.Expiry), copied into each when it is scheduled;
	// the zero Expiry is none.
	Expiry Expiry
	// Retention is how long the topic's jobs are kept after they end,
	// where it differs from the global retention (see Retention.Over);
	// the zero Retention sets nothing.
	Retention Retention
	// Destination is where the topic's due jobs go; the zero one is a
	// webhook to each job's callback URL.
	Destination Destination
}

// Limits are a topic's dispatch limits and per-attempt settings. Workers
// read them from the task store and apply changes within seconds.
type Limits struct {
	// RateLimit is the topic's dispatches per second over the whole
	// cluster; 0 means unlimited. Each worker enforces the share of it
	// that matches the share of the topic's slots it owns.
	RateLimit float64
	// Burst is how many dispatches may go at once after an idle spell;
	// 0 means a tenth of a second's worth (at least 1).
	Burst int
	// MaxInFlight caps the topic's handler calls running at once over the
	// cluster (split like RateLimit, at least 1 per worker); 0 means only
	// the worker's own concurrency caps it.
	MaxInFlight int
	// Weight is the topic's share of a saturated worker against other
	// topics; 0 means 1.
	Weight int
	// Retry spaces the topic's failed attempts; zero fields mean the
	// worker's policy.
	Retry RetryPolicy
	// Lease is how long a claimed job of the topic stays with its worker;
	// 0 means the worker's lease.
	Lease time.Duration
	// CallbackTimeout bounds one handler call; 0 means the worker's
	// attempt timeout.
	CallbackTimeout time.Duration
	// LatenessSLO is the topic's lateness objective: how late after its
	// due time a call may start and still count as on time. Workers count
	// the calls within it (TopicUsage.WithinSLO); 0 declares none.
	LatenessSLO time.Duration
}

// Bounds of the topic limits.
const (
	MaxRateLimit = 1e6
	MaxBurst     = 1 << 20
	MaxInFlight  = 1 << 16
	MaxWeight    = 1000
	MaxLease     = 24 * time.Hour
	// MaxLatenessSLO bounds a topic's lateness objective.
	MaxLatenessSLO = time.Hour
)

// Validate reports the first field of l that is out of range, named as
// the API names it.
func (l Limits) Validate() error {
	switch {
	case l.RateLimit < 0 || l.RateLimit > MaxRateLimit || l.RateLimit != l.RateLimit:
		return invalid("rate_limit", "must be between 0 and %g", float64(MaxRateLimit))
	case l.Burst < 0 || l.Burst > MaxBurst:
		return invalid("burst", "must be between 0 and %d", MaxBurst)
	case l.MaxInFlight < 0 || l.MaxInFlight > MaxInFlight:
		return invalid("max_in_flight", "must be between 0 and %d", MaxInFlight)
	case l.Weight < 0 || l.Weight > MaxWeight:
		return invalid("weight", "must be between 0 and %d", MaxWeight)
	case l.Retry.Base < 0 || l.Retry.Base > MaxLease:
		return invalid("retry.base_ms", "must be between 0 and %d", MaxLease.Milliseconds())
	case l.Retry.Max < 0 || l.Retry.Max > MaxLease:
		return invalid("retry.max_ms", "must be between 0 and %d", MaxLease.Milliseconds())
	case l.Retry.Max > 0 && l.Retry.Base > l.Retry.Max:
		return invalid("retry.base_ms", "must not exceed retry.max_ms")
	case l.Lease < 0 || l.Lease > MaxLease:
		return invalid("lease_ms", "must be between 0 and %d", MaxLease.Milliseconds())
	case l.CallbackTimeout < 0 || l.CallbackTimeout > MaxLease:
		return invalid("callback_timeout_ms", "must be between 0 and %d", MaxLease.Milliseconds())
	case l.LatenessSLO < 0 || l.LatenessSLO > MaxLatenessSLO:
		return invalid("lateness_slo_ms", "must be between 0 and %d", MaxLatenessSLO.Milliseconds())
	case l.Lease > 0 && l.CallbackTimeout > 0:
		return checkLease(l.Lease, l.CallbackTimeout, "lease_ms", "callback_timeout_ms")
	}
	return nil
}

// Priority orders the due jobs of one topic: higher first, with aging so
// that a lower one is not starved (see PriorityAging).
type Priority int8

// Priorities. The numeric codes are stored in the task store and must not
// change.
const (
	PriorityLow    Priority = -1
	PriorityNormal Priority = 0
	PriorityHigh   Priority = 1
)

// PriorityAging is the aging rule: among due jobs of one slot, a job is
// claimed in the order of its due time plus its priority's offset. A high
// job is thus claimed before a normal one due up to 10 s before it and a
// low one due up to 60 s before it; a low job waits behind higher ones
// only while they came due less than a minute after it, so a steady flow
// of higher jobs delays it by at most that minute, never forever.
func PriorityAging(p Priority) time.Duration {
	switch p {
	case PriorityHigh:
		return 0
	case PriorityLow:
		return 60 * time.Second
	}
	return 10 * time.Second
}

// String returns the name the API uses.
func (p Priority) String() string {
	switch p {
	case PriorityHigh:
		return "high"
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// ParsePriority parses a priority name; "" is normal.
func ParsePriority(s string) (Priority, error) {
	switch s {
	case "high":
		return PriorityHigh, nil
	case "normal", "":
		return PriorityNormal, nil
	case "low":
		return PriorityLow, nil
	}
	return 0, invalid("priority", "must be high, normal or low")
}

// Valid reports whether p is one of the three priorities.
func (p Priority) Valid() bool { return p >= PriorityLow && p <= PriorityHigh }

// Slot names one slot of one topic: the unit a worker claims from.
type Slot struct {
	Topic string
	Index int
}

func (s Slot) String() string { return s.Topic + "/" + strconv.Itoa(s.Index) }

// Timer is what the Redis index holds of a job: enough to find its slot
// and order it by due time.
type Timer struct {
	ID    JobID
	Topic string
	// Slots is the topic's slot count; Basis picks the slot among them.
	Slots int
	Basis uint64
	DueAt time.Time
	// Attempt counts the dispatches already made (0 for a fresh job).
	Attempt  int
	Priority Priority
	// Window is the job's flexible window while its first attempt is to
	// come (Job.Window; 0 for a retry): the index takes due timers in the
	// order of DueAt + Window + PriorityAging, never before DueAt.
	Window time.Duration
}

// timerWindow is the window of the index's timer of j: a job's window
// holds for its first attempt; a retry is due at its retry time.
func timerWindow(j *Job, attempt int) time.Duration {
	if attempt > 0 {
		return 0
	}
	return j.Window
}

// Lease is a job claimed by a worker: it sits in its slot's Prepare set
// until acked, retried, or swept back when the lease expires.
type Lease struct {
	ID   JobID
	Slot Slot
	// Attempt counts the dispatches made before this one.
	Attempt  int
	Priority Priority
	// Token is the lease's score in the Prepare set. Ack and Retry act only
	// while it is unchanged, so a worker whose lease expired and was taken
	// over cannot remove the new owner's lease.
	Token float64
}

// MillisOf truncates t to milliseconds since the Unix epoch, the unit of
// every due time and score.
func MillisOf(t time.Time) int64 { return t.UnixMilli() }

// CeilMillis rounds t up to milliseconds since the Unix epoch. A due time
// is kept in whole milliseconds, rounded up, so that a job is never
// handed over before the instant it was asked for.
func CeilMillis(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// TimeOf is the inverse of MillisOf.
func TimeOf(ms int64) time.Time { return time.UnixMilli(ms) }
