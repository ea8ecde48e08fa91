// This file owns following the assignment: every member reads the
// published inputs each time they change, derives the map from them and
// the task store's topics, and hands its share to install
// (cluster_fence.go).

package slots

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/toc-project/toc/timer"
)

// followAssignment reads the assignment each time it changes (re-arming
// the watch, which fires once) or the session reconnects, and installs
// this member's share of it.
func (c *Cluster) followAssignment(ctx context.Context, s *session) {
	path := c.path(assignmentNode)
	retry := newBackoff(retryMin, retryMax)
	for ctx.Err() == nil {
		epoch := c.epoch(s)
		data, stat, watch, err := getW(s.conn, path)
		if err != nil {
			c.warn("read-assignment", "read the assignment failed; retrying", err)
			t := time.NewTimer(retry.delay())
			select {
			case <-t.C:
			case <-s.up:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		retry.reset()
		var a *published
		if stat != nil {
			if a, err = decodePublished(data, stat.Version); err != nil {
				c.warn("decode-assignment", "the published assignment is unreadable; owning no slots", err)
				a = &published{Version: int64(stat.Version)}
			}
		}
		if c.follow(ctx, s, epoch, a, watch) {
			continue
		}
		select {
		case <-watch:
		case <-s.up:
		case <-ctx.Done():
		}
	}
}

// follow installs this member's share of a (nil: no assignment yet). When
// the map needs topics that do not match the published digest yet, it owns
// nothing and reads them again with backoff; it returns true, to read the
// assignment again, when watch fires or the session reconnects meanwhile.
func (c *Cluster) follow(ctx context.Context, s *session, epoch uint64, a *published, watch <-chan zk.Event) (again bool) {
	switch {
	case a == nil || a.Scheme == "":
		c.install(s, epoch, a, nil)
		return false
	case a.Scheme != AssignScheme:
		c.warn("scheme", "the assignment uses another scheme (a member of another version leads); owning no slots", fmt.Errorf("scheme %q, want %q", a.Scheme, AssignScheme))
		c.install(s, epoch, a, nil)
		return false
	}
	if node, ok := a.node(c.cfg.ID); !ok || node != s.member {
		// Not published yet, or with a znode of an ended session of this
		// member, or of another process with the same ID.
		if ok {
			if alive, _, err := s.conn.Exists(c.path(membersDir, node)); err == nil && alive {
				c.warn("duplicate", "another member has this member's ID; owning no slots", fmt.Errorf("id %q is published with znode %s, this member's is %s", c.cfg.ID, node, s.member))
			}
		}
		c.install(s, epoch, a, nil)
		return false
	}
	if m := c.mapFor(a.key()); m != nil {
		c.install(s, epoch, a, m)
		return false
	}
	retry := newBackoff(retryMin, retryMax)
	for attempt := 0; ; attempt++ {
		topics, err := c.readTopics(ctx)
		if err == nil {
			m, sum := a.deriveMap(topics)
			if m != nil {
				c.install(s, epoch, a, m)
				return false
			}
			if sum.Topics > a.Topics {
				c.TopicsChanged() // this member knows a topic the leader does not yet
			}
			err = fmt.Errorf("%d topics here, %d published: the digests differ", sum.Topics, a.Topics)
		}
		if attempt == 0 {
			c.install(s, epoch, a, nil)
		}
		c.warn("topics", "cannot compute the assignment yet; owning no slots", err)
		t := time.NewTimer(retry.delay())
		select {
		case <-t.C:
		case <-watch:
			again = true
		case <-s.up:
			again = true
		case <-ctx.Done():
		}
		t.Stop()
		if again || ctx.Err() != nil {
			return again
		}
	}
}

// deriveMap computes the map of a from topics, the task store's list, when
// that is the list a was published with (their digests are equal); else it
// returns nil. It returns the summary of topics either way.
func (a *published) deriveMap(topics []timer.Topic) (*Map, topicSummary) {
	sum := summarize(topics)
	if sum.Digest != a.Digest {
		return nil, sum
	}
	return Assign(a.ids(), topics, a.Load), sum
}

func (c *Cluster) readTopics(ctx context.Context) ([]timer.Topic, error) {
	ctx, cancel := context.WithTimeout(ctx, topicTimeout)
	defer cancel()
	topics, err := c.cfg.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return topics, nil
}

// mapFor returns the map computed for the inputs key, if it is the last.
func (c *Cluster) mapFor(key string) *Map {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil && c.mKey == key {
		return c.m
	}
	return nil
}
