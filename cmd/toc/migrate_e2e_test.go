package main

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 34, items 2 and 3: toc migrate --status lists each migration of
// each shard, applied (when) or pending; --dry-run prints the pending
// statements and applies nothing; and toc serve refuses a schema that a
// newer toc migrated, naming the version it does not know, where it
// used to start on it without a word.
func TestMigrateStatusAndNewerSchema(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	migrate := func(args ...string) string {
		t.Helper()
		out, err := runTocCmd(t, append([]string{"migrate", "--mysql-dsn", dsn}, args...)...)
		if err != nil {
			t.Fatalf("toc migrate %v: %v\n%s", args, err, out)
		}
		return out
	}
	out := migrate("--status")
	if !strings.Contains(out, "shard 0  0001_init.sql  pending") || !strings.Contains(out, "0025_retention.sql  pending") || strings.Contains(out, "applied") {
		t.Errorf("--status of a fresh database:\n%s", out)
	}
	out = migrate("--dry-run")
	if !strings.Contains(out, "-- shard 0: 0025_retention.sql\n") || !strings.Contains(out, "ADD INDEX IF NOT EXISTS toc_jobs_ended") {
		t.Errorf("--dry-run of a fresh database:\n%s", out)
	}
	if out = migrate("--status"); strings.Contains(out, "applied") {
		t.Errorf("--dry-run applied something:\n%s", out)
	}
	migrate()
	out = migrate("--status")
	if strings.Contains(out, "pending") || !strings.Contains(out, "0025_retention.sql  applied 20") {
		t.Errorf("--status once migrated:\n%s", out)
	}
	if out = migrate("--dry-run"); strings.TrimSpace(out) != "-- shard 0: nothing pending" {
		t.Errorf("--dry-run once migrated:\n%s", out)
	}

	// A newer toc migrated the schema further.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("INSERT INTO toc_schema_migrations (version, applied_at) VALUES (9999, 1)"); err != nil {
		t.Fatal(err)
	}
	if out = migrate("--status"); !strings.Contains(out, "shard 0  9999  applied by a newer toc") {
		t.Errorf("--status with a newer toc's migration:\n%s", out)
	}
	out, err = runTocCmd(t, "serve", "--mysql-dsn", dsn, "--redis-addr", testenv.Redis(t).Addr, "--addr", "127.0.0.1:0",
		"--api-token", "tok", "--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err == nil || !strings.Contains(out, "newer than this build") || !strings.Contains(out, "9999") {
		t.Errorf("toc serve on a schema with a newer toc's 9999 = %v\n%s\nwant a refusal naming it", err, tail(out, 10))
	}
}

// Issue 34, item 3: toc serve changes the schema only when asked. On a
// schema an older toc left (here: 0025 not applied) it refuses to start,
// naming what is pending and how to apply it, rather than migrate under
// the members of a rolling upgrade; with --migrate it applies it.
func TestServeMigratesOnlyWhenAsked(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	serve := []string{"serve", "--mysql-dsn", dsn, "--redis-addr", testenv.Redis(t).Addr,
		"--api-token", "tok", "--webhook-secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if out, err := runTocCmd(t, "migrate", "--mysql-dsn", dsn); err != nil {
		t.Fatalf("toc migrate: %v\n%s", err, out)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM toc_schema_migrations WHERE version = 25"); err != nil {
		t.Fatal(err)
	}
	out, err := runTocCmd(t, append(serve, "--addr", "127.0.0.1:0")...)
	if err == nil || !strings.Contains(out, "older than this build") || !strings.Contains(out, "[25]") || !strings.Contains(out, "toc migrate") {
		t.Errorf("toc serve on a schema without 0025 = %v\n%s\nwant a refusal naming 25 and toc migrate", err, tail(out, 10))
	}
	p := startToc(t, "tok", append(serve, "--migrate")...)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM toc_schema_migrations WHERE version = 25").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("toc serve --migrate did not apply 0025\n%s", tail(p.stderr.String(), 20))
		}
	}
	p.stop(t)
}
