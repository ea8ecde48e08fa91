package timertest

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// GroupStore is what the group suite needs: jobs to make members of, the
// groups, and taking members back.
type GroupStore interface {
	timer.Store
	timer.GroupStore
	timer.Unwriter
}

// TestGroupStore runs the contract of timer.GroupStore and timer.Unwriter
// against the stores open returns: each a fresh, empty store. Members are
// spread over shards 0 and 1 by their ids, so that a store of two shards
// counts both. taskdb runs it against MySQL and SQLite, shard against two
// shards, and timertest against Store.
func TestGroupStore(t *testing.T, open func(t *testing.T) GroupStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s GroupStore)
	}{
		{"CreateGet", testGroupCreateGet},
		{"Members", testGroupMembers},
		{"SealComplete", testGroupSealComplete},
		{"CompleteRace", testGroupCompleteRace},
		{"Unwrite", testGroupUnwrite},
		{"Namespaces", testGroupNamespaces},
		{"IDBytes", testGroupIDBytes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, open(t))
		})
	}
}

// groupMembers inserts n pending jobs of group, alternately in shards 0
// and 1, numbered as node (one node per call of a test), and returns them.
func groupMembers(t *testing.T, s timer.Store, group string, node, n int) []*timer.Job {
	t.Helper()
	ids := timer.NewIDGen(node, func() time.Time { return base })
	jobs := make([]*timer.Job, n)
	for i := range jobs {
		jobs[i] = newJob(ids.NextIn(i%2), "orders", int64(i))
		jobs[i].GroupID = group
	}
	if err := s.Insert(t.Context(), jobs); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	return jobs
}

func testGroupCreateGet(t *testing.T, s GroupStore) {
	ctx := t.Context()
	g := &timer.Group{ID: "order-42/ünïcode", CreatedAt: base.Add(1500 * time.Microsecond),
		OnComplete: &timer.GroupCallback{Topic: "groups", CallbackURL: "https://example.com/done", Payload: []byte(`{"a":1}`)}}
	if err := s.CreateGroup(ctx, g); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if err := s.CreateGroup(ctx, g); !errors.Is(err, timer.ErrConflict) {
		t.Errorf("CreateGroup again = %v, want ErrConflict", err)
	}
	if err := s.CreateGroup(ctx, &timer.Group{ID: "plain", CreatedAt: base}); err != nil {
		t.Fatalf("CreateGroup without a callback: %v", err)
	}
	got, err := s.GetGroup(ctx, g.ID)
	if err != nil {
		t.Fatalf("GetGroup: %v", err)
	}
	if got.ID != g.ID || !got.CreatedAt.Equal(base.Add(time.Millisecond)) || !got.SealedAt.IsZero() || !got.CompletedAt.IsZero() ||
		got.OnComplete == nil {
		t.Errorf("GetGroup = %+v", got)
	}
	if cb := got.OnComplete; cb.Topic != "groups" || cb.CallbackURL != "https://example.com/done" || string(cb.Payload) != `{"a":1}` {
		t.Errorf("OnComplete = %+v", cb)
	}
	plain, err := s.GetGroup(ctx, "plain")
	if err != nil || plain.OnComplete != nil {
		t.Errorf("GetGroup(plain) = %+v, %v; want no callback", plain, err)
	}
	if _, err := s.GetGroup(ctx, "nope"); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("GetGroup(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.SealGroup(ctx, "nope", base); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("SealGroup(unknown) = %v, want ErrNotFound", err)
	}
}

