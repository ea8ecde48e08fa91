// Opening a Store over DSNs, and the shard map each shard records: the
// check that every process runs over the same databases in the same
// order.

package shard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// OpenMySQL opens a Store over dsns, shard i being dsns[i]. An error
// names the shard that failed.
func OpenMySQL(ctx context.Context, dsns []string, cfg taskdb.Config) (*Store, error) {
	if len(dsns) < 1 || len(dsns) > timer.MaxShards {
		return nil, fmt.Errorf("%d task store DSNs: give 1 to %d", len(dsns), timer.MaxShards)
	}
	shards := make([]*taskdb.Store, 0, len(dsns))
	names := make([]string, len(dsns))
	for i, dsn := range dsns {
		if c, err := mysql.ParseDSN(dsn); err == nil {
			names[i] = c.Addr + "/" + c.DBName
		}
		st, err := taskdb.OpenMySQL(ctx, dsn, cfg)
		if err != nil {
			for _, o := range shards {
				o.Close()
			}
			return nil, fmt.Errorf("shard %d (%s): %w", i, names[i], err)
		}
		shards = append(shards, st)
	}
	s, err := New(shards, nil)
	if err != nil {
		return nil, err
	}
	s.names = names
	return s, nil
}

// MapError is a shard whose recorded map is not the one given.
type MapError struct {
	Shard int
	// Want is what this process was given; Have what the shard holds
	// (zero when it holds none).
	Want, Have taskdb.ShardMap
	Reason     string
}

func (e *MapError) Error() string {
	return fmt.Sprintf("task store shard %d: %s; run toc migrate with every --mysql-dsn, in shard order, to record a new map", e.Shard, e.Reason)
}

// maps reads the map of every shard; a shard that recorded none has ok
// false.
func (s *Store) maps(ctx context.Context) ([]taskdb.ShardMap, []bool, error) {
	ms := make([]taskdb.ShardMap, len(s.shards))
	ok := make([]bool, len(s.shards))
	err := s.all(func(i int) error {
		m, err := s.shards[i].ShardMap(ctx)
		switch {
		case errors.Is(err, timer.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		ms[i], ok[i] = m, true
		return nil
	})
	return ms, ok, err
}

// CheckMap checks that every shard recorded this store's map: the same
// map id, this many shards, and its own number; and learns the earlier
// counts. One shard that recorded nothing is today's single store before
// shards, and passes. With create, a store none of whose shards recorded
// a map (a first start) records a new one instead of failing.
func (s *Store) CheckMap(ctx context.Context, create bool) error {
	ms, ok, err := s.maps(ctx)
	// Processes that start together on new shards each record the first
	// map, shard 0 first (initMap): one may read shard 0's map before
	// another process has recorded it in the others. Such a gap closes
	// within milliseconds; one that stays is a shard without the map.
	for wait := 50 * time.Millisecond; create && err == nil && ok[0] && slices.Contains(ok, false) && wait <= time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		ms, ok, err = s.maps(ctx)
	}
	if err != nil {
		return err
	}
	if !slices.Contains(ok, true) {
		if len(s.shards) == 1 {
			return nil
		}
		if !create {
			return &MapError{Shard: 0, Reason: fmt.Sprintf("no shard map recorded for these %d shards", len(s.shards))}
		}
		if ms, err = s.initMap(ctx); err != nil {
			return err
		}
		ok = slices.Repeat([]bool{true}, len(ms))
	}
	want := ms[slices.Index(ok, true)]
	for i, m := range ms {
		var reason string
		switch {
		case !ok[i]:
			reason = "records no shard map, while others do (a shard added without toc migrate?)"
		case m.Shards != len(s.shards):
			reason = fmt.Sprintf("records a map of %d shards, and %d were given", m.Shards, len(s.shards))
		case m.Shard != i:
			reason = fmt.Sprintf("records that it is shard %d, and was given as shard %d (DSNs out of order?)", m.Shard, i)
		case m.ID != want.ID:
			reason = fmt.Sprintf("records map %s, and shard %d map %s", m.ID, slices.Index(ok, true), want.ID)
		default:
			continue
		}
		return &MapError{Shard: i, Have: m, Want: taskdb.ShardMap{Shards: len(s.shards), Shard: i}, Reason: reason}
	}
	s.earlier = want.Earlier
	return nil
}

// initMap records a first map in every shard, shard 0 first: processes
// that start together each propose one, shard 0 keeps the first, and
// every process then records that one in the others. It returns what
// each shard holds afterwards.
func (s *Store) initMap(ctx context.Context) ([]taskdb.ShardMap, error) {
	earlier, err := s.earlierOfFirst(ctx)
	if err != nil {
		return nil, err
	}
	first, err := s.shards[0].InitShardMap(ctx, taskdb.ShardMap{ID: newMapID(), Shards: len(s.shards), Earlier: earlier})
	if err != nil {
		return nil, fmt.Errorf("shard 0: %w", err)
	}
	ms := make([]taskdb.ShardMap, len(s.shards))
	ms[0] = first
	err = s.all(func(i int) error {
		if i == 0 {
			return nil
		}
		m := first
		m.Shard = i
		got, err := s.shards[i].InitShardMap(ctx, m)
		ms[i] = got
		return err
	})
	return ms, err
}

// earlierOfFirst returns the earlier counts of a store's first map: a
// store from before shards, which was one, holds its keyed jobs in shard
// 0.
func (s *Store) earlierOfFirst(ctx context.Context) ([]int, error) {
	hasJobs, err := s.shards[0].HasJobs(ctx)
	if err != nil {
		return nil, fmt.Errorf("shard 0: %w", err)
	}
	if hasJobs {
		return []int{1}, nil
	}
	return nil, nil
}

func newMapID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WriteMap records this store's map in every shard unless they all hold
// it already, and reports whether it wrote. The new map remembers the
// counts of the maps before it. It refuses to record fewer shards than a
// shard's map has: the jobs of the shards left out would never fire.
func (s *Store) WriteMap(ctx context.Context) (bool, error) {
	ms, ok, err := s.maps(ctx)
	if err != nil {
		return false, err
	}
	if s.CheckMap(ctx, false) == nil && slices.Contains(ok, true) {
		return false, nil
	}
	var earlier []int
	if i := slices.Index(ok, true); i >= 0 {
		prev := ms[i]
		for j, m := range ms {
			if ok[j] && m.Shards > len(s.shards) {
				return false, fmt.Errorf("task store shard %d records a map of %d shards, and %d were given: shards cannot be removed, their jobs would never fire", j, m.Shards, len(s.shards))
			}
		}
		earlier = slices.Clone(prev.Earlier)
		if prev.Shards != len(s.shards) {
			earlier = append(earlier, prev.Shards)
		}
	} else if earlier, err = s.earlierOfFirst(ctx); err != nil {
		return false, err
	}
	id := newMapID()
	err = s.all(func(i int) error {
		return s.shards[i].SetShardMap(ctx, taskdb.ShardMap{ID: id, Shards: len(s.shards), Shard: i, Earlier: earlier})
	})
	if err != nil {
		return false, err
	}
	s.earlier = earlier
	return true, nil
}
