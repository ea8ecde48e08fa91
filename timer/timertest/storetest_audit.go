package timertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// TestAuditLog runs the contract of timer.AuditLog against the stores open
// returns: each a fresh, empty store. taskdb runs it against MySQL and
// SQLite, shard against two shards, and timertest against Store.
func TestAuditLog(t *testing.T, open func(t *testing.T) timer.AuditLog) {
	tests := []struct {
		name string
		run  func(t *testing.T, s timer.AuditLog)
	}{
		{"RoundTrip", testAuditRoundTrip},
		{"Order", testAuditOrder},
		{"Filters", testAuditFilters},
		{"Pages", testAuditPages},
		{"Invalid", testAuditInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// auditAt returns an entry of action on topic at base+ms.
func auditAt(action, topic string, ms int64) *timer.AuditEntry {
	return &timer.AuditEntry{At: base.Add(time.Duration(ms) * time.Millisecond), Who: "api-token", Action: action, Topic: topic}
}

func mustAppend(t testing.TB, s timer.AuditLog, es ...*timer.AuditEntry) {
	t.Helper()
	for _, e := range es {
		if err := s.AppendAudit(t.Context(), e); err != nil {
			t.Fatalf("AppendAudit %s: %v", e.Action, err)
		}
		if e.ID <= 0 {
			t.Fatalf("AppendAudit %s set id %d", e.Action, e.ID)
		}
	}
}

// auditIDs lists what q selects, as ids.
func auditIDs(t testing.TB, s timer.AuditLog, q timer.AuditQuery) []int64 {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = timer.MaxAuditPage
	}
	es, err := s.ListAudit(t.Context(), q)
	if err != nil {
		t.Fatalf("ListAudit(%+v): %v", q, err)
	}
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids
}

func entryIDs(es ...*timer.AuditEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// testAuditRoundTrip: every field reads back as appended, the time in
// whole milliseconds, details and errors at their bounds, in any script.
func testAuditRoundTrip(t *testing.T, s timer.AuditLog) {
	e := &timer.AuditEntry{
		At:      base.Add(1500 * time.Microsecond),
		Who:     strings.Repeat("w", timer.MaxAuditWhoBytes),
		Action:  "deadletter.replay_bulk",
		Topic:   "orders",
		Target:  "signature=tls: handshake ✓",
		Details: `{"limit":10,"note":"` + strings.Repeat("é", (timer.MaxAuditDetailsBytes-30)/2) + `"}`,
		Jobs:    1 << 40,
		Error:   strings.Repeat("x", timer.MaxAuditErrorBytes),
	}
	mustAppend(t, s, e)
	got, err := s.ListAudit(t.Context(), timer.AuditQuery{Limit: 10})
	if err != nil || len(got) != 1 {
		t.Fatalf("ListAudit = %d entries, %v; want 1", len(got), err)
	}
	want := *e
	want.At = base.Add(time.Millisecond)
	g := got[0]
	if !g.At.Equal(want.At) || g.ID != want.ID || g.Who != want.Who || g.Action != want.Action || g.Topic != want.Topic ||
		g.Target != want.Target || g.Details != want.Details || g.Jobs != want.Jobs || g.Error != want.Error {
		t.Errorf("read back %+v\nwant %+v", *g, want)
	}
	if !g.Failed() {
		t.Error("an entry with an error is not Failed")
	}
}

// testAuditOrder: newest first by time, then by id among entries of one
// millisecond; ids rise in the order entries are appended.
func testAuditOrder(t *testing.T, s timer.AuditLog) {
	a, b, c, d := auditAt("topic.pause", "a", 10), auditAt("topic.resume", "a", 30), auditAt("topic.delete", "a", 20), auditAt("topic.put", "a", 30)
	mustAppend(t, s, a, b, c, d)
	if !(a.ID < b.ID && b.ID < c.ID && c.ID < d.ID) {
		t.Errorf("ids %v do not rise in the order appended", entryIDs(a, b, c, d))
	}
	if got, want := auditIDs(t, s, timer.AuditQuery{}), entryIDs(d, b, c, a); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v (time desc, then id desc)", got, want)
	}
}

// testAuditFilters: each filter alone and together; since is inclusive,
// until exclusive.
func testAuditFilters(t *testing.T, s timer.AuditLog) {
	e1 := auditAt("topic.pause", "a", 0)
	e2 := auditAt("topic.pause", "b", 10)
	e3 := auditAt("deadletter.purge", "a", 20)
	e4 := auditAt("schedule.delete", "", 30)
	e4.Who = "dev"
	mustAppend(t, s, e1, e2, e3, e4)
	at := func(ms int64) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name string
		q    timer.AuditQuery
		want []int64
	}{
		{"all", timer.AuditQuery{}, entryIDs(e4, e3, e2, e1)},
		{"action", timer.AuditQuery{Action: "topic.pause"}, entryIDs(e2, e1)},
		{"topic", timer.AuditQuery{Topic: "a"}, entryIDs(e3, e1)},
		{"who", timer.AuditQuery{Who: "dev"}, entryIDs(e4)},
		{"action and topic", timer.AuditQuery{Action: "topic.pause", Topic: "a"}, entryIDs(e1)},
		{"since inclusive", timer.AuditQuery{Since: at(10)}, entryIDs(e4, e3, e2)},
		{"until exclusive", timer.AuditQuery{Until: at(20)}, entryIDs(e2, e1)},
		{"window", timer.AuditQuery{Since: at(10), Until: at(30)}, entryIDs(e3, e2)},
		{"window and topic", timer.AuditQuery{Topic: "a", Since: at(1), Until: at(31)}, entryIDs(e3)},
		{"none", timer.AuditQuery{Action: "nothing"}, entryIDs()},
	}
	for _, tc := range tests {
		if got := auditIDs(t, s, tc.q); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// testAuditPages: pages of two, each after the last's cursor, walk every
// entry once, with and without a filter, across entries of one
// millisecond.
func testAuditPages(t *testing.T, s timer.AuditLog) {
	var all []*timer.AuditEntry
	for i := range 7 {
		e := auditAt("topic.pause", "a", int64(i/3)) // three a millisecond
		if i%2 == 1 {
			e.Topic = "b"
		}
		all = append(all, e)
	}
	mustAppend(t, s, all...)
	for _, q := range []timer.AuditQuery{{}, {Topic: "a"}} {
		var walked []int64
		q.Limit = 2
		for range 10 {
			page, err := s.ListAudit(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				walked = append(walked, e.ID)
			}
			if len(page) < q.Limit {
				break
			}
			q.After = timer.AuditCursorOf(page[len(page)-1])
		}
		q.After, q.Limit = timer.AuditCursor{}, 0
		if want := auditIDs(t, s, q); fmt.Sprint(walked) != fmt.Sprint(want) {
			t.Errorf("pages of %+v walked %v, want %v", q, walked, want)
		}
	}
}

// testAuditInvalid: what a row cannot hold wraps ErrInvalid and stores
// nothing; so does a limit out of range.
func testAuditInvalid(t *testing.T, s timer.AuditLog) {
	bad := map[string]func(e *timer.AuditEntry){
		"no action":   func(e *timer.AuditEntry) { e.Action = "" },
		"no time":     func(e *timer.AuditEntry) { e.At = time.Time{} },
		"long who":    func(e *timer.AuditEntry) { e.Who = strings.Repeat("w", timer.MaxAuditWhoBytes+1) },
		"long target": func(e *timer.AuditEntry) { e.Target = strings.Repeat("t", timer.MaxAuditTargetBytes+1) },
		"bad topic":   func(e *timer.AuditEntry) { e.Topic = "Not A Topic" },
		"negative":    func(e *timer.AuditEntry) { e.Jobs = -1 },
	}
	for name, spoil := range bad {
		e := auditAt("topic.pause", "a", 0)
		spoil(e)
		if err := s.AppendAudit(t.Context(), e); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: AppendAudit = %v, want ErrInvalid", name, err)
		}
	}
	if got := auditIDs(t, s, timer.AuditQuery{}); len(got) != 0 {
		t.Errorf("invalid entries stored: %v", got)
	}
	for _, limit := range []int{0, -1, timer.MaxAuditPage + 1} {
		if _, err := s.ListAudit(t.Context(), timer.AuditQuery{Limit: limit}); !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("ListAudit limit %d = %v, want ErrInvalid", limit, err)
		}
	}
}
