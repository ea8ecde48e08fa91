package lua

import (
	"fmt"
	"math"

	"github.com/toc-project/toc/timer"
)

// Priorities as members encode them. The values are those of
// timer.Priority; callers convert with int(p) and timer.Priority(p).
const (
	PriorityLow    = -1
	PriorityNormal = 0
	PriorityHigh   = 1
)

// Member suffixes: the last byte of a member names the due set it
// belongs in. A normal member has none; the digits never use these bytes.
const (
	suffixHigh = 'h'
	suffixLow  = 'l'
)

// digits are the 60 digits of a member's id, in order of value: 0-9, A-Z,
// then a-z without the suffixes h and l.
const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgijkmnopqrstuvwxyz"

const base = uint64(len(digits))

// value maps a byte to its digit's value, or -1.
var value = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := range len(digits) {
		v[digits[i]] = int8(i)
	}
	return v
}()

// Member returns the sorted-set member of job id at priority (PriorityLow,
// PriorityNormal or PriorityHigh): id in base 60 (at most 11 bytes for an
// id below 2^63), then "h" for high or "l" for low.
//
// The member is short because Redis keeps it in a string of its own for
// every pending job: 11 bytes and a suffix fit jemalloc's 16-byte class,
// where the 19 decimal digits of a large id took 32 bytes, so each pending
// job costs Redis 16 bytes less.
//
// It panics on another priority, which callers validate first.
func Member(id uint64, priority int) string {
	var b [14]byte
	i := len(b)
	switch priority {
	case PriorityHigh:
		i--
		b[i] = suffixHigh
	case PriorityNormal:
	case PriorityLow:
		i--
		b[i] = suffixLow
	default:
		panic(fmt.Sprintf("lua: priority %d", priority))
	}
	for {
		i--
		b[i] = digits[id%base]
		id /= base
		if id == 0 {
			break
		}
	}
	return string(b[i:])
}

// ParseMember returns the job id and priority of member m; ok is false
// when m is not the member of a job: Member did not make it (an empty or
// overlong id, a leading zero, a byte that is not a digit), or its id is
// not a job id (timer.JobID.Valid). It is the one decoder of members
// outside the scripts.
func ParseMember(m string) (id uint64, priority int, ok bool) {
	id, priority, ok = splitMember(m)
	if !ok || !timer.JobID(id).Valid() {
		return 0, 0, false
	}
	return id, priority, true
}

// splitMember decodes any member Member makes, of any uint64 id.
func splitMember(m string) (id uint64, priority int, ok bool) {
	priority = PriorityNormal
	if m != "" {
		switch m[len(m)-1] {
		case suffixHigh:
			m, priority = m[:len(m)-1], PriorityHigh
		case suffixLow:
			m, priority = m[:len(m)-1], PriorityLow
		}
	}
	if m == "" || len(m) > 11 || (m[0] == '0' && len(m) > 1) {
		return 0, 0, false
	}
	for i := 0; i < len(m); i++ {
		d := value[m[i]]
		if d < 0 || id > (math.MaxUint64-uint64(d))/base {
			return 0, 0, false
		}
		id = id*base + uint64(d)
	}
	return id, priority, true
}

// Aging holds the offset of each priority in claim order, in
// milliseconds: among due members of one slot, claim takes them in the
// order of due ms plus their priority's offset (ties: high, normal, low).
type Aging struct {
	High, Normal, Low int64
}

// MaxAgingMillis bounds each offset of Aging: a day.
const MaxAgingMillis = 24 * 60 * 60 * 1000

func (a Aging) check() error {
	for _, o := range []int64{a.High, a.Normal, a.Low} {
		if o < 0 || o > MaxAgingMillis {
			return fmt.Errorf("aging %+v: %w (each 0..%d ms)", a, ErrRange, MaxAgingMillis)
		}
	}
	return nil
}

// Members returns the members job id has at each priority, highest first:
// what to remove when the priority is not known.
func Members(id uint64) [3]string {
	return [3]string{Member(id, PriorityHigh), Member(id, PriorityNormal), Member(id, PriorityLow)}
}
