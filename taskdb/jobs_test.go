package taskdb

import (
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
)

// TestInsertStatementColumns: a chunk names the columns without a
// default and those that one of its jobs sets, and no others; a job that
// leaves a named column at its default gives it that default.
func TestInsertStatementColumns(t *testing.T) {
	s := &Store{d: mysqlDialect}
	columns := func(q string) string {
		return q[len("INSERT INTO toc_jobs ("):strings.Index(q, ") VALUES ")]
	}
	plain := jobs(1, 2, "t")
	q, args := s.insertStatement(plain, 0)
	const required = "job_id, topic, status, action_time, max_attempts, gmt_create, gmt_modified"
	if got := columns(q); got != required+", callback" {
		t.Errorf("plain jobs name %q; want the required columns and callback", got)
	}
	if strings.Count(q, "?") != len(args) || len(args) != 2*8 {
		t.Errorf("%d placeholders, %d values; want 16 of each", strings.Count(q, "?"), len(args))
	}

	keyed := newJob(3, "t", 0)
	keyed.Key = "k"
	keyed.Expiry = timer.ExpireAfter(0) // a deadline at the due time: 0, not NULL
	keyed.Payload = []byte{}            // an empty payload, not none
	q, args = s.insertStatement([]*timer.Job{plain[0], keyed}, 0)
	if got, want := columns(q), required+", idem_key, callback, payload, expire_after_ms, expire_at"; got != want {
		t.Fatalf("columns %q; want %q", got, want)
	}
	n := len(args) / 2
	first, second := args[:n], args[n:]
	for i, v := range []any{nil, "https://example.com/hook", nil, nil, nil} {
		if first[7+i] != v {
			t.Errorf("the plain job's value %d = %#v; want %#v", 7+i, first[7+i], v)
		}
	}
	if string(second[7].([]byte)) != "k" || second[9] == nil || second[10] != int64(0) {
		t.Errorf("the keyed job's values = %#v; want key k, an empty payload, deadline 0", second[7:])
	}
}
