package testenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// timed runs f and logs how long it took.
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	t.Logf("%s: %v", what, time.Since(start).Round(time.Millisecond))
}

func mustDo(t *testing.T, r *RedisServer, args ...string) string {
	t.Helper()
	reply, err := r.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return reply
}

func TestRedisShared(t *testing.T) {
	var r *RedisServer
	timed(t, "shared redis-server started", func() { r = Redis(t) })
	if again := Redis(t); again != r {
		t.Fatalf("Redis returned %p, then %p; want the same server", r, again)
	}
	if !strings.HasPrefix(r.Addr, "127.0.0.1:") {
		t.Errorf("Addr = %q, want 127.0.0.1:port", r.Addr)
	}
	if err := r.Ping(); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, r, "SET", "k", "héllo\r\nworld"); got != "OK" {
		t.Errorf("SET = %q, want OK", got)
	}
	if got := mustDo(t, r, "GET", "k"); got != "héllo\r\nworld" {
		t.Errorf("GET = %q", got)
	}
	if got := mustDo(t, r, "INCR", "n"); got != "1" {
		t.Errorf("INCR = %q, want 1", got)
	}
	if _, err := r.Do("NOSUCHCOMMAND"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("NOSUCHCOMMAND: err = %v, want an unknown command error", err)
	}
	r.FlushAll(t)
	if got := mustDo(t, r, "DBSIZE"); got != "0" {
		t.Errorf("DBSIZE after FlushAll = %q, want 0", got)
	}
}

func TestRedisKillStart(t *testing.T) {
	t.Parallel()
	var r *RedisServer
	timed(t, "private redis-server started", func() { r = NewRedis(t) })
	mustDo(t, r, "SET", "k", "v")

	timed(t, "killed", func() { r.Kill(t) })
	if err := r.Ping(); err == nil {
		t.Fatal("Ping after Kill succeeded")
	}
	r.Kill(t) // a no-op now

	addr := r.Addr
	timed(t, "restarted", func() { r.Start(t) })
	if r.Addr != addr {
		t.Errorf("Addr after Start = %s, want %s", r.Addr, addr)
	}
	if err := r.Ping(); err != nil {
		t.Fatal(err)
	}
	if got := mustDo(t, r, "GET", "k"); got != "" {
		t.Errorf("GET after restart without persistence = %q, want nil", got)
	}
	r.Start(t) // a no-op now
}

func TestRedisAppendOnlySurvivesKill(t *testing.T) {
	t.Parallel()
	r := NewRedisWith(t, RedisOptions{AppendOnly: true, Args: []string{"--maxmemory", "64mb"}})
	if info := mustDo(t, r, "INFO", "memory"); !strings.Contains(info, "maxmemory:67108864") {
		t.Errorf("Args not passed: INFO memory =\n%s", info)
	}
	if got := mustDo(t, r, "CONFIG", "GET", "maxmemory"); got != "maxmemory\n67108864" {
		t.Errorf("CONFIG GET maxmemory = %q, want the array's two values joined by a newline", got)
	}
	mustDo(t, r, "SET", "k", "v")
	r.Kill(t)
	r.Start(t)
	if got := mustDo(t, r, "GET", "k"); got != "v" {
		t.Errorf("GET after restart with appendonly = %q, want v", got)
	}
}

func TestMariaDBShared(t *testing.T) {
	var m *MariaDBServer
	timed(t, "shared mariadbd installed and started", func() { m = MariaDB(t) })
	if again := MariaDB(t); again != m {
		t.Fatalf("MariaDB returned %p, then %p; want the same server", m, again)
	}
	if err := m.Ping(); err != nil {
		t.Fatal(err)
	}
	if got := m.Exec(t, "SELECT @@character_set_server, @@collation_server"); got != "utf8mb4\tutf8mb4_general_ci" {
		t.Errorf("charset, collation = %q", got)
	}
	if len(m.Socket) >= 107 {
		t.Errorf("socket path %q is %d bytes, want < 107", m.Socket, len(m.Socket))
	}

	var name string
	t.Run("NewDatabase", func(t *testing.T) {
		dsn := m.NewDatabase(t)
		re := regexp.MustCompile(`^root@tcp\(127\.0\.0\.1:(\d+)\)/(t\d+_[a-z0-9_]+)\?parseTime=false&multiStatements=true&interpolateParams=true$`)
		sub := re.FindStringSubmatch(dsn)
		if sub == nil {
			t.Fatalf("DSN %q does not match %s", dsn, re)
		}
		if "127.0.0.1:"+sub[1] != m.Addr {
			t.Errorf("DSN port %s, server at %s", sub[1], m.Addr)
		}
		name = sub[2]
		if other := m.NewDatabase(t); other == dsn {
			t.Errorf("two NewDatabase calls returned %s", dsn)
		}
		m.Exec(t, "CREATE TABLE `"+name+"`.jobs (id BIGINT PRIMARY KEY); INSERT INTO `"+name+"`.jobs VALUES (1), (2)")
		if got := m.Exec(t, "SELECT COUNT(*) FROM `"+name+"`.jobs"); got != "2" {
			t.Errorf("count = %q, want 2", got)
		}
		if got := m.Exec(t, "SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '"+name+"'"); got != "utf8mb4" {
			t.Errorf("database charset = %q, want utf8mb4", got)
		}
	})
	if got := m.Exec(t, "SHOW DATABASES LIKE '"+name+"'"); got != "" {
		t.Errorf("database %s still exists after its test's Cleanup", name)
	}
}

