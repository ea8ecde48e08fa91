// This file owns which member scans which task store shard for the
// backstop (timer.ShardOwner): exactly one member per shard, moving with
// the membership.

package slots

import "github.com/toc-project/toc/timer"

var _ timer.ShardOwner = (*Cluster)(nil)

// ShardOwner returns the member of m that scans task store shard i: the
// (i mod n)th of its n members in the order of their ids, so that shards
// spread over members and every member computes the same owner from the
// same map. It is "" when m has no members.
func (m *Map) ShardOwner(i int) string {
	if len(m.members) == 0 {
		return ""
	}
	return m.members[i%len(m.members)]
}

// OwnsShard implements timer.ShardOwner: whether this member scans shard
// i under its current map. A member that is not connected, or has no map
// yet, scans none: the members that are connected share the shards, and
// the next map gives a dead member's shards to one of them.
func (c *Cluster) OwnsShard(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.online && c.m != nil && c.m.ShardOwner(i) == c.cfg.ID
}

// SetShards tells the member how many task store shards there are, for
// Status to show whose each is.
func (c *Cluster) SetShards(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shards = n
}
