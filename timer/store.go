package timer

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Store is the task store: the source of truth for every job row. A job
// whose row is committed as pending will fire, whatever happens to Redis.
//
// Every method that changes a row is conditional on its current status and
// reports whether the change happened; none of them fails because the row
// is in another status. Times are stored at millisecond precision.
type Store interface {
	JobWriter
	JobReader
	JobLister
	Scanner
	DeadReader
	TopicStore
}

// NewFirer is a Store that remembers the pending jobs it inserted lately
// as their rows were committed, and fires them without reading their
// rows again.
type NewFirer interface {
	// FireNew is Fire of the jobs of ids the store remembers, on the
	// condition that none of their rows changed since its insert. When
	// it moved each of them to firing, it returns them as GetMany would
	// read them now, and the ids it did not remember in rest. Otherwise
	// it returns no job and every id in rest, the rows it moved left
	// firing, for Fire and GetMany to finish. An error leaves the same
	// to them.
	FireNew(ctx context.Context, ids []JobID, until, now time.Time) (fired []*Job, rest []JobID, err error)
}

// JobWriter inserts jobs and moves them between statuses.
//
// Every change of a row moves its version (Job.Version) by one, in the
// statement that makes the change: Transition, Complete, Fail,
// Reschedule, Replay, and Fire when it moves a pending job to firing (not
// when the job is already firing: nothing a client sees changes then).
type JobWriter interface {
	// Insert commits jobs in one transaction, all or none. It returns an
	// error wrapping ErrConflict, and writes nothing, when a job id or a
	// (topic, key) pair already exists. A new row is at version 1,
	// whatever the job's Version says.
	Insert(ctx context.Context, jobs []*Job) error
	// Transition moves a job from status from to status to, reporting
	// whether it was in status from.
	Transition(ctx context.Context, id JobID, from, to Status, now time.Time) (bool, error)
	// TransitionIf is Transition on the condition that the job is also at
	// version version (AnyVersion: at any), checked and changed in one
	// statement: of two calls with the same version, one at most
	// reports true.
	TransitionIf(ctx context.Context, id JobID, from, to Status, version int64, now time.Time) (bool, error)
	// Fire moves the jobs of ids that are pending or firing and due at or
	// before until to firing, in one statement, before their webhooks are
	// called, and returns how many rows it changed; the caller reads the
	// rows to learn which. A job cancelled, rescheduled later, done or dead
	// is left as it is, and so is one whose deadline has passed at now
	// (Job.Expired): no attempt starts after it, and Expire ends it.
	// Firing stays firing: an attempt whose worker died is made again. A
	// pending job with a concurrency key that another job of its topic
	// holds (HoldsKey) is left pending: busy; so is all but one of several
	// pending jobs of one key among ids. Of two Fire calls racing, over
	// one store or several processes, at most one moves a job of a key to
	// firing: the store is the referee of the key.
	Fire(ctx context.Context, ids []JobID, until, now time.Time) (int, error)
	// Complete moves pending or firing jobs to done, recording their
	// attempt counts and their receivers' statuses (as LastStatus), and
	// returns how many it moved.
	Complete(ctx context.Context, done []Completion, now time.Time) (int, error)
	// Fail records a failed attempt of a pending or firing job: its attempt
	// count, error and the receiver's status; the job is pending again, or
	// dead when f.Dead is set. It reports whether the job was pending or
	// firing.
	Fail(ctx context.Context, id JobID, f Failure, now time.Time) (bool, error)
	// Expire ends a pending or firing job whose deadline has passed at
	// now (Job.Expired): expired, with reason as its last error (cut to
	// MaxLastErrorBytes). It reports whether the job was pending or
	// firing with its deadline passed; a job rescheduled since, and so
	// given a later deadline, is left as it is.
	Expire(ctx context.Context, id JobID, reason string, now time.Time) (bool, error)
	// Reschedule sets a pending job's due time, and moves its deadline
	// (if it has one) to the new due time plus its Expiry.After,
	// reporting whether it was pending.
	Reschedule(ctx context.Context, id JobID, dueAt, now time.Time) (bool, error)
	// RescheduleIf is Reschedule on the condition that the job is also at
	// version version (AnyVersion: at any), as TransitionIf.
	RescheduleIf(ctx context.Context, id JobID, dueAt time.Time, version int64, now time.Time) (bool, error)
	// Replay moves a dead job back to pending at dueAt with its attempts
	// and last error reset, reporting whether it was dead.
	Replay(ctx context.Context, id JobID, dueAt, now time.Time) (bool, error)
}

// Failure is a failed attempt, as Fail records it.
type Failure struct {
	// Attempts counts the attempts made, this one included.
	Attempts int
	// Error is why it failed (cut to MaxLastErrorBytes), Status the HTTP
	// status the receiver answered (0: none).
	Error  string
	Status int
	// Dead: it was the last attempt.
	Dead bool
	// Expired: the next attempt would start past the job's deadline; it
	// ends expired, with Error as its reason.
	Expired bool
	// Stopped: the receiver asked to stop the job (410 Gone, ErrDiscard);
	// it is cancelled, with this attempt and its answer recorded.
	Stopped bool
	// RetryAt, unless Dead or zero, is when the next attempt is due: the
	// row's due time becomes it, so that GET /v1/jobs/{id} shows it and a
	// job Redis lost is restored at it, not at once.
	RetryAt time.Time
}

