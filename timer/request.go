package timer

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"time"
)

// FieldError is an ErrInvalid that names the offending field, so the API
// can point the caller at it.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// ValidTopic reports whether name is a valid topic name: 1 to 64 bytes
// of [a-z0-9_-], starting with a letter or digit
// (^[a-z0-9][a-z0-9_-]{0,63}$). It runs on every request, so it is a loop
// rather than a regexp, which took 4% of toc's CPU when scheduling.
func ValidTopic(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// Request asks for one job to be scheduled.
type Request struct {
	Topic string
	// Key is an optional idempotency key, unique per topic.
	Key     string
	BizID   uint64
	BizType uint64
	// FireAt is the absolute due time. When it is zero the job is due
	// Delay after the scheduler receives the request.
	FireAt      time.Time
	Delay       time.Duration
	CallbackURL string
	Payload     []byte
	// MaxAttempts defaults to DefaultMaxAttempts when zero.
	MaxAttempts int
	Priority    Priority
}

// Validate checks r and returns a *FieldError naming the first bad field.
// It does not check the callback URL's form, which belongs to whoever
// delivers it.
func (r *Request) Validate() error {
	switch {
	case !ValidTopic(r.Topic):
		return invalid("topic", "must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	case len(r.Key) > MaxKeyBytes:
		return invalid("key", "longer than %d bytes", MaxKeyBytes)
	case r.FireAt.IsZero() && r.Delay < 0:
		return invalid("delay_ms", "must not be negative")
	case !r.FireAt.IsZero() && (r.FireAt.UnixMilli() <= 0 || r.FireAt.UnixMilli() >= maxDueMillis):
		return invalid("fire_at", "out of range")
	case r.FireAt.IsZero() && r.Delay > maxDelay:
		return invalid("delay_ms", "more than %d ms", maxDelay.Milliseconds())
	case r.MaxAttempts < 0 || r.MaxAttempts > MaxAttemptsLimit:
		return invalid("max_attempts", "must be within 1..%d", MaxAttemptsLimit)
	case len(r.Payload) > MaxPayloadBytes:
		return invalid("payload", "larger than %d bytes", MaxPayloadBytes)
	case !r.Priority.Valid():
		return invalid("priority", "must be high, normal or low")
	}
	return nil
}

// Bounds of a due time: the Redis score encoding holds milliseconds below
// 2^46 (see package lua); we stop well before, at year 9999.
const (
	maxDueMillis = 253402300800000 // 10000-01-01T00:00:00Z
	maxDelay     = 100 * 365 * 24 * time.Hour
)

// job builds the row for r, due at r's time relative to now.
func (r *Request) job(id JobID, now time.Time) *Job {
	due := r.FireAt
	if due.IsZero() {
		due = now.Add(r.Delay)
	}
	now = TimeOf(now.UnixMilli())
	return &Job{
		ID:          id,
		Topic:       r.Topic,
		Key:         r.Key,
		BizID:       r.BizID,
		BizType:     r.BizType,
		Status:      StatusPending,
		DueAt:       TimeOf(CeilMillis(due)),
		MaxAttempts: cmp.Or(r.MaxAttempts, DefaultMaxAttempts),
		Priority:    r.Priority,
		CallbackURL: r.CallbackURL,
		Payload:     r.Payload,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
}

// sameAs reports whether existing, found under r's idempotency key, was
// made by the same request. A relative delay cannot be compared (a retry
// arrives later), so the due time counts only when r gave fire_at.
func (r *Request) sameAs(existing *Job) bool {
	if !r.FireAt.IsZero() && CeilMillis(r.FireAt) != existing.DueAt.UnixMilli() {
		return false
	}
	return r.BizID == existing.BizID &&
		r.BizType == existing.BizType &&
		r.CallbackURL == existing.CallbackURL &&
		r.Priority == existing.Priority &&
		cmp.Or(r.MaxAttempts, DefaultMaxAttempts) == existing.MaxAttempts &&
		bytes.Equal(r.Payload, existing.Payload)
}

// errKeyMismatch is returned when an idempotency key is reused with other
// content.
var errKeyMismatch = fmt.Errorf("idempotency key used by a different job: %w", ErrConflict)

// IsKeyMismatch reports whether err says an idempotency key was reused
// with different content.
func IsKeyMismatch(err error) bool { return errors.Is(err, errKeyMismatch) }
