package deadletter

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// bury puts entries straight into the Dead sets of topic.
func bury(t *testing.T, b *luatest.Backend, topic string, es ...Entry) {
	t.Helper()
	pipe := b.Client.Pipeline()
	for _, e := range es {
		score, err := lua.Score(timer.MillisOf(e.DiedAt), e.Attempts)
		if err != nil {
			t.Fatal(err)
		}
		pipe.ZAdd(t.Context(), slots.Keys(b.Prefix, topic, e.Slot).Dead, redis.Z{Score: score, Member: memberOf(e)})
	}
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// memberOf returns the member of e in its Dead set.
func memberOf(e Entry) string { return lua.Member(uint64(e.ID), int(e.Priority)) }

func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), a.DiedAt.Compare(b.DiedAt),
			cmp.Compare(a.Attempts, b.Attempts), cmp.Compare(memberOf(a), memberOf(b)))
	})
}

// listAll pages through topic, calling between (if set) after each page.
func listAll(t *testing.T, box *Box, topic string, n, limit int, between func(page []Entry)) []Entry {
	t.Helper()
	var all []Entry
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10_000 {
			t.Fatal("paging does not end")
		}
		page, next, err := box.List(t.Context(), topic, n, after, limit)
		if err != nil {
			t.Fatalf("List after %q: %v", after, err)
		}
		if len(page) > limit || (next != "" && len(page) != limit) {
			t.Fatalf("page of %d with next %q, limit %d", len(page), next, limit)
		}
		all = append(all, page...)
		if between != nil {
			between(page)
		}
		if next == "" {
			return all
		}
		after = next
	}
}

// fixture returns dead entries over 16 slots of which some are empty, with
// groups that share a score (same ms, same attempts), ids whose decimal
// order differs from their numeric one, members of every priority, and
// the extremes of the encoding.
func fixture() []Entry {
	var es []Entry
	add := func(id timer.JobID, slot int, ms int64, attempts int) {
		p := timer.Priority(int(id%3) - 1)
		es = append(es, Entry{ID: id, Slot: slot, DiedAt: timer.TimeOf(ms), Attempts: attempts, Priority: p})
	}
	id := timer.JobID(1)
	for _, slot := range []int{0, 3, 4, 9, 15} {
		for i := range 7 {
			add(id, slot, t0+int64(i%3), 5) // groups of equal score
			id++
		}
		add(id*100, slot, t0, 5) // sorts between "1".."9" as a string
		id++
		add(id, slot, t0+1, 6)
		id++
	}
	add(id, 9, 0, 0)
	add(id+1, 9, lua.MaxMillis, lua.MaxAttempt)
	return es
}

func TestListPages(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		box := newBox(t, b)
		es := fixture()
		bury(t, b, "orders", es...)
		bury(t, b, "other", Entry{ID: 1, Slot: 1, DiedAt: timer.TimeOf(t0), Attempts: 1})
		sortEntries(es)
		for _, limit := range []int{1, 2, 3, 7, 10, len(es) - 1, len(es), len(es) + 1, MaxLimit} {
			if got := listAll(t, box, "orders", 16, limit, nil); !slices.Equal(got, es) {
				t.Errorf("limit %d: listed\n%v\nwant\n%v", limit, got, es)
			}
		}
		if n, err := box.Count(t.Context(), "orders", 16); err != nil || n != int64(len(es)) {
			t.Errorf("Count = %d, %v; want %d", n, err, len(es))
		}
		page, next, err := box.List(t.Context(), "empty", 16, "", 10)
		if err != nil || len(page) != 0 || next != "" {
			t.Errorf("List(empty) = %v, %q, %v", page, next, err)
		}
	})
}

