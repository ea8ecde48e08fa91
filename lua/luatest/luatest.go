// Package luatest runs tests of the Redis timer index against both
// miniredis and a real redis-server, and checks on every script call that
// the call's keys share one Redis Cluster slot, which neither server
// enforces. It is for tests only.
//
// The real server comes from internal/testenv, so a package that uses
// [Run] or [Redis] must call testenv.Main from its TestMain.
package luatest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/slots"
)

// Backend is one Redis server under test, with a client and a key prefix
// no other test uses.
type Backend struct {
	// Name is "miniredis" or "redis".
	Name   string
	Client *redis.Client
	// Prefix is unique to the test; start every key with it.
	Prefix string
	// Mini is the miniredis server, nil for a real one.
	Mini *miniredis.Miniredis
	// Server is the real redis-server, nil for miniredis.
	Server *testenv.RedisServer
	// Calls records the scripts run through Client.
	Calls *Calls
}

// Run runs f as two subtests, "miniredis" and "redis". The "redis" one is
// skipped when redis-server is missing, unless TOC_REQUIRE_INTEGRATION=1.
func Run(t *testing.T, f func(t *testing.T, b *Backend)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) { f(t, Mini(t)) })
	t.Run("redis", func(t *testing.T) { f(t, Redis(t)) })
}

// Mini starts a miniredis server for tb.
func Mini(tb testing.TB) *Backend {
	tb.Helper()
	m := miniredis.RunT(tb)
	b := &Backend{Name: "miniredis", Mini: m, Prefix: NewPrefix()}
	b.Client, b.Calls = NewClient(tb, m.Addr())
	return b
}

// Redis returns the package's shared real redis-server with a fresh
// client and prefix; it skips tb when the server is unavailable.
func Redis(tb testing.TB) *Backend {
	tb.Helper()
	srv := testenv.Redis(tb)
	b := &Backend{Name: "redis", Server: srv, Prefix: NewPrefix()}
	b.Client, b.Calls = NewClient(tb, srv.Addr)
	return b
}

// ScriptStats reads the server's INFO commandstats: how many script
// calls it ran since its stats were last reset (EVALSHA's, and EVAL's
// when a script had to be loaded first) and the µs they took it in all,
// its own time, the figure that matters on a shared machine. It fails tb
// when there were none, or when the server is miniredis, which keeps no
// stats.
func (b *Backend) ScriptStats(tb testing.TB) (calls, usec float64) {
	tb.Helper()
	stats, err := b.Client.Info(tb.Context(), "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.Lines(stats) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			switch k {
			case "calls":
				calls += f
			case "usec":
				usec += f
			}
		}
	}
	if calls == 0 {
		tb.Fatalf("no script calls in INFO commandstats:\n%s", stats)
	}
	return calls, usec
}

// ScriptTally adds up redis-server's time in scripts over the stretches
// a benchmark measures, leaving out the scripts that refill its stock
// between them: Start resets the server's statistics, Stop adds what ran
// since.
type ScriptTally struct {
	Calls, Usec float64 // what the measured stretches ran, in all
	started     bool
}

// Start begins a measured stretch.
func (t *ScriptTally) Start(tb testing.TB, b *Backend) {
	tb.Helper()
	if err := b.Client.ConfigResetStat(tb.Context()).Err(); err != nil {
		tb.Fatal(err)
	}
	t.started = true
}

// Stop ends the stretch that Start began, if one was, and adds its
// scripts' calls and time.
func (t *ScriptTally) Stop(tb testing.TB, b *Backend) {
	tb.Helper()
	if !t.started {
		return
	}
	calls, usec := b.ScriptStats(tb)
	t.Calls, t.Usec, t.started = t.Calls+calls, t.Usec+usec, false
}

var prefixes atomic.Int64

// NewPrefix returns a key prefix no other call in this process returns.
func NewPrefix() string { return "test" + strconv.FormatInt(prefixes.Add(1), 10) + ":" }

// NewClient returns a client of addr, closed at tb's cleanup, that checks
// the keys of every script call; a call whose keys span cluster slots
// fails tb.
func NewClient(tb testing.TB, addr string) (*redis.Client, *Calls) {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	calls := NewCalls(tb)
	c.AddHook(calls)
	tb.Cleanup(func() { c.Close() })
	return c, calls
}

// FlushScripts empties the server's script cache, so the next EVALSHA
// gets NOSCRIPT.
func (b *Backend) FlushScripts(tb testing.TB) {
	tb.Helper()
	if err := b.Client.ScriptFlush(tb.Context()).Err(); err != nil {
		tb.Fatalf("SCRIPT FLUSH: %v", err)
	}
}