// Completion is a job that was dispatched successfully.
type Completion struct {
	ID       JobID
	Attempts int
	// Status is the HTTP status its receiver answered (a 2xx), 0 when the
	// handler did not say (see Delivery.Response).
	Status int
	// Attempt, when set, is the record of the attempt that succeeded: a
	// store that keeps attempt history (AttemptLog) records it with the
	// done mark, in the same transaction, as RecordAttempts would. A
	// batch's successes so cost the store one write, not one row each.
	Attempt *Attempt
}

// JobReader reads job rows.
type JobReader interface {
	// Get returns one job, or an error wrapping ErrNotFound.
	Get(ctx context.Context, id JobID) (*Job, error)
	// GetMany returns the jobs of ids that exist, in no particular order,
	// in one query.
	GetMany(ctx context.Context, ids []JobID) ([]*Job, error)
	// GetByKey returns the job of topic with idempotency key key, or an
	// error wrapping ErrNotFound.
	GetByKey(ctx context.Context, topic, key string) (*Job, error)
}

// Scanner pages through pending jobs, topic by topic, for the backstop.
type Scanner interface {
	// ScanPending returns up to q.Limit pending jobs due in [q.Since,
	// q.Before), ordered by (topic, due time, id), strictly after
	// q.After. Each Timer carries its topic's slot count, read from the
	// topic's row. Firing jobs (an attempt under way, or whose worker died
	// mid-call) are pending ones here: if Redis lost their timers they
	// must come back too.
	//
	// The order is by topic first because a store keeps one index of
	// jobs by status, the one by topic that its other reads need: an
	// index by status and due time across topics would cost every
	// completed job a second move (issue 35).
	ScanPending(ctx context.Context, q ScanQuery) ([]Timer, error)
}

// ScanQuery asks Scanner.ScanPending for one page.
type ScanQuery struct {
	// After is the position the page starts after; zero: the start.
	After ScanCursor
	// Since and Before bound the due times scanned, [Since, Before); a
	// zero Since is no lower bound.
	Since, Before time.Time
	Limit         int
}

// ScanCursor is a position in ScanPending's (topic, due time, id) order.
// The zero ScanCursor is before every job.
type ScanCursor struct {
	Topic string
	DueAt time.Time
	ID    JobID
}

// ScanCursorOf is the position of t, for the page after it.
func ScanCursorOf(t Timer) ScanCursor { return ScanCursor{Topic: t.Topic, DueAt: t.DueAt, ID: t.ID} }

// After reports whether (topic, dueMs, id) comes strictly after c in
// ScanPending's order.
func (c ScanCursor) After(topic string, dueMs int64, id JobID) bool {
	if c == (ScanCursor{}) {
		return true
	}
	return cmp.Or(cmp.Compare(topic, c.Topic), cmp.Compare(dueMs, MillisOf(c.DueAt)), cmp.Compare(id, c.ID)) > 0
}

// CompareScan orders two timers as ScanPending returns them.
func CompareScan(a, b Timer) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), a.DueAt.Compare(b.DueAt), cmp.Compare(a.ID, b.ID))
}

// DeadReader lists dead jobs: the record of the dead letters.
type DeadReader interface {
	// ListDead returns up to q.Limit dead jobs of q.Topic (or, when it is
	// "", of q.Topics) that died (their UpdatedAt) in [q.From, q.To) and
	// whose last error contains q.ErrorContains, ordered by (time of
	// death, id), strictly after q.After. Zero From, To and ErrorContains
	// do not filter.
	ListDead(ctx context.Context, q DeadQuery) ([]*Job, error)
}

// DeadQuery selects dead jobs for DeadReader.ListDead.
type DeadQuery struct {
	Topic string
	// Topics, when Topic is "", are the topics whose dead jobs are listed
	// together, in one order of death; none lists none.
	Topics        []string
	From, To      time.Time
	ErrorContains string
	// After is the position of the last job of the previous page: its
	// time of death and id; zero for the first page.
	After Cursor
	Limit int
}

// DeadFilter selects dead letters of a topic for triage: those whose
// signature (see deadletter.Signature) is Signature (all when ""), that
// died in [From, To) (zero: unbounded).
type DeadFilter struct {
	Topic     string
	Signature string
	From, To  time.Time
}

// DeadGroup is the dead letters of one signature.
type DeadGroup struct {
	Signature           string
	Count               int
	FirstSeen, LastSeen time.Time
	// Example is the first of them to die.
	Example JobID
}

