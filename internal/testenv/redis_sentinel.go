package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RedisSentinel is a master, its replica and three sentinels watching
// them, each a redis-server on a loopback port with a dir of its own.
type RedisSentinel struct {
	// MasterName is the name the sentinels know the master by.
	MasterName string

	master, replica *RedisServer
	sentinels       []*RedisServer
}

// NewRedisSentinel starts a master, a replica and three sentinels (quorum
// 2, down-after 1 s) that tb's Cleanup stops, and waits until every
// sentinel knows the replica and the other two, so that a failover can
// start at once.
func NewRedisSentinel(tb testing.TB) *RedisSentinel {
	tb.Helper()
	s, err := startRedisSentinel()
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	tb.Cleanup(func() {
		for _, n := range s.all() {
			if tb.Failed() {
				tb.Logf("%s %s: %s", n.proc.name, n.Addr, logTail(n.LogFile, 8))
			}
			if err := n.Stop(); err != nil {
				tb.Errorf("testenv: %v", err)
			}
		}
	})
	return s
}

func (s *RedisSentinel) all() []*RedisServer {
	return append([]*RedisServer{s.master, s.replica}, s.sentinels...)
}

func startRedisSentinel() (*RedisSentinel, error) {
	s := &RedisSentinel{MasterName: "tocmaster"}
	stop := func() {
		for _, n := range s.all() {
			if n != nil {
				n.Stop()
			}
		}
	}
	var err error
	if s.master, err = startRedis(RedisOptions{}); err != nil {
		return nil, err
	}
	_, mport, _ := strings.Cut(s.master.Addr, ":")
	if s.replica, err = startRedis(RedisOptions{Args: []string{"--replicaof", "127.0.0.1", mport, "--repl-diskless-sync-delay", "0"}}); err != nil {
		stop()
		return nil, err
	}
	for range 3 {
		n, err := startSentinel(s.MasterName, mport)
		if err != nil {
			stop()
			return nil, err
		}
		s.sentinels = append(s.sentinels, n)
	}
	if err := poll(func() error {
		for _, n := range s.sentinels {
			info, err := n.Do("SENTINEL", "MASTER", s.MasterName)
			if err != nil {
				return err
			}
			kv := pairs(info)
			if kv["num-slaves"] != "1" || kv["num-other-sentinels"] != "2" {
				return fmt.Errorf("sentinel %s knows %s replicas and %s other sentinels", n.Addr, kv["num-slaves"], kv["num-other-sentinels"])
			}
		}
		return nil
	}); err != nil {
		stop()
		return nil, fmt.Errorf("redis sentinel: %w", err)
	}
	return s, nil
}

// startSentinel runs redis-server in sentinel mode with a config file of
// its own, which it rewrites as it learns of replicas and failovers.
func startSentinel(name, masterPort string) (*RedisServer, error) {
	bins, err := lookPath("apt-get install redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	n := &RedisServer{bin: bins[0]}
	n.ping = n.Ping
	if err := n.init("redis-sentinel", "sentinel", "sentinel.log"); err != nil {
		return nil, err
	}
	conf := filepath.Join(n.Dir, "sentinel.conf")
	n.cmdline = func() []string { return []string{n.bin, conf, "--sentinel"} }
	if err := n.listen(func() error {
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %s 2\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n",
			n.port, n.Dir, name, masterPort, name, name)
		return os.WriteFile(conf, []byte(text), 0o644)
	}); err != nil {
		return nil, err
	}
	return n, nil
}

// pairs reads a flat key, value, key, value reply.
func pairs(reply string) map[string]string {
	f := strings.Split(reply, "\n")
	kv := map[string]string{}
	for i := 0; i+1 < len(f); i += 2 {
		kv[f[i]] = f[i+1]
	}
	return kv
}

// SentinelAddrs returns the sentinels' addresses.
func (s *RedisSentinel) SentinelAddrs() []string {
	var out []string
	for _, n := range s.sentinels {
		out = append(out, n.Addr)
	}
	return out
}

// Master returns the master's address as a running sentinel names it.
func (s *RedisSentinel) Master() string {
	for _, n := range s.sentinels {
		if !n.proc.running() {
			continue
		}
		if reply, err := n.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName); err == nil {
			if host, port, ok := strings.Cut(reply, "\n"); ok {
				return host + ":" + port
			}
		}
	}
	return ""
}

// KillMaster sends SIGKILL to the current master.
func (s *RedisSentinel) KillMaster(tb testing.TB) {
	tb.Helper()
	addr := s.Master()
	for _, n := range []*RedisServer{s.master, s.replica} {
		if n.Addr == addr {
			n.Kill(tb)
			return
		}
	}
	tb.Fatalf("testenv: the sentinels name %q as master, which is neither server", addr)
}

// WaitFailover waits until the sentinels name another master than old
// and that server says it is one.
func (s *RedisSentinel) WaitFailover(tb testing.TB, old string) {
	tb.Helper()
	if err := poll(func() error {
		now := s.Master()
		if now == "" || now == old {
			return fmt.Errorf("the sentinels still name %q", now)
		}
		info, err := respDo(now, "INFO", "replication")
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") {
			return fmt.Errorf("%s is not master yet", now)
		}
		return nil
	}); err != nil {
		tb.Fatalf("testenv: sentinel failover: %v", err)
	}
}
