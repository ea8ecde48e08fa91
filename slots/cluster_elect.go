// This file owns the leader election: the ZooKeeper recipe in which the
// lowest sequential election znode leads and every other member watches
// only the one just before its own.

package slots

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
)

// elect runs for leader: the member with the lowest election znode leads;
// every other one watches the znode just before its own.
func (c *Cluster) elect(ctx context.Context, s *session) {
	dir := c.path(electionDir)
	retry := newBackoff(retryMin, retryMax)
	for ctx.Err() == nil {
		children, _, err := s.conn.Children(dir)
		if err != nil {
			c.warn("election", "list election znodes failed; retrying", err)
			retry.wait(ctx)
			continue
		}
		sortBySequence(children)
		i := slices.Index(children, s.candidate)
		switch {
		case i < 0:
			// Only if someone deleted it: start over with a new session.
			c.limit.Log(c.log.Warn, "election-lost", "this member's election znode is gone; starting a new session", "node", s.candidate)
			s.cancel()
			return
		case i == 0:
			c.lead(ctx, s)
			return
		}
		ok, _, watch, err := s.conn.ExistsW(dir + "/" + children[i-1])
		switch {
		case err != nil:
			c.warn("election", "watch the previous election znode failed; retrying", err)
			retry.wait(ctx)
			continue
		case !ok:
			continue // gone already
		}
		retry.reset()
		select {
		case <-watch:
		case <-ctx.Done():
		}
	}
}

// sortBySequence sorts sequential znode names by their sequence number
// (the digits after the last '-'), then by name.
func sortBySequence(names []string) {
	seq := func(name string) int64 {
		n, err := strconv.ParseInt(name[strings.LastIndexByte(name, '-')+1:], 10, 64)
		if err != nil {
			return 1<<63 - 1
		}
		return n
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(seq(a), seq(b)), strings.Compare(a, b))
	})
}

func (c *Cluster) setLeader(s *session, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.leader = leader
	}
}

func (c *Cluster) isLeader(s *session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess == s && c.leader
}
