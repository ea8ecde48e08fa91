package lua

import (
	"errors"
	"slices"
	"testing"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
)

// addWindows adds entries with their windows (ms) in set mode.
func addWindows(t *testing.T, b *luatest.Backend, k slots.KeySet, es []Entry, windows []int64) AddResult {
	t.Helper()
	return addOne(t, b, AddCall{Keys: k, Mode: ModeSet, Entries: es, WindowMs: windows})
}

// TestClaimWindowOrder checks that a due timer with a window is taken by
// the end of its window plus its aging, never before it is due, and that
// under a limit the tight windows go before the wide ones.
func TestClaimWindowOrder(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 50)
		now := t0 + 100_000
		// Ranks (window end + aging, relative to t0) in the comments.
		addWindows(t, b, k, []Entry{
			{"10", t0, 0},          // 60000 + 10000 = 70000: wide window
			{"20", t0, 0},          // 70000
			{"30", t0 + 1000, 0},   // 1000 + 1000 + 10000 = 12000: tight
			{"40h", t0 + 2000, 0},  // 2000 + 1000 + 0 = 3000
			{"50", now + 1, 0},     // not due
			{"60l", t0 + 3000, 2},  // 3000 + 0 + 60000 = 63000: no window, in DueLow
			{"70", t0 + 50_000, 0}, // 50000 + 10000 = 60000: no window
		}, []int64{60_000, 60_000, 1000, 1000, 1, 0, 0})
		wantSet(t, b, k.Window, Entry{"10", t0, 0}, Entry{"20", t0, 0}, Entry{"30", t0 + 1000, 0},
			Entry{"40h", t0 + 2000, 0}, Entry{"50", now + 1, 0})
		wantSet(t, b, k.WindowEnd, Entry{"30", t0 + 2000, 0}, Entry{"40h", t0 + 3000, 0},
			Entry{"10", t0 + 60_000, 0}, Entry{"20", t0 + 60_000, 0}, Entry{"50", now + 2, 0})
		wantSet(t, b, k.Due, Entry{"70", t0 + 50_000, 0})
		wantSet(t, b, k.DueLow, Entry{"60l", t0 + 3000, 2})

		r := claim(t, b, k, now, 3, 1000)
		if got, want := memberNames(r.Leased), []string{"40h", "30", "70"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want the tight windows, then the job without one", got)
		}
		if r.DueHead != (Head{t0, 0, true}) {
			t.Errorf("due head %+v, want the wide windows' t0", r.DueHead)
		}
		r = claim(t, b, k, now, 10, 1000)
		if got, want := memberNames(r.Leased), []string{"60l", "10", "20"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
		for _, l := range r.Leased {
			if want := map[string]int{"60l": 2}[l.Member]; l.Attempt != want || l.Token != float64((now+1000)*128+int64(want)) {
				t.Errorf("%s: attempt %d, token %v; want attempt %d kept", l.Member, l.Attempt, l.Token, want)
			}
		}
		// Only the one not yet due is left, in both window sets; a claim
		// before its due time takes nothing.
		wantSet(t, b, k.Window, Entry{"50", now + 1, 0})
		wantSet(t, b, k.WindowEnd, Entry{"50", now + 2, 0})
		if r = claim(t, b, k, now, 10, 1000); len(r.Leased) != 0 || r.DueHead != (Head{now + 1, 0, true}) {
			t.Errorf("claim before the due time = %+v", r)
		}
		if r = claim(t, b, k, now+1, 10, 1000); !slices.Equal(memberNames(r.Leased), []string{"50"}) || r.DueHead.OK {
			t.Errorf("claim at the due time = %+v", r)
		}
		wantSet(t, b, k.Window)
		wantSet(t, b, k.WindowEnd)
	})
}

// TestClaimWindowNotHidden checks that due timers with wide windows are
// taken while more timers than a claim reads, not yet due, have windows
// that end before theirs.
func TestClaimWindowNotHidden(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 51)
		now := t0 + 1000
		var es []Entry
		var ws []int64
		for i := range 20 {
			es = append(es, Entry{Member(uint64(100+i), PriorityNormal), now + 10, 0})
			ws = append(ws, 1)
		}
		es = append(es, Entry{"1", t0, 0}, Entry{"2", t0, 0})
		ws = append(ws, 3_600_000, 3_600_000)
		addWindows(t, b, k, es, ws)
		if r := claim(t, b, k, now, 5, 1000); !slices.Equal(memberNames(r.Leased), []string{"1", "2"}) {
			t.Fatalf("claimed %v, want the two due ones", memberNames(r.Leased))
		}
	})
}

// TestAddWindowMoves checks that a timer that gains or loses its window
// in set mode is in one place, that restore mode sees a member in the
// window sets, and that a bad window is refused.
func TestAddWindowMoves(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		k := keysOf(b, 52)
		addSet(t, b, k, Entry{"1", t0, 0})
		if r := addWindows(t, b, k, []Entry{{"1", t0 + 5, 0}}, []int64{100}); r.Added != 1 {
			t.Errorf("added %d, want 1 (new to window)", r.Added)
		}
		wantSet(t, b, k.Due)
		wantSet(t, b, k.Window, Entry{"1", t0 + 5, 0})
		wantSet(t, b, k.WindowEnd, Entry{"1", t0 + 105, 0})

		r := addOne(t, b, AddCall{Keys: k, Mode: ModeRestore, Entries: []Entry{{"1", t0, 0}, {"2", t0 - 10, 0}}, WindowMs: []int64{0, 7}})
		if r.Added != 1 || r.Earliest != (Head{t0 - 10, 0, true}) {
			t.Errorf("restore = %+v, want only 2 added, head at t0-10", r)
		}
		wantSet(t, b, k.Due)
		wantSet(t, b, k.Window, Entry{"2", t0 - 10, 0}, Entry{"1", t0 + 5, 0})

		addSet(t, b, k, Entry{"1", t0 + 9, 0})
		wantSet(t, b, k.Due, Entry{"1", t0 + 9, 0})
		wantSet(t, b, k.Window, Entry{"2", t0 - 10, 0})
		wantSet(t, b, k.WindowEnd, Entry{"2", t0 - 3, 0})

		for _, w := range [][]int64{{-1}, {MaxMillis}, {1, 2}} {
			_, err := Add(t.Context(), b.Client, AddCall{Keys: k, Mode: ModeSet, Entries: []Entry{{"3", t0, 0}}, WindowMs: w})
			if err == nil || (len(w) == 1 && !errors.Is(err, ErrRange)) {
				t.Errorf("window %v: err %v", w, err)
			}
		}
	})
}
