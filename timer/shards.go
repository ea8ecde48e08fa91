// Task store shards: where a new job's row goes, and how the parts that
// read rows keep one shard's trouble from the others.

package timer

import (
	"encoding/binary"
	"hash/fnv"
	"sync/atomic"
)

// Sharded is implemented by a Store whose rows are spread over several
// databases (shards), each job in the shard its id names (JobID.Shard).
// A Store that does not implement it is one shard.
type Sharded interface {
	// Shards is how many shards new jobs are placed over (1..MaxShards).
	Shards() int
	// KeyShards returns the shards a job of topic with idempotency key
	// key may be in: where PlaceShard puts it under the current count
	// and under each count the store had before (a key placed before a
	// shard was added stays where it was).
	KeyShards(topic, key string) []int
	// Scanner returns the Scanner of one shard's pending jobs, so that a
	// shard that does not answer holds up only its own backstop.
	Scanner(shard int) Scanner
}

// ShardsOf returns how many shards store places new jobs over.
func ShardsOf(store Store) int {
	if s, ok := store.(Sharded); ok {
		return max(1, s.Shards())
	}
	return 1
}

// PlaceConcurrent returns the shard, of n, of a new job of topic with
// concurrency key ckey: every job of the key goes to one shard, whose
// unique index lets one of them at a time hold the key (see HoldsKey).
// It comes before the idempotency key and the business id (PlaceShard),
// since the rule would not hold across shards; an idempotent retry of a
// request carries the same concurrency key, so it lands in the same
// shard, where the idempotency key's unique index catches it.
func PlaceConcurrent(topic, ckey string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(topic))
	h.Write([]byte{0, 'c'})
	h.Write([]byte(ckey))
	return int(h.Sum64() % uint64(n))
}

// PlaceShard returns the shard, of n, of a new job of topic: by its
// idempotency key when it has one, so that the key's uniqueness is the
// shard's own unique index, with no check across shards; else by its
// business id, so that a business id's jobs are together; else -1, for
// the caller to spread. A job with a concurrency key is placed by
// PlaceConcurrent instead.
func PlaceShard(topic, key string, bizID uint64, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(topic))
	switch {
	case key != "":
		h.Write([]byte{0, 'k'})
		h.Write([]byte(key))
	case bizID != 0:
		var b [10]byte
		b[0], b[1] = 0, 'b'
		binary.BigEndian.PutUint64(b[2:], bizID)
		h.Write(b[:])
	default:
		return -1
	}
	return int(h.Sum64() % uint64(n))
}

// spreader hands out shards in turn, for jobs with neither key nor
// business id.
type spreader struct{ next atomic.Uint64 }

func (s *spreader) pick(n int) int {
	if n <= 1 {
		return 0
	}
	return int(s.next.Add(1) % uint64(n))
}

// byShard splits items by the shard of their ids, keeping their order
// within each shard; the shards come in ascending order.
func byShard[T any](items []T, id func(T) JobID) [][]T {
	var groups [MaxShards][]T
	for _, it := range items {
		s := id(it).Shard()
		groups[s] = append(groups[s], it)
	}
	var out [][]T
	for _, g := range groups {
		if len(g) > 0 {
			out = append(out, g)
		}
	}
	return out
}
