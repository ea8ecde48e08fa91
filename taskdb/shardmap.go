// The shard map a database records (toc_shard_map), and the removal of
// rows a sharded insert must take back.

package taskdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

// ShardMap is what one shard records of the map it belongs to.
type ShardMap struct {
	// ID names the whole map: every shard of one map holds the same.
	ID string
	// Shards is the map's shard count, Shard this database's number.
	Shards, Shard int
	// Earlier are the shard counts of the maps before this one, oldest
	// first: where jobs placed under them by key may be.
	Earlier []int
}

// ShardMap returns the map this database recorded, or an error wrapping
// timer.ErrNotFound when it recorded none (a store from before shards).
func (s *Store) ShardMap(ctx context.Context) (ShardMap, error) {
	var (
		m       ShardMap
		earlier string
	)
	err := s.db.QueryRowContext(ctx, "SELECT map_id, shards, shard, earlier FROM toc_shard_map WHERE one = 1").
		Scan(&m.ID, &m.Shards, &m.Shard, &earlier)
	if errors.Is(err, sql.ErrNoRows) {
		return ShardMap{}, fmt.Errorf("shard map: %w", timer.ErrNotFound)
	}
	if err != nil {
		return ShardMap{}, fmt.Errorf("read shard map: %w", err)
	}
	for f := range strings.SplitSeq(earlier, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return ShardMap{}, fmt.Errorf("shard map: earlier counts %q: %w", earlier, timer.ErrInvalid)
		}
		m.Earlier = append(m.Earlier, n)
	}
	return m, nil
}

// SetShardMap records m, replacing what this database recorded before.
func (s *Store) SetShardMap(ctx context.Context, m ShardMap) error {
	if err := m.check(); err != nil {
		return err
	}
	return s.inTx(ctx, true, func(tx execer) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM toc_shard_map WHERE one = 1"); err != nil {
			return fmt.Errorf("record shard map: %w", err)
		}
		if err := insertMap(ctx, tx, m); err != nil {
			return fmt.Errorf("record shard map: %w", err)
		}
		return nil
	})
}

// InitShardMap records m unless this database recorded a map already,
// and returns the map it holds then: m, or the one recorded before. Of
// processes that race to record the first map, one wins and the others
// learn its map.
func (s *Store) InitShardMap(ctx context.Context, m ShardMap) (ShardMap, error) {
	if err := m.check(); err != nil {
		return ShardMap{}, err
	}
	err := insertMap(ctx, s.db, m)
	switch {
	case err == nil:
		return m, nil
	case !s.d.isConflict(err):
		return ShardMap{}, fmt.Errorf("record shard map: %w", err)
	}
	return s.ShardMap(ctx)
}

func (m ShardMap) check() error {
	if m.ID == "" || len(m.ID) > 64 || m.Shards < 1 || m.Shard < 0 || m.Shard >= m.Shards {
		return fmt.Errorf("shard map %+v: %w", m, timer.ErrInvalid)
	}
	return nil
}

func insertMap(ctx context.Context, ex execer, m ShardMap) error {
	earlier := make([]string, len(m.Earlier))
	for i, n := range m.Earlier {
		earlier[i] = strconv.Itoa(n)
	}
	_, err := ex.ExecContext(ctx, "INSERT INTO toc_shard_map (one, map_id, shards, shard, earlier, gmt_modified) VALUES (1, ?, ?, ?, ?, ?)",
		m.ID, m.Shards, m.Shard, strings.Join(earlier, ","), time.Now().UnixMilli())
	return err
}

// HasJobs reports whether the store holds any job row.
func (s *Store) HasJobs(ctx context.Context) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, "SELECT 1 FROM toc_jobs LIMIT 1").Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("any job: %w", err)
	}
	return true, nil
}

// Unwrite deletes the rows of ids that are still pending and never fired:
// how a sharded insert takes back what it committed on one shard when
// another shard refused its part. It returns how many it deleted.
func (s *Store) Unwrite(ctx context.Context, ids []timer.JobID) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	pending, fired := rowStatus(timer.StatusPending)
	args := make([]any, 0, len(ids)+2)
	args = append(args, pending, fired)
	for _, id := range ids {
		args = append(args, int64(id))
	}
	res, err := s.db.ExecContext(ctx, "DELETE FROM toc_jobs WHERE status = ? AND fired = ? AND job_id IN ("+placeholders(len(ids))+")", args...)
	if err != nil {
		return 0, fmt.Errorf("unwrite %d jobs: %w", len(ids), err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
