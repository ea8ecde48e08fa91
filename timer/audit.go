package timer

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The audit log: one entry for each admin or bulk action taken through the
// API (a topic's settings, pause, resume or delete; a dead letter's replay
// or purge, one or by filter; a cancel or reschedule by filter; a
// schedule's pause, resume or delete), saying who did it, what, when, and
// how many jobs it touched. The API records them (http/audit.go); the task
// store keeps them (AuditLog).

// Bounds of an audit entry's fields, as a row holds them.
const (
	MaxAuditWhoBytes     = 128
	MaxAuditActionBytes  = 64
	MaxAuditTargetBytes  = 256
	MaxAuditDetailsBytes = 4096
	MaxAuditErrorBytes   = MaxLastErrorBytes
)

// Pages of the audit log: the default and the most entries a page holds.
const (
	DefaultAuditPage = 100
	MaxAuditPage     = 1000
)

// AuditEntry is one recorded action.
type AuditEntry struct {
	// ID is the store's number of the entry, set by AppendAudit; entries
	// recorded later in one store have higher ids.
	ID int64
	// At is when the action ended, in whole milliseconds as stored.
	At time.Time
	// Who is the caller, as the API names it (a token's name).
	Who string
	// Action names what was done, as "topic.pause" or
	// "deadletter.replay_bulk" (the API's list: http/audit.go).
	Action string
	// Topic is the topic acted on, "" for none.
	Topic string
	// Target is what within the topic: a job or schedule id, or the
	// filter of a bulk action; "" when the topic is the whole target.
	Target string
	// Details is a JSON object with what the action was given (the
	// settings put, the filter's bounds, a new due time) and what it
	// answered; "" for nothing more.
	Details string
	// Jobs is how many jobs the action changed.
	Jobs int64
	// Error is why the action failed, "" when it succeeded. A bulk
	// action that failed part way counts in Jobs what it changed before.
	Error string
}

// Failed reports whether the action failed.
func (e *AuditEntry) Failed() bool { return e.Error != "" }

// Fit cuts e's fields to what a row holds, each at a UTF-8 boundary, and
// makes invalid UTF-8 valid: the API records what it was given, and a
// long filter must not lose the whole entry. Details cut short is no
// longer JSON; it is kept as text.
func (e *AuditEntry) Fit() {
	e.Who = truncateUTF8(e.Who, MaxAuditWhoBytes)
	e.Action = truncateUTF8(e.Action, MaxAuditActionBytes)
	e.Target = truncateUTF8(e.Target, MaxAuditTargetBytes)
	e.Details = truncateUTF8(e.Details, MaxAuditDetailsBytes)
	e.Error = truncateUTF8(e.Error, MaxAuditErrorBytes)
}

// CheckAuditEntry reports an entry a row cannot hold: no action or time,
// a field over its bound, a topic that is not a topic name, a negative
// count.
func CheckAuditEntry(e *AuditEntry) error {
	switch {
	case e == nil:
		return fmt.Errorf("nil audit entry: %w", ErrInvalid)
	case e.Action == "" || e.At.IsZero() || e.At.UnixMilli() <= 0:
		return fmt.Errorf("audit entry without an action or a time: %w", ErrInvalid)
	case len(e.Who) > MaxAuditWhoBytes, len(e.Action) > MaxAuditActionBytes, len(e.Target) > MaxAuditTargetBytes,
		len(e.Details) > MaxAuditDetailsBytes, len(e.Error) > MaxAuditErrorBytes:
		return fmt.Errorf("audit entry %s: a field over its bound: %w", e.Action, ErrInvalid)
	case e.Topic != "" && !ValidTopic(e.Topic):
		return fmt.Errorf("audit entry %s: topic %q: %w", e.Action, e.Topic, ErrInvalid)
	case e.Jobs < 0:
		return fmt.Errorf("audit entry %s: %d jobs: %w", e.Action, e.Jobs, ErrInvalid)
	}
	return nil
}

// AuditCursor is where a page of the audit log ended: its last entry's
// time and id. The zero AuditCursor is the start, the newest entry.
type AuditCursor struct {
	At time.Time
	ID int64
}

// AuditCursorOf returns the cursor after e.
func AuditCursorOf(e *AuditEntry) AuditCursor { return AuditCursor{At: e.At, ID: e.ID} }

// Text is the cursor as the API shows it: "<unix ms>.<id>", "" for the
// start.
func (c AuditCursor) Text() string {
	if c == (AuditCursor{}) {
		return ""
	}
	return strconv.FormatInt(c.At.UnixMilli(), 10) + "." + strconv.FormatInt(c.ID, 10)
}

// ParseAuditCursor parses what Text made; "" is the zero AuditCursor.
// Anything else is a *FieldError naming field.
func ParseAuditCursor(s, field string) (AuditCursor, error) {
	if s == "" {
		return AuditCursor{}, nil
	}
	bad := &FieldError{Field: field, Message: "not a cursor this API returned"}
	msText, idText, ok := strings.Cut(s, ".")
	if !ok {
		return AuditCursor{}, bad
	}
	ms, err := strconv.ParseInt(msText, 10, 64)
	if err != nil || ms <= 0 || ms > MaxDueMillis {
		return AuditCursor{}, bad
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return AuditCursor{}, bad
	}
	return AuditCursor{At: TimeOf(ms), ID: id}, nil
}

// Before reports whether e comes after the cursor in the log's order,
// newest first: an older time, or the same time and a lower id.
func (c AuditCursor) Before(e *AuditEntry) bool {
	if c == (AuditCursor{}) {
		return true
	}
	at, cat := e.At.UnixMilli(), c.At.UnixMilli()
	return at < cat || at == cat && e.ID < c.ID
}

// AuditQuery selects a page of the audit log. Empty fields select all.
type AuditQuery struct {
	Action string
	Who    string
	Topic  string
	// Since and Until bound At: Since <= At < Until; zero: no bound.
	Since, Until time.Time
	// After is the cursor of the page before; zero: the newest.
	After AuditCursor
	// Limit is the most entries returned, 1..MaxAuditPage.
	Limit int
}

// Check reports a query no store answers: a limit out of range.
func (q AuditQuery) Check() error {
	if q.Limit < 1 || q.Limit > MaxAuditPage {
		return &FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxAuditPage)}
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return &FieldError{Field: "until", Message: "must be after since"}
	}
	return nil
}

// Matches reports whether q's filters (not its cursor or limit) select e.
func (q AuditQuery) Matches(e *AuditEntry) bool {
	switch {
	case q.Action != "" && e.Action != q.Action, q.Who != "" && e.Who != q.Who, q.Topic != "" && e.Topic != q.Topic:
		return false
	case !q.Since.IsZero() && e.At.UnixMilli() < q.Since.UnixMilli():
		return false
	case !q.Until.IsZero() && e.At.UnixMilli() >= q.Until.UnixMilli():
		return false
	}
	return true
}

// AuditLog keeps the audit log.
type AuditLog interface {
	// AppendAudit stores e and sets its ID. An entry CheckAuditEntry
	// refuses wraps ErrInvalid, and nothing is stored. At is kept in
	// whole milliseconds.
	AppendAudit(ctx context.Context, e *AuditEntry) error
	// ListAudit returns up to q.Limit entries q selects, newest first: by
	// At, then ID, descending, strictly after q.After. Each filter alone
	// reads an index, never the whole log.
	ListAudit(ctx context.Context, q AuditQuery) ([]*AuditEntry, error)
}

// truncateUTF8 cuts s to at most n bytes at a rune boundary, after making
// it valid UTF-8.
func truncateUTF8(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
