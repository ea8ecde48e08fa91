package testenv

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedisCluster is a Redis Cluster of three masters, each with one replica,
// made of redis-servers on loopback ports with dirs of their own. Nodes
// keep their identity in <Dir>/nodes.conf, so a node killed and started
// again rejoins the cluster (as a replica, once its replica took over).
type RedisCluster struct {
	nodes []*RedisServer
}

// RedisClusterOptions configures a cluster.
type RedisClusterOptions struct {
	// NodeTimeout is cluster-node-timeout: how long a master may be
	// unreachable before the others call it failed and its replica takes
	// over (default 2 s, which keeps failover tests short).
	NodeTimeout time.Duration
	// Args are extra redis-server arguments of every node.
	Args []string
}

const (
	clusterMasters   = 3
	clusterHashSlots = 16384
	// DefaultClusterNodeTimeout is the cluster-node-timeout of a cluster
	// started without one.
	DefaultClusterNodeTimeout = 2 * time.Second
)

var sharedCluster = sync.OnceValues(func() (*RedisCluster, error) {
	c, err := startRedisCluster(RedisClusterOptions{})
	if err != nil {
		return nil, err
	}
	addShared(c.Stop)
	return c, nil
})

// SharedRedisCluster returns the package's shared Redis Cluster, started on
// first use (a few seconds) and stopped by [Main]. Tests that kill nodes
// use [NewRedisCluster]; a shared cluster found unhealthy fails the test.
func SharedRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	requireMain(tb, "SharedRedisCluster")
	c, err := sharedCluster()
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	if err := c.healthy(); err != nil {
		tb.Fatalf("testenv: the shared Redis Cluster is unhealthy (a test killed a node? use NewRedisCluster): %v", err)
	}
	return c
}

// NewRedisCluster starts a private cluster that tb's Cleanup stops and
// deletes; for tests that kill nodes.
func NewRedisCluster(tb testing.TB, opts RedisClusterOptions) *RedisCluster {
	tb.Helper()
	c, err := startRedisCluster(opts)
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			for _, n := range c.nodes {
				tb.Logf("redis-server %s: %s", n.Addr, logTail(n.LogFile, 8))
			}
		}
		if err := c.Stop(); err != nil {
			tb.Errorf("testenv: %v", err)
		}
	})
	return c
}

// startRedisCluster starts six nodes, gives each master a third of the
// hash slots and each a replica, and waits until every node says
// cluster_state:ok and every replica is in sync. It uses CLUSTER MEET,
// ADDSLOTSRANGE and REPLICATE rather than redis-cli, which not every
// redis-server install brings.
func startRedisCluster(opts RedisClusterOptions) (*RedisCluster, error) {
	timeout := opts.NodeTimeout
	if timeout == 0 {
		timeout = DefaultClusterNodeTimeout
	}
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10),
		"--repl-diskless-sync-delay", "0"}, opts.Args...) // a replica syncs at once, not 5 s later
	c := &RedisCluster{}
	for range 2 * clusterMasters {
		n, err := startRedis(RedisOptions{Args: args})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.create(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("create redis cluster: %w", err)
	}
	return c, nil
}