// TestListPurgeBetweenPages purges entries, including the one a cursor
// names, between pages: every entry still dead is listed exactly once.
func TestListPurgeBetweenPages(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		for _, limit := range []int{1, 2, 3, 5} {
			topic := fmt.Sprintf("purge%d", limit)
			box := newBox(t, b)
			es := fixture()
			bury(t, b, topic, es...)
			sortEntries(es)
			rng := rand.New(rand.NewPCG(1, uint64(limit)))
			listed := map[timer.JobID]bool{}
			purged := map[timer.JobID]bool{}
			purge := func(e Entry) {
				ok, err := box.Purge(ctx, timer.Slot{Topic: topic, Index: e.Slot}, e.ID)
				if err != nil || ok == purged[e.ID] {
					t.Fatalf("Purge(%v) = %v, %v (purged before: %v)", e.ID, ok, err, purged[e.ID])
				}
				purged[e.ID] = true
			}
			got := listAll(t, box, topic, 16, limit, func(page []Entry) {
				for _, e := range page {
					listed[e.ID] = true
				}
				if len(page) > 0 {
					purge(page[len(page)-1]) // the entry the cursor names
				}
				// And some not listed yet.
				for _, e := range es {
					if !listed[e.ID] && !purged[e.ID] && rng.IntN(6) == 0 {
						purge(e)
					}
				}
			})
			var want []Entry
			for _, e := range es {
				if listed[e.ID] {
					want = append(want, e)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("limit %d: listed\n%v\nwant\n%v", limit, got, want)
			}
			for _, e := range es {
				if !listed[e.ID] && !purged[e.ID] {
					t.Errorf("limit %d: %v neither listed nor purged", limit, e)
				}
			}
		}
	})
}

// TestListAfterScriptDeath lists jobs buried by the retry and sweep
// scripts, as they really land in Dead.
func TestListAfterScriptDeath(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		k := slots.Keys(b.Prefix, "orders", 2)
		high11 := lua.Member(11, lua.PriorityHigh)
		if _, err := lua.Add(ctx, b.Client, lua.AddCall{Keys: k, Mode: lua.ModeSet,
			Entries: []lua.Entry{{Member: high11, Ms: t0, Attempt: 2}, {Member: lua.Member(12, lua.PriorityLow), Ms: t0, Attempt: 63}}}); err != nil {
			t.Fatal(err)
		}
		c, err := lua.Claim(ctx, b.Client, k, t0, 10, 100, lua.Aging{})
		if err != nil || len(c.Leased) != 2 || c.Leased[0].Member != high11 {
			t.Fatal(c, err)
		}
		if r, err := lua.Retry(ctx, b.Client, k, lua.Held{Member: high11, Token: c.Leased[0].Token}, t0, 3, t0+5); err != nil || r != lua.Buried {
			t.Fatal(r, err)
		}
		if s, err := lua.Sweep(ctx, b.Client, k, t0+100, 10, timer.MaxAttemptsLimit); err != nil || len(s.Dead) != 1 {
			t.Fatal(s, err)
		}
		box := newBox(t, b)
		got, next, err := box.List(ctx, "orders", 4, "", 10)
		want := []Entry{
			{ID: 11, Slot: 2, DiedAt: timer.TimeOf(t0 + 5), Attempts: 3, Priority: timer.PriorityHigh},
			{ID: 12, Slot: 2, DiedAt: timer.TimeOf(t0 + 100), Attempts: 64, Priority: timer.PriorityLow},
		}
		if err != nil || next != "" || !slices.Equal(got, want) {
			t.Errorf("List = %v, %q, %v; want %v", got, next, err, want)
		}
		if ok, err := box.Purge(ctx, timer.Slot{Topic: "orders", Index: 2}, 11); err != nil || !ok {
			t.Errorf("Purge = %v, %v", ok, err)
		}
		if ok, err := box.Purge(ctx, timer.Slot{Topic: "orders", Index: 2}, 11); err != nil || ok {
			t.Errorf("second Purge = %v, %v", ok, err)
		}
		if n, err := box.Count(ctx, "orders", 4); err != nil || n != 1 {
			t.Errorf("Count = %d, %v", n, err)
		}
	})
}

