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
	// MaxKeyBytes bounds an idempotency key.
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

// ParseJobID parses the decimal form of a job id.
func ParseJobID(s string) (JobID, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n >= 1<<63 {
		return 0, fmt.Errorf("job id %q: %w", s, ErrInvalid)
	}
	return JobID(n), nil
}

// Status is the state of a job row. The numeric codes are stored in the
// task store and must not change.
type Status uint8

// Job statuses. Code 1 is unused (the seed's "running" state lives in the
// Redis lease instead of the row).
const (
	StatusPending   Status = 0
	StatusDone      Status = 2
	StatusCancelled Status = 3
	StatusDead      Status = 4
)

// String returns the status name used by the API.
func (s Status) String() string {
	switch s {
	case StatusPending:
		return "pending"
	case StatusDone:
		return "done"
	case StatusCancelled:
		return "cancelled"
	case StatusDead:
		return "dead"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
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
	LastError   string
	CallbackURL string
	Payload     []byte
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

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

// Topic is a named group of jobs with its own slot count.
type Topic struct {
	Name string
	// Slots is a power of two, fixed when the topic is created: changing
	// it would move every job to another slot.
	Slots int
	// MaxAttempts is the default of the topic's jobs; 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	CreatedAt   time.Time
}

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
	Attempt int
}

// Lease is a job claimed by a worker: it sits in its slot's Prepare set
// until acked, retried, or swept back when the lease expires.
type Lease struct {
	ID   JobID
	Slot Slot
	// Attempt counts the dispatches made before this one.
	Attempt int
	// Token is the lease's score in the Prepare set. Ack and Retry act only
	// while it is unchanged, so a worker whose lease expired and was taken
	// over cannot remove the new owner's lease.
	Token float64
}

// MillisOf truncates t to milliseconds since the Unix epoch, the unit of
// every due time and score.
func MillisOf(t time.Time) int64 { return t.UnixMilli() }

// TimeOf is the inverse of MillisOf.
func TimeOf(ms int64) time.Time { return time.UnixMilli(ms) }
