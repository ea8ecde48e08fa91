package prepare

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer/timertest"
)

// TestIndexConformance runs timertest's index suite on miniredis and on
// redis-server, so that the scripts and timertest's in-memory Index keep
// the same semantics. Each subtest of the suite gets its own key prefix.
func TestIndexConformance(t *testing.T) {
	if timertest.MaxBatch != lua.MaxBatch {
		t.Fatalf("timertest.MaxBatch = %d, lua.MaxBatch = %d", timertest.MaxBatch, lua.MaxBatch)
	}
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		if err := lua.Load(t.Context(), b.Client); err != nil {
			t.Fatal(err)
		}
		timertest.TestIndex(t, func(t *testing.T) timertest.IndexLeaser {
			p := luatest.NewPrefix()
			x, err := New(b.Client, Config{Prefix: p, WakeChannel: p + "wake"})
			if err != nil {
				t.Fatal(err)
			}
			return x
		})
	})
	// And on a Redis Cluster of three masters, which refuses any command
	// whose keys span hash slots. Scripts are not loaded ahead: each
	// master learns them from the wrappers' EVAL fallback.
	t.Run("cluster", func(t *testing.T) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.SharedRedisCluster(t).Addrs()})
		t.Cleanup(func() { c.Close() })
		c.AddHook(luatest.NewCalls(t))
		timertest.TestIndex(t, func(t *testing.T) timertest.IndexLeaser {
			p := luatest.NewPrefix()
			x, err := New(c, Config{Prefix: p, WakeChannel: p + "wake"})
			if err != nil {
				t.Fatal(err)
			}
			return x
		})
	})
}
