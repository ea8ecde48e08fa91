// Finding jobs by what the caller knows of them (topic, status, business
// id, idempotency key, due time), and cancelling or rescheduling all the
// pending ones that match.

package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// MaxJobPage is the most jobs one JobQuery returns.
const MaxJobPage = 1000

// JobQuery selects jobs of one topic for JobLister.ListJobs, in the order
// of (due time, id), strictly after After.
type JobQuery struct {
	Topic string
	// Statuses keeps the jobs in one of them; none: any status.
	Statuses []Status
	// BizID, when not 0, and Key, when not "", keep the jobs with that
	// business id or idempotency key.
	BizID uint64
	Key   string
	// FireAfter and FireBefore, when set, keep the jobs due at or after
	// FireAfter and before FireBefore.
	FireAfter, FireBefore time.Time
	After                 Cursor
	Limit                 int
}

// Check returns a *FieldError naming the first field of q out of range.
func (q JobQuery) Check() error {
	switch {
	case !ValidTopic(q.Topic):
		return invalid("topic", "required; must match ^[a-z0-9][a-z0-9_-]{0,63}$")
	case len(q.Key) > MaxKeyBytes || !ValidKey(q.Key):
		return invalid("key", "at most %d bytes of printable characters", MaxKeyBytes)
	case q.Limit < 1 || q.Limit > MaxJobPage:
		return invalid("limit", "must be within 1..%d", MaxJobPage)
	case !q.FireAfter.IsZero() && !q.FireBefore.IsZero() && !q.FireAfter.Before(q.FireBefore):
		return invalid("fire_before", "must be after fire_after")
	}
	for _, s := range q.Statuses {
		if !s.Known() {
			return invalid("status", "unknown status %d", s)
		}
	}
	return nil
}

// Matches reports whether j is one of the jobs q selects, cursor aside.
func (q JobQuery) Matches(j *Job) bool {
	return j.Topic == q.Topic &&
		(len(q.Statuses) == 0 || slices.Contains(q.Statuses, j.Status)) &&
		(q.BizID == 0 || j.BizID == q.BizID) &&
		(q.Key == "" || j.Key == q.Key) &&
		(q.FireAfter.IsZero() || !j.DueAt.Before(q.FireAfter)) &&
		(q.FireBefore.IsZero() || j.DueAt.Before(q.FireBefore))
}

// Precedes reports whether cursor c comes before j in (due time, id)
// order: whether j belongs to the page after c.
func (c Cursor) Precedes(j *Job) bool {
	return cmp.Or(j.DueAt.Compare(c.DueAt), cmp.Compare(j.ID, c.ID)) > 0
}

// CursorOf is the position of j in (due time, id) order.
func CursorOf(j *Job) Cursor { return Cursor{DueAt: j.DueAt, ID: j.ID} }

// JobLister finds jobs.
type JobLister interface {
	// ListJobs returns up to q.Limit jobs that q selects, in (due time,
	// id) order, strictly after q.After. Each common filter (a topic's
	// jobs of a status in due order, of a business id, of a key) is read
	// from an index, never by scanning the topic.
	ListJobs(ctx context.Context, q JobQuery) ([]*Job, error)
}

// ParseStatus returns the status named s, as String names it.
func ParseStatus(s string) (Status, error) {
	for st := StatusPending; st <= StatusExpired; st++ {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, invalid("status", "%q is not one of pending, firing, done, cancelled, dead, purged, expired", s)
}

// Find returns a page of the jobs q selects.
func (s *Scheduler) Find(ctx context.Context, q JobQuery) ([]*Job, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	return s.store.ListJobs(ctx, q)
}

// Bulk is the outcome of a change to every job a query selects.
type Bulk struct {
	// Changed counts the jobs changed: cancelled, or rescheduled.
	Changed int
	// TooLate counts the jobs that matched while pending or firing but
	// could not be changed: an attempt was under way or about to start,
	// or had ended, as a single cancel would have answered in_flight or
	// already_fired.
	TooLate int
}

// CancelMatching cancels every pending job of q's topic with q's business
// id or key (one of them is required), each as Cancel does, and counts
// the outcomes. Jobs that were already done, cancelled or dead when found
// are not counted.
func (s *Scheduler) CancelMatching(ctx context.Context, q JobQuery) (Bulk, error) {
	return s.changeMatching(ctx, q, func(ctx context.Context, id JobID) (*Job, error) { return s.Cancel(ctx, id) })
}

// RescheduleMatching moves every pending job that q selects (as for
// CancelMatching) to fireAt or delay, each as Reschedule does.
func (s *Scheduler) RescheduleMatching(ctx context.Context, q JobQuery, fireAt time.Time, delay time.Duration) (Bulk, error) {
	if _, err := dueTime(fireAt, delay, s.cfg.Now()); err != nil {
		return Bulk{}, err
	}
	return s.changeMatching(ctx, q, func(ctx context.Context, id JobID) (*Job, error) {
		return s.Reschedule(ctx, id, fireAt, delay)
	})
}

func (s *Scheduler) changeMatching(ctx context.Context, q JobQuery, change func(context.Context, JobID) (*Job, error)) (Bulk, error) {
	if q.BizID == 0 && q.Key == "" {
		return Bulk{}, invalid("biz_id", "biz_id or key is required: a change to many jobs names the business object")
	}
	q.Statuses, q.Limit = []Status{StatusPending, StatusFiring}, MaxJobPage
	if err := q.Check(); err != nil {
		return Bulk{}, err
	}
	// Every match is found before any is changed: a job rescheduled later
	// would otherwise turn up again on a later page.
	var (
		b       Bulk
		pending []JobID
	)
	for {
		jobs, err := s.store.ListJobs(ctx, q)
		if err != nil {
			return b, err
		}
		for _, j := range jobs {
			if j.Status == StatusFiring {
				b.TooLate++
			} else {
				pending = append(pending, j.ID)
			}
		}
		if len(jobs) < q.Limit {
			break
		}
		q.After = CursorOf(jobs[len(jobs)-1])
	}
	for _, id := range pending {
		_, err := change(ctx, id)
		switch {
		case err == nil:
			b.Changed++
		case errors.Is(err, ErrInFlight) || errors.Is(err, ErrAlreadyFired):
			b.TooLate++
		case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
			// Cancelled, rescheduled or dead meanwhile: not ours to count.
		default:
			return b, fmt.Errorf("job %s: %w", id, err)
		}
	}
	return b, nil
}
