// This file owns Status, the cluster as this member last saw it.

package slots

// Status describes the cluster as this member sees it.
type Status struct {
	// Self is this member's ID.
	Self string `json:"self"`
	// Connected reports whether this member is connected to ZooKeeper.
	Connected bool `json:"connected"`
	// Leader is the ID of the member that published the assignment.
	Leader string `json:"leader"`
	// Version is the assignment's version; -1 before the first.
	Version int64 `json:"version"`
	// Members are the members of the assignment, sorted by ID; Slots is
	// 0 for all of them until this member has computed the map.
	Members []MemberInfo `json:"members"`
}

// MemberInfo is one member in a Status.
type MemberInfo struct {
	ID       string `json:"id"`
	Addr     string `json:"addr,omitempty"`
	Capacity int    `json:"capacity"`
	// Build is the member's build (its version), "" for one that does not
	// say (v0.1.0).
	Build string `json:"build,omitempty"`
	Slots int    `json:"slots"`
	// Shards are the task store shards whose backstop scan is this
	// member's (see Cluster.OwnsShard), once the map is computed.
	Shards []int `json:"shards,omitempty"`
}

// Status returns the cluster as this member last saw it. It does no I/O.
func (c *Cluster) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Self: c.cfg.ID, Connected: c.online, Version: -1, Members: []MemberInfo{}}
	a := c.current
	if a == nil {
		return st
	}
	st.Leader, st.Version = a.Leader, a.Version
	var (
		counts map[string]int
		shards = map[string][]int{}
	)
	if c.m != nil && c.mKey == a.key() {
		counts = c.m.Counts()
		for i := range c.shards {
			owner := c.m.ShardOwner(i)
			shards[owner] = append(shards[owner], i)
		}
	}
	for _, m := range a.Members {
		st.Members = append(st.Members, MemberInfo{ID: m.ID, Addr: m.Addr, Capacity: m.Capacity, Build: m.Build, Slots: counts[m.ID], Shards: shards[m.ID]})
	}
	return st
}
