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
	// named: holder is the --member-id the operator gave, unique among
	// live processes by the flag's contract, so a live lease held by it
	// at start is this member's previous run's, which died.
	named bool
	node  int
	// cameBack: the previous run of this member died holding its lease
	// (named only); others counts the other live leases at start.
	cameBack bool
	others   int
}

// liveNodes is implemented by a store that lists its live node leases.
type liveNodes interface {
	LiveNodes(ctx context.Context) (map[int]string, error)
}

// newNodeLease returns the lease a service asks for: the number of an
// explicit --node, else any, held under the cluster member's id when
// there is one.
//
// memberID is --member-id: when given, it is the holder (in a cluster it
// is the member's id anyway), and a restart under it takes its number
// back at once.
func newNodeLease(f *serviceFlags, explicitNode bool, cluster *slots.Cluster, memberID string) *nodeLease {
	l := &nodeLease{want: -1, holder: slots.DefaultID()}
	if explicitNode {
		l.want = *f.node
	}
	if memberID != "" {
		l.holder, l.named = memberID, true
	}
	if cluster != nil {
		l.holder = cluster.ID()
	}
	return l
}

// ReclaimAtStart says whether this process may take back at once the
// leases it finds in the slots it first owns (timer.WorkerConfig): its
// previous run died holding them, and, standalone, no other process
// shares the store (each of them owns every slot too).
func (l *nodeLease) ReclaimAtStart(clustered bool) bool {
	return l.cameBack && (clustered || l.others == 0)
}

// lease takes the number from the task store, which every process making
// ids for it shares: members of a ZooKeeper cluster and standalone
// processes alike, and before ZooKeeper answers. A number held by
// another process, or none free, stops toc from starting: ids made with
// a shared number could collide.
func (l *nodeLease) lease(ctx context.Context, st timer.NodeLeaser) (int, error) {
	want := l.want
	l.cameBack, l.others = false, 0
	if lv, ok := st.(liveNodes); ok && l.named {
		live, err := lv.LiveNodes(ctx)
		if err != nil {
			return 0, err
		}
		for n, holder := range live {
			switch {
			case holder != l.holder:
				l.others++
			case want < 0:
				want, l.cameBack = n, true // take the same number back
			default:
				l.cameBack = true
			}
		}
	}
	n, err := st.LeaseNode(ctx, want, l.holder, timer.DefaultNodeTTL)
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
