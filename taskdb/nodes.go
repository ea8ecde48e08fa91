// Node number leases (timer.NodeLeaser): a row per number that any
// process has held, with its holder and when its lease ends, in ms of
// the database's clock.

package taskdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/toc-project/toc/timer"
)

var _ timer.NodeLeaser = (*Store)(nil)

// LeaseNode implements timer.NodeLeaser. A number is taken by a
// conditional statement (an INSERT the primary key refuses, an UPDATE of
// an expired row), never by reading and then writing, so two processes
// racing for one number cannot both get it.
func (s *Store) LeaseNode(ctx context.Context, want int, holder string, ttl time.Duration) (int, error) {
	if want > timer.MaxNode {
		return 0, fmt.Errorf("node %d: %w", want, timer.ErrNoNode)
	}
	if want >= 0 {
		ok, err := s.claimNode(ctx, want, holder, ttl)
		if err != nil || ok {
			return want, err
		}
		return 0, s.heldBy(ctx, want)
	}
	for range 2 * (timer.MaxNode + 1) {
		var n int
		err := s.db.QueryRowContext(ctx, "SELECT node FROM toc_nodes WHERE expires_at < "+s.d.nowMillis+" ORDER BY node LIMIT 1").Scan(&n)
		if errors.Is(err, sql.ErrNoRows) {
			// None expired: the next number never used.
			err = s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(node) + 1, 0) FROM toc_nodes").Scan(&n)
		}
		if err != nil {
			return 0, fmt.Errorf("lease a node number: %w", err)
		}
		if n > timer.MaxNode {
			return 0, timer.ErrNoNode
		}
		ok, err := s.claimNode(ctx, n, holder, ttl)
		if err != nil || ok {
			return n, err
		}
		// Another process took n between the read and the write: next.
	}
	return 0, timer.ErrNoNode
}

// claimNode takes node for holder if nobody holds it: it inserts the row
// of a number never used, or takes over a row whose lease expired (or is
// holder's already).
func (s *Store) claimNode(ctx context.Context, node int, holder string, ttl time.Duration) (bool, error) {
	_, err := s.db.ExecContext(ctx, "INSERT INTO toc_nodes (node, holder, expires_at) VALUES (?, ?, "+s.d.nowMillis+" + ?)",
		node, holder, ttl.Milliseconds())
	switch {
	case err == nil:
		return true, nil
	case !s.d.isConflict(err):
		return false, fmt.Errorf("lease node %d: %w", node, err)
	}
	ok, err := s.updateOne(ctx, "UPDATE toc_nodes SET holder = ?, expires_at = "+s.d.nowMillis+" + ? WHERE node = ? AND (expires_at < "+s.d.nowMillis+" OR holder = ?)",
		holder, ttl.Milliseconds(), node, holder)
	if err != nil {
		return false, fmt.Errorf("lease node %d: %w", node, err)
	}
	return ok, nil
}

func (s *Store) heldBy(ctx context.Context, node int) error {
	e := &timer.NodeHeldError{Node: node}
	var until int64
	err := s.db.QueryRowContext(ctx, "SELECT holder, expires_at FROM toc_nodes WHERE node = ?", node).Scan(&e.Holder, &until)
	if err != nil {
		return fmt.Errorf("node %d is leased; its holder could not be read: %w", node, err)
	}
	e.Until = time.UnixMilli(until)
	return e
}

// RenewNode implements timer.NodeLeaser. A lease that expired but that
// nobody took is still holder's: no one else made ids with the number.
func (s *Store) RenewNode(ctx context.Context, node int, holder string, ttl time.Duration) error {
	ok, err := s.updateOne(ctx, "UPDATE toc_nodes SET expires_at = "+s.d.nowMillis+" + ? WHERE node = ? AND holder = ?",
		ttl.Milliseconds(), node, holder)
	switch {
	case err != nil:
		return fmt.Errorf("renew node %d: %w", node, err)
	case !ok:
		return timer.ErrNodeLost
	}
	return nil
}

// ReleaseNode implements timer.NodeLeaser: the row stays, expired, so
// that numbers stay dense and the next lease takes the lowest.
func (s *Store) ReleaseNode(ctx context.Context, node int, holder string) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE toc_nodes SET expires_at = 0 WHERE node = ? AND holder = ?", node, holder); err != nil {
		return fmt.Errorf("release node %d: %w", node, err)
	}
	return nil
}

// LiveNodes returns the holder of each node number whose lease has not
// expired, by the store's clock: the processes that make ids for the
// store now, or did until they died less than a lease ago.
func (s *Store) LiveNodes(ctx context.Context) (map[int]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT node, holder FROM toc_nodes WHERE expires_at >= "+s.d.nowMillis)
	if err != nil {
		return nil, fmt.Errorf("read the node leases: %w", err)
	}
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var (
			n      int
			holder string
		)
		if err := rows.Scan(&n, &holder); err != nil {
			return nil, fmt.Errorf("read the node leases: %w", err)
		}
		out[n] = holder
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the node leases: %w", err)
	}
	return out, nil
}
