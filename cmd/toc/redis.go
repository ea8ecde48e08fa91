// How toc serve reaches Redis: one server, a Redis Cluster or a
// Sentinel-watched master, with auth and TLS for managed offerings.

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisFlags are serve's Redis flags.
type redisFlags struct {
	addr             *string
	cluster          *bool
	sentinelMaster   *string
	username         *string
	password         *string
	sentinelUsername *string
	sentinelPassword *string
	db               *int
	tls              *bool
	tlsCA            *string
	tlsServerName    *string
}

func addRedisFlags(fs *flagSet) *redisFlags {
	return &redisFlags{
		addr:             fs.string("redis-addr", "127.0.0.1:6379", "Redis: host:port of one server; h1:p1,h2:p2,... a Redis Cluster's seed list; with --redis-sentinel-master, the sentinels"),
		cluster:          fs.bool("redis-cluster", false, "treat a single --redis-addr as a Redis Cluster seed (a managed offering's configuration endpoint)"),
		sentinelMaster:   fs.string("redis-sentinel-master", "", "name of the master the sentinels in --redis-addr watch (Sentinel failover)"),
		username:         fs.string("redis-username", "", "Redis ACL user name (default: the default user)"),
		password:         fs.string("redis-password", "", "Redis password"),
		sentinelUsername: fs.string("redis-sentinel-username", "", "ACL user name for the sentinels, when they need one"),
		sentinelPassword: fs.string("redis-sentinel-password", "", "password for the sentinels, when they need one"),
		db:               fs.int("redis-db", 0, "Redis database number (0 on a Redis Cluster)"),
		tls:              fs.bool("redis-tls", false, "connect to Redis over TLS"),
		tlsCA:            fs.string("redis-tls-ca", "", "PEM file of the CA that signed the Redis servers' certificates (default: the system's roots); implies --redis-tls"),
		tlsServerName:    fs.string("redis-tls-server-name", "", "name to verify in the servers' certificates (default: the host of each address)"),
	}
}

// Redis client tuning.
const (
	// redisPoolSize is the connection pool of one server (of each node on
	// a cluster): the worker's claims, the scheduler's writes and the API
	// share it.
	redisPoolSize = 128
	// clusterReload bounds how stale the client's slot map may get
	// without an error to say so; a connection error or a MOVED reloads
	// it at once. go-redis's default is a minute.
	clusterReload = 2 * time.Second
	// nodeDownFor is how long a node whose dial failed is given up on
	// before the next dial, so that the slots of a dead master fail at
	// once instead of each waiting for a dial of its own while the slot
	// map is refreshed.
	nodeDownFor = 250 * time.Millisecond
)

// client builds the Redis client the flags describe.
func (f *redisFlags) client() (redis.UniversalClient, error) {
	addrs := splitList([]string{*f.addr})
	if len(addrs) == 0 {
		return nil, errors.New("--redis-addr is empty")
	}
	tlsConfig, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	switch {
	case *f.sentinelMaster != "":
		if *f.cluster {
			return nil, errors.New("--redis-cluster and --redis-sentinel-master exclude each other: Sentinel watches one master, a cluster has many")
		}
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:       *f.sentinelMaster,
			SentinelAddrs:    addrs,
			SentinelUsername: *f.sentinelUsername,
			SentinelPassword: *f.sentinelPassword,
			Username:         *f.username,
			Password:         *f.password,
			DB:               *f.db,
			TLSConfig:        tlsConfig,
			PoolSize:         redisPoolSize,
		}), nil
	case len(addrs) > 1 || *f.cluster:
		if *f.db != 0 {
			return nil, fmt.Errorf("--redis-db %d: a Redis Cluster has database 0 only", *f.db)
		}
		return newClusterClient(&redis.ClusterOptions{
			Addrs:     addrs,
			Username:  *f.username,
			Password:  *f.password,
			TLSConfig: tlsConfig,
			PoolSize:  redisPoolSize,
		}), nil
	}
	return redis.NewClient(&redis.Options{
		Addr:      addrs[0],
		Username:  *f.username,
		Password:  *f.password,
		DB:        *f.db,
		TLSConfig: tlsConfig,
		PoolSize:  redisPoolSize,
	}), nil
}

func (f *redisFlags) tlsConfig() (*tls.Config, error) {
	if !*f.tls && *f.tlsCA == "" {
		if *f.tlsServerName != "" {
			return nil, errors.New("--redis-tls-server-name needs --redis-tls")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: *f.tlsServerName}
	if *f.tlsCA != "" {
		pem, err := os.ReadFile(*f.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--redis-tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--redis-tls-ca %s: no PEM certificate in it", *f.tlsCA)
		}
	}
	return cfg, nil
}

// newClusterClient returns a cluster client that follows a failover
// within about a second: go-redis on its own reloads the slot map on a
// MOVED or once a minute, and keeps dialling a dead master meanwhile, so
// that the dead master's slots (and, through retries, the calls behind
// them) wait for the minute.
//
// Here every node's dials go through a hook that, when one fails, asks
// for a reload of the slot map (lazy: at most one at a time, 200 ms
// apart) and fails that node's next dials at once for nodeDownFor, and
// a command that failed on a broken connection asks for a reload too. A
// promoted replica is in the map as soon as the cluster says so, and
// only the dead master's slots wait for the failover.
//
// A command that fails on a connection is retried by go-redis on another
// node and then through the map, up to MaxRedirects times; without
// backoff between those tries (MinRetryBackoff -1), a slot of the dead
// master fails in microseconds rather than about 100 ms, and the worker,
// which claims slot after slot, puts that slot off (250 ms) and goes on
// with the live masters' slots.
func newClusterClient(opt *redis.ClusterOptions) *redis.ClusterClient {
	opt.ClusterStateReloadInterval = clusterReload
	opt.MinRetryBackoff = -1
	c := redis.NewClusterClient(opt)
	reload := func() { c.ReloadState(context.Background()) }
	c.OnNewNode(func(node *redis.Client) {
		node.AddHook(&nodeHook{reload: reload})
	})
	return c
}

// nodeHook watches one cluster node's connections for failures.
type nodeHook struct {
	reload func()

	mu       sync.Mutex
	downTill time.Time
}

func (h *nodeHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.mu.Lock()
		wait := time.Until(h.downTill)
		h.mu.Unlock()
		if wait > 0 {
			return nil, fmt.Errorf("dial %s: the last dial failed; next try within %v: %w", addr, wait.Round(time.Millisecond), syscall.ECONNREFUSED)
		}
		conn, err := next(ctx, network, addr)
		if err != nil && ctx.Err() == nil {
			h.mu.Lock()
			h.downTill = time.Now().Add(nodeDownFor)
			h.mu.Unlock()
			h.reload()
		}
		return conn, err
	}
}

func (h *nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if brokenConn(err) {
			h.reload()
		}
		return err
	}
}

func (h *nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if brokenConn(err) {
			h.reload()
		}
		return err
	}
}

// brokenConn reports whether err says the connection or the node failed,
// not the command: the slot map may be out of date.
func brokenConn(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &ne) {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "CLUSTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "LOADING")
}
