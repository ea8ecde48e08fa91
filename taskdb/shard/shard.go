// Package shard spreads the task store over several databases: a Store
// over one taskdb.Store per shard that is itself a timer.Store, so that
// the engine, the API and the operator's tools see one store.
//
// # Placement
//
// The scheduler places a new job (timer.PlaceShard) by its idempotency
// key when it has one, else by its business id, else in turn, and makes
// its id in that shard (timer.JobID.Shard). Every read or change of one
// job goes to the shard its id names, with no fan-out. Keys route the
// job rather than being checked across shards: a key's uniqueness is then
// the shard's own unique index (topic, idem_key), atomic as on one
// database, where a check across shards would race with a concurrent
// insert of the same key in another shard. The cost: a job with both a
// key and a business id goes where its key says, so a business id's keyed
// jobs may be in several shards.
//
// # Adding a shard
//
// Ids keep their shard for life, so adding a shard moves nothing: new
// placement uses the new count, and a key placed under an earlier count
// is found where it was, since the map remembers the earlier counts
// (taskdb.ShardMap.Earlier) and GetByKey looks in each of the key's
// shards.
//
// # Topics
//
// The topic catalogue lives in shard 0 only. The other shards' scans read
// a topic's slot count from it. A topic is deleted from shard 0 once no
// shard holds jobs of it; a job committed into another shard during the
// delete is the known window stated in docs/topics.md, as on one database.
//
// # Batches over several shards
//
// An insert whose jobs span shards commits shard by shard; when one
// shard refuses its part, the rows already committed on the others are
// deleted again (taskdb.Store.Unwrite) before the error is returned, so
// that an error still means nothing was written. Should that delete fail
// too (the first shard went away in between), the error says so: those
// rows stay pending and will fire.
package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// ErrUnknownShard: a job id names a shard beyond this store's map (one
// added by toc migrate after this process started).
var ErrUnknownShard = errors.New("a shard this process does not know")

// Store is a timer.Store over shards, shard i being shards[i].
type Store struct {
	shards  []*taskdb.Store
	earlier []int
	// names are where each shard is (host:port/database), for messages;
	// empty when unknown.
	names []string
}

var (
	_ timer.Store      = (*Store)(nil)
	_ timer.Sharded    = (*Store)(nil)
	_ timer.NodeLeaser = (*Store)(nil)
)

// New returns a Store over shards (1..timer.MaxShards). earlier are the
// shard counts of the maps before this one (taskdb.ShardMap.Earlier).
func New(shards []*taskdb.Store, earlier []int) (*Store, error) {
	if len(shards) < 1 || len(shards) > timer.MaxShards {
		return nil, fmt.Errorf("%d shards: %w (1..%d)", len(shards), timer.ErrInvalid, timer.MaxShards)
	}
	return &Store{shards: shards, earlier: earlier}, nil
}

// Shards implements timer.Sharded.
func (s *Store) Shards() int { return len(s.shards) }

// Shard returns shard i's store.
func (s *Store) Shard(i int) *taskdb.Store { return s.shards[i] }

// of returns the shard holding id's row.
func (s *Store) of(id timer.JobID) (*taskdb.Store, error) {
	i := id.Shard()
	if i >= len(s.shards) {
		return nil, fmt.Errorf("job %s is in shard %d of %d: %w", id, i, len(s.shards), timer.ErrNotFound)
	}
	return s.shards[i], nil
}

// KeyShards implements timer.Sharded.
func (s *Store) KeyShards(topic, key string) []int {
	if key == "" {
		return []int{0} // no job has the empty key; shard 0 says so
	}
	out := []int{timer.PlaceShard(topic, key, 0, len(s.shards))}
	for _, n := range slices.Backward(s.earlier) {
		if sh := timer.PlaceShard(topic, key, 0, n); !slices.Contains(out, sh) && sh < len(s.shards) {
			out = append(out, sh)
		}
	}
	return out
}

// group splits items by the shard of their ids.
func group[T any](s *Store, items []T, id func(T) timer.JobID) (map[int][]T, error) {
	out := make(map[int][]T)
	for _, it := range items {
		i := id(it).Shard()
		if i >= len(s.shards) {
			return nil, fmt.Errorf("job %s is in shard %d, and this process knows %d: %w", id(it), i, len(s.shards), ErrUnknownShard)
		}
		out[i] = append(out[i], it)
	}
	return out, nil
}

// each runs fn on the shards of m at once and joins their errors, each
// naming its shard.
func each[T any](m map[int][]T, fn func(i int, items []T) error) error {
	if len(m) == 1 {
		for i, items := range m {
			return fn(i, items)
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, items := range m {
		wg.Go(func() {
			if err := fn(i, items); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("shard %d: %w", i, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func jobID(j *timer.Job) timer.JobID { return j.ID }

// Insert implements timer.JobWriter: all or none, see the package doc.
func (s *Store) Insert(ctx context.Context, jobs []*timer.Job) error {
	// Every job is checked before any shard commits: a bad one in a later
	// shard must not make an earlier shard's commit to take back.
	for _, j := range jobs {
		if err := timer.CheckJob(j); err != nil {
			return fmt.Errorf("insert %d jobs: %w", len(jobs), err)
		}
	}
	byShard, err := group(s, jobs, jobID)
	if err != nil {
		return err
	}
	if len(byShard) <= 1 {
		for i, js := range byShard {
			return s.shards[i].Insert(ctx, js)
		}
		return nil
	}
	var done []int
	for _, i := range slices.Sorted(maps.Keys(byShard)) {
		if err := s.shards[i].Insert(ctx, byShard[i]); err != nil {
			return s.unwrite(ctx, byShard, done, fmt.Errorf("shard %d: %w", i, err))
		}
		done = append(done, i)
	}
	return nil
}

// unwrite deletes the rows an insert committed on the shards done, after
// cause refused the rest, and returns cause (and any failure to delete).
func (s *Store) unwrite(ctx context.Context, byShard map[int][]*timer.Job, done []int, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	errs := []error{cause}
	for _, i := range done {
		ids := make([]timer.JobID, len(byShard[i]))
		for n, j := range byShard[i] {
			ids[n] = j.ID
		}
		if _, err := s.shards[i].Unwrite(ctx, ids); err != nil {
			errs = append(errs, fmt.Errorf("%d jobs committed in shard %d could not be taken back and will fire: %w", len(ids), i, err))
		}
	}
	return errors.Join(errs...)
}