func TestMariaDBKillStart(t *testing.T) {
	t.Parallel()
	var m *MariaDBServer
	timed(t, "private mariadbd installed and started", func() { m = NewMariaDB(t) })
	m.NewDatabase(t)
	m.Exec(t, "CREATE DATABASE durable; CREATE TABLE durable.t (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO durable.t VALUES (42)")

	timed(t, "killed", func() { m.Kill(t) })
	if err := m.Ping(); err == nil {
		t.Fatal("Ping after Kill succeeded")
	}
	timed(t, "restarted (with InnoDB recovery)", func() { m.Start(t) })
	if got := m.Exec(t, "SELECT id FROM durable.t"); got != "42" {
		t.Errorf("committed row after Kill and Start = %q, want 42", got)
	}
}

func TestZooKeeperShared(t *testing.T) {
	var z *ZKServer
	timed(t, "shared zookeeper started", func() { z = ZooKeeper(t) })
	if again := ZooKeeper(t); again != z {
		t.Fatalf("ZooKeeper returned %p, then %p; want the same server", z, again)
	}
	out, err := z.FourLetterWord("srvr")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Mode: standalone") {
		t.Errorf("srvr = %q, want Mode: standalone", out)
	}
	conf, err := z.FourLetterWord("conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"minSessionTimeout=1000", "maxSessionTimeout=60000", "tickTime=500"} {
		if !strings.Contains(conf, want) {
			t.Errorf("conf lacks %s:\n%s", want, conf)
		}
	}
}

func TestZooKeeperKillStart(t *testing.T) {
	t.Parallel()
	var z *ZKServer
	timed(t, "private zookeeper started", func() { z = NewZooKeeper(t) })
	timed(t, "killed", func() { z.Kill(t) })
	if err := z.Ping(); err == nil {
		t.Fatal("Ping after Kill succeeded")
	}
	timed(t, "restarted", func() { z.Start(t) })
	if err := z.Ping(); err != nil {
		t.Fatal(err)
	}
}

// TestSharedRestartsAfterKill: a shared server a test left down is started
// again for the next caller.
func TestSharedRestartsAfterKill(t *testing.T) {
	r := Redis(t)
	r.Kill(t)
	if got := Redis(t); got != r {
		t.Fatal("Redis returned another server")
	}
	if err := r.Ping(); err != nil {
		t.Fatalf("shared server not restarted: %v", err)
	}
}

// fakeTB records Skipf and Fatalf and ends its goroutine as they do.
type fakeTB struct {
	testing.TB
	mu              sync.Mutex
	skipped, failed string
}

