package prepare

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/timer/timertest"
)

// layouts are the two places a timer without a window waits in: a later
// bucket, for one added two bucket widths or more before its due time
// (the clock here is 1970, before every time of the suite), and its due
// set (buckets off).
var layouts = []struct {
	name string
	cfg  Config
}{
	{"buckets", Config{Now: func() time.Time { return time.UnixMilli(0) }}},
	{"due sets", Config{Buckets: []time.Duration{}}},
}

// TestIndexConformance runs timertest's index suite on miniredis and on
// redis-server, in both layouts, so that the scripts and timertest's
// in-memory Index keep the same semantics. Each subtest of the suite gets
// its own key prefix.
func TestIndexConformance(t *testing.T) {
	if timertest.MaxBatch != lua.MaxBatch {
		t.Fatalf("timertest.MaxBatch = %d, lua.MaxBatch = %d", timertest.MaxBatch, lua.MaxBatch)
	}
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		if err := lua.Load(t.Context(), b.Client); err != nil {
			t.Fatal(err)
		}
		testLayouts(t, b.Client)
	})
	// And on a Redis Cluster of three masters, which refuses any command
	// whose keys span hash slots. Scripts are not loaded ahead: each
	// master learns them from the wrappers' EVAL fallback.
	t.Run("cluster", func(t *testing.T) {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testenv.SharedRedisCluster(t).Addrs()})
		t.Cleanup(func() { c.Close() })
		c.AddHook(luatest.NewCalls(t))
		testLayouts(t, c)
	})
}

// testLayouts runs timertest's index suite over client in each layout.
func testLayouts(t *testing.T, client redis.UniversalClient) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			timertest.TestIndex(t, func(t *testing.T) timertest.IndexLeaser {
				cfg := l.cfg
				cfg.Prefix = luatest.NewPrefix()
				cfg.WakeChannel = cfg.Prefix + "wake"
				x, err := New(client, cfg)
				if err != nil {
					t.Fatal(err)
				}
				return x
			})
		})
	}
}
