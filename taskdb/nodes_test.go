package taskdb

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// Holders sharing a store never share a number, even when they lease at
// the same moment; a held number is refused naming its holder; an expired
// or released one is taken again, and its old holder learns it lost it.
func testNodeLeases(t *testing.T, s *Store) {
	ctx := t.Context()
	lease := func(want int, holder string, ttl time.Duration) (int, error) {
		return s.LeaseNode(ctx, want, holder, ttl)
	}
	for i, h := range []string{"a", "b", "c"} {
		if n, err := lease(-1, h, time.Minute); err != nil || n != i {
			t.Fatalf("lease for %s = %d, %v; want %d", h, n, err, i)
		}
	}
	var held *timer.NodeHeldError
	if _, err := lease(1, "d", time.Minute); !errors.As(err, &held) || held.Holder != "b" || held.Node != 1 {
		t.Errorf("lease of b's number = %v, want a NodeHeldError naming b", err)
	}
	if n, err := lease(1, "b", time.Minute); err != nil || n != 1 {
		t.Errorf("b leasing its own number again = %d, %v", n, err)
	}
	if n, err := lease(7, "d", time.Minute); err != nil || n != 7 {
		t.Errorf("lease of free number 7 = %d, %v", n, err)
	}
	if _, err := lease(timer.MaxNode+1, "d", time.Minute); !errors.Is(err, timer.ErrNoNode) {
		t.Errorf("lease of %d = %v, want ErrNoNode", timer.MaxNode+1, err)
	}

	// 16 holders at once: 16 different numbers.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got = map[int]string{}
	)
	for i := range 16 {
		wg.Go(func() {
			h := fmt.Sprintf("racer%d", i)
			n, err := lease(-1, h, time.Minute)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s: %v", h, err)
				return
			}
			if other, dup := got[n]; dup {
				t.Errorf("number %d leased to %s and %s", n, other, h)
			}
			got[n] = h
		})
	}
	wg.Wait()

	if err := s.RenewNode(ctx, 0, "a", time.Minute); err != nil {
		t.Errorf("a renews 0: %v", err)
	}
	if err := s.RenewNode(ctx, 0, "x", time.Minute); !errors.Is(err, timer.ErrNodeLost) {
		t.Errorf("x renews a's 0 = %v, want ErrNodeLost", err)
	}
	if err := s.ReleaseNode(ctx, 2, "c"); err != nil {
		t.Fatal(err)
	}
	if n, err := lease(-1, "e", time.Minute); err != nil || n != 2 {
		t.Errorf("lease after c released 2 = %d, %v; want 2", n, err)
	}
	// A lease that ends (a negative ttl: already over by the database's
	// clock) is taken by the next holder; its old holder cannot renew it.
	if err := s.RenewNode(ctx, 0, "a", -time.Second); err != nil {
		t.Fatal(err)
	}
	if n, err := lease(-1, "f", time.Minute); err != nil || n != 0 {
		t.Errorf("lease after a's expired = %d, %v; want 0", n, err)
	}
	if err := s.RenewNode(ctx, 0, "a", time.Minute); !errors.Is(err, timer.ErrNodeLost) {
		t.Errorf("a renews the number f took = %v, want ErrNodeLost", err)
	}
	// An expired lease nobody took is still its holder's.
	if err := s.RenewNode(ctx, 7, "d", -time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewNode(ctx, 7, "d", time.Minute); err != nil {
		t.Errorf("d renews its expired, untaken 7: %v", err)
	}
}

// With every number leased, a lease is ErrNoNode.
func testNodeLeasesExhausted(t *testing.T, s *Store) {
	ctx := t.Context()
	if err := s.RenewNode(ctx, 5, "x", time.Minute); !errors.Is(err, timer.ErrNodeLost) {
		t.Fatalf("renew of a number never leased = %v, want ErrNodeLost", err)
	}
	for from := 0; from <= timer.MaxNode; from += 256 {
		q := "INSERT INTO toc_nodes (node, holder, expires_at) VALUES "
		var args []any
		for n := from; n < from+256; n++ {
			if n > from {
				q += ", "
			}
			q += "(?, ?, ?)"
			args = append(args, n, fmt.Sprint("h", n), time.Now().Add(time.Hour).UnixMilli())
		}
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.LeaseNode(ctx, -1, "late", time.Minute); !errors.Is(err, timer.ErrNoNode) {
		t.Errorf("lease with all %d taken = %d, %v; want ErrNoNode", timer.MaxNode+1, n, err)
	}
}
