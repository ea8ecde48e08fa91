// The rows of recurring schedules (timer.ScheduleStore): times in Unix
// ms, 0 for an unset start_at, end_at or next_at.

package taskdb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.ScheduleStore = (*Store)(nil)

// msOrZero is t in Unix ms, 0 for the zero time.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOrZero is the inverse of msOrZero.
func timeOrZero(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return timer.TimeOf(ms)
}

// CreateSchedule implements timer.ScheduleWriter.
func (s *Store) CreateSchedule(ctx context.Context, sc *timer.Schedule) error {
	if err := timer.CheckSchedule(sc); err != nil {
		return fmt.Errorf("create schedule: %w", err)
	}
	j := sc.Job
	_, err := s.db.ExecContext(ctx, `INSERT INTO toc_schedules (schedule_id, topic, biz_id, biz_type, callback, payload,
		max_attempts, priority, cron, time_zone, every_ms, start_at, end_at, catch_up, paused, next_at, gmt_create, gmt_modified, expire_after_ms, concurrency_key,
		owner, skipped, last_skipped_at, last_skip_reason)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.d.uint64Arg(uint64(sc.ID)), j.Topic, s.d.uint64Arg(j.BizID), s.d.uint64Arg(j.BizType), j.CallbackURL, j.Payload,
		int64(j.MaxAttempts), int64(j.Priority), sc.Cron, sc.TimeZone, sc.Every.Milliseconds(),
		msOrZero(sc.StartAt), msOrZero(sc.EndAt), int64(sc.CatchUp), boolInt(sc.Paused), msOrZero(sc.Next),
		sc.CreatedAt.UnixMilli(), sc.UpdatedAt.UnixMilli(), templateExpiry(j), j.ConcurrencyKey,
		sc.Owner, sc.Skipped, msOrZero(sc.LastSkippedAt), sc.LastSkipReason)
	if err != nil {
		return fmt.Errorf("create schedule %s: %w", sc.ID, s.translate(err))
	}
	return nil
}

// templateExpiry is the expire_after_ms column of a schedule's job: NULL
// for the topic's deadline, -1 for none, else the job's own.
func templateExpiry(j timer.JobTemplate) any {
	switch {
	case j.Expiry.Set:
		return j.Expiry.After.Milliseconds()
	case j.NoExpiry:
		return int64(-1)
	}
	return nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

const selectSchedule = `SELECT schedule_id, topic, biz_id, biz_type, callback, payload, max_attempts, priority, cron,
	time_zone, every_ms, start_at, end_at, catch_up, paused, next_at, gmt_create, gmt_modified, expire_after_ms, concurrency_key,
	owner, skipped, last_skipped_at, last_skip_reason FROM toc_schedules `

func scanSchedule(row interface{ Scan(...any) error }) (*timer.Schedule, error) {
	var (
		sc                                timer.Schedule
		id, bizID, bizType                unsigned
		maxAttempts, priority, every      int64
		start, end, catchUp, paused, next int64
		created, modified, lastSkipped    int64
		expireAfter                       sql.NullInt64
		ckey                              []byte
	)
	if err := row.Scan(&id, &sc.Job.Topic, &bizID, &bizType, &sc.Job.CallbackURL, &sc.Job.Payload, &maxAttempts, &priority,
		&sc.Cron, &sc.TimeZone, &every, &start, &end, &catchUp, &paused, &next, &created, &modified, &expireAfter, &ckey,
		&sc.Owner, &sc.Skipped, &lastSkipped, &sc.LastSkipReason); err != nil {
		return nil, err
	}
	sc.LastSkippedAt = timeOrZero(lastSkipped)
	sc.ID, sc.Job.BizID, sc.Job.BizType = timer.ScheduleID(id), uint64(bizID), uint64(bizType)
	sc.Job.MaxAttempts, sc.Job.Priority = int(maxAttempts), timer.Priority(priority)
	sc.Job.ConcurrencyKey = string(ckey)
	sc.Every = time.Duration(every) * time.Millisecond
	sc.StartAt, sc.EndAt, sc.Next = timeOrZero(start), timeOrZero(end), timeOrZero(next)
	sc.CatchUp, sc.Paused = timer.CatchUp(catchUp), paused != 0
	sc.CreatedAt, sc.UpdatedAt = timer.TimeOf(created), timer.TimeOf(modified)
	switch {
	case !expireAfter.Valid:
	case expireAfter.Int64 < 0:
		sc.Job.NoExpiry = true
	default:
		sc.Job.Expiry = timer.ExpireAfter(time.Duration(expireAfter.Int64) * time.Millisecond)
	}
	return &sc, nil
}

// GetSchedule implements timer.ScheduleReader.
func (s *Store) GetSchedule(ctx context.Context, id timer.ScheduleID) (*timer.Schedule, error) {
	sc, err := scanSchedule(s.db.QueryRowContext(ctx, selectSchedule+"WHERE schedule_id = ?", s.d.uint64Arg(uint64(id))))
	if err != nil {
		return nil, fmt.Errorf("get schedule %s: %w", id, s.translate(err))
	}
	return sc, nil
}

// ListSchedules implements timer.ScheduleReader.
func (s *Store) ListSchedules(ctx context.Context, after timer.ScheduleID, limit int) ([]*timer.Schedule, error) {
	return s.schedules(ctx, "list schedules", selectSchedule+"WHERE schedule_id > ? ORDER BY schedule_id LIMIT ?",
		s.d.uint64Arg(uint64(after)), limit)
}

// DueSchedules implements timer.ScheduleReader, by the index on
// (paused, next_at, schedule_id).
func (s *Store) DueSchedules(ctx context.Context, until time.Time, limit int) ([]*timer.Schedule, error) {
	return s.schedules(ctx, "due schedules", selectSchedule+"WHERE paused = 0 AND next_at > 0 AND next_at <= ? ORDER BY next_at, schedule_id LIMIT ?",
		until.UnixMilli(), limit)
}

// schedules reads the schedules of a query from the writer's pool: a
// materializer must see the cursor its last pass moved.
func (s *Store) schedules(ctx context.Context, what, query string, args ...any) ([]*timer.Schedule, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []*timer.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// AdvanceSchedule implements timer.ScheduleWriter with one conditional
// UPDATE on the old cursor.
func (s *Store) AdvanceSchedule(ctx context.Context, id timer.ScheduleID, from, to, now time.Time) (bool, error) {
	ok, err := s.updateOne(ctx, "UPDATE toc_schedules SET next_at = ?, gmt_modified = ? WHERE schedule_id = ? AND next_at = ?",
		msOrZero(to), now.UnixMilli(), s.d.uint64Arg(uint64(id)), msOrZero(from))
	if err != nil {
		return false, fmt.Errorf("advance schedule %s: %w", id, err)
	}
	return ok, nil
}

// SkipOccurrences implements timer.ScheduleWriter with one conditional
// UPDATE on the old cursor that also counts the skipped occurrences.
func (s *Store) SkipOccurrences(ctx context.Context, id timer.ScheduleID, from, to time.Time, n int64, reason string, now time.Time) (bool, error) {
	if n < 1 || len(reason) > timer.MaxSkipReasonBytes {
		return false, fmt.Errorf("skip %d occurrences of schedule %s: %w", n, id, timer.ErrInvalid)
	}
	ok, err := s.updateOne(ctx, `UPDATE toc_schedules SET next_at = ?, skipped = skipped + ?, last_skipped_at = ?, last_skip_reason = ?,
		gmt_modified = ? WHERE schedule_id = ? AND next_at = ?`,
		msOrZero(to), n, now.UnixMilli(), reason, now.UnixMilli(), s.d.uint64Arg(uint64(id)), msOrZero(from))
	if err != nil {
		return false, fmt.Errorf("skip occurrences of schedule %s: %w", id, err)
	}
	return ok, nil
}

// PauseSchedule implements timer.ScheduleWriter: one conditional UPDATE
// on the paused flag, then a read.
func (s *Store) PauseSchedule(ctx context.Context, id timer.ScheduleID, paused bool, next, now time.Time) (*timer.Schedule, error) {
	var err error
	if paused {
		_, err = s.db.ExecContext(ctx, "UPDATE toc_schedules SET paused = 1, gmt_modified = ? WHERE schedule_id = ? AND paused = 0",
			now.UnixMilli(), s.d.uint64Arg(uint64(id)))
	} else {
		_, err = s.db.ExecContext(ctx, "UPDATE toc_schedules SET paused = 0, next_at = ?, gmt_modified = ? WHERE schedule_id = ? AND paused = 1",
			msOrZero(next), now.UnixMilli(), s.d.uint64Arg(uint64(id)))
	}
	if err != nil {
		return nil, fmt.Errorf("pause schedule %s: %w", id, err)
	}
	return s.GetSchedule(ctx, id)
}

// DeleteSchedule implements timer.ScheduleWriter.
func (s *Store) DeleteSchedule(ctx context.Context, id timer.ScheduleID) error {
	ok, err := s.updateOne(ctx, "DELETE FROM toc_schedules WHERE schedule_id = ?", s.d.uint64Arg(uint64(id)))
	switch {
	case err != nil:
		return fmt.Errorf("delete schedule %s: %w", id, err)
	case !ok:
		return fmt.Errorf("delete schedule %s: %w", id, timer.ErrNotFound)
	}
	return nil
}
