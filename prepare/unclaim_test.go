package prepare

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer"
)

// loseClaims is a go-redis hook that, while armed, lets a claim script
// run and then reports io.EOF in place of its reply, as a connection cut
// by a failover after the command ran does. A claim is the script call
// with seven keys.
type loseClaims struct{ armed atomic.Bool }

func (h *loseClaims) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseClaims) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if h.armed.Load() && isClaim(cmd) {
			cmd.SetErr(io.EOF)
			return io.EOF
		}
		return err
	}
}

func (h *loseClaims) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func isClaim(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) > 2 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") && args[2] == 7
}

// Unclaim takes back, by their tokens, the leases of a claim whose reply
// was lost: the same now and lease give the tokens the claim wrote, and
// the jobs are due again with no attempt counted.
func TestUnclaimLostReply(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		lose := &loseClaims{}
		b.Client.AddHook(lose)
		slot := timer.Slot{Topic: "orders", Index: 0}
		if _, err := q.Add(ctx, []timer.Timer{tm(1, "orders", 1, at(0)), tm(2, "orders", 1, at(5))}); err != nil {
			t.Fatal(err)
		}
		lose.armed.Store(true)
		if _, err := q.Claim(ctx, slot, at(10), 10, 30*time.Second); err == nil {
			t.Fatal("the claim whose reply was lost succeeded")
		}
		lose.armed.Store(false)
		if got := setOf(t, b, q.Keys(slot).Prepare); len(got) != 2 {
			t.Fatalf("Prepare after the lost claim: %v, want its two leases", got)
		}
		// Another claim's tokens, a bad call and the lost claim's, in one
		// pipeline: only the lost claim's leases go back.
		ns, errs := q.UnclaimEach(ctx, at(20), []timer.UnclaimCall{
			{Slot: slot, Now: at(9), Lease: 30 * time.Second},
			{Slot: timer.Slot{Topic: "orders", Index: -1}, Now: at(10), Lease: 30 * time.Second},
			{Slot: slot, Now: at(10), Lease: 30 * time.Second},
		})
		if ns[0] != 0 || errs[0] != nil || !errors.Is(errs[1], timer.ErrInvalid) || ns[2] != 2 || errs[2] != nil {
			t.Fatalf("UnclaimEach = %v, %v; want 0, invalid, 2", ns, errs)
		}
		if got, want := dueOf(t, b, q, slot), []string{"1@20/0", "2@20/0"}; !slices.Equal(got, want) {
			t.Fatalf("due after Unclaim: %v, want %v", got, want)
		}
		c, err := q.Claim(ctx, slot, at(20), 10, 30*time.Second)
		if err != nil || len(c.Leases) != 2 || c.Leases[0].Attempt != 0 || c.Leases[1].Attempt != 0 {
			t.Fatalf("claimed again: %+v, %v; want both, on attempt 0", c.Leases, err)
		}
	})
}
