// This file owns handover from a dead member: which newly owned slots had
// an owner that left the cluster without giving them up, so that their
// leases can be taken back at once (timer.Handover).
//
// A member that stops gracefully finishes its webhook calls in flight
// (acking or retrying their leases) before it deletes its znodes, so when
// it leaves the member list it holds no lease that is still being worked
// on. A member that leaves the list any other way (its process died, or
// it was cut off until ZooKeeper expired its session) may hold leases
// whose calls will never finish, or whose acks the changed lease tokens
// refuse: their jobs are fired again by the new owner at once instead of
// when the leases end (at least once, as always).

package slots

import (
	"slices"

	"github.com/toc-project/toc/timer"
)

// orphaned returns the slots of owned (member's share of next) whose owner
// in prev was another member, one that next no longer has.
func orphaned(prev, next *Map, owned []timer.Slot, member string) []timer.Slot {
	if prev == nil {
		return nil // no earlier map here: nothing known of the last owners
	}
	members := next.Members()
	var out []timer.Slot
	for _, s := range owned {
		if was, ok := prev.Owner(s); ok && was != member && !slices.Contains(members, was) {
			out = append(out, s)
		}
	}
	return out
}

// Orphans implements timer.Handover: the owned slots whose last owner
// died since the last call, forgotten once returned.
func (c *Cluster) Orphans() []timer.Slot {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.orphans) == 0 {
		return nil
	}
	owned := make(map[timer.Slot]bool, len(c.owned))
	for _, s := range c.owned {
		owned[s] = true
	}
	out := slices.DeleteFunc(c.orphans, func(s timer.Slot) bool { return !owned[s] })
	c.orphans = nil
	return out
}
