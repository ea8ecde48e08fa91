package deadletter

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// MaxLimit bounds the page size of ListDead.
const MaxLimit = 1000

// Jobs is what Letters needs of the task store; timer.Store has it.
type Jobs interface {
	timer.DeadReader
	// Get returns one job, or an error wrapping timer.ErrNotFound.
	Get(ctx context.Context, id timer.JobID) (*timer.Job, error)
	// Topic returns one topic, or an error wrapping timer.ErrNotFound.
	Topic(ctx context.Context, name string) (timer.Topic, error)
	// Transition moves a job from status from to to, reporting whether it
	// was in from.
	Transition(ctx context.Context, id timer.JobID, from, to timer.Status, now time.Time) (bool, error)
}

// Letters is the dead-letter record the API serves: the dead rows of the
// task store, which stay correct whatever happens to Redis. A purge acts
// on the row first and then clears the job from its slot's Dead set.
type Letters struct {
	box  *Box
	jobs Jobs
	now  func() time.Time
}

// NewLetters returns the dead letters of jobs, purging from box too.
func NewLetters(box *Box, jobs Jobs) *Letters { return &Letters{box: box, jobs: jobs, now: time.Now} }

// ListDead returns up to q.Limit dead jobs of q.Topic that died in
// [q.From, q.To) and whose last error contains q.ErrorContains (see
// timer.DeadReader), in the order they died (then by id), after the
// cursor after ("" for the first page; q.After is not read), and the next
// page's cursor ("" at the end). An unknown topic is an error wrapping
// timer.ErrNotFound. Without q.Topic it lists those of q.Topics together
// (none of none), whether they exist or not.
func (l *Letters) ListDead(ctx context.Context, q timer.DeadQuery, after string) ([]*timer.Job, string, error) {
	if q.Topic != "" && !slots.ValidTopic(q.Topic) {
		return nil, "", &timer.FieldError{Field: "topic", Message: fmt.Sprintf("%q is not a topic name", q.Topic)}
	}
	limit := q.Limit
	if limit < 1 || limit > MaxLimit {
		return nil, "", &timer.FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1..%d", MaxLimit)}
	}
	var err error
	if q.After, err = timer.ParseCursor(after, "cursor"); err != nil {
		return nil, "", err
	}
	if q.Topic != "" {
		if _, err := l.jobs.Topic(ctx, q.Topic); err != nil {
			return nil, "", fmt.Errorf("list dead letters: %w", err)
		}
	} else if len(q.Topics) == 0 {
		return []*timer.Job{}, "", nil
	}
	jobs, err := l.jobs.ListDead(ctx, q)
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters of %s: %w", cmp.Or(q.Topic, fmt.Sprintf("%d topics", len(q.Topics))), err)
	}
	next := ""
	if len(jobs) == limit {
		last := jobs[len(jobs)-1]
		next = timer.Cursor{DueAt: last.UpdatedAt, ID: last.ID}.Text()
	}
	return jobs, next, nil
}

// PurgeDead ends dead job id: its row moves from dead to purged (kept as a
// record, never listed or fired again), then its member leaves its slot's
// Dead set. It returns an error wrapping timer.ErrNotFound for an unknown
// job and timer.ErrConflict for one that is not dead. Once the row is
// purged, a failure to clear Redis is not an error: nothing reads the
// Dead sets, and the member is dropped on the next purge or replay.
func (l *Letters) PurgeDead(ctx context.Context, id timer.JobID) error {
	ok, err := l.jobs.Transition(ctx, id, timer.StatusDead, timer.StatusPurged, l.now())
	if err != nil {
		return fmt.Errorf("purge dead letter %d: %w", id, err)
	}
	j, err := l.jobs.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("purge dead letter %d: %w", id, err)
	}
	if !ok {
		return fmt.Errorf("purge dead letter %d: job is %s: %w", id, j.Status, timer.ErrConflict)
	}
	t, err := l.jobs.Topic(ctx, j.Topic)
	if err != nil || !slots.Valid(t.Slots) {
		return nil // the row is purged; its Dead set cannot be found
	}
	_, _ = l.box.Purge(ctx, slots.JobSlot(j.Topic, j.SlotBasis(), t.Slots), id) // best effort: see above
	return nil
}
