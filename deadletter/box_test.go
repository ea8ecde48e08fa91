package deadletter

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// newBox returns the Box of b's keys.
func newBox(t testing.TB, b *luatest.Backend) *Box {
	t.Helper()
	box, err := New(b.Client, Config{Prefix: b.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// bury puts job id of priority p straight into the Dead set of slot.
func bury(t *testing.T, b *luatest.Backend, slot timer.Slot, id timer.JobID, p timer.Priority) {
	t.Helper()
	score, err := lua.Score(1_800_000_000_000, 3)
	if err != nil {
		t.Fatal(err)
	}
	key := slots.Keys(b.Prefix, slot.Topic, slot.Index).Dead
	if err := b.Client.ZAdd(t.Context(), key, redis.Z{Score: score, Member: lua.Member(uint64(id), int(p))}).Err(); err != nil {
		t.Fatal(err)
	}
}

// Purge removes a job's member from its Dead set whatever its priority,
// and reports whether it was there.
func TestBoxPurge(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		box := newBox(t, b)
		slot := timer.Slot{Topic: "orders", Index: 3}
		for id, p := range map[timer.JobID]timer.Priority{1: timer.PriorityHigh, 2: timer.PriorityNormal, 3: timer.PriorityLow} {
			bury(t, b, slot, id, p)
		}
		for _, id := range []timer.JobID{1, 2, 3} {
			if ok, err := box.Purge(t.Context(), slot, id); !ok || err != nil {
				t.Errorf("Purge(%d) = %t, %v; want true", id, ok, err)
			}
		}
		if ok, err := box.Purge(t.Context(), slot, 1); ok || err != nil {
			t.Errorf("second Purge = %t, %v; want false", ok, err)
		}
		if n := b.Client.ZCard(t.Context(), slots.Keys(b.Prefix, "orders", 3).Dead).Val(); n != 0 {
			t.Errorf("Dead set holds %d after the purges", n)
		}
	})
}

func TestInvalid(t *testing.T) {
	b := luatest.Mini(t)
	box := newBox(t, b)
	if _, err := box.Purge(t.Context(), timer.Slot{Topic: "orders", Index: -1}, 1); !errors.Is(err, timer.ErrInvalid) {
		t.Errorf("Purge of slot -1: %v, want ErrInvalid", err)
	}
	var fe *timer.FieldError
	if box, err := New(b.Client, Config{Prefix: "x{"}); !errors.As(err, &fe) || fe.Field != "Prefix" || box != nil {
		t.Errorf("New with a braced prefix = %v, %v; want a FieldError naming Prefix", box, err)
	}
}
