package timertest

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/toc-project/toc/timer"
)

var _ timer.AuditLog = (*Store)(nil)

// AppendAudit implements timer.AuditLog, numbering entries from 1.
func (s *Store) AppendAudit(ctx context.Context, e *timer.AuditEntry) error {
	if err := s.f.call("AppendAudit"); err != nil {
		return err
	}
	if err := timer.CheckAuditEntry(e); err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *e
	c.ID = int64(len(s.audit) + 1)
	c.At = timer.TimeOf(e.At.UnixMilli())
	s.audit = append(s.audit, &c)
	e.ID = c.ID
	return nil
}

// ListAudit implements timer.AuditLog.
func (s *Store) ListAudit(ctx context.Context, q timer.AuditQuery) ([]*timer.AuditEntry, error) {
	if err := s.f.call("ListAudit"); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*timer.AuditEntry
	for _, e := range s.audit {
		if q.Matches(e) && q.After.Before(e) {
			c := *e
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *timer.AuditEntry) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out[:min(len(out), q.Limit)], nil
}
