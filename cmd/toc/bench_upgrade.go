// The aged scenario's upgrading phase: every migration from the oldest
// release's schema to this build's, applied by toc migrate to an aged
// table while that release fires jobs on it (issue 34).

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// releaseDBSuffix names the databases of the upgrading phase: each
// shard's database with it added, on the same server.
const releaseDBSuffix = "_release"

// agedUpgrading stops the toc the bench measures and starts the release
// --aged-release names (a toc binary of v0.1.0) on databases of its own,
// beside the bench's, so that the release's serve sets up its own
// schema. It fills them with the aged rows, then fires 1,000 jobs a
// second through the release while this build's toc migrate brings the
// schema to this build's (migrateUnderFire). The databases are dropped
// at the end; the bench's own toc is not started again.
func (b *bench) agedUpgrading(ctx context.Context) ([]result, error) {
	release := b.cfg.agedRelease
	out, err := exec.CommandContext(ctx, release, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("--aged-release %s: toc version: %w", release, err)
	}
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	dsns, names, err := releaseDSNs(b.dsns)
	if err != nil {
		return nil, err
	}
	admin, err := b.openStores()
	if err != nil {
		return nil, err
	}
	defer closeStores(admin)
	for i, db := range admin {
		name := quoteName(names[i])
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		defer db.ExecContext(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name)
	}

	b.toc.stop()
	if err := b.flushAll(ctx); err != nil {
		return nil, err
	}
	args := []string{"serve", "--redis-addr", b.redisAddr, "--api-token", b.token, "--webhook-secret", benchSecret, "--allow-private-callbacks"}
	for _, d := range dsns {
		args = append(args, "--mysql-dsn", d)
	}
	t, err := b.runTocBin(ctx, release, "toc-release", false, args...)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", version, err)
	}
	// Stopped before its databases are dropped (defers run last first).
	defer t.stop()
	b.closers = append(b.closers, t.stop)
	b.toc, b.url, b.tocPID, b.pprof = t, t.url, t.pid, t.pprof

	var dbs []*sql.DB
	defer func() { closeStores(dbs) }()
	for _, dsn := range dsns {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(agedFillConns + 2)
		dbs = append(dbs, db)
	}
	from, err := schemaVersion(ctx, dbs[0])
	if err != nil {
		return nil, fmt.Errorf("the schema %s set up: %w", version, err)
	}
	fill, err := b.fillAged(ctx, dbs, b.cfg.agedRows)
	if err != nil {
		return nil, err
	}
	fill.Extra["phase"] = "upgrading"
	b.settle(ctx, dbs)
	label := fmt.Sprintf("aged %s, %s upgrading", shortCount(b.cfg.agedRows), version)
	r, err := b.migrateUnderFire(ctx, dbs, dsns, label, fmt.Sprintf("%d to this build's", from))
	if err != nil {
		return []result{fill}, err
	}
	to, err := schemaVersion(ctx, dbs[0])
	if err != nil {
		return []result{fill}, err
	}
	r.Extra["release"], r.Extra["from_schema"], r.Extra["to_schema"] = version, from, to
	return []result{fill, r}, nil
}

// releaseDSNs is dsns with releaseDBSuffix added to each database, and
// the names of those databases.
func releaseDSNs(dsns []string) (out, names []string, err error) {
	for _, dsn := range dsns {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, nil, err
		}
		if cfg.DBName == "" {
			return nil, nil, fmt.Errorf("task store %s: names no database", cfg.Addr)
		}
		cfg.DBName += releaseDBSuffix
		out, names = append(out, cfg.FormatDSN()), append(names, cfg.DBName)
	}
	return out, names, nil
}

// quoteName quotes a MySQL identifier.
func quoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// schemaVersion is the newest migration applied to db.
func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT MAX(version) FROM toc_schema_migrations").Scan(&v)
	return int(v.Int64), err
}