// Millis returns q's time bounds in Unix milliseconds, the unit a store
// keeps: from and to (the whole int64 range where unset), and after, the
// time of death of q.After (the least int64 for the first page). It
// reports an error wrapping ErrInvalid for a Limit below 1.
func (q DeadQuery) Millis() (from, to, after int64, err error) {
	if q.Limit <= 0 {
		return 0, 0, 0, fmt.Errorf("list dead jobs: limit %d: %w", q.Limit, ErrInvalid)
	}
	from, to, after = math.MinInt64, math.MaxInt64, math.MinInt64
	if !q.From.IsZero() {
		from = q.From.UnixMilli()
	}
	if !q.To.IsZero() {
		to = q.To.UnixMilli()
	}
	if q.After != (Cursor{}) {
		after = q.After.DueAt.UnixMilli()
	}
	return from, to, after, nil
}

// Cursor is a position in a (time, id) order: the pages of the API's
// lists. The zero Cursor is before every job.
type Cursor struct {
	DueAt time.Time
	ID    JobID
}

// Text is the form of c an API hands out: "<time in ms>.<id>", "" for the
// zero Cursor.
func (c Cursor) Text() string {
	if c == (Cursor{}) {
		return ""
	}
	return strconv.FormatInt(c.DueAt.UnixMilli(), 10) + "." + c.ID.String()
}

// ParseCursor parses what Text made; "" is the zero Cursor. Anything else
// is a *FieldError naming field.
func ParseCursor(s, field string) (Cursor, error) {
	if s == "" {
		return Cursor{}, nil
	}
	bad := &FieldError{Field: field, Message: "not a cursor this API returned"}
	ms, idText, ok := strings.Cut(s, ".")
	if !ok {
		return Cursor{}, bad
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 || n > MaxDueMillis {
		return Cursor{}, bad
	}
	id, err := ParseJobID(idText)
	if err != nil {
		return Cursor{}, bad
	}
	return Cursor{DueAt: time.UnixMilli(n), ID: id}, nil
}

// TopicStore keeps topics and their slot counts.
type TopicStore interface {
	// EnsureTopic creates t unless a topic of that name exists, and returns
	// the stored topic (whose slot count and defaults win over t's).
	EnsureTopic(ctx context.Context, t Topic) (Topic, error)
	// EnsureTopics does what EnsureTopic does for each of ts, all or
	// nothing, and returns the stored topics in the order of ts.
	EnsureTopics(ctx context.Context, ts []Topic) ([]Topic, error)
	// PutTopic creates t, or updates the defaults of the existing topic of
	// that name, and reports whether it created it. Changing the slot count
	// of an existing topic is an error wrapping ErrConflict.
	PutTopic(ctx context.Context, t Topic) (Topic, bool, error)
	// Topic returns one topic, or an error wrapping ErrNotFound.
	Topic(ctx context.Context, name string) (Topic, error)
	// Topics returns every topic, ordered by name.
	Topics(ctx context.Context) ([]Topic, error)
	// PauseTopic sets whether the topic named name is paused, changing
	// nothing else, and returns the stored topic, or an error wrapping
	// ErrNotFound. PutTopic and EnsureTopic never change Paused; a new
	// topic is not paused.
	PauseTopic(ctx context.Context, name string, paused bool) (Topic, error)
	// DeleteTopic removes the topic named name if none of its jobs holds
	// it: none is pending, firing or dead (HoldsTopic). It checks and
	// deletes in one transaction, so that a job committed into the topic
	// before the delete is counted and one committed during it waits for
	// it to finish. It returns an error wrapping ErrNotFound for an unknown
	// topic and a *TopicInUseError (which wraps ErrConflict) when jobs hold
	// it; nothing changes then. The rows of the topic's finished jobs
	// (done, cancelled, purged) stay.
	DeleteTopic(ctx context.Context, name string) error
}

// TopicVersioner is a TopicStore that can tell cheaply whether the topic
// list changed: TopicsVersion returns a number that every write of a
// topic (create, update, pause, delete) moves. A Catalog over such a
// store reads the whole list only when the number moved.
type TopicVersioner interface {
	TopicsVersion(ctx context.Context) (int64, error)
}

// HoldsTopic reports whether a job in status st keeps its topic from
// being deleted: it may still fire (pending, firing) or be replayed
// (dead).
func HoldsTopic(st Status) bool {
	return st == StatusPending || st == StatusFiring || st == StatusDead
}

// TopicInUseError is why a topic could not be deleted: how many of its
// jobs are in each status that holds it.
type TopicInUseError struct {
	Topic string
	// Jobs counts the topic's jobs by status, for the statuses that hold
	// it (see HoldsTopic) and have jobs.
	Jobs map[Status]int64
}

func (e *TopicInUseError) Error() string {
	var b strings.Builder
	for _, st := range slices.Sorted(maps.Keys(e.Jobs)) {
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", e.Jobs[st], st)
	}
	return fmt.Sprintf("topic %s still has jobs (%s); it can be deleted once none is pending or dead", e.Topic, b.String())
}

// Unwrap makes the error match ErrConflict.
func (e *TopicInUseError) Unwrap() error { return ErrConflict }