func (f *fakeTB) Helper()        {}
func (f *fakeTB) Name() string   { return "fake" }
func (f *fakeTB) Cleanup(func()) {}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) run(fn func(tb testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("ZOOKEEPER_HOME", "")
	saved := sbinDirs
	sbinDirs = nil
	t.Cleanup(func() { sbinDirs = saved })
	starts := []struct {
		name, binary string
		start        func(tb testing.TB)
	}{
		{"NewRedis", "redis-server", func(tb testing.TB) { NewRedis(tb) }},
		{"NewMariaDB", "mariadbd", func(tb testing.TB) { NewMariaDB(tb) }},
		{"NewZooKeeper", "java", func(tb testing.TB) { NewZooKeeper(tb) }},
	}
	for _, s := range starts {
		for _, require := range []string{"", "1"} {
			t.Run(s.name+"/require="+require, func(t *testing.T) {
				t.Setenv(RequireEnv, require)
				f := &fakeTB{TB: t}
				f.run(s.start)
				got := f.skipped
				if require == "1" {
					got = f.failed
					if f.skipped != "" {
						t.Errorf("skipped under %s=1: %s", RequireEnv, f.skipped)
					}
				} else if f.failed != "" {
					t.Errorf("failed without %s: %s", RequireEnv, f.failed)
				}
				if !strings.Contains(got, s.binary+" not found on PATH") {
					t.Errorf("message %q does not name %s", got, s.binary)
				}
			})
		}
	}
}

func TestRemoveStaleDirs(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale, err := makeDir("stale")
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(dead.Process.Pid)
	if err := os.WriteFile(filepath.Join(stale, ownerFile), []byte(pid), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := makeDir("live")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)

	removeStaleDirs()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		os.RemoveAll(stale)
		t.Errorf("dir of dead pid %s not removed: %v", pid, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("dir of this process removed: %v", err)
	}
}

// TestOrphansDie runs this test binary again as a child that starts a
// redis-server and exits without cleanup, as a crash would, then checks that
// the server died with it.
func TestOrphansDie(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux only")
	}
	if os.Getenv("TESTENV_ORPHAN_CHILD") == "1" {
		r := NewRedis(t)
		fmt.Printf("SERVER_PID=%d\nSERVER_DIR=%s\n", r.proc.cur.cmd.Process.Pid, r.Dir)
		os.Exit(3) // no Cleanup, no Main
	}
	if _, err := lookPath("apt-get install redis-server", "redis-server"); err != nil {
		unavailable(t, err)
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphansDie$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_ORPHAN_CHILD=1")
	out, err := cmd.Output()
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("child exited %d (%v), want 3:\n%s", code, err, out)
	}
	var pid int
	for sc := bufio.NewScanner(strings.NewReader(string(out))); sc.Scan(); {
		if v, ok := strings.CutPrefix(sc.Text(), "SERVER_PID="); ok {
			pid, _ = strconv.Atoi(v)
		}
		if dir, ok := strings.CutPrefix(sc.Text(), "SERVER_DIR="); ok && strings.Contains(dir, dirPrefix) {
			defer os.RemoveAll(dir)
		}
	}
	if pid == 0 {
		t.Fatalf("child printed no SERVER_PID:\n%s", out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || regexp.MustCompile(`(?m)^State:\s+Z`).Match(status) {
			return // gone, or a zombie waiting for init to reap it
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("redis-server pid %d outlived the test binary that started it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartFailureReportsLog: a server that exits at once is reported with
// its log, as a skip or, under Required, a failure; its dir is removed.
func TestStartFailureReportsLog(t *testing.T) {
	if _, err := lookPath("apt-get install redis-server", "redis-server"); err != nil {
		unavailable(t, err)
	}
	logDir := regexp.MustCompile(`last lines of (\S+)/redis\.log`)
	for _, require := range []string{"", "1"} {
		t.Run("require="+require, func(t *testing.T) {
			t.Setenv(RequireEnv, require)
			f := &fakeTB{TB: t}
			f.run(func(tb testing.TB) {
				NewRedisWith(tb, RedisOptions{Args: []string{"--no-such-directive", "x"}})
			})
			msg := f.skipped
			if require == "1" {
				msg = f.failed
			}
			t.Logf("reported: %s", msg)
			for _, want := range []string{"exited before it was ready", "no-such-directive"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q", want)
				}
			}
			m := logDir.FindStringSubmatch(msg)
			if m == nil {
				t.Fatal("message lacks the log's tail")
			}
			if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
				t.Errorf("dir %s of the failed server left behind: %v", m[1], err)
			}
		})
	}
}

func TestNATSKillStart(t *testing.T) {
	t.Parallel()
	var n *NATSServer
	timed(t, "private nats-server started", func() { n = NewNATS(t) })
	if !strings.HasPrefix(n.URL(), "nats://127.0.0.1:") {
		t.Errorf("URL = %q, want nats://127.0.0.1:port", n.URL())
	}
	timed(t, "killed", func() { n.Kill(t) })
	if err := n.Ping(); err == nil {
		t.Fatal("Ping after Kill succeeded")
	}
	timed(t, "started again", func() { n.Start(t) })
	if err := n.Ping(); err != nil {
		t.Fatal(err)
	}
}

func TestRabbitMQ(t *testing.T) {
	t.Parallel()
	var v *RabbitVHost
	timed(t, "vhost made", func() { v = RabbitMQ(t) })
	if !strings.HasPrefix(v.URL, "amqp://guest:guest@127.0.0.1:5672/"+rabbitVHostPrefix) {
		t.Errorf("URL = %q", v.URL)
	}
	if n := v.Connections(t); n != 0 {
		t.Errorf("a new vhost has %d connections, want 0", n)
	}
	v.CloseConnections(t) // none to close: still no error
}
