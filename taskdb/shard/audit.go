package shard

import (
	"context"

	"github.com/toc-project/toc/timer"
)

// The audit log lives in shard 0, beside the topic catalogue and the
// schedules: its entries are few (one an admin action), most name a topic
// or a filter rather than one job, and the log reads newest first across
// every topic, which one table answers from one index. A bulk action that
// touched jobs on every shard is still one entry.

var _ timer.AuditLog = (*Store)(nil)

// AppendAudit implements timer.AuditLog in shard 0.
func (s *Store) AppendAudit(ctx context.Context, e *timer.AuditEntry) error {
	return s.shards[0].AppendAudit(ctx, e)
}

// ListAudit implements timer.AuditLog in shard 0.
func (s *Store) ListAudit(ctx context.Context, q timer.AuditQuery) ([]*timer.AuditEntry, error) {
	return s.shards[0].ListAudit(ctx, q)
}
