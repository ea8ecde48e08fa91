package timer

import (
	"fmt"
	"math"
	"time"
)

// Defaults of retention: how long cmd/toc keeps a job after it ends, by
// the status it ended in, and the audit log's entries. A RetirerConfig's
// zero Retention keeps every job forever.
const (
	// DefaultRetainEnded keeps done, cancelled and expired jobs a day:
	// long enough to look one up after an incident the morning after.
	DefaultRetainEnded = 24 * time.Hour
	// DefaultRetainDead keeps dead letters 30 days, for a month's replay.
	DefaultRetainDead = 30 * 24 * time.Hour
	// DefaultRetainPurged keeps the tombstone of a purged dead letter a
	// day.
	DefaultRetainPurged = 24 * time.Hour
	// DefaultAuditRetention keeps the audit log 90 days.
	DefaultAuditRetention = 90 * 24 * time.Hour
	// KeepForever is a retention that never deletes: what 0 means in a
	// flag or in the API's retention settings.
	KeepForever = time.Duration(math.MaxInt64)
	// MaxRetention bounds a finite retention: a hundred years, so that
	// now minus it stays a valid time.
	MaxRetention = 100 * 365 * 24 * time.Hour
)

// Retention says how long jobs are kept after they end, by the status
// they ended in. Pending and firing jobs are never deleted, whatever it
// says. A zero field is unset: for a topic, the global retention applies
// (see Over); globally, the job is kept forever, as with KeepForever.
type Retention struct {
	Done, Cancelled, Expired, Dead, Purged time.Duration
}

// DefaultRetention is the retention cmd/toc applies when no flag and no
// topic sets one.
func DefaultRetention() Retention {
	return Retention{Done: DefaultRetainEnded, Cancelled: DefaultRetainEnded, Expired: DefaultRetainEnded,
		Dead: DefaultRetainDead, Purged: DefaultRetainPurged}
}

// RetiredStatuses are the statuses whose jobs retire, in the order the
// API and the flags name them.
func RetiredStatuses() []Status {
	return []Status{StatusDone, StatusCancelled, StatusExpired, StatusDead, StatusPurged}
}

// Of returns the retention of jobs ended in st; 0 for a status that does
// not retire (pending, firing).
func (r Retention) Of(st Status) time.Duration {
	if f := r.field(st); f != nil {
		return *f
	}
	return 0
}

// Set returns r with st's retention set to d.
func (r Retention) Set(st Status, d time.Duration) Retention {
	if f := r.field(st); f != nil {
		*f = d
	}
	return r
}

func (r *Retention) field(st Status) *time.Duration {
	switch st {
	case StatusDone:
		return &r.Done
	case StatusCancelled:
		return &r.Cancelled
	case StatusExpired:
		return &r.Expired
	case StatusDead:
		return &r.Dead
	case StatusPurged:
		return &r.Purged
	}
	return nil
}

// Over returns the retention in force for a topic whose own settings are
// r over the global retention g: r's set fields, g's for the rest.
func (r Retention) Over(g Retention) Retention {
	for _, st := range RetiredStatuses() {
		if r.Of(st) == 0 {
			r = r.Set(st, g.Of(st))
		}
	}
	return r
}

// IsZero reports whether r sets nothing.
func (r Retention) IsZero() bool { return r == Retention{} }

// Validate reports the first field of r that is out of range, named as
// the API names it under prefix ("retention": "retention.done_ms").
func (r Retention) Validate(prefix string) error {
	for _, st := range RetiredStatuses() {
		if d := r.Of(st); d < 0 || (d > MaxRetention && d != KeepForever) {
			return invalid(prefix+"."+st.String()+"_ms", "must be between 0 (keep forever) and %d", MaxRetention.Milliseconds())
		}
	}
	return nil
}

// Keeps reports whether d keeps a job forever.
func Keeps(d time.Duration) bool { return d <= 0 || d == KeepForever }

// RetentionString shows d as flags and logs do: "forever" or a Go
// duration.
func RetentionString(d time.Duration) string {
	if Keeps(d) {
		return "forever"
	}
	return d.String()
}

// CheckRetention reports a retention flag's value that is out of range,
// naming the flag.
func CheckRetention(flag string, d time.Duration) error {
	if d < 0 || d > MaxRetention {
		return fmt.Errorf("--%s: %v: want 0 (keep forever) or a positive duration up to %v", flag, d, MaxRetention)
	}
	return nil
}
