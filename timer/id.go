package timer

import (
	"sync"
	"time"
)

// idEpoch is the zero of the time part of a job id: 2025-01-01 UTC.
const idEpoch = 1735689600000

// Layout of a job id, most significant bit first: one zero bit (ids stay
// below 2^63), one bit set (the sharded layout), 41 bits of milliseconds
// since idEpoch (until 2094), 9 bits of sequence within the millisecond,
// 4 bits of task store shard, 8 bits of node. The shard and node are
// below the sequence so that one generator's ids grow whatever the
// shard.
//
// Ids made before shards had the second bit clear (it was the top bit of
// their time, clear until 2059) and 10 bits of node: all of them live in
// shard 0, the one task store there was, and every id of the sharded
// layout is above every one of them, so the task store's primary key is
// still appended to.
const (
	shardedBit = 1 << 62
	timeShift  = 21
	shardBits  = 4
	nodeBits   = 8
	seqBits    = 9
	// MaxNode is the highest node number an IDGen accepts.
	MaxNode = 1<<nodeBits - 1
	// MaxShards is how many task store shards job ids can name.
	MaxShards = 1 << shardBits
)

// Shard returns the task store shard that holds id's row: 0 for an id
// made before the store was sharded.
func (id JobID) Shard() int {
	if id&shardedBit == 0 {
		return 0
	}
	return int(id>>nodeBits) & (MaxShards - 1)
}

// IDGen makes job ids that are unique across processes as long as every
// process that writes to one task store has its own node number, and that
// grow with time, so that the task store's primary key is appended to.
//
// When more than 512 ids are asked for within one millisecond the
// generator borrows from the next millisecond instead of sleeping; a clock
// that steps back is ignored until it catches up. A collision (two
// processes given one node) is caught by the task store's primary key and
// reported as ErrConflict, never as a lost job.
type IDGen struct {
	node uint64
	now  func() time.Time

	mu   sync.Mutex
	last int64 // ms since idEpoch of the last id
	seq  uint64
}

// NewIDGen returns a generator for node (0..MaxNode) reading the clock now
// (time.Now when nil).
func NewIDGen(node int, now func() time.Time) *IDGen {
	if now == nil {
		now = time.Now
	}
	return &IDGen{node: uint64(node) & MaxNode, now: now}
}

// Next returns a new id in shard 0.
func (g *IDGen) Next() JobID { return g.NextIn(0) }

// NextIn returns a new id in shard (0..MaxShards-1).
func (g *IDGen) NextIn(shard int) JobID {
	ms := g.now().UnixMilli() - idEpoch
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case ms > g.last:
		g.last, g.seq = ms, 0
	case g.seq < 1<<seqBits-1:
		g.seq++
	default:
		g.last, g.seq = g.last+1, 0
	}
	return JobID(shardedBit | uint64(g.last)<<timeShift | g.seq<<(shardBits+nodeBits) | uint64(shard&(MaxShards-1))<<nodeBits | g.node)
}
