// The audit log (timer.AuditLog): toc_audit_log, times in Unix ms.

package taskdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/toc-project/toc/timer"
)

var _ timer.AuditLog = (*Store)(nil)

// AppendAudit implements timer.AuditLog; the database numbers the entry.
func (s *Store) AppendAudit(ctx context.Context, e *timer.AuditEntry) error {
	if err := timer.CheckAuditEntry(e); err != nil {
		return fmt.Errorf("append audit: %w", err)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO toc_audit_log (at, who, action, topic, target, details, jobs, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.At.UnixMilli(), e.Who, e.Action, e.Topic, e.Target, e.Details, e.Jobs, e.Error)
	if err != nil {
		return fmt.Errorf("append audit %s: %w", e.Action, s.translate(err))
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("append audit %s: read its id: %w", e.Action, err)
	}
	e.ID = id
	return nil
}

// ListAudit implements timer.AuditLog. The order (at, audit_id)
// descending is the tail of every index of toc_audit_log, so that one
// filter reads its index backwards and stops at the limit.
func (s *Store) ListAudit(ctx context.Context, q timer.AuditQuery) ([]*timer.AuditEntry, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	var (
		where []string
		args  []any
	)
	for _, f := range []struct{ col, val string }{{"action", q.Action}, {"topic", q.Topic}, {"who", q.Who}} {
		if f.val != "" {
			where, args = append(where, f.col+" = ?"), append(args, f.val)
		}
	}
	if !q.Since.IsZero() {
		where, args = append(where, "at >= ?"), append(args, q.Since.UnixMilli())
	}
	if !q.Until.IsZero() {
		where, args = append(where, "at < ?"), append(args, q.Until.UnixMilli())
	}
	if q.After != (timer.AuditCursor{}) {
		at := q.After.At.UnixMilli()
		where, args = append(where, "(at < ? OR (at = ? AND audit_id < ?))"), append(args, at, at, q.After.ID)
	}
	query := "SELECT audit_id, at, who, action, topic, target, details, jobs, error FROM toc_audit_log"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY at DESC, audit_id DESC LIMIT ?"
	rows, err := s.rdb.QueryContext(ctx, query, append(args, q.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	var out []*timer.AuditEntry
	for rows.Next() {
		var (
			e  timer.AuditEntry
			at int64
		)
		if err := rows.Scan(&e.ID, &at, &e.Who, &e.Action, &e.Topic, &e.Target, &e.Details, &e.Jobs, &e.Error); err != nil {
			return nil, fmt.Errorf("list audit: %w", err)
		}
		e.At = timer.TimeOf(at)
		out = append(out, &e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list audit: %w", err)
	}
	return out, nil
}
