// This file owns fencing: what this member may claim. Every write of the
// owned slots goes through here; ownership is dropped synchronously on any
// session event that is not "connected", before the session can expire and
// the slots be given to another member, and an assignment read before a
// session event is never installed.

package slots

import (
	"context"
	"slices"

	"github.com/go-zookeeper/zk"

	"github.com/toc-project/toc/timer"
)

// Owned returns the slots this member owns now, and a channel closed when
// that changes. It never blocks and never fails; it returns nothing while
// the member is disconnected from ZooKeeper, has no assignment yet, or is
// still computing the map of a new one.
func (c *Cluster) Owned(context.Context) ([]timer.Slot, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.owned), c.changed, nil
}

// onEvent is the client's event callback: it must not block. Ownership is
// dropped here, synchronously, the moment the connection is lost.
func (c *Cluster) onEvent(s *session, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	if c.sess != s || s.expired {
		c.mu.Unlock()
		return
	}
	s.epoch++
	was, online := c.online, ev.State == zk.StateHasSession
	c.online = online
	if ev.State == zk.StateExpired {
		s.expired = true
	}
	if !online {
		c.setOwnedLocked(nil)
	}
	c.mu.Unlock()

	switch {
	case ev.State == zk.StateExpired:
		s.cancel()
		c.limit.Log(c.log.Warn, "expired", "zookeeper session expired; owning no slots until registered again")
	case online:
		select {
		case s.up <- struct{}{}:
		default:
		}
		if !was {
			c.limit.Log(c.log.Info, "connected", "zookeeper connected", "server", ev.Server)
		}
	case was:
		c.limit.Log(c.log.Warn, "disconnected", "zookeeper disconnected; owning no slots until reconnected", "server", ev.Server)
	}
}

// endSession forgets s: nothing is owned until the next session says so.
func (c *Cluster) endSession(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.sess, c.online, c.leader = nil, false, false
		c.setOwnedLocked(nil)
	}
}

func (c *Cluster) epoch(s *session) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.epoch
}

// install makes a the current assignment and m (nil: own nothing) its map,
// unless a session event came since the read of a began: then a newer read
// follows.
func (c *Cluster) install(s *session, epoch uint64, a *published, m *Map) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != s || s.epoch != epoch || !c.online {
		return
	}
	prev := c.current
	c.current = a
	if m == nil {
		c.setOwnedLocked(nil)
	} else {
		if key := a.key(); c.m != m {
			prev := c.m
			c.m, c.mKey, c.mOwned = m, key, m.Owned(c.cfg.ID)
			c.orphans = append(c.orphans, orphaned(prev, m, c.mOwned, c.cfg.ID)...)
		}
		c.setOwnedLocked(c.mOwned)
	}
	if a != nil && (prev == nil || prev.Version != a.Version) {
		c.log.Debug("assignment", "version", a.Version, "leader", a.Leader, "members", len(a.Members), "owned", len(c.owned), "computed", m != nil)
	}
}

// setOwnedLocked sets what Owned returns and wakes its callers if that
// changed.
func (c *Cluster) setOwnedLocked(owned []timer.Slot) {
	if slices.Equal(owned, c.owned) {
		return
	}
	c.owned = owned
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Cluster) isOnline(s *session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess == s && c.online
}
