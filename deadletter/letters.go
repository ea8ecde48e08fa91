package deadletter

import (
	"context"
	"fmt"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// Jobs is what Letters reads of the task store; timer.Store has it.
type Jobs interface {
	// Topic returns one topic, or an error wrapping timer.ErrNotFound.
	Topic(ctx context.Context, name string) (timer.Topic, error)
	// Get returns one job, or an error wrapping timer.ErrNotFound.
	Get(ctx context.Context, id timer.JobID) (*timer.Job, error)
	// GetMany returns the jobs of ids that exist, in any order.
	GetMany(ctx context.Context, ids []timer.JobID) ([]*timer.Job, error)
}

// Letters is the dead-letter view the API serves: the Dead sets of a Box
// joined with the job rows of the task store.
type Letters struct {
	box  *Box
	jobs Jobs
}

// NewLetters returns the dead letters of box, with their rows read from
// jobs.
func NewLetters(box *Box, jobs Jobs) *Letters { return &Letters{box: box, jobs: jobs} }

// ListDead returns up to limit dead jobs of topic after the cursor after
// ("" for the first page), in the order of Box.List, and the next page's
// cursor ("" at the end). An unknown topic is an error wrapping
// timer.ErrNotFound. A job in a Dead set whose row is gone is left out.
func (l *Letters) ListDead(ctx context.Context, topic, after string, limit int) ([]*timer.Job, string, error) {
	if !slots.ValidTopic(topic) {
		return nil, "", &timer.FieldError{Field: "topic", Message: fmt.Sprintf("%q is not a topic name", topic)}
	}
	t, err := l.jobs.Topic(ctx, topic)
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters: %w", err)
	}
	entries, next, err := l.box.List(ctx, topic, t.Slots, after, limit)
	if err != nil {
		return nil, "", err
	}
	if len(entries) == 0 {
		return nil, next, nil
	}
	ids := make([]timer.JobID, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	rows, err := l.jobs.GetMany(ctx, ids)
	if err != nil {
		return nil, "", fmt.Errorf("list dead letters of %s: %w", topic, err)
	}
	byID := make(map[timer.JobID]*timer.Job, len(rows))
	for _, j := range rows {
		byID[j.ID] = j
	}
	jobs := make([]*timer.Job, 0, len(entries))
	for _, e := range entries {
		if j, ok := byID[e.ID]; ok {
			jobs = append(jobs, j)
		}
	}
	return jobs, next, nil
}

// PurgeDead removes dead job id from its slot's Dead set; its row keeps
// status dead. It returns an error wrapping timer.ErrNotFound when the
// job does not exist or is not in the Dead set, and timer.ErrConflict when
// its row is not dead.
func (l *Letters) PurgeDead(ctx context.Context, id timer.JobID) error {
	j, err := l.jobs.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("purge dead letter %d: %w", id, err)
	}
	if j.Status != timer.StatusDead {
		return fmt.Errorf("purge dead letter %d: job is %s: %w", id, j.Status, timer.ErrConflict)
	}
	t, err := l.jobs.Topic(ctx, j.Topic)
	if err != nil {
		return fmt.Errorf("purge dead letter %d: %w", id, err)
	}
	if !slots.Valid(t.Slots) {
		return fmt.Errorf("purge dead letter %d: topic %s has slot count %d", id, t.Name, t.Slots)
	}
	slot := slots.JobSlot(j.Topic, j.SlotBasis(), t.Slots)
	ok, err := l.box.Purge(ctx, slot, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("purge dead letter %d: not in the Dead set of slot %s: %w", id, slot, timer.ErrNotFound)
	}
	return nil
}