func testGroupMembers(t *testing.T, s GroupStore) {
	ctx := t.Context()
	jobs := groupMembers(t, s, "g1", 1, 6)
	groupMembers(t, s, "g2", 2, 1)
	got, err := s.Get(ctx, jobs[1].ID)
	if err != nil || got.GroupID != "g1" {
		t.Fatalf("Get = %+v, %v; want group g1", got, err)
	}
	// One of each ending: done, cancelled, dead, and one firing.
	if _, err := s.Complete(ctx, []timer.Completion{{ID: jobs[0].ID, Attempts: 1}}, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, jobs[1].ID, timer.StatusPending, timer.StatusCancelled, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, jobs[2].ID, timer.Failure{Attempts: 1, Error: "500", Dead: true}, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fire(ctx, []timer.JobID{jobs[3].ID}, base.Add(time.Hour), base); err != nil {
		t.Fatal(err)
	}
	counts, err := s.GroupCounts(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[timer.Status]int64{timer.StatusDone: 1, timer.StatusCancelled: 1, timer.StatusDead: 1, timer.StatusFiring: 1, timer.StatusPending: 2}
	if !maps.Equal(counts, want) {
		t.Errorf("GroupCounts = %v, want %v", counts, want)
	}
	live := func(want bool) {
		t.Helper()
		if got, err := s.GroupLive(ctx, "g1"); err != nil || got != want {
			t.Errorf("GroupLive = %v, %v; want %v", got, err, want)
		}
	}
	live(true)
	if _, err := s.Complete(ctx, []timer.Completion{{ID: jobs[3].ID, Attempts: 1}, {ID: jobs[4].ID, Attempts: 1}}, base); err != nil {
		t.Fatal(err)
	}
	live(true) // jobs[5], pending, in shard 1
	if _, err := s.Transition(ctx, jobs[5].ID, timer.StatusPending, timer.StatusCancelled, base); err != nil {
		t.Fatal(err)
	}
	live(false)
	if got, err := s.GroupLive(ctx, "g2"); err != nil || !got {
		t.Errorf("GroupLive(g2) = %v, %v; want true (its member is pending)", got, err)
	}
	if counts, err := s.GroupCounts(ctx, "none"); err != nil || len(counts) != 0 {
		t.Errorf("GroupCounts(none) = %v, %v", counts, err)
	}
}

func testGroupSealComplete(t *testing.T, s GroupStore) {
	ctx := t.Context()
	for _, id := range []string{"a", "b", "c"} {
		g := &timer.Group{ID: id, CreatedAt: base, OnComplete: &timer.GroupCallback{Topic: "groups", CallbackURL: "https://example.com/done"}}
		if id == "c" {
			g.OnComplete = nil
		}
		if err := s.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[timer.Status]int64{timer.StatusDone: 990, timer.StatusDead: 7, timer.StatusCancelled: 3}
	if ok, err := s.CompleteGroup(ctx, "a", counts, base); err != nil || ok {
		t.Errorf("CompleteGroup of an open group = %v, %v; want false", ok, err)
	}
	if got, err := s.UnfinishedGroups(ctx, "", 10); err != nil || len(got) != 0 {
		t.Errorf("UnfinishedGroups with none sealed = %v, %v", got, err)
	}
	g, err := s.SealGroup(ctx, "a", base.Add(time.Second))
	if err != nil || !g.SealedAt.Equal(base.Add(time.Second)) {
		t.Fatalf("SealGroup = %+v, %v", g, err)
	}
	if g, err = s.SealGroup(ctx, "a", base.Add(time.Hour)); err != nil || !g.SealedAt.Equal(base.Add(time.Second)) {
		t.Errorf("SealGroup again = %+v, %v; want the first seal time kept", g, err)
	}
	for _, id := range []string{"b", "c"} {
		if _, err := s.SealGroup(ctx, id, base); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(gs []*timer.Group) []string {
		var out []string
		for _, g := range gs {
			out = append(out, g.ID)
		}
		return out
	}
	if got, err := s.UnfinishedGroups(ctx, "", 10); err != nil || len(got) != 3 {
		t.Errorf("UnfinishedGroups = %v, %v; want a, b, c", ids(got), err)
	}
	if got, err := s.UnfinishedGroups(ctx, "a", 1); err != nil || len(got) != 1 || got[0].ID != "b" {
		t.Errorf("UnfinishedGroups after a, limit 1 = %v, %v; want b", ids(got), err)
	}
	if ok, err := s.CompleteGroup(ctx, "a", counts, base.Add(2*time.Second)); err != nil || !ok {
		t.Fatalf("CompleteGroup = %v, %v; want true", ok, err)
	}
	if ok, err := s.CompleteGroup(ctx, "a", nil, base.Add(3*time.Second)); err != nil || ok {
		t.Errorf("CompleteGroup again = %v, %v; want false", ok, err)
	}
	if ok, err := s.CompleteGroup(ctx, "c", map[timer.Status]int64{}, base); err != nil || !ok {
		t.Fatalf("CompleteGroup(c) = %v, %v", ok, err)
	}
	g, err = s.GetGroup(ctx, "a")
	if err != nil || !g.CompletedAt.Equal(base.Add(2*time.Second)) || !maps.Equal(g.Counts, counts) || g.CompletionJob != 0 {
		t.Errorf("GetGroup after completion = %+v, %v", g, err)
	}
	// a awaits its job; c has no callback, so it is finished.
	if got, err := s.UnfinishedGroups(ctx, "", 10); err != nil || len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Errorf("UnfinishedGroups = %v, %v; want a (no job yet), b", ids(got), err)
	}
	if err := s.SetGroupJob(ctx, "a", 12345); err != nil {
		t.Fatal(err)
	}
	if err := s.SetGroupJob(ctx, "nope", 1); !errors.Is(err, timer.ErrNotFound) {
		t.Errorf("SetGroupJob(unknown) = %v, want ErrNotFound", err)
	}
	if g, err = s.GetGroup(ctx, "a"); err != nil || g.CompletionJob != 12345 {
		t.Errorf("GetGroup = %+v, %v; want its job", g, err)
	}
	if got, err := s.UnfinishedGroups(ctx, "", 10); err != nil || len(got) != 1 || got[0].ID != "b" {
		t.Errorf("UnfinishedGroups = %v, %v; want b", ids(got), err)
	}
}

// Of many completions of one group at once, one wins.
func testGroupCompleteRace(t *testing.T, s GroupStore) {
	ctx := t.Context()
	if err := s.CreateGroup(ctx, &timer.Group{ID: "race", CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SealGroup(ctx, "race", base); err != nil {
		t.Fatal(err)
	}
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ok, err := s.CompleteGroup(ctx, "race", map[timer.Status]int64{timer.StatusDone: 1}, base)
			if err != nil {
				t.Error(err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d completions won, want 1", won.Load())
	}
}

// Unwrite takes back pending jobs that never fired, in every shard, and
// leaves the others.
func testGroupUnwrite(t *testing.T, s GroupStore) {
	ctx := t.Context()
	jobs := groupMembers(t, s, "late", 1, 4)
	if _, err := s.Fire(ctx, []timer.JobID{jobs[3].ID}, base.Add(time.Hour), base); err != nil {
		t.Fatal(err)
	}
	n, err := s.Unwrite(ctx, []timer.JobID{jobs[0].ID, jobs[1].ID, jobs[3].ID})
	if err != nil || n != 2 {
		t.Errorf("Unwrite = %d, %v; want 2", n, err)
	}
	for i, j := range jobs {
		_, err := s.Get(ctx, j.ID)
		if gone := errors.Is(err, timer.ErrNotFound); gone != (i < 2) {
			t.Errorf("job %d: Get = %v", i, err)
		}
	}
	if counts, err := s.GroupCounts(ctx, "late"); err != nil || counts[timer.StatusPending] != 1 || counts[timer.StatusFiring] != 1 {
		t.Errorf("GroupCounts = %v, %v", counts, err)
	}
}

// The same group id in two namespaces is two groups (timer.QualifiedGroupID):
// each has its own members, and each completes on its own. The longest
// id, qualified by the longest namespace, is stored whole.
func testGroupNamespaces(t *testing.T, s GroupStore) {
	ctx := t.Context()
	sandbox := timer.QualifiedGroupID("sandbox", "g")
	longest := timer.QualifiedGroupID(strings.Repeat("n", timer.MaxNamespaceBytes), strings.Repeat("€", 33)+"g")
	if len(longest) != timer.MaxStoredGroupIDBytes {
		t.Fatalf("the longest id is %d bytes, want %d", len(longest), timer.MaxStoredGroupIDBytes)
	}
	for _, id := range []string{"g", sandbox, longest} {
		if err := s.CreateGroup(ctx, &timer.Group{ID: id, CreatedAt: base}); err != nil {
			t.Fatalf("CreateGroup(%q): %v", id, err)
		}
		if g, err := s.GetGroup(ctx, id); err != nil || g.ID != id {
			t.Fatalf("GetGroup(%q) = %+v, %v", id, g, err)
		}
	}
	def := groupMembers(t, s, "g", 1, 2)
	sb := groupMembers(t, s, sandbox, 2, 1)
	groupMembers(t, s, longest, 3, 1)
	if got, err := s.Get(ctx, sb[0].ID); err != nil || got.GroupID != sandbox {
		t.Fatalf("Get = %+v, %v; want group %q", got, err, sandbox)
	}
	for id, want := range map[string]int64{"g": 2, sandbox: 1, longest: 1} {
		if counts, err := s.GroupCounts(ctx, id); err != nil || counts[timer.StatusPending] != want || len(counts) != 1 {
			t.Errorf("GroupCounts(%q) = %v, %v; want %d pending", id, counts, err, want)
		}
	}
	for _, id := range []string{"g", sandbox} {
		if _, err := s.SealGroup(ctx, id, base); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(ctx, []timer.Completion{{ID: def[0].ID, Attempts: 1}, {ID: def[1].ID, Attempts: 1}}, base); err != nil {
		t.Fatal(err)
	}
	if live, err := s.GroupLive(ctx, "g"); err != nil || live {
		t.Errorf("GroupLive(g) = %v, %v; want false, its members done", live, err)
	}
	if live, err := s.GroupLive(ctx, sandbox); err != nil || !live {
		t.Errorf("GroupLive(%q) = %v, %v; want true, its member pending", sandbox, live, err)
	}
	if ok, err := s.CompleteGroup(ctx, "g", map[timer.Status]int64{timer.StatusDone: 2}, base); err != nil || !ok {
		t.Fatalf("CompleteGroup(g) = %v, %v", ok, err)
	}
	if g, err := s.GetGroup(ctx, sandbox); err != nil || !g.CompletedAt.IsZero() {
		t.Errorf("GetGroup(%q) = %+v, %v; want it not completed", sandbox, g, err)
	}
	if _, err := s.Complete(ctx, []timer.Completion{{ID: sb[0].ID, Attempts: 1}}, base); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.CompleteGroup(ctx, sandbox, map[timer.Status]int64{timer.StatusDone: 1}, base.Add(time.Second)); err != nil || !ok {
		t.Fatalf("CompleteGroup(%q) = %v, %v", sandbox, ok, err)
	}
	for id, want := range map[string]int64{"g": 2, sandbox: 1} {
		if g, err := s.GetGroup(ctx, id); err != nil || g.Counts[timer.StatusDone] != want {
			t.Errorf("GetGroup(%q) = %+v, %v; want %d done", id, g, err, want)
		}
	}
}

// A group id longer than timer.MaxGroupIDBytes is refused as invalid,
// naming the field, before the store is asked to hold it; so is one
// qualified by a namespace. Ids of 101 to 113 bytes once reached MariaDB,
// which refused them (Error 1406), and were answered 503.
func testGroupIDBytes(t *testing.T, s GroupStore) {
	ctx := t.Context()
	for n := timer.MaxGroupIDBytes + 1; n <= 113; n++ {
		for _, id := range []string{strings.Repeat("g", n), timer.QualifiedGroupID("sandbox", strings.Repeat("g", n))} {
			err := s.CreateGroup(ctx, &timer.Group{ID: id, CreatedAt: base})
			if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "id" {
				t.Errorf("CreateGroup of a %d-byte id = %v, want a field error naming id", len(id), err)
			}
		}
	}
	if err := s.CreateGroup(ctx, &timer.Group{ID: strings.Repeat("€", 34), CreatedAt: base}); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("CreateGroup of a 102-byte id of 34 characters = %v, want ErrInvalid", err)
	}
	if err := s.CreateGroup(ctx, &timer.Group{ID: strings.Repeat("g", timer.MaxGroupIDBytes), CreatedAt: base}); err != nil {
		t.Errorf("CreateGroup of a %d-byte id: %v", timer.MaxGroupIDBytes, err)
	}
}
