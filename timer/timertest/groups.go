package timertest

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toc-project/toc/timer"
)

var (
	_ timer.GroupStore = (*Store)(nil)
	_ timer.Unwriter   = (*Store)(nil)
)

// storedGroup returns a copy of g as a row keeps it: times in whole
// milliseconds.
func storedGroup(g *timer.Group) *timer.Group {
	c := *g
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return timer.TimeOf(t.UnixMilli())
	}
	c.CreatedAt, c.SealedAt, c.CompletedAt = ms(c.CreatedAt), ms(c.SealedAt), ms(c.CompletedAt)
	if g.OnComplete != nil {
		cb := *g.OnComplete
		cb.Payload = bytes.Clone(cb.Payload)
		c.OnComplete = &cb
	}
	c.Counts = maps.Clone(g.Counts)
	return &c
}

// CreateGroup implements timer.GroupStore.
func (s *Store) CreateGroup(ctx context.Context, g *timer.Group) error {
	if err := s.f.call("CreateGroup"); err != nil {
		return err
	}
	if err := timer.CheckQualifiedGroupID(g.ID, "id"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups == nil {
		s.groups = make(map[string]*timer.Group)
	}
	if _, ok := s.groups[g.ID]; ok {
		return fmt.Errorf("group %q: %w", timer.GroupName(g.ID), timer.ErrConflict)
	}
	c := storedGroup(g)
	c.SealedAt, c.CompletedAt, c.Counts, c.CompletionJob = time.Time{}, time.Time{}, nil, 0
	s.groups[g.ID] = c
	return nil
}

// GetGroup implements timer.GroupStore.
func (s *Store) GetGroup(ctx context.Context, id string) (*timer.Group, error) {
	if err := s.f.call("GetGroup"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return nil, fmt.Errorf("group %q: %w", timer.GroupName(id), timer.ErrNotFound)
	}
	return storedGroup(g), nil
}

// SealGroup implements timer.GroupStore.
func (s *Store) SealGroup(ctx context.Context, id string, now time.Time) (*timer.Group, error) {
	if err := s.f.call("SealGroup"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return nil, fmt.Errorf("group %q: %w", timer.GroupName(id), timer.ErrNotFound)
	}
	if g.SealedAt.IsZero() {
		g.SealedAt = timer.TimeOf(now.UnixMilli())
	}
	return storedGroup(g), nil
}

// CompleteGroup implements timer.GroupStore.
func (s *Store) CompleteGroup(ctx context.Context, id string, counts map[timer.Status]int64, now time.Time) (bool, error) {
	if err := s.f.call("CompleteGroup"); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok || g.SealedAt.IsZero() || !g.CompletedAt.IsZero() {
		return false, nil
	}
	g.CompletedAt, g.Counts = timer.TimeOf(now.UnixMilli()), maps.Clone(counts)
	return true, nil
}

// SetGroupJob implements timer.GroupStore.
func (s *Store) SetGroupJob(ctx context.Context, id string, job timer.JobID) error {
	if err := s.f.call("SetGroupJob"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[id]
	if !ok {
		return fmt.Errorf("group %q: %w", timer.GroupName(id), timer.ErrNotFound)
	}
	g.CompletionJob = job
	return nil
}

// GroupLive implements timer.GroupStore.
func (s *Store) GroupLive(ctx context.Context, id string) (bool, error) {
	if err := s.f.call("GroupLive"); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.jobs {
		if r.job.GroupID == id && !r.job.Status.Ended() {
			return true, nil
		}
	}
	return false, nil
}

// GroupCounts implements timer.GroupStore.
func (s *Store) GroupCounts(ctx context.Context, id string) (map[timer.Status]int64, error) {
	if err := s.f.call("GroupCounts"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	counts := make(map[timer.Status]int64)
	for _, r := range s.jobs {
		if r.job.GroupID == id {
			counts[r.job.Status]++
		}
	}
	return counts, nil
}

// UnfinishedGroups implements timer.GroupStore.
func (s *Store) UnfinishedGroups(ctx context.Context, after string, limit int) ([]*timer.Group, error) {
	if err := s.f.call("UnfinishedGroups"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*timer.Group
	for _, id := range slices.Sorted(maps.Keys(s.groups)) {
		g := s.groups[id]
		if strings.Compare(id, after) <= 0 || g.SealedAt.IsZero() {
			continue
		}
		if !g.CompletedAt.IsZero() && (g.OnComplete == nil || g.CompletionJob != 0) {
			continue
		}
		out = append(out, storedGroup(g))
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// Unwrite implements timer.Unwriter.
func (s *Store) Unwrite(ctx context.Context, ids []timer.JobID) (int, error) {
	if err := s.f.call("Unwrite"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range ids {
		r, ok := s.jobs[id]
		if !ok || r.job.Status != timer.StatusPending || r.job.Attempts != 0 {
			continue
		}
		delete(s.jobs, id)
		if r.job.Key != "" {
			delete(s.keys, topicKey{r.job.Topic, r.job.Key})
		}
		n++
	}
	return n, nil
}
