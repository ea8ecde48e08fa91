package taskdb

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

func TestPackRoundTrip(t *testing.T) {
	doneAt := base.Add(time.Second).UnixMilli()
	in := []timer.Attempt{
		{Job: 7, Attempt: 1, StartedAt: base, Duration: 1500 * time.Microsecond, StatusCode: 200, Excerpt: []byte("ok")},
		{Job: 3, Attempt: 12, StartedAt: base.Add(2 * time.Second), Duration: time.Hour, StatusCode: 204, Error: "odd", Excerpt: bytes.Repeat([]byte{0}, 3000)},
		{Job: 1 << 62, Attempt: 0, StartedAt: base.Add(-time.Hour)},
	}
	packs := packAttempts(doneAt, in)
	if len(packs) != 1 || packs[0].first != 3 {
		t.Fatalf("packAttempts made %d packs, the first from %d; want 1 from job 3", len(packs), packs[0].first)
	}
	var got []timer.Attempt
	if err := eachPacked(packs[0].b, doneAt, func(a timer.Attempt) { got = append(got, a) }); err != nil {
		t.Fatalf("eachPacked: %v", err)
	}
	want := make([]timer.Attempt, len(in))
	for i, a := range in {
		want[i] = a.Stored()
		if want[i].Excerpt == nil {
			want[i].Excerpt = []byte{}
		}
	}
	if !timertest.EqualAttempts(got, want) {
		t.Errorf("eachPacked = %+v\nwant %+v", got, want)
	}
	// Every cut of a pack is refused or read as fewer entries, never a
	// panic or an entry made up.
	for n := range len(packs[0].b) {
		read := 0
		err := eachPacked(packs[0].b[:n], doneAt, func(timer.Attempt) { read++ })
		if err == nil && read >= len(in) {
			t.Errorf("a pack cut to %d bytes read %d entries without error", n, read)
		}
		if err != nil && !errors.Is(err, errBadPack) {
			t.Errorf("a pack cut to %d bytes: %v", n, err)
		}
	}
}

func TestPacksSplit(t *testing.T) {
	big := bytes.Repeat([]byte("e"), timer.MaxExcerptBytes)
	in := make([]timer.Attempt, 3*maxPackBytes/timer.MaxExcerptBytes)
	for i := range in {
		in[i] = timer.Attempt{Job: timer.JobID(i + 1), Attempt: 1, StartedAt: base, Excerpt: big}
	}
	packs := packAttempts(base.UnixMilli(), in)
	if len(packs) < 3 {
		t.Fatalf("%d attempts of %d bytes made %d packs", len(in), len(big), len(packs))
	}
	total := 0
	for _, p := range packs {
		if len(p.b) > maxPackBytes {
			t.Errorf("a pack of %d bytes, more than %d", len(p.b), maxPackBytes)
		}
		ids, err := packedIDs(p.b)
		if err != nil || ids[0] != p.first {
			t.Errorf("pack from %d holds %v..., %v", p.first, ids[:1], err)
		}
		total += len(ids)
	}
	if total != len(in) {
		t.Errorf("the packs hold %d attempts, want %d", total, len(in))
	}
}

// testRetirePacks checks that DeleteEnded deletes a pack of attempts
// with the last of its jobs, not before.
func testRetirePacks(t *testing.T, s *Store) {
	ctx := t.Context()
	mustInsert(t, s, jobs(1, 3, "t")...)
	complete := func(now time.Time, ids ...timer.JobID) {
		t.Helper()
		done := make([]timer.Completion, len(ids))
		for i, id := range ids {
			done[i] = timer.Completion{ID: id, Attempts: 1, Status: 200,
				Attempt: &timer.Attempt{Job: id, Attempt: 1, StartedAt: now.Add(-time.Millisecond), StatusCode: 200}}
		}
		if n, err := s.Complete(ctx, done, now); n != len(ids) || err != nil {
			t.Fatalf("Complete = %d, %v", n, err)
		}
	}
	complete(base.Add(time.Second), 1, 2)
	complete(base.Add(2*time.Second), 3)
	packs := func() int {
		t.Helper()
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM toc_done_attempts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := packs(); n != 2 {
		t.Fatalf("%d packs, want 2", n)
	}
	until := base.Add(time.Hour)
	if n, err := s.DeleteEnded(ctx, []timer.JobID{1}, until); n != 1 || err != nil {
		t.Fatalf("DeleteEnded(1) = %d, %v", n, err)
	}
	if n := packs(); n != 2 {
		t.Errorf("after job 1 went, %d packs; want 2 (job 2 is left of the first)", n)
	}
	if got, err := s.ListAttempts(ctx, 2); err != nil || len(got) != 1 || got[0].Job != 2 {
		t.Errorf("ListAttempts(2) = %+v, %v; want its attempt", got, err)
	}
	if n, err := s.DeleteEnded(ctx, []timer.JobID{2, 3}, until); n != 2 || err != nil {
		t.Fatalf("DeleteEnded(2, 3) = %d, %v", n, err)
	}
	if n := packs(); n != 0 {
		t.Errorf("after every job went, %d packs; want none", n)
	}
}
