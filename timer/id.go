package timer

import (
	"sync"
	"time"
)

// idEpoch is the zero of the time part of a job id: 2025-01-01 UTC.
const idEpoch = 1735689600000

// Layout of a job id, most significant bit first: one zero bit (ids stay
// below 2^63), 41 bits of milliseconds since idEpoch (until 2094), 10 bits
// of node, 12 bits of sequence within the millisecond.
const (
	nodeBits = 10
	seqBits  = 12
	// MaxNode is the highest node number an IDGen accepts.
	MaxNode = 1<<nodeBits - 1
)

// IDGen makes job ids that are unique across processes as long as every
// process that writes to one task store has its own node number, and that
// grow with time, so that the task store's primary key is appended to.
//
// When more than 4,096 ids are asked for within one millisecond the
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

// Next returns a new id.
func (g *IDGen) Next() JobID {
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
	return JobID(uint64(g.last)<<(nodeBits+seqBits) | g.node<<seqBits | g.seq)
}
