package timer_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/timer"
)

// A cursor reads back as written; anything else is a field error naming
// the parameter.
func TestAuditCursor(t *testing.T) {
	c := timer.AuditCursor{At: time.UnixMilli(1_700_000_000_123), ID: 42}
	got, err := timer.ParseAuditCursor(c.Text(), "cursor")
	if err != nil || !got.At.Equal(c.At) || got.ID != c.ID {
		t.Fatalf("ParseAuditCursor(%q) = %+v, %v", c.Text(), got, err)
	}
	if got, err := timer.ParseAuditCursor("", "cursor"); err != nil || got != (timer.AuditCursor{}) {
		t.Errorf("empty cursor = %+v, %v", got, err)
	}
	for _, bad := range []string{"x", "1.x", "x.1", "0.1", "1.0", "-5.1", "1.-1", "99999999999999999.1"} {
		_, err := timer.ParseAuditCursor(bad, "cursor")
		if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "cursor" {
			t.Errorf("ParseAuditCursor(%q) = %v, want a field error on cursor", bad, err)
		}
	}
}

// Fit cuts each field to its bound at a rune boundary, and the result
// passes CheckAuditEntry.
func TestAuditEntryFit(t *testing.T) {
	e := &timer.AuditEntry{At: time.UnixMilli(1), Action: "topic.put", Who: strings.Repeat("é", timer.MaxAuditWhoBytes),
		Target: strings.Repeat("ü", timer.MaxAuditTargetBytes), Details: strings.Repeat("x", timer.MaxAuditDetailsBytes+5),
		Error: "bad \xff byte"}
	if err := timer.CheckAuditEntry(e); !errors.Is(err, timer.ErrInvalid) {
		t.Fatalf("CheckAuditEntry before Fit = %v, want ErrInvalid", err)
	}
	e.Fit()
	if err := timer.CheckAuditEntry(e); err != nil {
		t.Fatalf("CheckAuditEntry after Fit: %v", err)
	}
	for _, s := range []string{e.Who, e.Target, e.Details, e.Error} {
		if !utf8.ValidString(s) {
			t.Errorf("%q is not valid UTF-8 after Fit", s)
		}
	}
	if len(e.Who) != timer.MaxAuditWhoBytes || len(e.Details) != timer.MaxAuditDetailsBytes || e.Error != "bad \uFFFD byte" {
		t.Errorf("Fit: who %d bytes, details %d, error %q", len(e.Who), len(e.Details), e.Error)
	}
}