func (c *RedisCluster) create() error {
	// Distinct config epochs before the nodes meet, as redis-cli does.
	// Left at 0, the masters settle their epoch collision by gossip after
	// the cluster says ok, and a replica that kept its master's old epoch
	// is refused every vote when that master dies ("Failover auth
	// denied: slot epoch > reqEpoch") and never takes over.
	for i, n := range c.nodes {
		if _, err := n.Do("CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	first := c.nodes[0]
	for _, n := range c.nodes[1:] {
		_, port, _ := strings.Cut(n.Addr, ":")
		if _, err := first.Do("CLUSTER", "MEET", "127.0.0.1", port); err != nil {
			return err
		}
	}
	per := clusterHashSlots / clusterMasters
	for i, m := range c.nodes[:clusterMasters] {
		from, to := i*per, (i+1)*per-1
		if i == clusterMasters-1 {
			to = clusterHashSlots - 1
		}
		if _, err := m.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(from), strconv.Itoa(to)); err != nil {
			return err
		}
	}
	// A replica can follow a master only once it knows the master's id.
	if err := poll(func() error {
		for _, n := range c.nodes {
			nodes, err := clusterNodes(n)
			if err != nil {
				return err
			}
			if len(nodes) != len(c.nodes) || strings.Contains(fmt.Sprint(nodes), "handshake") {
				return fmt.Errorf("%s knows %d of %d nodes", n.Addr, len(nodes), len(c.nodes))
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for i, r := range c.nodes[clusterMasters:] {
		id, err := c.nodes[i].Do("CLUSTER", "MYID")
		if err != nil {
			return err
		}
		if _, err := r.Do("CLUSTER", "REPLICATE", id); err != nil {
			return err
		}
	}
	return poll(func() error {
		if err := c.healthy(); err != nil {
			return err
		}
		return c.epochsAgree()
	})
}

// epochsAgree reports nil when every node sees the same config epoch for
// every master, so that a replica's failover vote request carries the
// epoch the voters know.
func (c *RedisCluster) epochsAgree() error {
	seen := map[string]string{} // node id -> epoch, as the first node saw it
	for _, n := range c.nodes {
		nodes, err := clusterNodes(n)
		if err != nil {
			return err
		}
		for _, cn := range nodes {
			if !cn.is("master") {
				continue
			}
			if e, ok := seen[cn.id]; ok && e != cn.epoch {
				return fmt.Errorf("%s sees master %s at config epoch %s, another node at %s", n.Addr, cn.addr, cn.epoch, e)
			}
			seen[cn.id] = cn.epoch
		}
	}
	return nil
}

// clusterNode is a line of CLUSTER NODES.
type clusterNode struct {
	id, addr string
	flags    []string
	master   string // the id of the master of a replica, "-" for a master
	epoch    string // config epoch
	slots    int    // hash slots served
}

func (n clusterNode) is(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

// clusterNodes asks srv for CLUSTER NODES.
func clusterNodes(srv *RedisServer) ([]clusterNode, error) {
	out, err := srv.Do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []clusterNode
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		n := clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], epoch: f[6]}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated
			}
			from, to, isRange := strings.Cut(r, "-")
			a, _ := strconv.Atoi(from)
			b := a
			if isRange {
				b, _ = strconv.Atoi(to)
			}
			n.slots += b - a + 1
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// live returns the nodes whose process runs.
func (c *RedisCluster) live() []*RedisServer {
	var out []*RedisServer
	for _, n := range c.nodes {
		if n.proc.running() {
			out = append(out, n)
		}
	}
	return out
}

func (c *RedisCluster) byAddr(addr string) *RedisServer {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// healthy reports nil when every running node says cluster_state:ok, the
// masters that serve slots all run and serve all 16384, and every
// running replica's link to its master is up.
func (c *RedisCluster) healthy() error {
	live := c.live()
	if len(live) == 0 {
		return errors.New("no node runs")
	}
	for _, n := range live {
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", n.Addr)
		}
	}
	nodes, err := clusterNodes(live[0])
	if err != nil {
		return err
	}
	served := 0
	for _, n := range nodes {
		if n.is("master") && n.slots > 0 {
			if srv := c.byAddr(n.addr); srv == nil || !srv.proc.running() || n.is("fail") || n.is("fail?") {
				return fmt.Errorf("master %s of %d slots is down", n.addr, n.slots)
			}
			served += n.slots
		}
	}
	if served != clusterHashSlots {
		return fmt.Errorf("%d of %d hash slots served", served, clusterHashSlots)
	}
	for _, n := range live {
		info, err := n.Do("INFO", "replication")
		if err != nil {
			return err
		}
		if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s is not in sync with its master", n.Addr)
		}
	}
	return nil
}

// poll calls check until it returns nil or readyTimeout passes.
func poll(check func() error) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", readyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addrs returns the address of every node, masters and replicas: a seed
// list for a cluster client.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Nodes returns every node, running or not.
func (c *RedisCluster) Nodes() []*RedisServer { return c.nodes }

// Masters returns the running nodes that serve hash slots now, as the
// cluster says: after a failover, the promoted replicas.
func (c *RedisCluster) Masters() []*RedisServer {
	var out []*RedisServer
	for _, n := range c.live() {
		if info, err := n.Do("INFO", "replication"); err == nil && strings.Contains(info, "role:master") {
			if nodes, err := clusterNodes(n); err == nil {
				for _, cn := range nodes {
					if cn.is("myself") && cn.slots > 0 {
						out = append(out, n)
					}
				}
			}
		}
	}
	return out
}

// MasterWithMostKeys returns the master whose DBSIZE is largest.
func (c *RedisCluster) MasterWithMostKeys() *RedisServer {
	var (
		best *RedisServer
		most = -1
	)
	for _, m := range c.Masters() {
		v, err := m.Do("DBSIZE")
		if n, _ := strconv.Atoi(v); err == nil && n > most {
			best, most = m, n
		}
	}
	return best
}

// FlushAll deletes every key on every master (the replicas follow).
func (c *RedisCluster) FlushAll(tb testing.TB) {
	tb.Helper()
	for _, m := range c.Masters() {
		m.FlushAll(tb)
	}
}

// WaitOK waits until the cluster is healthy: every running node says
// cluster_state:ok, running masters serve every hash slot, and running
// replicas are in sync.
func (c *RedisCluster) WaitOK(tb testing.TB) {
	tb.Helper()
	if err := poll(c.healthy); err != nil {
		tb.Fatalf("testenv: redis cluster: %v", err)
	}
}

// KillMaster sends SIGKILL to master, which must be one.
func (c *RedisCluster) KillMaster(tb testing.TB, master *RedisServer) {
	tb.Helper()
	if master == nil {
		tb.Fatal("testenv: KillMaster of no node")
	}
	master.Kill(tb)
}

// WaitFailover waits until a replica of the killed master serves its
// slots and the cluster is healthy again.
func (c *RedisCluster) WaitFailover(tb testing.TB, killed *RedisServer) {
	tb.Helper()
	if killed.proc.running() {
		tb.Fatalf("testenv: WaitFailover: %s still runs", killed.Addr)
	}
	c.WaitOK(tb)
}

// Stop kills every node and deletes their dirs.
func (c *RedisCluster) Stop() error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Stop())
	}
	return errors.Join(errs...)
}
