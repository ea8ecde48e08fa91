package taskdb

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/toc-project/toc/timer"
)

// testFireNew holds FireNew to Fire and GetMany: the jobs it returns are
// the rows as GetMany reads them, field for field, and a row changed
// since its insert, one not due, or one not inserted here are left to
// Fire, as Fire would leave them.
func testFireNew(t *testing.T, s *Store) {
	ctx := t.Context()
	now := time.Now()
	until := now.Add(time.Second)

	// Every column a job can set, in their edge cases.
	var js []*timer.Job
	for i := range 8 {
		j := newJob(timer.JobID(100+i), "fresh", 0)
		j.DueAt = now.Add(-time.Duration(i)*time.Second - 123456*time.Nanosecond)
		js = append(js, j)
	}
	js[0].CreatedAt, js[0].UpdatedAt = time.Time{}, time.Time{}
	js[1].Payload = []byte{}
	js[2].Payload, js[2].Key, js[2].BizID, js[2].BizType = []byte(`{"order":42}`), "key-2", 1<<63+5, 7
	js[3].Priority, js[3].TraceParent, js[3].LastError = timer.PriorityHigh, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", strings.Repeat("e", 3000)
	js[4].Expiry, js[4].ExpireAt = timer.ExpireAfter(90*time.Second), js[4].DueAt.Add(90*time.Second)
	js[5].Window, js[5].ConcurrencyKey = 2500*time.Millisecond, "ck-5"
	js[6].GroupID, js[6].UpdatedAt, js[6].Attempts, js[6].LastStatus = "g-6", base.Add(time.Hour), 2, 503
	js[7].MaxAttempts, js[7].CallbackURL = 3, "http://localhost:9/hook?x=1"
	mustInsert(t, s, js...)
	ids := make([]timer.JobID, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	fired, rest, err := s.FireNew(ctx, ids, until, now)
	if err != nil || len(fired) != len(js) || len(rest) != 0 {
		t.Fatalf("FireNew = %d jobs, rest %v, %v; want %d, none", len(fired), rest, err, len(js))
	}
	rows, err := s.GetMany(ctx, ids)
	if err != nil || len(rows) != len(js) {
		t.Fatalf("GetMany = %d rows, %v", len(rows), err)
	}
	for _, row := range rows {
		i := slices.IndexFunc(fired, func(j *timer.Job) bool { return j.ID == row.ID })
		if i < 0 {
			t.Fatalf("job %d fired by FireNew is not returned", row.ID)
		}
		if !reflect.DeepEqual(fired[i], row) {
			t.Errorf("FireNew's job %d\n%+v\nGetMany's row\n%+v", row.ID, *fired[i], *row)
		}
	}
	// Remembered once: a second FireNew leaves them to Fire.
	if again, rest, err := s.FireNew(ctx, ids, until, now); err != nil || len(again) != 0 || len(rest) != len(ids) {
		t.Errorf("FireNew again = %d jobs, %d rest, %v; want none, %d", len(again), len(rest), err, len(ids))
	}

	// A row changed since its insert: no job returned, and what Fire and
	// GetMany then find is what they would have found without FireNew.
	js = jobs(200, 3, "fresh")
	for _, j := range js {
		j.DueAt = now
	}
	mustInsert(t, s, js...)
	if ok, err := s.Transition(ctx, 201, timer.StatusPending, timer.StatusCancelled, now); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	ids = []timer.JobID{200, 201, 202}
	if fired, rest, err := s.FireNew(ctx, ids, until, now); err != nil || len(fired) != 0 || !slices.Equal(rest, ids) {
		t.Fatalf("FireNew with a cancelled row = %d jobs, rest %v, %v; want none, all", len(fired), rest, err)
	}
	if _, err := s.Fire(ctx, ids, until, now); err != nil {
		t.Fatal(err)
	}
	want := map[timer.JobID]timer.Status{200: timer.StatusFiring, 201: timer.StatusCancelled, 202: timer.StatusFiring}
	wantVersion := map[timer.JobID]int64{200: 2, 201: 2, 202: 2}
	checkRows(t, s, want, wantVersion)

	// A row not due by until stays pending.
	js = jobs(300, 2, "fresh")
	js[0].DueAt, js[1].DueAt = now, now.Add(time.Minute)
	mustInsert(t, s, js...)
	ids = []timer.JobID{300, 301}
	if fired, rest, err := s.FireNew(ctx, ids, until, now); err != nil || len(fired) != 0 || !slices.Equal(rest, ids) {
		t.Fatalf("FireNew with a row not due = %d jobs, rest %v, %v; want none, all", len(fired), rest, err)
	}
	checkRows(t, s, map[timer.JobID]timer.Status{300: timer.StatusFiring, 301: timer.StatusPending}, map[timer.JobID]int64{300: 2, 301: 1})

	// A job due beyond the horizon is not remembered; one of a later
	// insert is, beside it.
	js = jobs(400, 2, "fresh")
	js[0].DueAt, js[1].DueAt = now.Add(freshHorizon+time.Minute), now
	mustInsert(t, s, js...)
	fired, rest, err = s.FireNew(ctx, []timer.JobID{400, 401}, until, now)
	if err != nil || len(fired) != 1 || fired[0].ID != 401 || !slices.Equal(rest, []timer.JobID{400}) {
		t.Errorf("FireNew beside a job beyond the horizon = %d jobs, rest %v, %v; want 401, rest 400", len(fired), rest, err)
	}
}

// checkRows checks the status and version of each job of want.
func checkRows(t *testing.T, s *Store, want map[timer.JobID]timer.Status, version map[timer.JobID]int64) {
	t.Helper()
	for id, st := range want {
		j, err := s.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != st || j.Version != version[id] {
			t.Errorf("job %d is %s at version %d, want %s at %d", id, j.Status, j.Version, st, version[id])
		}
	}
}

// The memory of fresh jobs is bounded: when full, the jobs long past due
// are let go, at most once a second, and no more are kept until there is
// room.
func TestFreshBounded(t *testing.T) {
	var f fresh
	now := time.Now().UnixMilli()
	full := freshMaxBytes / freshJobBytes // of jobs with no payload and no strings
	old := make([]*timer.Job, full)
	for i := range old {
		old[i] = &timer.Job{ID: timer.JobID(i + 1), Status: timer.StatusPending, DueAt: timer.TimeOf(now - 2*freshStale.Milliseconds())}
	}
	f.remember(old, now)
	if len(f.jobs) != full || f.bytes != full*freshJobBytes {
		t.Fatalf("%d jobs kept, %d bytes; want %d, %d", len(f.jobs), f.bytes, full, full*freshJobBytes)
	}
	j := &timer.Job{ID: 1 << 40, Status: timer.StatusPending, DueAt: timer.TimeOf(now), Payload: make([]byte, 100)}
	f.remember([]*timer.Job{j}, now)
	if len(f.jobs) != 1 || f.bytes != freshJobBytes+100 || f.jobs[j.ID].job == nil {
		t.Errorf("after a sweep: %d jobs, %d bytes; want the new one alone", len(f.jobs), f.bytes)
	}
	big := &timer.Job{ID: 1<<40 + 1, Status: timer.StatusPending, DueAt: timer.TimeOf(now), Payload: make([]byte, freshMaxBytes)}
	f.remember([]*timer.Job{big}, now)
	if _, ok := f.jobs[big.ID]; ok || f.bytes != freshJobBytes+100 {
		t.Errorf("a payload past the bound was kept: %d bytes", f.bytes)
	}
	if got, rest := f.take([]timer.JobID{j.ID, 5}); len(got) != 1 || got[0].ID != j.ID || !slices.Equal(rest, []timer.JobID{5}) || f.bytes != 0 {
		t.Errorf("take = %d, rest %v, %d bytes left", len(got), rest, f.bytes)
	}

	// Full again: the pass over every job runs at most once a second.
	f.remember(old, now)
	f.remember([]*timer.Job{j}, now)
	if _, ok := f.jobs[j.ID]; ok {
		t.Error("a second sweep ran within a second of the first")
	}
	f.remember([]*timer.Job{j}, now+freshSweepEvery.Milliseconds())
	if _, ok := f.jobs[j.ID]; !ok || len(f.jobs) != 1 {
		t.Errorf("a second later: %d jobs kept, want the new one alone", len(f.jobs))
	}
}

// TestFreshSharesStrings: the jobs of a batch, each with its own copy of
// the same topic and callback URL, are remembered holding one copy, and
// counted for its bytes once.
func TestFreshSharesStrings(t *testing.T) {
	var f fresh
	now := time.Now().UnixMilli()
	topic, url := "orders", "http://localhost:8080/hook"
	batch := make([]*timer.Job, 3)
	for i := range batch {
		batch[i] = &timer.Job{ID: timer.JobID(i + 1), Status: timer.StatusPending, DueAt: timer.TimeOf(now),
			Topic: strings.Clone(topic), CallbackURL: strings.Clone(url), Key: strings.Clone("k")}
	}
	batch[2].CallbackURL = strings.Clone("http://localhost:8080/other")
	f.remember(batch, now)
	one, two, three := f.jobs[1].job, f.jobs[2].job, f.jobs[3].job
	if unsafe.StringData(two.Topic) != unsafe.StringData(one.Topic) || unsafe.StringData(three.Topic) != unsafe.StringData(one.Topic) ||
		unsafe.StringData(two.CallbackURL) != unsafe.StringData(one.CallbackURL) {
		t.Error("the batch's jobs hold copies of one topic or callback URL of their own")
	}
	if two.Topic != topic || two.CallbackURL != url || three.CallbackURL != "http://localhost:8080/other" || two.Key != "k" {
		t.Errorf("remembered %q %q %q %q", two.Topic, two.CallbackURL, three.CallbackURL, two.Key)
	}
	want := freshJobBytes + len(topic) + len(url) + 1 + // the first job: its strings
		freshJobBytes + 1 + // the second: its key alone
		freshJobBytes + len("http://localhost:8080/other") + 1 // the third: its other URL and key
	if f.bytes != want {
		t.Errorf("counted %d bytes, want %d", f.bytes, want)
	}
}
