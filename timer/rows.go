package timer

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// What a task store holds. Every Store implementation rejects, with an
// error wrapping ErrInvalid and nothing written, a job or topic beyond
// these bounds, so that its backends (and the fakes in timertest) agree:
// SQLite would store anything.

// Bounds of a task store's rows.
const (
	// MaxTopicBytes bounds a topic name as stored (the API is stricter:
	// see ValidTopic).
	MaxTopicBytes = 64
	// MaxCallbackURLBytes bounds a callback URL.
	MaxCallbackURLBytes = 2048
	// MaxLastErrorBytes bounds a job's recorded last error; a longer one
	// is cut (see TruncateError).
	MaxLastErrorBytes = 1024
)

// CheckJob reports a job a row cannot hold.
func CheckJob(j *Job) error {
	switch {
	case j == nil:
		return fmt.Errorf("nil job: %w", ErrInvalid)
	case !j.ID.Valid():
		return fmt.Errorf("job id %d out of range: %w", j.ID, ErrInvalid)
	}
	if err := CheckTopicName(j.Topic); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	var bad string
	switch {
	case len(j.Key) > MaxKeyBytes:
		bad = "key of " + strconv.Itoa(len(j.Key)) + " bytes"
	case !j.Status.Known():
		bad = "status " + j.Status.String()
	case j.Attempts < 0 || j.Attempts > math.MaxInt32:
		bad = "attempts " + strconv.Itoa(j.Attempts)
	case j.MaxAttempts < 0 || j.MaxAttempts > math.MaxInt32:
		bad = "max attempts " + strconv.Itoa(j.MaxAttempts)
	case !j.Priority.Valid():
		bad = "priority " + j.Priority.String()
	case len(j.CallbackURL) > MaxCallbackURLBytes || !utf8.ValidString(j.CallbackURL):
		bad = "callback URL of " + strconv.Itoa(len(j.CallbackURL)) + " bytes or not UTF-8"
	case len(j.Payload) > MaxPayloadBytes:
		bad = "payload of " + strconv.Itoa(len(j.Payload)) + " bytes"
	case j.TraceParent != "" && !ValidTraceParent(j.TraceParent):
		bad = "traceparent of " + strconv.Itoa(len(j.TraceParent)) + " bytes, not a W3C traceparent"
	case j.Expiry.Check("expire_after_ms") != nil || j.Expiry.Set == j.ExpireAt.IsZero():
		bad = "deadline rule " + strconv.FormatBool(j.Expiry.Set) + "/" + j.Expiry.After.String() + " with deadline " + j.ExpireAt.String()
	case !ValidWindow(j.Window):
		bad = "window of " + j.Window.String()
	case len(j.ConcurrencyKey) > MaxKeyBytes:
		bad = "concurrency key of " + strconv.Itoa(len(j.ConcurrencyKey)) + " bytes"
	case j.GroupID != "" && CheckQualifiedGroupID(j.GroupID, "group_id") != nil:
		bad = "group id of " + strconv.Itoa(len(j.GroupID)) + " bytes or with control characters"
	default:
		return nil
	}
	return fmt.Errorf("job %d: %s: %w", j.ID, bad, ErrInvalid)
}

// Known reports whether s is one of the statuses a row may hold.
func (s Status) Known() bool {
	switch s {
	case StatusPending, StatusFiring, StatusDone, StatusCancelled, StatusDead, StatusPurged, StatusExpired:
		return true
	}
	return false
}

// CheckTopicName reports a topic name a row cannot hold: empty, longer
// than MaxTopicBytes, or not UTF-8.
func CheckTopicName(name string) error {
	if name == "" || len(name) > MaxTopicBytes || !utf8.ValidString(name) {
		return fmt.Errorf("topic %q: empty, longer than %d bytes or not UTF-8: %w", name, MaxTopicBytes, ErrInvalid)
	}
	return nil
}

// CheckTopic reports a topic a row cannot hold: its name, a slot count
// that is not a power of two up to MaxSlots, or max attempts out of
// range. what names the operation in the error ("ensure topic").
func CheckTopic(what string, t Topic) error {
	if err := CheckTopicName(t.Name); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !validSlots(t.Slots) {
		return fmt.Errorf("%s %q: %d slots, want a power of two up to %d: %w", what, t.Name, t.Slots, MaxSlots, ErrInvalid)
	}
	if t.MaxAttempts < 0 || t.MaxAttempts > MaxAttemptsLimit {
		return fmt.Errorf("%s %q: max attempts %d: %w", what, t.Name, t.MaxAttempts, ErrInvalid)
	}
	return nil
}

// TruncateError returns lastErr as a row keeps it: valid UTF-8, cut at a
// rune boundary to at most MaxLastErrorBytes.
func TruncateError(lastErr string) string { return truncateUTF8(lastErr, MaxLastErrorBytes) }
