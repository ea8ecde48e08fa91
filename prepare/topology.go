// What Index knows of the Redis deployment under it: whether it can serve
// every slot (Ready), and whether it may have lost data since the last
// Mark (timer.LossDetector): a server that lost its memory, or another
// server now answering for the keys (a failover).

package prepare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// ErrClusterNode is returned by Ready when a client built for one server
// reaches a Redis Cluster node: it would serve the keys of that node's
// slots only, and every other job would wait.
var ErrClusterNode = errors.New("this Redis is a Redis Cluster node: give the cluster's seed list (--redis-addr h1:p1,h2:p2,...) or --redis-cluster")

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Ready reports whether Redis can serve every key: for one server (or a
// Sentinel-watched master) that it answers and is not a cluster node;
// for a Redis Cluster that every node it lists as a master answers with
// cluster_state:ok and that the masters that do cover every hash slot.
func (q *Index) Ready(ctx context.Context) error {
	if c, ok := q.client.(*redis.ClusterClient); ok {
		return clusterReady(ctx, c)
	}
	if err := q.client.Ping(ctx).Err(); err != nil {
		return err
	}
	// An INFO that fails (a server that renamed it, miniredis) is no
	// reason to call Redis down: it answered PING.
	if info, err := q.client.Info(ctx, "cluster").Result(); err == nil && strings.Contains(info, "cluster_enabled:1") {
		return ErrClusterNode
	}
	return nil
}

func clusterReady(ctx context.Context, c *redis.ClusterClient) error {
	ranges, err := clusterSlotRanges(ctx, c)
	if err != nil {
		return fmt.Errorf("cluster slots: %w", err)
	}
	var (
		mu   sync.Mutex
		good = map[string]bool{}
		bad  []error
	)
	// ForEachMaster calls every master of the client's slot map (the
	// errors of all, not just the first, are collected here).
	_ = c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		addr := node.Options().Addr
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && !strings.Contains(info, "cluster_state:ok") {
			err = errors.New("cluster_state is not ok")
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			bad = append(bad, fmt.Errorf("master %s: %w", addr, err))
		} else {
			good[addr] = true
		}
		return err
	})
	if len(bad) > 0 {
		slices.SortFunc(bad, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return errors.Join(bad...)
	}
	served := 0
	for _, r := range ranges {
		if len(r.Nodes) == 0 || !good[r.Nodes[0].Addr] {
			return fmt.Errorf("hash slots %d-%d: no reachable master", r.Start, r.End)
		}
		served += int(r.End-r.Start) + 1
	}
	if served < clusterSlots {
		return fmt.Errorf("only %d of %d hash slots are served", served, clusterSlots)
	}
	return nil
}

// clusterSlotRanges asks the cluster which master serves each hash slot
// range. It reads CLUSTER SLOTS, which Redis 7 deprecates for CLUSTER
// SHARDS, because the client builds its slot map from CLUSTER SLOTS: the
// addresses compared here are the ones it dials, and Redis 6 servers,
// still common among managed offerings, have no CLUSTER SHARDS.
func clusterSlotRanges(ctx context.Context, c *redis.ClusterClient) ([]redis.ClusterSlot, error) {
	//lint:ignore SA1019 the client's own slot map comes from CLUSTER SLOTS (see above)
	return c.ClusterSlots(ctx).Result()
}

var _ timer.LossDetector = (*Index)(nil)

// mark is what Mark wrote: one key per server (per master, on a
// cluster), and who served them.
type mark struct {
	// keys are the mark keys, each on the server it marks.
	keys []string
	// servers names who answered for the keys when marked: the run_id of
	// one server, or each hash slot range with its master's node id.
	servers string
}

// Mark implements timer.LossDetector: it writes a mark key to every
// master and remembers which servers those are.
func (q *Index) Mark(ctx context.Context) error {
	m, err := q.servers(ctx)
	if err != nil {
		return err
	}
	pipe := q.client.Pipeline()
	for _, k := range m.keys {
		pipe.Set(ctx, k, "1", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("set mark: %w", err)
	}
	q.markMu.Lock()
	q.marked = &m
	q.markMu.Unlock()
	return nil
}

// Lost implements timer.LossDetector: data may be lost when a mark key is
// gone (a restart without persistence, FLUSHALL) or when other servers
// answer for the keys than at the last Mark. The second catches a
// failover, after which the promoted replica may lack the writes it had
// not received yet (replication is asynchronous) although it holds the
// mark; a restart with persistence reads as lost too, and costs one
// needless scan.
func (q *Index) Lost(ctx context.Context) (bool, error) {
	q.markMu.Lock()
	marked := q.marked
	q.markMu.Unlock()
	now, err := q.servers(ctx)
	if err != nil {
		return false, err
	}
	if marked != nil && now.servers != marked.servers {
		return true, nil
	}
	pipe := q.client.Pipeline()
	exists := make([]*redis.IntCmd, len(now.keys))
	for i, k := range now.keys {
		exists[i] = pipe.Exists(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return false, fmt.Errorf("exists mark: %w", err)
	}
	for _, e := range exists {
		if e.Val() == 0 {
			return true, nil
		}
	}
	return false, nil
}

// servers returns the mark keys and the servers that answer for them now.
func (q *Index) servers(ctx context.Context) (mark, error) {
	if c, ok := q.client.(*redis.ClusterClient); ok {
		ranges, err := clusterSlotRanges(ctx, c)
		if err != nil {
			return mark{}, fmt.Errorf("cluster slots: %w", err)
		}
		slices.SortFunc(ranges, func(a, b redis.ClusterSlot) int { return int(a.Start - b.Start) })
		var (
			m  mark
			sb strings.Builder
		)
		for _, r := range ranges {
			master := ""
			if len(r.Nodes) > 0 {
				master = r.Nodes[0].ID
			}
			fmt.Fprintf(&sb, "%d-%d:%s ", r.Start, r.End, master)
			m.keys = append(m.keys, q.markKeyIn(int(r.Start), int(r.End)))
		}
		m.servers = sb.String()
		return m, nil
	}
	m := mark{keys: []string{q.cfg.Prefix + "mark"}}
	if info, err := q.client.Info(ctx, "server").Result(); err == nil {
		m.servers = infoField(info, "run_id")
	}
	return m, nil
}

// markKeyIn returns a mark key whose hash slot is in [start, end]. The
// search takes about 16384/(end-start+1) tries, so a range's key is
// remembered.
func (q *Index) markKeyIn(start, end int) string {
	q.markMu.Lock()
	defer q.markMu.Unlock()
	r := [2]int{start, end}
	if k, ok := q.markKeys[r]; ok {
		return k
	}
	for i := 0; ; i++ {
		k := q.cfg.Prefix + "mark{" + strconv.Itoa(i) + "}"
		if s := slots.ClusterSlot(k); s >= start && s <= end {
			if q.markKeys == nil {
				q.markKeys = map[[2]int]string{}
			}
			q.markKeys[r] = k
			return k
		}
	}
}

// infoField returns the value of field in an INFO reply, "" when absent.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
