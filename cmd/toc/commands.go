// The service commands: dev (the embedded default), serve and migrate.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/timer"
)

// runDev runs the embedded default: SQLite file, in-process Redis, one
// worker owning every slot, no auth, loopback callbacks allowed.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", "dev [flags]")
	fs.SetOutput(stderr)
	data := fs.string("data", "./toc-dev.db", "SQLite file holding the jobs; pending ones survive restarts")
	f := addServiceFlags(fs, "text")
	if err := fs.parse(args); err != nil {
		return err
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	routeLibraryLogs(log)
	unlock, err := lockDataFile(*data)
	if err != nil {
		return err
	}
	defer unlock()
	store, err := taskdb.OpenSQLite(ctx, *data, taskdb.Config{})
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	if len(f.secrets.values) == 0 {
		secret, err := devSecret(*data + ".secret")
		if err != nil {
			return err
		}
		f.secrets.values = []string{secret}
	}

	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return fmt.Errorf("start in-process redis: %w", err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 64})
	defer rdb.Close()

	s := &service{flags: f, rdb: rdb, allowPrivate: true, log: log,
		openStore: func(context.Context) (*taskdb.Store, error) { return store, nil },
		onListen: func(addr string) {
			fmt.Fprintf(stdout, "toc dev listening on http://%s\n", addr)
			fmt.Fprintf(stdout, "data file:      %s\n", *data)
			fmt.Fprintf(stdout, "webhook secret: %s\n", f.secrets.values[0])
		}}
	return s.run(ctx)
}

// devSecret reads the dev webhook secret kept beside the data file, or
// makes one, so receivers keep verifying across restarts.
func devSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	secret := webhook.NewSecret()
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("save dev webhook secret: %w", err)
	}
	return secret, nil
}

// runServe runs toc against MySQL and Redis.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "serve --mysql-dsn DSN --redis-addr HOST:PORT --webhook-secret whsec_... [flags]")
	fs.SetOutput(stderr)
	dsn := fs.string("mysql-dsn", "", "task store, as a go-sql-driver/mysql DSN: user:pass@tcp(host:3306)/toc")
	redisAddr := fs.string("redis-addr", "127.0.0.1:6379", "Redis address")
	redisPassword := fs.string("redis-password", "", "Redis password")
	redisDB := fs.int("redis-db", 0, "Redis database number")
	tokens := fs.list("api-token", "bearer token accepted by /v1 (none: auth off, which needs --insecure-no-auth)")
	fs.alias("api-token", "TOC_API_TOKENS")
	noAuth := fs.bool("insecure-no-auth", false, "serve /v1 without tokens")
	allowPrivate := fs.bool("allow-private-callbacks", false, "allow callback URLs that resolve to loopback, private or link-local addresses")
	migrate := fs.bool("migrate", true, "apply task-store migrations at start")
	zkServers := fs.list("zk", "ZooKeeper servers, host:port: run as one member of a cluster that shares the slots (none: this process owns every slot)")
	zkRoot := fs.string("zk-root", slots.DefaultRoot, "znode under which the members of one cluster meet (one per task store)")
	zkSession := fs.duration("zk-session-timeout", slots.DefaultSessionTimeout, "how long ZooKeeper keeps a silent member's slots")
	memberID := fs.string("member-id", "", "unique id of this member (default host-pid-random)")
	f := addServiceFlags(fs, "text")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case *dsn == "":
		return errors.New("--mysql-dsn is required")
	case len(tokens.values) == 0 && !*noAuth:
		return errors.New("--api-token is required (or --insecure-no-auth to serve without auth)")
	case len(f.secrets.values) == 0:
		return errors.New("--webhook-secret is required: callbacks are always signed")
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	routeLibraryLogs(log)
	// The task store is opened by run, which retries it until it answers;
	// the cluster reads its topics only once it has (run starts the
	// membership after the store and Redis).
	var store atomic.Pointer[taskdb.Store]
	defer func() {
		if st := store.Load(); st != nil {
			st.Close()
		}
	}()
	openStore := func(ctx context.Context) (*taskdb.Store, error) {
		connCtx, cancel := context.WithTimeout(ctx, awaitTry)
		st, err := taskdb.OpenMySQL(connCtx, *dsn, taskdb.Config{})
		cancel()
		if err != nil {
			return nil, err
		}
		if *migrate {
			if err := st.Migrate(ctx); err != nil {
				st.Close()
				return nil, err
			}
		}
		store.Store(st)
		return st, nil
	}
	rdb := redis.NewClient(&redis.Options{Addr: *redisAddr, Password: *redisPassword, DB: *redisDB, PoolSize: 128})
	defer rdb.Close()
	s := &service{flags: f, rdb: rdb, tokens: tokens.values, allowPrivate: *allowPrivate, log: log, openStore: openStore,
		onListen: func(addr string) { fmt.Fprintf(stdout, "toc serve listening on http://%s\n", addr) }}
	if servers := splitList(zkServers.values); len(servers) > 0 {
		if !explicit(fs, "node") {
			// Members share the task store: a random node number makes job
			// id collisions rare, and the store's primary key catches them.
			*f.node = rand.IntN(timer.MaxNode + 1)
		}
		s.cluster, err = slots.NewCluster(slots.ClusterConfig{
			Servers:        servers,
			Root:           *zkRoot,
			SessionTimeout: *zkSession,
			ID:             *memberID,
			Addr:           *f.addr,
			Capacity:       *f.concurrency,
			Topics: func(ctx context.Context) ([]timer.Topic, error) {
				if c := s.catalog.Load(); c != nil && c.Loaded() {
					topics, _ := c.All() // the engine's copy, refreshed every 2 s
					return topics, nil
				}
				st := store.Load()
				if st == nil {
					return nil, errors.New("the task store is not open yet")
				}
				return st.Topics(ctx)
			},
			Logger: log,
		})
		if err != nil {
			return err
		}
	}
	return s.run(ctx)
}

// runMigrate applies the migrations of the task store.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", "migrate (--mysql-dsn DSN | --sqlite FILE)")
	fs.SetOutput(stderr)
	dsn := fs.string("mysql-dsn", "", "MySQL/MariaDB task store DSN")
	file := fs.string("sqlite", "", "SQLite task store file")
	if err := fs.parse(args); err != nil {
		return err
	}
	var (
		store *taskdb.Store
		err   error
	)
	switch {
	case *dsn != "" && *file == "":
		store, err = taskdb.OpenMySQL(ctx, *dsn, taskdb.Config{})
	case *file != "" && *dsn == "":
		store, err = taskdb.OpenSQLite(ctx, *file, taskdb.Config{})
	default:
		return errors.New("give exactly one of --mysql-dsn or --sqlite")
	}
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}
