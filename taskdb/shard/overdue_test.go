package shard

import (
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// Jobs past their deadline in both shards: ScanOverdue merges them by
// deadline, each with its topic's slot count from shard 0 (where the
// topics are), a shard's own scanner finds its own, and ExpireWaiting
// ends one in the shard its id names.
func TestOverdueOnTwoShards(t *testing.T) {
	s, _ := openShards(t, 2)
	ctx := t.Context()
	if _, err := s.EnsureTopic(ctx, timer.Topic{Name: "held", Slots: 8}); err != nil {
		t.Fatal(err)
	}
	sp := spread{Store: s, keyed: &sync.Map{}}
	base := time.UnixMilli(1_700_000_000_000)
	job := func(id timer.JobID, after time.Duration) *timer.Job {
		j := &timer.Job{ID: sp.enc(id), Topic: "held", Status: timer.StatusPending, DueAt: base, MaxAttempts: 3,
			CallbackURL: "https://example.com/hook", CreatedAt: base, UpdatedAt: base, Expiry: timer.ExpireAfter(after)}
		j.ExpireAt = j.Expiry.Deadline(j.DueAt)
		return j
	}
	first, second := job(1, time.Second), job(2, 2*time.Second) // shards 1 and 0
	if first.ID.Shard() != 1 || second.ID.Shard() != 0 {
		t.Fatalf("shards %d, %d; want 1, 0", first.ID.Shard(), second.ID.Shard())
	}
	if err := s.Shard(1).Insert(ctx, []*timer.Job{first}); err != nil {
		t.Fatal(err)
	}
	if err := s.Shard(0).Insert(ctx, []*timer.Job{second}); err != nil {
		t.Fatal(err)
	}
	now := base.Add(time.Minute)
	got, err := s.ScanOverdue(ctx, now, 10)
	if err != nil || len(got) != 2 || got[0].Job.ID != first.ID || got[1].Job.ID != second.ID || got[0].Slots != 8 || got[1].Slots != 8 {
		t.Fatalf("ScanOverdue = %+v, %v; want both, by deadline, 8 slots each", got, err)
	}
	own, err := s.Scanner(1).(timer.OverdueScanner).ScanOverdue(ctx, now, 10)
	if err != nil || len(own) != 1 || own[0].Job.ID != first.ID || own[0].Slots != 8 {
		t.Fatalf("shard 1's ScanOverdue = %+v, %v; want its job with 8 slots", own, err)
	}
	if ok, err := s.ExpireWaiting(ctx, first.ID, "deadline passed", now); !ok || err != nil {
		t.Fatalf("ExpireWaiting = %t, %v", ok, err)
	}
	if j, err := s.Get(ctx, first.ID); err != nil || j.Status != timer.StatusExpired {
		t.Fatalf("after ExpireWaiting: %+v, %v; want expired", j, err)
	}
	if got, err := s.ScanOverdue(ctx, now, 10); err != nil || len(got) != 1 || got[0].Job.ID != second.ID {
		t.Errorf("ScanOverdue after = %+v, %v; want only the job of shard 0", got, err)
	}
}
