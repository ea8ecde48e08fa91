// The attempt history over shards: a job's attempts live in its shard.

package shard

import (
	"context"
	"fmt"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.AttemptLog = (*Store)(nil)

// RecordAttempts implements timer.AttemptLog: one insert per shard.
func (s *Store) RecordAttempts(ctx context.Context, attempts []timer.Attempt) error {
	byShard, err := group(s, attempts, func(a timer.Attempt) timer.JobID { return a.Job })
	if err != nil {
		return err
	}
	return each(byShard, func(i int, attempts []timer.Attempt) error {
		return s.shards[i].RecordAttempts(ctx, attempts)
	})
}

// ListAttempts implements timer.AttemptLog.
func (s *Store) ListAttempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error) {
	st, err := s.of(id)
	if err != nil {
		return []timer.Attempt{}, nil // no such job: no attempts
	}
	return st.ListAttempts(ctx, id)
}

// PruneAttempts implements timer.AttemptLog: shard by shard, each given
// what is left of limit.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time, limit int) (int, error) {
	n := 0
	for i, st := range s.shards {
		if n >= limit {
			break
		}
		k, err := st.PruneAttempts(ctx, before, limit-n)
		n += k
		if err != nil {
			return n, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return n, nil
}
