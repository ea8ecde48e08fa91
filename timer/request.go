package timer

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
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

// ValidTopic reports whether topic is a valid topic as toc holds it: a
// name of the default namespace (ValidTopicName), or the name of another
// namespace's topic, qualified by it (QualifiedTopic: "sandbox.orders"),
// 64 bytes at most in all.
func ValidTopic(topic string) bool {
	if ns, name, ok := strings.Cut(topic, NamespaceSep); ok {
		return len(topic) <= MaxTopicBytes && ValidNamespace(ns) && ValidTopicName(name)
	}
	return ValidTopicName(topic)
}

// ValidTopicName reports whether name is a valid topic name, as a client
// gives it: 1 to 64 bytes of [a-z0-9_-], starting with a letter or digit
// (^[a-z0-9][a-z0-9_-]{0,63}$). It runs on every request, so it is a loop
// rather than a regexp, which took 4% of toc's CPU when scheduling.
func ValidTopicName(name string) bool {
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
	// TraceParent is the W3C traceparent of the scheduling request, ""
	// for none; the job keeps it (Job.TraceParent). An idempotent retry
	// with another one is still the same request.
	TraceParent string
	// Expiry is the job's own deadline rule; unset, the job takes its
	// topic's (Topic.Expiry) unless NoExpiry says it has none.
	Expiry   Expiry
	NoExpiry bool
	// Window is the job's flexible window (Job.Window); 0 for none.
	Window time.Duration
	// ConcurrencyKey, unless "", makes the job one of those of its topic
	// that run one at a time (Job.ConcurrencyKey). It is bounded and
	// formed like an idempotency key.
	ConcurrencyKey string
	// GroupID makes the job a member of an existing open group ("" for
	// none): see Group.
	GroupID string

	// shard is 1 + the task store shard Schedule placed the request in;
	// 0 when the scheduler has not placed it yet.
	shard int
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
	case !ValidKey(r.Key):
		return invalid("key", "must be UTF-8 without control characters (bytes below 0x20, and 0x7f)")
	case r.FireAt.IsZero() && r.Delay < 0:
		return invalid("delay_ms", "must not be negative")
	case !r.FireAt.IsZero() && !ValidDue(r.FireAt):
		return invalid("fire_at", "%s", DueRange())
	case r.FireAt.IsZero() && r.Delay > maxDelay:
		return invalid("delay_ms", "more than %d ms", maxDelay.Milliseconds())
	case r.MaxAttempts < 0 || r.MaxAttempts > MaxAttemptsLimit:
		return invalid("max_attempts", "must be within 1..%d", MaxAttemptsLimit)
	case len(r.Payload) > MaxPayloadBytes:
		return invalid("payload", "larger than %d bytes", MaxPayloadBytes)
	case !r.Priority.Valid():
		return invalid("priority", "must be high, normal or low")
	case r.TraceParent != "" && !ValidTraceParent(r.TraceParent):
		return invalid("traceparent", "must be a W3C traceparent")
	case r.NoExpiry && r.Expiry.Set:
		return invalid("expire_after_ms", "a job without a deadline has no deadline length")
	case !ValidWindow(r.Window):
		return invalid("window_ms", "must be between 0 and %d", MaxWindow.Milliseconds())
	case len(r.ConcurrencyKey) > MaxKeyBytes:
		return invalid("concurrency_key", "longer than %d bytes", MaxKeyBytes)
	case !ValidKey(r.ConcurrencyKey):
		return invalid("concurrency_key", "must be UTF-8 without control characters (bytes below 0x20, and 0x7f)")
	case r.GroupID != "" && CheckQualifiedGroupID(r.GroupID, "group_id") != nil:
		return CheckQualifiedGroupID(r.GroupID, "group_id")
	}
	return r.Expiry.Check("expire_after_ms")
}

// expiryOf is the deadline rule of r's job in topic t: r's own, none when
// r says so, else the topic's.
func (r *Request) expiryOf(t Topic) Expiry {
	switch {
	case r.Expiry.Set:
		return r.Expiry
	case r.NoExpiry:
		return Expiry{}
	}
	return t.Expiry
}

// ValidKey reports whether key is a valid idempotency key: UTF-8 without
// control characters (bytes below 0x20, and 0x7f), so that what is stored
// and logged is what a reader of the request sees. Its length is checked
// apart (MaxKeyBytes).
func ValidKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(key)
}

// Bounds of a due time, in Unix milliseconds. A Redis score holds a time
// exactly only up to 2^46-1 ms (lua.MaxMillis, 4199-11-24T01:22:57.663Z;
// see package lua, whose tests check these against it). Due times stop
// before 4199-01-01, which leaves the scores of a lease or a retry after
// the latest due time room to stay exact; before 1970 a score would be
// negative. A time outside is refused, never moved.
const (
	MinDueMillis = 1                  // after 1970-01-01T00:00:00Z
	MaxDueMillis = 70340486400000 - 1 // before 4199-01-01T00:00:00Z
	maxDelay     = 100 * 365 * 24 * time.Hour
)

var (
	minDue = TimeOf(MinDueMillis - 1).UTC().Format(time.RFC3339)
	maxDue = TimeOf(MaxDueMillis + 1).UTC().Format(time.RFC3339)
)

// ValidDue reports whether t, rounded up to the millisecond as a due time
// is, lies within MinDueMillis..MaxDueMillis.
func ValidDue(t time.Time) bool {
	ms := CeilMillis(t)
	return ms >= MinDueMillis && ms <= MaxDueMillis
}

// DueRange is the message of a due time outside MinDueMillis..MaxDueMillis.
func DueRange() string { return "must be after " + minDue + " and before " + maxDue }

