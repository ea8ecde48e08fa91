// This file owns the replacement of a member's previous run: the znodes
// that a process which died under this member's ID left behind.

package slots

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// ReplacePrevious says that this member's previous run, under the same
// ID, died: on joining, this member replaces the znodes that run left,
// rather than own nothing as its younger duplicate until ZooKeeper ends
// the dead run's session, and so takes its slots back at once. Call it
// before Run, and only when the ID is this member's alone (an explicit
// member id that the previous run held, as toc serve learns from its node
// lease): two live processes under one ID would replace each other.
func (c *Cluster) ReplacePrevious() { c.replacePrevious.Store(true) }

// registerMember creates this member's znode under members/ and returns
// its name. After ReplacePrevious, the first time, it deletes the member
// and election znodes of this ID in the same multi: the leader sees the
// member's znode replaced, never the member gone, which would move its
// slots to the others and back.
func (c *Cluster) registerMember(ctx context.Context, s *session, data []byte) (string, error) {
	if !c.replacePrevious.Swap(false) {
		return c.createSequential(ctx, s, membersDir, memberPrefix, data)
	}
	var ops []any
	for _, dir := range []string{membersDir, electionDir} {
		names, err := c.znodesOf(s, dir, c.cfg.ID)
		if err != nil {
			c.warn("replace", "cannot find this member's previous znodes; joining beside them", err)
			return c.createSequential(ctx, s, membersDir, memberPrefix, data)
		}
		for _, name := range names {
			ops = append(ops, &zk.DeleteRequest{Path: c.path(dir, name), Version: -1})
		}
	}
	if len(ops) == 0 {
		return c.createSequential(ctx, s, membersDir, memberPrefix, data)
	}
	name := protectedName(memberPrefix)
	ops = append(ops, &zk.CreateRequest{Path: c.path(membersDir, name), Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagEphemeralSequential})
	res, err := s.conn.Multi(ops...)
	if err == nil {
		c.log.Info("took over from this member's previous run: replaced the znodes it left", "znodes", len(ops)-1)
		return res[len(res)-1].String[len(c.path(membersDir))+1:], nil
	}
	// The reply may be lost after the multi happened: look for its znode.
	if created, ok := c.findCreated(s, membersDir, name); ok {
		return created, nil
	}
	c.warn("replace", "cannot replace this member's previous znodes; joining beside them", err)
	return c.createSequential(ctx, s, membersDir, memberPrefix, data)
}

// znodesOf lists the znodes under dir of the member id: members/ holds
// member data, election/ the bare id.
func (c *Cluster) znodesOf(s *session, dir, id string) ([]string, error) {
	names, _, err := s.conn.Children(c.path(dir))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var out []string
	for _, name := range names {
		data, _, err := s.conn.Get(c.path(dir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s/%s: %w", dir, name, err)
		}
		of := string(data)
		if dir == membersDir {
			m, err := parseMember(name, data)
			if err != nil {
				continue
			}
			of = m.ID
		}
		if of == id {
			out = append(out, name)
		}
	}
	return out, nil
}
