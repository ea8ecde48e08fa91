package timer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Node numbers: every process that writes job ids to one task store needs
// a number of its own (see IDGen), leased rather than guessed.

// Errors of a NodeLeaser.
var (
	// ErrNoNode: every node number (0..MaxNode) is leased.
	ErrNoNode = fmt.Errorf("every node number (0-%d) is leased by a live process", MaxNode)
	// ErrNodeLost: the lease ended and another holder took the number;
	// ids made with it from now on could collide.
	ErrNodeLost = errors.New("the node number's lease was taken by another process")
)

// NodeHeldError is the answer to a lease of one number that another
// holder has.
type NodeHeldError struct {
	Node   int
	Holder string
	Until  time.Time
}

func (e *NodeHeldError) Error() string {
	return fmt.Sprintf("node number %d is leased by %q until %s", e.Node, e.Holder, e.Until.UTC().Format(time.RFC3339))
}

// NodeLeaser leases node numbers to holders for a time. Leases expire by
// the leaser's own clock (the task store's), so members' clocks need not
// agree.
type NodeLeaser interface {
	// LeaseNode leases want (or, when want < 0, the lowest number whose
	// lease is free or expired) to holder for ttl. A number held by
	// another is a *NodeHeldError; none free is ErrNoNode.
	LeaseNode(ctx context.Context, want int, holder string, ttl time.Duration) (int, error)
	// RenewNode extends holder's lease of node by ttl from now; it is
	// ErrNodeLost when another holder has the number.
	RenewNode(ctx context.Context, node int, holder string, ttl time.Duration) error
	// ReleaseNode ends holder's lease of node at once.
	ReleaseNode(ctx context.Context, node int, holder string) error
}

// DefaultNodeTTL is how long a node lease lasts without renewal; it is
// renewed every third of it.
const DefaultNodeTTL = 30 * time.Second

// KeepNode renews holder's lease of node every ttl/3 until ctx is done,
// then releases it. It returns nil after the release, or ErrNodeLost (at
// once) when another holder took the number: the caller must then stop
// making ids. A renewal that fails otherwise (the store away) is retried
// at the next tick: the lease lasts ttl, and while the store is away no
// job with a new id can be committed anyway.
func KeepNode(ctx context.Context, l NodeLeaser, node int, holder string, ttl time.Duration, log *slog.Logger) error {
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := l.ReleaseNode(rctx, node, holder); err != nil {
				log.Warn("node number not released; it frees itself when its lease expires", "node", node, "ttl", ttl.String(), "err", err)
			}
			return nil
		case <-tick.C:
			err := l.RenewNode(ctx, node, holder, ttl)
			switch {
			case errors.Is(err, ErrNodeLost):
				return fmt.Errorf("node %d: %w", node, err)
			case err != nil && ctx.Err() == nil:
				log.Warn("node number lease not renewed; retrying", "dep", "task_store", "node", node, "err", err)
			}
		}
	}
}
