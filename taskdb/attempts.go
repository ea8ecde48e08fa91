// The attempt history (timer.AttemptLog): one row per delivery, written
// in batches, read back by job, pruned by age.

package taskdb

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.AttemptLog = (*Store)(nil)

const (
	attemptRow     = "(?, ?, ?, ?, ?, ?, ?)"
	attemptColumns = 7
)

// RecordAttempts implements timer.AttemptLog: one multi-row INSERT per
// chunk of rows, skipping an attempt already recorded. The error is cut
// to 1,024 bytes at a UTF-8 boundary, the excerpt to 1,024 bytes.
func (s *Store) RecordAttempts(ctx context.Context, attempts []timer.Attempt) error {
	for chunk := range slices.Chunk(attempts, min(s.d.maxVars/attemptColumns, maxChunkBytes/(3*timer.MaxExcerptBytes))) {
		var b strings.Builder
		b.WriteString(s.d.insertAttempts)
		args := make([]any, 0, len(chunk)*attemptColumns)
		for i, a := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(attemptRow)
			a = a.Stored()
			excerpt := a.Excerpt
			if excerpt == nil {
				excerpt = []byte{} // NOT NULL
			}
			args = append(args, int64(a.Job), int64(a.Attempt), a.StartedAt.UnixMilli(),
				min(a.Duration.Milliseconds(), math.MaxInt32), int64(a.StatusCode), a.Error, excerpt)
		}
		if _, err := s.db.ExecContext(ctx, b.String(), args...); err != nil {
			return fmt.Errorf("record %d attempts: %w", len(attempts), err)
		}
	}
	return nil
}

// ListAttempts implements timer.AttemptLog: a range of the primary key
// of toc_attempts, and the job's entry in the packs of its done time
// (packs.go), in order of attempt and start.
func (s *Store) ListAttempts(ctx context.Context, id timer.JobID) ([]timer.Attempt, error) {
	out, err := s.attemptRows(ctx, id)
	if err != nil {
		return nil, err
	}
	packed, err := s.packedAttempts(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list attempts of job %d: %w", id, err)
	}
	for _, a := range packed {
		if !slices.ContainsFunc(out, func(b timer.Attempt) bool { return b.Attempt == a.Attempt && b.StartedAt.Equal(a.StartedAt) }) {
			out = append(out, a)
		}
	}
	if len(packed) > 0 {
		slices.SortStableFunc(out, func(a, b timer.Attempt) int {
			return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), a.StartedAt.Compare(b.StartedAt))
		})
	}
	return out, nil
}

// attemptRows returns the rows of toc_attempts of job id.
func (s *Store) attemptRows(ctx context.Context, id timer.JobID) ([]timer.Attempt, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT attempt, started_at, duration_ms, status_code, error, excerpt
		FROM toc_attempts WHERE job_id = ? ORDER BY attempt, started_at`, int64(id))
	if err != nil {
		return nil, fmt.Errorf("list attempts of job %d: %w", id, err)
	}
	defer rows.Close()
	out := []timer.Attempt{}
	for rows.Next() {
		a := timer.Attempt{Job: id}
		var started, took int64
		if err := rows.Scan(&a.Attempt, &started, &took, &a.StatusCode, &a.Error, &a.Excerpt); err != nil {
			return nil, fmt.Errorf("list attempts of job %d: %w", id, err)
		}
		a.StartedAt, a.Duration = timer.TimeOf(started), time.Duration(took)*time.Millisecond
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list attempts of job %d: %w", id, err)
	}
	return out, nil
}

// PruneAttempts implements timer.AttemptLog: one DELETE of up to limit
// rows in started_at order, a range of toc_attempts_started; then, with
// what is left of limit, one of the packs done before before (a range of
// their primary key), which started before it too.
func (s *Store) PruneAttempts(ctx context.Context, before time.Time, limit int) (int, error) {
	total := 0
	for _, q := range []string{s.d.pruneAttempts, s.d.prunePacks} {
		if total >= limit {
			break
		}
		res, err := s.db.ExecContext(ctx, q, before.UnixMilli(), limit-total)
		if err != nil {
			return total, fmt.Errorf("prune attempts before %s: %w", before.UTC().Format(time.RFC3339), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, err
		}
		total += int(n)
	}
	return total, nil
}
