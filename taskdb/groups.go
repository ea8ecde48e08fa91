// The rows of groups (timer.GroupStore): a group's row in toc_groups,
// its members' in toc_jobs by group_id.

package taskdb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

var (
	_ timer.GroupStore = (*Store)(nil)
	_ timer.Unwriter   = (*Store)(nil)
)

// liveStatus is the condition that a member of a group has not ended, on
// group_status (its status, a virtual column that toc_jobs_group holds;
// migration 0021), from timer.LiveStatuses: pending and firing are both
// status 0 (see rowStatus), so a new status that ends a job needs no
// change here.
var liveStatus = func() string {
	var codes []string
	for _, st := range timer.LiveStatuses() {
		status, _ := rowStatus(st)
		if c := strconv.FormatInt(status, 10); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	return "group_status IN (" + strings.Join(codes, ", ") + ")"
}()

// CreateGroup implements timer.GroupStore.
func (s *Store) CreateGroup(ctx context.Context, g *timer.Group) error {
	if err := timer.CheckQualifiedGroupID(g.ID, "id"); err != nil {
		return err
	}
	var topic string
	var callback, payload any
	if cb := g.OnComplete; cb != nil {
		topic, callback, payload = cb.Topic, cb.CallbackURL, cb.Payload
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO toc_groups (group_id, cb_topic, callback, payload, gmt_create) VALUES (?, ?, ?, ?, ?)`,
		[]byte(g.ID), topic, callback, payload, g.CreatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("create group %q: %w", timer.GroupName(g.ID), s.translate(err))
	}
	return nil
}

const selectGroup = `SELECT group_id, cb_topic, callback, payload, gmt_create, sealed_at, completed_at, counts, completion_job FROM toc_groups `

func scanGroup(row interface{ Scan(...any) error }) (*timer.Group, error) {
	var (
		g                         timer.Group
		id, payload               []byte
		callback                  *string
		created, sealed, complete int64
		counts, topic             string
		job                       unsigned
	)
	if err := row.Scan(&id, &topic, &callback, &payload, &created, &sealed, &complete, &counts, &job); err != nil {
		return nil, err
	}
	g.ID, g.CreatedAt = string(id), timer.TimeOf(created)
	g.SealedAt, g.CompletedAt, g.CompletionJob = timeOrZero(sealed), timeOrZero(complete), timer.JobID(job)
	if callback != nil {
		g.OnComplete = &timer.GroupCallback{Topic: topic, CallbackURL: *callback, Payload: payload}
	}
	if counts != "" {
		var byCode map[uint8]int64
		if err := json.Unmarshal([]byte(counts), &byCode); err != nil {
			return nil, fmt.Errorf("group %q: counts %q: %w", timer.GroupName(g.ID), counts, err)
		}
		g.Counts = make(map[timer.Status]int64, len(byCode))
		for c, n := range byCode {
			g.Counts[timer.Status(c)] = n
		}
	}
	return &g, nil
}

// GetGroup implements timer.GroupStore: a primary key lookup.
func (s *Store) GetGroup(ctx context.Context, id string) (*timer.Group, error) {
	g, err := scanGroup(s.db.QueryRowContext(ctx, selectGroup+"WHERE group_id = ?", []byte(id)))
	if err != nil {
		return nil, fmt.Errorf("get group %q: %w", timer.GroupName(id), s.translate(err))
	}
	return g, nil
}

// SealGroup implements timer.GroupStore.
func (s *Store) SealGroup(ctx context.Context, id string, now time.Time) (*timer.Group, error) {
	if _, err := s.db.ExecContext(ctx, "UPDATE toc_groups SET sealed_at = ? WHERE group_id = ? AND sealed_at = 0", now.UnixMilli(), []byte(id)); err != nil {
		return nil, fmt.Errorf("seal group %q: %w", timer.GroupName(id), err)
	}
	return s.GetGroup(ctx, id)
}

// CompleteGroup implements timer.GroupStore: one conditional UPDATE.
func (s *Store) CompleteGroup(ctx context.Context, id string, counts map[timer.Status]int64, now time.Time) (bool, error) {
	byCode := make(map[uint8]int64, len(counts))
	for st, n := range counts {
		byCode[uint8(st)] = n
	}
	text, err := json.Marshal(byCode)
	if err != nil {
		return false, fmt.Errorf("complete group %q: %w", timer.GroupName(id), err)
	}
	// A group without a callback has nothing left to do once completed.
	ok, err := s.updateOne(ctx, `UPDATE toc_groups SET completed_at = ?, counts = ?, finished = CASE WHEN callback IS NULL THEN 1 ELSE 0 END
		WHERE group_id = ? AND sealed_at <> 0 AND completed_at = 0`, now.UnixMilli(), string(text), []byte(id))
	if err != nil {
		return false, fmt.Errorf("complete group %q: %w", timer.GroupName(id), err)
	}
	return ok, nil
}

// SetGroupJob implements timer.GroupStore.
func (s *Store) SetGroupJob(ctx context.Context, id string, job timer.JobID) error {
	ok, err := s.updateOne(ctx, "UPDATE toc_groups SET completion_job = ?, finished = 1 WHERE group_id = ?", int64(job), []byte(id))
	if err != nil {
		return fmt.Errorf("record the job of group %q: %w", timer.GroupName(id), err)
	}
	if !ok {
		return fmt.Errorf("record the job of group %q: %w", timer.GroupName(id), timer.ErrNotFound)
	}
	return nil
}

// GroupLive implements timer.GroupStore: one entry of toc_jobs_group at
// most is read.
func (s *Store) GroupLive(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.rdb.QueryRowContext(ctx, "SELECT 1 FROM toc_jobs WHERE group_id = ? AND "+liveStatus+" LIMIT 1", []byte(id)).Scan(&one)
	switch err := s.translate(err); {
	case err == nil:
		return true, nil
	case err == timer.ErrNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("group %q: live members: %w", timer.GroupName(id), err)
	}
}

// GroupCounts implements timer.GroupStore: the group's range of
// toc_jobs_group, grouped by status (and the fired flag, which tells
// firing from pending).
func (s *Store) GroupCounts(ctx context.Context, id string) (map[timer.Status]int64, error) {
	rows, err := s.rdb.QueryContext(ctx, "SELECT status, fired, COUNT(*) FROM toc_jobs WHERE group_id = ? GROUP BY status, fired", []byte(id))
	if err != nil {
		return nil, fmt.Errorf("count group %q: %w", timer.GroupName(id), err)
	}
	defer rows.Close()
	counts := make(map[timer.Status]int64)
	for rows.Next() {
		var status, fired, n int64
		if err := rows.Scan(&status, &fired, &n); err != nil {
			return nil, fmt.Errorf("count group %q: %w", timer.GroupName(id), err)
		}
		counts[statusOf(status, fired)] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count group %q: %w", timer.GroupName(id), err)
	}
	return counts, nil
}

// UnfinishedGroups implements timer.GroupStore: a range of
// toc_groups_unfinished.
func (s *Store) UnfinishedGroups(ctx context.Context, after string, limit int) ([]*timer.Group, error) {
	rows, err := s.db.QueryContext(ctx, selectGroup+"WHERE finished = 0 AND group_id > ? AND sealed_at <> 0 ORDER BY group_id LIMIT ?", []byte(after), limit)
	if err != nil {
		return nil, fmt.Errorf("unfinished groups: %w", err)
	}
	defer rows.Close()
	var out []*timer.Group
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, fmt.Errorf("unfinished groups: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