// due returns r's due time relative to now, or a *FieldError naming
// delay_ms when now plus the delay leaves the range of due times.
func (r *Request) due(now time.Time) (time.Time, error) {
	if !r.FireAt.IsZero() {
		return r.FireAt, nil
	}
	due := now.Add(r.Delay)
	if !ValidDue(due) {
		return due, invalid("delay_ms", "lands outside the range of due times: %s", DueRange())
	}
	return due, nil
}

// job builds the row for r, due at r's time relative to now (which the
// caller has checked with r.due).
func (r *Request) job(id JobID, now time.Time) *Job {
	due, _ := r.due(now)
	now = TimeOf(now.UnixMilli())
	j := &Job{
		ID:             id,
		Topic:          r.Topic,
		Key:            r.Key,
		BizID:          r.BizID,
		BizType:        r.BizType,
		Status:         StatusPending,
		DueAt:          TimeOf(CeilMillis(due)),
		MaxAttempts:    cmp.Or(r.MaxAttempts, DefaultMaxAttempts),
		Priority:       r.Priority,
		CallbackURL:    r.CallbackURL,
		Payload:        r.Payload,
		TraceParent:    r.TraceParent,
		CreatedAt:      now,
		UpdatedAt:      now,
		Version:        1,
		Window:         r.Window,
		ConcurrencyKey: r.ConcurrencyKey,
		GroupID:        r.GroupID,
	}
	j.setExpiry(r.Expiry)
	return j
}

// setExpiry gives j the deadline rule e and its deadline.
func (j *Job) setExpiry(e Expiry) {
	// A deadline counts from the end of the job's window: a call within
	// the window is on time.
	j.Expiry, j.ExpireAt = e, e.Deadline(j.WindowEnd())
}

// sameAs reports whether existing, found under r's idempotency key at
// now, was made by the same request: the same content, due at the same
// time (sameDue).
func (r *Request) sameAs(existing *Job, now time.Time) bool {
	if !r.sameDue(existing, now) {
		return false
	}
	return r.BizID == existing.BizID &&
		r.BizType == existing.BizType &&
		r.CallbackURL == existing.CallbackURL &&
		r.Priority == existing.Priority &&
		r.Window == existing.Window &&
		r.GroupID == existing.GroupID &&
		cmp.Or(r.MaxAttempts, DefaultMaxAttempts) == existing.MaxAttempts &&
		(!r.Expiry.Set || r.Expiry == existing.Expiry) &&
		(!r.NoExpiry || !existing.Expiry.Set) &&
		bytes.Equal(r.Payload, existing.Payload) &&
		r.ConcurrencyKey == existing.ConcurrencyKey
}

// DueSlack is what a repeated request's due time may differ by from its
// job's beyond the time since the job was made, when the request gave a
// delay (sameDue): the clocks of two toc processes, and the rounding of a
// due time to the millisecond.
const DueSlack = time.Second

// sameDue reports whether r, repeated at now, asks for existing's due
// time. A fire_at asks for one time: it must be the job's, to the
// millisecond as stored. A delay counts from when its request arrived,
// and a retry of it arrives later than the first, by at most the time
// since the job was made: its due time (now + delay) may differ from the
// job's by that much, plus DueSlack. Another due time is other content.
//
// A job's due time that has moved since it was made (a retry after a
// failed attempt, a reschedule, a replay: see dueAsScheduled) no longer
// tells which delay its request gave, and a delay is not compared with
// it.
func (r *Request) sameDue(existing *Job, now time.Time) bool {
	stored := existing.DueAt.UnixMilli()
	if !r.FireAt.IsZero() {
		return CeilMillis(r.FireAt) == stored
	}
	if !existing.dueAsScheduled() {
		return true
	}
	diff := CeilMillis(now.Add(r.Delay)) - stored
	since := max(now.UnixMilli()-existing.CreatedAt.UnixMilli(), 0)
	return max(diff, -diff) <= since+DueSlack.Milliseconds()
}

// dueAsScheduled reports whether j's due time is, as far as its row
// tells, still the one its request set: nothing changed the row since it
// was made (version 1), or only its first attempt did (the job is not
// pending again, made at most one attempt and keeps no error). A failed
// attempt's retry, a reschedule and a replay move the due time.
func (j *Job) dueAsScheduled() bool {
	if j.Version <= 1 {
		return true
	}
	return j.Status != StatusPending && j.Attempts <= 1 && j.LastError == ""
}

// errKeyMismatch is returned when an idempotency key is reused with other
// content.
var errKeyMismatch = fmt.Errorf("idempotency key used by a different job: %w", ErrConflict)

// IsKeyMismatch reports whether err says an idempotency key was reused
// with different content.
func IsKeyMismatch(err error) bool { return errors.Is(err, errKeyMismatch) }

// BatchError is ScheduleBatch's error when it refused some of the
// requests of a batch, and so wrote nothing. Items names each refused
// request, in order.
type BatchError struct {
	Items []ItemError
}

// ItemError is the error of one request of a batch, by its index.
type ItemError struct {
	Index int
	Err   error
}

func (e *BatchError) Error() string {
	first := e.Items[0]
	msg := fmt.Sprintf("batch refused, nothing written: request %d: %v", first.Index, first.Err)
	if n := len(e.Items) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Unwrap returns the items' errors: errors.Is(err, ErrInvalid) holds when
// one request was invalid, errors.Is(err, ErrConflict) when one reused a
// key.
func (e *BatchError) Unwrap() []error {
	errs := make([]error, len(e.Items))
	for i, it := range e.Items {
		errs[i] = it.Err
	}
	return errs
}
