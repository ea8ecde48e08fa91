package testenv_test

// These tests drive the servers through the client libraries toc uses, to
// check that what testenv hands out (DSN, addresses, restart behaviour) works
// for them. The testenv package itself imports only the standard library.

import (
	"database/sql"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/internal/testenv"
)

func TestMySQLDriverDSN(t *testing.T) {
	m := testenv.MariaDB(t)
	dsn := m.NewDatabase(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ParseTime || !cfg.MultiStatements || !cfg.InterpolateParams {
		t.Errorf("DSN %s: parseTime=%v multiStatements=%v interpolateParams=%v", dsn, cfg.ParseTime, cfg.MultiStatements, cfg.InterpolateParams)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()

	// One Exec, several statements: multiStatements.
	if _, err := db.ExecContext(ctx, `
		CREATE TABLE jobs (id BIGINT PRIMARY KEY, body VARCHAR(64) NOT NULL);
		INSERT INTO jobs VALUES (1, 'a');`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO jobs VALUES (?, ?)", 2, "⏰ utf8mb4"); err != nil {
		t.Fatal(err)
	}
	var body string
	if err := db.QueryRowContext(ctx, "SELECT body FROM jobs WHERE id = ?", 2).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if body != "⏰ utf8mb4" {
		t.Errorf("body = %q", body)
	}
	_, err = db.ExecContext(ctx, "INSERT INTO jobs VALUES (1, 'dup')")
	if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != 1062 {
		t.Errorf("duplicate insert: err = %v, want MySQL error 1062", err)
	}
}

func TestGoRedisAcrossRestart(t *testing.T) {
	t.Parallel()
	r := testenv.NewRedisWith(t, testenv.RedisOptions{AppendOnly: true})
	c := redis.NewClient(&redis.Options{Addr: r.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Kill(t)
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET with the server killed succeeded")
	}
	r.Start(t)
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET after restart = %q, %v; want v", got, err)
	}
}

type quietLogger struct{ t *testing.T }

func (l quietLogger) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// TestZKSessionSurvivesRestart: an ephemeral node outlives a Kill and Start
// of the server when the client reconnects within the session timeout.
//
// The client may dial only while the server is up. A connect request that
// reaches ZooKeeper while it is still starting can go unanswered, and
// go-zookeeper then waits ten times its receive timeout (27 s here) for the
// answer, long after the restored session expired; that is the client's
// retry policy, not what this test is about.
func TestZKSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	z := testenv.NewZooKeeper(t)
	var up atomic.Bool
	up.Store(true)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if !up.Load() {
			return nil, errors.New("the test holds dials while the server restarts")
		}
		return net.DialTimeout(network, addr, timeout)
	}
	conn, events, err := zk.Connect([]string{z.Addr}, 4*time.Second, zk.WithLogger(quietLogger{t}), zk.WithDialer(dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	if _, err := conn.Create("/owner", []byte("w1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	session := conn.SessionID()
	waitState(t, events, zk.StateHasSession)

	up.Store(false)
	z.Kill(t)
	waitState(t, events, zk.StateDisconnected)
	z.Start(t)
	up.Store(true)
	waitState(t, events, zk.StateHasSession)
	if conn.SessionID() != session {
		t.Errorf("session %x after restart, want %x", conn.SessionID(), session)
	}
	data, _, err := conn.Get("/owner")
	if err != nil || string(data) != "w1" {
		t.Errorf("ephemeral node after restart = %q, %v; want w1", data, err)
	}
}

func waitState(t *testing.T, events <-chan zk.Event, want zk.State) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == zk.EventSession && ev.State == want {
				return
			}
			if ev.State == zk.StateExpired {
				t.Fatalf("session expired waiting for %v", want)
			}
		case <-timeout:
			t.Fatalf("no %v event in 10 s", want)
		}
	}
}
