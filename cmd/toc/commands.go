// The service commands: dev (the embedded default), serve and migrate.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/taskdb"
	"github.com/toc-project/toc/taskdb/shard"
	"github.com/toc-project/toc/timer"
)

// runDev runs the embedded default: SQLite file, in-process Redis, one
// worker owning every slot, no auth, loopback callbacks allowed.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("dev", "dev [flags]")
	fs.example = "toc dev --addr 127.0.0.1:8080 --data ./toc-dev.db"
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
	db, err := taskdb.OpenSQLite(ctx, *data, taskdb.Config{})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	if err := db.CheckSchema(ctx); err != nil {
		return err
	}
	store, err := shard.New([]*taskdb.Store{db}, nil) // SQLite is one shard
	if err != nil {
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
		openStore: func(context.Context) (*shard.Store, error) { return store, nil },
		onListen: func(addr string) {
			fmt.Fprintf(stdout, "toc dev listening on http://%s\n", addr)
			fmt.Fprintf(stdout, "data file:      %s\n", *data)
			fmt.Fprintf(stdout, "webhook secret: %s\n", f.secrets.values[0])
		}}
	s.node = newNodeLease(f, explicit(fs, "node"), nil, "")
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
	fs := newFlagSet("serve", "serve --mysql-dsn DSN --redis-addr HOST:PORT[,HOST:PORT...] --webhook-secret whsec_... [flags]")
	fs.example = "toc serve --mysql-dsn 'toc:secret@tcp(db:3306)/toc' --redis-addr redis:6379 --webhook-secret whsec_... --tokens-file tokens.json"
	fs.SetOutput(stderr)
	dsns := fs.spaceList("mysql-dsn", "task store, as a go-sql-driver/mysql DSN: user:pass@tcp(host:3306)/toc; given more than once, the shards in order (TOC_MYSQL_DSN: separated by white space)")
	redisFlags := addRedisFlags(fs)
	tokens := fs.list("api-token", "bearer token accepted by /v1 (none: auth off, which needs --insecure-no-auth)")
	fs.alias("api-token", "TOC_API_TOKENS")
	tokensFile := fs.string("tokens-file", "", "JSON file of scoped tokens, {\"tokens\": [{\"name\", \"token\" or \"token_sha256\", \"role\", \"topics\", quotas}]}; reloaded on SIGHUP and when it changes (see docs/tenants.md)")
	namespacesFile := fs.string("namespaces-file", "", "JSON file of the namespaces besides the default one, {\"namespaces\": [{\"name\", \"redis_prefix\", \"webhook_secrets\", \"callback_hosts\"}]}, each with its own topics; needs --tokens-file, whose tokens name their namespace (see docs/tenants.md)")
	noAuth := fs.bool("insecure-no-auth", false, "serve /v1 without tokens")
	allowPrivate := fs.bool("allow-private-callbacks", false, "allow callback URLs that resolve to loopback, private or link-local addresses")
	migrate := fs.bool("migrate", false, "apply pending task-store migrations at start (a new database is set up without it; see docs/operations.md, Upgrades)")
	zkServers := fs.list("zk", "ZooKeeper servers, host:port: run as one member of a cluster that shares the slots (none: this process owns every slot)")
	zkRoot := fs.string("zk-root", slots.DefaultRoot, "znode under which the members of one cluster meet (one per task store)")
	zkSession := fs.duration("zk-session-timeout", slots.DefaultSessionTimeout, "how long ZooKeeper keeps a silent member's slots")
	memberID := fs.string("member-id", "", "unique id of this member (default host-pid-random)")
	f := addServiceFlags(fs, "text")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case len(dsns.values) == 0:
		return errors.New("--mysql-dsn is required")
	case len(dsns.values) > timer.MaxShards:
		return fmt.Errorf("--mysql-dsn given %d times: at most %d shards", len(dsns.values), timer.MaxShards)
	case len(tokens.values) == 0 && *tokensFile == "" && !*noAuth:
		return errors.New("--api-token is required, or --tokens-file (or --insecure-no-auth to serve without auth)")
	case *noAuth && (len(tokens.values) > 0 || *tokensFile != ""):
		return errors.New("--insecure-no-auth turns auth off: give it without --api-token and --tokens-file")
	case len(f.secrets.values) == 0:
		return errors.New("--webhook-secret is required: callbacks are always signed")
	case *namespacesFile != "" && *tokensFile == "":
		return errors.New("--namespaces-file needs --tokens-file: a token's namespace is what keeps it in its topics")
	}
	var spaces namespaces
	if *namespacesFile != "" {
		var err error
		if spaces, err = readNamespaces(*namespacesFile, *f.redisPrefix); err != nil {
			return fmt.Errorf("--namespaces-file: %w", err)
		}
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	routeLibraryLogs(log)
	var tokenFile *auth.File
	if *tokensFile != "" {
		admins, err := auth.Admins(tokens.values)
		if err != nil {
			return fmt.Errorf("--api-token: %w", err)
		}
		if tokenFile, err = openTokensFile(*tokensFile, spaces.names(), admins, log); err != nil {
			return fmt.Errorf("--tokens-file: %w", err)
		}
	}
	// The task store is opened by run, which retries it until it answers;
	// the cluster reads its topics only once it has (run starts the
	// membership after the store and Redis).
	var store atomic.Pointer[shard.Store]
	defer func() {
		if st := store.Load(); st != nil {
			st.Close()
		}
	}()
	openStore := func(ctx context.Context) (*shard.Store, error) {
		connCtx, cancel := context.WithTimeout(ctx, awaitTry)
		st, err := shard.OpenMySQL(connCtx, dsns.values, taskdb.Config{})
		cancel()
		if err != nil {
			return nil, err
		}
		// Migrations run when asked (--migrate, toc migrate), and on a
		// new database, which a first start sets up: a member of a
		// rolling upgrade does not change the schema under the others.
		first, pending, fresh, err := st.Pending(ctx)
		if err != nil {
			st.Close()
			return nil, err
		}
		switch {
		case len(pending) == 0:
		case *migrate || fresh:
			if err := st.Migrate(ctx); err != nil {
				st.Close()
				return nil, err
			}
		default:
			st.Close()
			return nil, permanent(fmt.Errorf("task store shard %d: %w: migration(s) %v are not applied; "+
				"run toc migrate with the same --mysql-dsn first (online, see docs/operations.md, Upgrades), or start with --migrate", first, taskdb.ErrSchemaOlder, pending))
		}
		// A schema a newer toc migrated may hold what this build
		// misreads: refuse it, and say so, rather than serve on it.
		if err := st.CheckSchema(ctx); err != nil {
			st.Close()
			if errors.Is(err, taskdb.ErrSchemaNewer) {
				return nil, permanent(err)
			}
			return nil, err
		}
		// A first start records the map; after that every process must be
		// given the shards the store recorded, in order.
		if err := st.CheckMap(ctx, *migrate || fresh); err != nil {
			st.Close()
			var me *shard.MapError
			if errors.As(err, &me) {
				return nil, permanent(err)
			}
			return nil, err
		}
		store.Store(st)
		return st, nil
	}
	rdb, err := redisFlags.client()
	if err != nil {
		return err
	}
	defer rdb.Close()
	s := &service{flags: f, rdb: rdb, redisAddr: *redisFlags.addr, tokens: tokens.values, tokenFile: tokenFile, namespaces: spaces, allowPrivate: *allowPrivate, log: log, openStore: openStore,
		onListen: func(addr string) { fmt.Fprintf(stdout, "toc serve listening on http://%s\n", addr) }}
	if servers := splitList(zkServers.values); len(servers) > 0 {
		s.cluster, err = slots.NewCluster(slots.ClusterConfig{
			Servers:        servers,
			Root:           *zkRoot,
			SessionTimeout: *zkSession,
			ID:             *memberID,
			Addr:           *f.addr,
			Capacity:       *f.concurrency,
			Build:          version,
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
	s.node = newNodeLease(f, explicit(fs, "node"), s.cluster, *memberID)
	return s.run(ctx)
}

// runMigrate applies the migrations of the task store, every shard of
// it, and records the shard map in each; with --status it lists what is
// applied and pending, with --dry-run the statements it would run.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", "migrate (--mysql-dsn DSN [--mysql-dsn DSN...] | --sqlite FILE) [--status | --dry-run | --contract]")
	fs.example = "toc migrate --mysql-dsn 'toc:secret@tcp(db:3306)/toc' --status"
	fs.SetOutput(stderr)
	dsns := fs.spaceList("mysql-dsn", "MySQL/MariaDB task store DSN; given more than once, the shards in order (TOC_MYSQL_DSN: separated by white space)")
	file := fs.string("sqlite", "", "SQLite task store file")
	status := fs.bool("status", false, "list each migration, applied (when) or pending, per shard, and apply nothing")
	dryRun := fs.bool("dry-run", false, "print the statements of the pending migrations, per shard, and apply nothing")
	contract := fs.bool("contract", false, "also apply the contract migrations, which drop what only the previous release reads: "+
		"once every member runs this build; going back to the previous release is then no rolling step (a new database gets them at once)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if *status && *dryRun || *contract && (*status || *dryRun) {
		return errors.New("give one of --status, --dry-run and --contract")
	}
	migrate := func(st interface {
		Migrate(context.Context) error
		MigrateContract(context.Context) error
	}) error {
		if *contract {
			return st.MigrateContract(ctx)
		}
		return st.Migrate(ctx)
	}
	var (
		shards []*taskdb.Store
		store  *shard.Store
	)
	switch {
	case *file != "" && len(dsns.values) == 0:
		db, err := taskdb.OpenSQLite(ctx, *file, taskdb.Config{})
		if err != nil {
			return err
		}
		defer db.Close()
		shards = []*taskdb.Store{db}
	case *file == "" && len(dsns.values) > 0:
		var err error
		if store, err = shard.OpenMySQL(ctx, dsns.values, taskdb.Config{}); err != nil {
			return err
		}
		defer store.Close()
		for i := range store.Shards() {
			shards = append(shards, store.Shard(i))
		}
	default:
		return errors.New("give --mysql-dsn (once per shard) or --sqlite, not both")
	}
	if *status || *dryRun {
		return migrationReport(ctx, shards, *dryRun, stdout)
	}
	if store == nil {
		if err := migrate(shards[0]); err != nil {
			return err
		}
		if err := shards[0].CheckSchema(ctx); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations applied")
		return contractLeft(ctx, shards, stdout)
	}
	if err := migrate(store); err != nil {
		return err
	}
	if err := store.CheckSchema(ctx); err != nil {
		return err
	}
	wrote, err := store.WriteMap(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "migrations applied to %d shard(s)\n", store.Shards())
	if wrote {
		fmt.Fprintf(stdout, "shard map of %d recorded in each; every toc serve must be given these DSNs in this order\n", store.Shards())
	}
	return contractLeft(ctx, shards, stdout)
}

// contractLeft says which contract migrations the shards still lack, and
// when to apply them.
func contractLeft(ctx context.Context, shards []*taskdb.Store, w io.Writer) error {
	var left []string
	for i, st := range shards {
		known, _, err := st.Migrations(ctx)
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
		for _, m := range known {
			if m.Contract && m.AppliedAt.IsZero() && !slices.Contains(left, m.Name) {
				left = append(left, m.Name)
			}
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(w, "not applied: contract migration(s) %s, which drop what the previous release still reads; "+
			"once every member runs this build, run toc migrate --contract (see docs/operations.md, Migrations)\n", strings.Join(left, ", "))
	}
	return nil
}

// migrationReport writes, per shard, each migration applied (and when)
// or pending, and those applied by a newer toc; with statements, only the
// pending ones, each with the statements applying it would run.
func migrationReport(ctx context.Context, shards []*taskdb.Store, statements bool, w io.Writer) error {
	for i, st := range shards {
		known, unknown, err := st.Migrations(ctx)
		if err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
		pending := 0
		for _, m := range known {
			switch {
			case statements && m.AppliedAt.IsZero():
				fmt.Fprintf(w, "-- shard %d: %s%s\n", i, m.Name, map[bool]string{true: " (a contract migration: applied by toc migrate --contract)"}[m.Contract])
				for _, stmt := range m.Statements {
					fmt.Fprintf(w, "%s;\n", stmt)
				}
			case !statements && m.AppliedAt.IsZero() && m.Contract:
				fmt.Fprintf(w, "shard %d  %s  pending, a contract migration: toc migrate --contract once every member runs this build\n", i, m.Name)
			case !statements && m.AppliedAt.IsZero():
				fmt.Fprintf(w, "shard %d  %s  pending\n", i, m.Name)
			case !statements:
				fmt.Fprintf(w, "shard %d  %s  applied %s\n", i, m.Name, m.AppliedAt.UTC().Format(time.RFC3339))
			}
			if m.AppliedAt.IsZero() {
				pending++
			}
		}
		for _, v := range unknown {
			fmt.Fprintf(w, "%sshard %d  %04d  applied by a newer toc: this build does not know it, and toc serve of this build refuses to start on it\n",
				map[bool]string{true: "-- ", false: ""}[statements], i, v)
		}
		if statements && pending == 0 {
			fmt.Fprintf(w, "-- shard %d: nothing pending\n", i)
		}
	}
	return nil
}
