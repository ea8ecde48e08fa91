// The node number of this process in job ids, leased from the task store.

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// nodeLease is the node number a service holds, and as whom.
type nodeLease struct {
	// want is --node when given, else -1: any free number.
	want   int
	holder string
	node   int
}

// newNodeLease returns the lease a service asks for: the number of an
// explicit --node, else any, held under the cluster member's id when
// there is one.
func newNodeLease(f *serviceFlags, explicitNode bool, cluster *slots.Cluster) *nodeLease {
	l := &nodeLease{want: -1, holder: slots.DefaultID()}
	if explicitNode {
		l.want = *f.node
	}
	if cluster != nil {
		l.holder = cluster.ID()
	}
	return l
}

// lease takes the number from the task store, which every process making
// ids for it shares: members of a ZooKeeper cluster and standalone
// processes alike, and before ZooKeeper answers. A number held by
// another process, or none free, stops toc from starting: ids made with
// a shared number could collide.
func (l *nodeLease) lease(ctx context.Context, st timer.NodeLeaser) (int, error) {
	n, err := st.LeaseNode(ctx, l.want, l.holder, timer.DefaultNodeTTL)
	var held *timer.NodeHeldError
	switch {
	case errors.As(err, &held):
		return 0, fmt.Errorf("--node %d: %w (each process sharing a task store needs its own number; give another, or none to lease a free one)", l.want, err)
	case errors.Is(err, timer.ErrNoNode):
		return 0, fmt.Errorf("no node number for this process: %w", err)
	case err != nil:
		return 0, err
	}
	l.node = n
	return n, nil
}

// keep renews the lease until ctx is done, then releases it; it returns
// an error when another process took the number.
func (l *nodeLease) keep(ctx context.Context, st timer.NodeLeaser, s *service) error {
	return timer.KeepNode(ctx, st, l.node, l.holder, timer.DefaultNodeTTL, s.log)
}