// Calls is a go-redis hook that checks and records script calls. Add it
// to any client with AddHook.
type Calls struct {
	tb testing.TB

	mu        sync.Mutex
	shas      map[string]int // script SHA1 -> calls seen
	noScript  int
	pipelines []int // script calls in each pipeline
}

// NewCalls returns a hook that fails tb when a script's keys span cluster
// slots.
func NewCalls(tb testing.TB) *Calls { return &Calls{tb: tb} }

// Pipelines returns, for each pipeline sent so far that ran scripts, how
// many script calls it held, and forgets them. A NOSCRIPT fallback shows
// as a second pipeline.
func (c *Calls) Pipelines() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pipelines
	c.pipelines = nil
	return p
}

// Seen returns how many calls of the script with SHA1 sha were made.
func (c *Calls) Seen(sha string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shas[sha]
}

// NoScript returns how many EVALSHA calls were answered NOSCRIPT.
func (c *Calls) NoScript() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.noScript
}

// DialHook implements redis.Hook.
func (c *Calls) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook implements redis.Hook.
func (c *Calls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.before(cmd)
		err := next(ctx, cmd)
		c.after(cmd, err)
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *Calls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		scripts := 0
		for _, cmd := range cmds {
			if c.before(cmd) {
				scripts++
			}
		}
		if scripts > 0 {
			c.mu.Lock()
			c.pipelines = append(c.pipelines, scripts)
			c.mu.Unlock()
		}
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.after(cmd, cmd.Err())
		}
		return err
	}
}

// before checks and records cmd, and reports whether it runs a script.
func (c *Calls) before(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	if name != "eval" && name != "evalsha" && name != "eval_ro" && name != "evalsha_ro" {
		return false
	}
	if err := CheckScriptKeys(cmd.Args()); err != nil {
		c.tb.Errorf("luatest: %v", err)
	}
	sha := fmt.Sprint(cmd.Args()[1])
	if name == "eval" || name == "eval_ro" {
		sha = SHA1(sha)
	}
	c.mu.Lock()
	if c.shas == nil {
		c.shas = make(map[string]int)
	}
	c.shas[sha]++
	c.mu.Unlock()
	return true
}

func (c *Calls) after(cmd redis.Cmder, err error) {
	if err == nil {
		err = cmd.Err()
	}
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		c.mu.Lock()
		c.noScript++
		c.mu.Unlock()
	}
}

// CheckScriptKeys returns an error unless the keys of an EVAL or EVALSHA
// command, given as its arguments (name, script or SHA1, numkeys, keys,
// args), all hash to one Redis Cluster slot; or, for a script named to
// GroupKeys, unless each of its groups of keys does.
func CheckScriptKeys(args []any) error {
	if len(args) < 3 {
		return fmt.Errorf("%v: too few arguments", args)
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || n < 0 || 3+n > len(args) {
		return fmt.Errorf("%v: bad numkeys %v", args[0], args[2])
	}
	keys := args[3 : 3+n]
	sha := fmt.Sprint(args[1])
	if name := strings.ToLower(fmt.Sprint(args[0])); name == "eval" || name == "eval_ro" {
		sha = SHA1(sha)
	}
	size := n
	groupsMu.Lock()
	if g, ok := groups[sha]; ok && g > 0 {
		size = g
	}
	groupsMu.Unlock()
	if size > 0 && n%size != 0 {
		return fmt.Errorf("%v: %d keys, not groups of %d", args[0], n, size)
	}
	for from := 0; from < n; from += size {
		group := keys[from : from+size]
		for _, k := range group {
			if slots.ClusterSlot(fmt.Sprint(k)) != slots.ClusterSlot(fmt.Sprint(group[0])) {
				return fmt.Errorf("%v: keys %v span Redis Cluster slots", args[0], group)
			}
		}
	}
	return nil
}

var (
	groupsMu sync.Mutex
	groups   = map[string]int{} // script SHA1 -> keys a slot
)

// GroupKeys names the scripts, by SHA1, whose calls on one server may
// hold several slots, each in a group of the given number of keys (see
// lua.SlotGroups). A package whose tests run them calls it from TestMain;
// CheckScriptKeys then checks each group instead of all the keys.
func GroupKeys(bySHA map[string]int) {
	groupsMu.Lock()
	defer groupsMu.Unlock()
	maps.Copy(groups, bySHA)
}
