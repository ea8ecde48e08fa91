package lua

import "fmt"

// Priorities as members encode them. The values are those of
// timer.Priority, which this package does not import.
const (
	PriorityLow    = -1
	PriorityNormal = 0
	PriorityHigh   = 1
)

// Member suffixes: the last byte of a member names the Store set it
// belongs in. A normal member has none.
const (
	suffixHigh = 'h'
	suffixLow  = 'l'
)

// Member returns the member of job id (its decimal form) at priority
// (PriorityLow, PriorityNormal or PriorityHigh): id, id+"h" or id+"l".
// It panics on another priority, which callers validate first.
func Member(id string, priority int) string {
	switch priority {
	case PriorityHigh:
		return id + string(suffixHigh)
	case PriorityNormal:
		return id
	case PriorityLow:
		return id + string(suffixLow)
	}
	panic(fmt.Sprintf("lua: priority %d", priority))
}

// SplitMember splits a member into the job id and the priority its suffix
// names; it does not check that id is a number.
func SplitMember(m string) (id string, priority int) {
	if m == "" {
		return m, PriorityNormal
	}
	switch m[len(m)-1] {
	case suffixHigh:
		return m[:len(m)-1], PriorityHigh
	case suffixLow:
		return m[:len(m)-1], PriorityLow
	}
	return m, PriorityNormal
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