func TestInvalid(t *testing.T) {
	b := luatest.Mini(t)
	box := newBox(t, b)
	ctx := t.Context()
	good := cursorOf("1:3:" + strconv.FormatInt(t0*128, 10) + ":5")
	for name, err := range map[string]error{
		"topic":         second3(box.List(ctx, "Bad", 16, "", 10)),
		"slots":         second3(box.List(ctx, "orders", 6, "", 10)),
		"limit 0":       second3(box.List(ctx, "orders", 16, "", 0)),
		"limit big":     second3(box.List(ctx, "orders", 16, "", MaxLimit+1)),
		"cursor junk":   second3(box.List(ctx, "orders", 16, "!!", 10)),
		"cursor base64": second3(box.List(ctx, "orders", 16, "bm9wZQ", 10)),
		"cursor slot":   second3(box.List(ctx, "orders", 2, good, 10)),
		"cursor zeros":  second3(box.List(ctx, "orders", 16, cursorOf("1:03:128:5"), 10)),
		"cursor id":     second3(box.List(ctx, "orders", 16, cursorOf("1:3:128:05h"), 10)),
		"cursor suffix": second3(box.List(ctx, "orders", 16, cursorOf("1:3:128:5!"), 10)),
		"count topic":   second(box.Count(ctx, "", 16)),
		"count slots":   second(box.Count(ctx, "orders", 0)),
		"purge slot":    second(box.Purge(ctx, timer.Slot{Topic: "orders", Index: -1}, 1)),
	} {
		if !errors.Is(err, timer.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if _, _, err := box.List(ctx, "orders", 16, good, 10); err != nil {
		t.Errorf("List with a good cursor: %v", err)
	}
	var fe *timer.FieldError
	if box, err := New(b.Client, Config{Prefix: "x{"}); !errors.As(err, &fe) || fe.Field != "Prefix" || box != nil {
		t.Errorf("New with a braced prefix = %v, %v; want a FieldError naming Prefix", box, err)
	}
}

// newBox returns the Box of b's keys.
func newBox(t testing.TB, b *luatest.Backend) *Box {
	t.Helper()
	box, err := New(b.Client, Config{Prefix: b.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func second[T any](_ T, err error) error { return err }

func cursorOf(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }

func second3[T, U any](_ T, _ U, err error) error { return err }

// FuzzCursor checks that cursors read back exactly and that no string
// makes decodeCursor panic or accept an out-of-range position.
func FuzzCursor(f *testing.F) {
	f.Add(0, int64(0), uint64(1), int8(0), "")
	f.Add(65535, int64(1<<53-1), uint64(1<<63-1), int8(1), "MTozOjU6Nw")
	f.Add(7, int64(128), uint64(12), int8(-1), "MTo3OjEyODoxMmw")
	f.Add(-18, int64(128), uint64(12), int8(-1), "MTo0OjA0ODo0M0") // "1:4:048:43"
	f.Add(7, int64(128), uint64(12), int8(-92), "MTo0OjY0ODo0M0")  // "1:4:648:43" with stray bits
	f.Add(1, int64(1), uint64(1), int8(1), "MT\no0OjA6NA")         // a newline
	f.Fuzz(func(t *testing.T, slot int, score int64, id uint64, priority int8, s string) {
		if p, err := decodeCursor(s); err == nil {
			if p.slot < 0 || p.slot >= slots.Max || p.Ms < 0 || p.Ms > lua.MaxMillis || p.Attempt < 0 || p.Attempt > lua.MaxAttempt {
				t.Fatalf("decodeCursor(%q) accepted %+v", s, p)
			}
			if p.cursor() != s {
				t.Fatalf("decodeCursor(%q) = %+v, which encodes as %q", s, p, p.cursor())
			}
		}
		if slot < 0 || slot >= slots.Max || score < 0 || score >= 1<<53 || id == 0 || id >= 1<<63 ||
			!timer.Priority(priority).Valid() {
			return
		}
		ms, attempt, err := lua.SplitScore(float64(score))
		if err != nil {
			t.Fatalf("SplitScore(%d): %v", score, err)
		}
		p := position{slot: slot, score: strconv.FormatInt(score, 10),
			Entry: lua.Entry{Member: lua.Member(id, int(priority)), Ms: ms, Attempt: attempt}}
		back, err := decodeCursor(p.cursor())
		if err != nil || back != p {
			t.Fatalf("decodeCursor(cursor(%+v)) = %+v, %v", p, back, err)
		}
	})
}
