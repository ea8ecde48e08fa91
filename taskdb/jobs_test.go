package taskdb

import (
	"slices"
	"strconv"
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
	rows := insertedRows(t, q, args)
	if len(rows) != 2 || len(rows[0]) != 8 || len(rows[1]) != 8 {
		t.Errorf("rows %v; want 2 of 8 values", rows)
	}
	if want := []any{int64(1), "t", int64(0)}; len(rows) > 0 && !slices.Equal(rows[0][:3], want) {
		t.Errorf("the first row starts %#v; want %#v", rows[0][:3], want)
	}

	keyed := newJob(3, "t", 0)
	keyed.Key = "k"
	keyed.Expiry = timer.ExpireAfter(0) // a deadline at the due time: 0, not NULL
	keyed.Payload = []byte{}            // an empty payload, not none
	q, args = s.insertStatement([]*timer.Job{plain[0], keyed}, 0)
	if got, want := columns(q), required+", idem_key, callback, payload, expire_after_ms, expire_at"; got != want {
		t.Fatalf("columns %q; want %q", got, want)
	}
	rows = insertedRows(t, q, args)
	first, second := rows[0], rows[1]
	for i, v := range []any{nil, "https://example.com/hook", nil, nil, nil} {
		if first[7+i] != v {
			t.Errorf("the plain job's value %d = %#v; want %#v", 7+i, first[7+i], v)
		}
	}
	if string(second[7].([]byte)) != "k" || second[9] == nil || second[10] != int64(0) {
		t.Errorf("the keyed job's values = %#v; want key k, an empty payload, deadline 0", second[7:])
	}
}

// insertedRows reads back the rows of an INSERT's VALUES: each value a
// literal (an integer, NULL) or a placeholder, taken from args in turn.
// The text holds no quoted value to split on (inline).
func insertedRows(t *testing.T, q string, args []any) [][]any {
	t.Helper()
	_, values, _ := strings.Cut(q, ") VALUES (")
	var rows [][]any
	for row := range strings.SplitSeq(strings.TrimSuffix(values, ")"), "), (") {
		var vals []any
		for v := range strings.SplitSeq(row, ", ") {
			switch v {
			case "?":
				if len(args) == 0 {
					t.Fatalf("more placeholders than arguments in %s", q)
				}
				vals, args = append(vals, args[0]), args[1:]
			case "NULL":
				vals = append(vals, nil)
			default:
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("value %q of %s: neither a placeholder nor an integer", v, q)
				}
				vals = append(vals, n)
			}
		}
		rows = append(rows, vals)
	}
	if len(args) > 0 {
		t.Fatalf("%d arguments left over after %s", len(args), q)
	}
	return rows
}
