package timer

import (
	"context"
	"fmt"
	"time"
)

// OverdueScanner is implemented by a Scanner that can find the jobs whose
// deadline passed while they waited unclaimed, for the backstop to end.
// A worker ends a job past its deadline when it claims it, but it claims
// nothing of a paused topic, and a deadline passes all the same.
type OverdueScanner interface {
	// ScanOverdue returns up to limit jobs that are pending, not firing,
	// and whose deadline is before now's millisecond (Job.Expired), by
	// deadline then id, each with its topic's slot count (0 when the
	// topic has no row). It reads an index of those deadlines, not the
	// pending jobs.
	ScanOverdue(ctx context.Context, now time.Time, limit int) ([]Overdue, error)
	// ExpireWaiting is JobWriter.Expire of a job that is pending and not
	// firing: one an attempt is under way for is left as it is, and so is
	// one cancelled or rescheduled since it was read.
	ExpireWaiting(ctx context.Context, id JobID, reason string, now time.Time) (bool, error)
}

// Overdue is a job ScanOverdue found, with its topic's slot count.
type Overdue struct {
	Job   *Job
	Slots int
}

// overduePages bounds the pages of overdue jobs one backstop pass ends in
// a shard, so that a mass of deadlines passing at once does not hold up
// its scan; the rest are ended at the next pass.
const overduePages = 10

// expireOverdue ends the jobs of store whose deadline passed while they
// waited unclaimed, as the worker ends one it claims too late (expired,
// the reason in its last error, counted, its group told), takes their
// timers out of Redis, and returns how many it ended.
func (b *Backstop) expireOverdue(ctx context.Context, store Scanner) (int, error) {
	scanner, ok := store.(OverdueScanner)
	if !ok {
		return 0, nil
	}
	n := 0
	for range overduePages {
		now := b.cfg.Now()
		page, err := scanner.ScanOverdue(ctx, now, b.cfg.Page)
		if err != nil {
			return n, fmt.Errorf("scan overdue jobs: %w", err)
		}
		var gone []Timer
		for _, o := range page {
			j := o.Job
			ok, err := scanner.ExpireWaiting(ctx, j.ID, ExpireReason(j, "no attempt could start by it"), now)
			if err != nil {
				return n, err
			}
			if !ok {
				continue // fired, cancelled or rescheduled since it was read
			}
			n++
			b.cfg.Observer.Expired(j.Topic)
			if b.ended != nil && j.GroupID != "" {
				b.ended(j.GroupID)
			}
			if o.Slots > 0 {
				gone = append(gone, Timer{ID: j.ID, Topic: j.Topic, Slots: o.Slots, Basis: j.SlotBasis(), DueAt: j.DueAt,
					Attempt: j.Attempts, Priority: j.Priority, Window: timerWindow(j, j.Attempts)})
			}
		}
		if len(gone) > 0 {
			// The rows are the truth: a timer left behind is acked when it
			// is claimed, its row found expired.
			if _, err := b.index.Remove(ctx, gone); err != nil {
				return n, fmt.Errorf("remove %d expired timers: %w", len(gone), err)
			}
		}
		if len(page) < b.cfg.Page {
			break
		}
	}
	return n, nil
}
