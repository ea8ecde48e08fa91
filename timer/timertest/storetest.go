package timertest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// TestStore runs the task store contract, timer.Store as taskdb.Store
// implements it, against the stores open returns: each a fresh, empty
// store. Its subtests run in parallel. taskdb runs it against MySQL and
// SQLite, and timertest against Store, so that the fake cannot drift from
// the real thing.
func TestStore(t *testing.T, open func(t *testing.T) timer.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s timer.Store)
	}{
		{"PutTopic", testPutTopic},
		{"InsertGet", testInsertGet},
		{"InsertBatch", testInsertBatch},
		{"InsertEmpty", testInsertEmpty},
		{"InsertConflict", testInsertConflict},
		{"InsertInvalid", testInsertInvalid},
		{"EmptyKeys", testEmptyKeys},
		{"GetByKey", testGetByKey},
		{"NotFound", testNotFound},
		{"Payload", testPayload},
		{"TraceParent", testTraceParent},
		{"Transition", testTransition},
		{"Complete", testComplete},
		{"Fail", testFail},
		{"FailTruncatesError", testFailTruncatesError},
		{"Reschedule", testReschedule},
		{"Replay", testReplay},
		{"ScanPending", testScanPending},
		{"ScanPendingPaging", testScanPendingPaging},
		{"Topics", testTopics},
		{"EnsureTopics", testEnsureTopics},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Fire", testFire},
		{"FiringFinishes", testFiringFinishes},
		{"ScanPendingFiring", testScanPendingFiring},
		{"ListDead", testListDead},
		{"PauseTopic", testPauseTopic},
		{"DeleteTopic", testDeleteTopic},
		{"DeleteTopicRace", testDeleteTopicRace},
		{"ListJobs", testListJobs},
		{"TopicsVersion", testTopicsVersion},
		{"JobVersion", testJobVersion},
		{"VersionConditions", testVersionConditions},
		{"VersionRace", testVersionRace},
		{"Deadlines", testDeadlines},
		{"DeadlineFail", testDeadlineFail},
		{"TopicExpiry", testTopicExpiry},
		{"ConcurrencyKeyStored", testConcurrencyKeyStored},
		{"FireBusy", testFireBusy},
		{"FireBusyRace", testFireBusyRace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// base is the clock of the suites: a round millisecond.
var base = time.UnixMilli(1_700_000_000_000)

// newJob returns a pending job of topic due at base+dueMs.
func newJob(id timer.JobID, topic string, dueMs int64) *timer.Job {
	return &timer.Job{
		ID:          id,
		Topic:       topic,
		Status:      timer.StatusPending,
		DueAt:       base.Add(time.Duration(dueMs) * time.Millisecond),
		MaxAttempts: timer.DefaultMaxAttempts,
		CallbackURL: "https://example.com/hook",
		CreatedAt:   base,
		UpdatedAt:   base,
	}
}

// jobs returns count pending jobs with ids from first, all due at base.
func jobs(first timer.JobID, count int, topic string) []*timer.Job {
	js := make([]*timer.Job, count)
	for i := range js {
		js[i] = newJob(first+timer.JobID(i), topic, 0)
	}
	return js
}

// idRange returns count ids from first.
func idRange(first timer.JobID, count int) []timer.JobID {
	ids := make([]timer.JobID, count)
	for i := range ids {
		ids[i] = first + timer.JobID(i)
	}
	return ids
}

func mustInsert(t testing.TB, s timer.Store, js ...*timer.Job) {
	t.Helper()
	if err := s.Insert(t.Context(), js); err != nil {
		t.Fatalf("Insert: %v", err)
	}
}

func mustGet(t testing.TB, s timer.Store, id timer.JobID) *timer.Job {
	t.Helper()
	j, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	return j
}

// countJobs counts the jobs of ids that exist.
func countJobs(t testing.TB, s timer.Store, ids []timer.JobID) int {
	t.Helper()
	got, err := s.GetMany(t.Context(), ids)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	return len(got)
}

// diffJob describes how got differs from want, or returns "".
func diffJob(got, want *timer.Job) string {
	var d []string
	field := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	field("ID", got.ID, want.ID)
	field("Topic", got.Topic, want.Topic)
	field("Key", got.Key, want.Key)
	field("BizID", got.BizID, want.BizID)
	field("BizType", got.BizType, want.BizType)
	field("Status", got.Status, want.Status)
	field("Attempts", got.Attempts, want.Attempts)
	field("MaxAttempts", got.MaxAttempts, want.MaxAttempts)
	field("LastError", got.LastError, want.LastError)
	field("CallbackURL", got.CallbackURL, want.CallbackURL)
	field("Priority", got.Priority, want.Priority)
	field("TraceParent", got.TraceParent, want.TraceParent)
	if !got.DueAt.Equal(want.DueAt) {
		d = append(d, fmt.Sprintf("DueAt = %v, want %v", got.DueAt, want.DueAt))
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		d = append(d, fmt.Sprintf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		d = append(d, fmt.Sprintf("UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt))
	}
	if !bytes.Equal(got.Payload, want.Payload) || (got.Payload == nil) != (want.Payload == nil) {
		d = append(d, fmt.Sprintf("Payload = %d bytes (nil %t), want %d bytes (nil %t)",
			len(got.Payload), got.Payload == nil, len(want.Payload), want.Payload == nil))
	}
	return strings.Join(d, "; ")
}

func testInsertGet(t *testing.T, s timer.Store) {
	want := newJob(1, "orders", 1500)
	want.Key = `order-42 'x' \"y"` // quotes and a backslash round-trip
	want.BizID = 1<<64 - 1         // the full unsigned range round-trips
	want.BizType = 1 << 63
	want.Attempts = 2
	want.LastError = `503 from upstream: "it's down" \n, é 日本 😀` // and text beyond ASCII
	want.Payload = []byte(`{"order":42}`)
	want.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	want.UpdatedAt = base.Add(time.Second)
	mustInsert(t, s, want)
	if d := diffJob(mustGet(t, s, 1), want); d != "" {
		t.Error(d)
	}

	// A zero CreatedAt takes the store's clock; a zero UpdatedAt, CreatedAt.
	fresh := newJob(2, "orders", 0)
	fresh.CreatedAt, fresh.UpdatedAt = time.Time{}, time.Time{}
	before := time.Now().Truncate(time.Millisecond)
	mustInsert(t, s, fresh)
	got := mustGet(t, s, 2)
	if got.CreatedAt.Before(before) || !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("CreatedAt, UpdatedAt = %v, %v; want equal, not before %v", got.CreatedAt, got.UpdatedAt, before)
	}
}

func testInsertBatch(t *testing.T, s timer.Store) {
	// 2,500 rows exceed one SQLite statement's variables: two chunks.
	js := jobs(1, 2500, "batch")
	for i, j := range js {
		j.BizID = uint64(i % 7)
		if i%3 == 0 {
			j.Key = fmt.Sprintf("k%d", i)
		}
	}
	mustInsert(t, s, js...)
	ids := make([]timer.JobID, 0, len(js)+1)
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	got, err := s.GetMany(t.Context(), append(ids, 999_999))
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(got) != len(js) {
		t.Fatalf("GetMany returned %d jobs, want %d", len(got), len(js))
	}
	slices.SortFunc(got, func(a, b *timer.Job) int { return int(a.ID) - int(b.ID) })
	for i, j := range got {
		if d := diffJob(j, js[i]); d != "" {
			t.Fatalf("job %d: %s", js[i].ID, d)
		}
	}
	// More ids than one IN list takes, missing ones included.
	many := make([]timer.JobID, 12_000)
	for i := range many {
		many[i] = timer.JobID(i + 1)
	}
	if got, err := s.GetMany(t.Context(), many); err != nil || len(got) != len(js) {
		t.Errorf("GetMany(12,000 ids) = %d jobs, %v; want %d", len(got), err, len(js))
	}
}

func testInsertEmpty(t *testing.T, s timer.Store) {
	if err := s.Insert(t.Context(), nil); err != nil {
		t.Errorf("Insert(nil) = %v", err)
	}
	if got, err := s.GetMany(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("GetMany(nil) = %v, %v", got, err)
	}
	if n, err := s.Complete(t.Context(), nil, base); err != nil || n != 0 {
		t.Errorf("Complete(nil) = %d, %v", n, err)
	}
}

func testInsertConflict(t *testing.T, s timer.Store) {
	existing := newJob(1, "t", 0)
	existing.Key = "taken"
	mustInsert(t, s, existing)

	keyed := func(id timer.JobID, topic, key string) *timer.Job {
		j := newJob(id, topic, 0)
		j.Key = key
		return j
	}
	big := jobs(100, 5000, "t") // several chunks in one transaction
	conflictIDs := append(idRange(1, 20), idRange(100, 5000)...)
	big[4999] = newJob(1, "t", 0)
	tests := []struct {
		name string
		jobs []*timer.Job
	}{
		{"id", []*timer.Job{newJob(1, "t", 0)}},
		{"key", []*timer.Job{keyed(2, "t", "taken")}},
		{"id in batch", []*timer.Job{newJob(10, "t", 0), newJob(11, "t", 0), newJob(1, "t", 0), newJob(12, "t", 0)}},
		{"key in batch", []*timer.Job{newJob(10, "t", 0), keyed(11, "t", "taken")}},
		{"id twice in batch", []*timer.Job{newJob(10, "t", 0), newJob(10, "t", 0)}},
		{"key twice in batch", []*timer.Job{keyed(10, "t", "dup"), keyed(11, "t", "dup")}},
		{"last of 5,000", big},
	}
	for _, tc := range tests {
		err := s.Insert(t.Context(), tc.jobs)
		if !errors.Is(err, timer.ErrConflict) {
			t.Errorf("%s: Insert = %v, want ErrConflict", tc.name, err)
		}
		if n := countJobs(t, s, conflictIDs); n != 1 {
			t.Errorf("%s: %d jobs after a failed insert, want 1", tc.name, n)
		}
	}
	// The same key in another topic is no conflict.
	mustInsert(t, s, keyed(2, "other", "taken"))
}

func testInsertInvalid(t *testing.T, s timer.Store) {
	mod := func(f func(j *timer.Job)) *timer.Job {
		j := newJob(1, "t", 0)
		f(j)
		return j
	}
	tests := []struct {
		name string
		job  *timer.Job
	}{
		{"nil", nil},
		{"id 0", mod(func(j *timer.Job) { j.ID = 0 })},
		{"id 2^63", mod(func(j *timer.Job) { j.ID = 1 << 63 })},
		{"no topic", mod(func(j *timer.Job) { j.Topic = "" })},
		{"long topic", mod(func(j *timer.Job) { j.Topic = strings.Repeat("t", 65) })},
		{"long key", mod(func(j *timer.Job) { j.Key = strings.Repeat("k", timer.MaxKeyBytes+1) })},
		{"status 9", mod(func(j *timer.Job) { j.Status = 9 })},
		{"negative attempts", mod(func(j *timer.Job) { j.Attempts = -1 })},
		{"long callback", mod(func(j *timer.Job) { j.CallbackURL = strings.Repeat("u", 2049) })},
		{"large payload", mod(func(j *timer.Job) { j.Payload = make([]byte, timer.MaxPayloadBytes+1) })},
		{"malformed traceparent", mod(func(j *timer.Job) { j.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331" })},
		{"long traceparent", mod(func(j *timer.Job) {
			j.TraceParent = "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-" + strings.Repeat("x", timer.MaxTraceParentBytes)
		})},
	}
	for _, tc := range tests {
		err := s.Insert(t.Context(), []*timer.Job{newJob(2, "t", 0), tc.job})
		if !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: Insert = %v, want ErrInvalid", tc.name, err)
		}
	}
	if n := countJobs(t, s, idRange(1, 3)); n != 0 {
		t.Errorf("%d jobs after invalid inserts, want 0", n)
	}
	// The limits themselves are fine.
	j := newJob(3, strings.Repeat("t", 64), 0)
	j.Key = strings.Repeat("k", timer.MaxKeyBytes)
	j.CallbackURL = strings.Repeat("u", 2048)
	mustInsert(t, s, j)
	if d := diffJob(mustGet(t, s, 3), j); d != "" {
		t.Error(d)
	}
}

func testEmptyKeys(t *testing.T, s timer.Store) {
	mustInsert(t, s, jobs(1, 50, "t")...)
	mustInsert(t, s, newJob(51, "t", 0))
	if n := countJobs(t, s, idRange(1, 60)); n != 51 {
		t.Errorf("%d jobs, want 51", n)
	}
}

func testGetByKey(t *testing.T, s timer.Store) {
	a, b, c := newJob(1, "t", 0), newJob(2, "u", 0), newJob(3, "t", 0)
	a.Key, b.Key, c.Key = "k", "k", "K"
	mustInsert(t, s, a, b, c)
	for _, want := range []*timer.Job{a, b, c} {
		got, err := s.GetByKey(t.Context(), want.Topic, want.Key)
		if err != nil {
			t.Fatalf("GetByKey(%q, %q): %v", want.Topic, want.Key, err)
		}
		if got.ID != want.ID {
			t.Errorf("GetByKey(%q, %q) = job %d, want %d", want.Topic, want.Key, got.ID, want.ID)
		}
	}
	for _, k := range [][2]string{{"t", "x"}, {"v", "k"}, {"t", ""}, {"T", "k"}} {
		if _, err := s.GetByKey(t.Context(), k[0], k[1]); !errors.Is(err, timer.ErrNotFound) {
			t.Errorf("GetByKey(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
}

func testNotFound(t *testing.T, s timer.Store) {
	if _, err := s.Get(t.Context(), 7); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("Get = %v, want ErrNotFound", err)
	}
	if _, err := s.Topic(t.Context(), "none"); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("Topic = %v, want ErrNotFound", err)
	}
}

func testPayload(t *testing.T, s timer.Store) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	full := make([]byte, timer.MaxPayloadBytes)
	for i := range full {
		full[i] = byte(rand.Uint32())
	}
	payloads := [][]byte{nil, {}, {0}, []byte("'\\\"%_;"), all, full}
	var js []*timer.Job
	for i, p := range payloads {
		j := newJob(timer.JobID(i+1), "t", 0)
		j.Payload = p
		js = append(js, j)
	}
	mustInsert(t, s, js...)
	for _, want := range js {
		if d := diffJob(mustGet(t, s, want.ID), want); d != "" {
			t.Errorf("payload %d: %s", want.ID, d)
		}
	}
	// 6.4 MiB of payloads in one call: several statements, each under
	// MariaDB's max_allowed_packet.
	large := jobs(100, 100, "t")
	for _, j := range large {
		j.Payload = full
	}
	mustInsert(t, s, large...)
	if got := mustGet(t, s, 199); !bytes.Equal(got.Payload, full) {
		t.Errorf("large batch: payload of %d bytes, want %d", len(got.Payload), len(full))
	}
}

// testTraceParent checks that a job's traceparent round-trips through
// every read, is kept by every change of the row, and that a job
// without one reads back without one.
func testTraceParent(t *testing.T, s timer.Store) {
	ctx := t.Context()
	const (
		tp   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		long = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-and-what-a-later-version-adds"
	)
	var js []*timer.Job
	for i := range 6 {
		j := newJob(timer.JobID(i+1), "t", int64(i))
		j.TraceParent = tp
		js = append(js, j)
	}
	js[1].Key = "k"
	js[2].TraceParent = ""
	js[3].TraceParent = long
	mustInsert(t, s, js...)
	want := map[timer.JobID]string{1: tp, 2: tp, 3: "", 4: long, 5: tp, 6: tp}
	check := func(what string, got []*timer.Job) {
		t.Helper()
		for _, j := range got {
			if j.TraceParent != want[j.ID] {
				t.Errorf("%s: job %d traceparent %q, want %q", what, j.ID, j.TraceParent, want[j.ID])
			}
		}
	}
	all, err := s.GetMany(ctx, idRange(1, 6))
	if err != nil || len(all) != 6 {
		t.Fatalf("GetMany = %d jobs, %v", len(all), err)
	}
	check("GetMany", all)
	byKey, err := s.GetByKey(ctx, "t", "k")
	if err != nil {
		t.Fatal(err)
	}
	check("GetByKey", []*timer.Job{byKey})

	// Every change of the row keeps it.
	if n, err := s.Fire(ctx, []timer.JobID{1, 2, 3}, base.Add(time.Hour), base); err != nil || n != 3 {
		t.Fatalf("Fire = %d, %v", n, err)
	}
	if _, err := s.Complete(ctx, []timer.Completion{{ID: 1, Attempts: 1}}, base); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Fail(ctx, 2, timer.Failure{Attempts: 1, Error: "500", RetryAt: base.Add(time.Minute)}, base); !ok || err != nil {
		t.Fatalf("Fail = %t, %v", ok, err)
	}
	if ok, err := s.Reschedule(ctx, 2, base.Add(time.Hour), base); !ok || err != nil {
		t.Fatalf("Reschedule = %t, %v", ok, err)
	}
	if ok, err := s.Fail(ctx, 5, timer.Failure{Attempts: 1, Error: "x", Dead: true}, base); !ok || err != nil {
		t.Fatalf("Fail dead = %t, %v", ok, err)
	}
	dead, err := s.ListDead(ctx, timer.DeadQuery{Topic: "t", Limit: 10})
	if err != nil || len(dead) != 1 {
		t.Fatalf("ListDead = %d jobs, %v", len(dead), err)
	}
	check("ListDead", dead)
	if ok, err := s.Replay(ctx, 5, base, base); !ok || err != nil {
		t.Fatalf("Replay = %t, %v", ok, err)
	}
	if ok, err := s.Transition(ctx, 6, timer.StatusPending, timer.StatusCancelled, base); !ok || err != nil {
		t.Fatalf("Transition = %t, %v", ok, err)
	}
	all, err = s.GetMany(ctx, idRange(1, 6))
	if err != nil || len(all) != 6 {
		t.Fatalf("GetMany = %d jobs, %v", len(all), err)
	}
	check("GetMany after changes", all)
	found, err := s.ListJobs(ctx, timer.JobQuery{Topic: "t", Limit: 10})
	if err != nil || len(found) != 6 {
		t.Fatalf("ListJobs = %d jobs, %v", len(found), err)
	}
	check("ListJobs", found)
}
