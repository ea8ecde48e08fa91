package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// MariaDBServer is a mariadbd listening on Addr, 127.0.0.1:port, and on a
// unix socket, with a passwordless root account. Dir holds data/ (the data
// dir), the socket and LogFile, the error log (Addr, Dir and LogFile are
// fields of the embedded server). Start, after a Kill, waits until SELECT 1
// works over TCP; InnoDB recovers what was committed.
type MariaDBServer struct {
	server

	Socket string // unix socket path, for the mariadb client

	bin, client string // mariadbd and mariadb binaries
	user        string // for --user, required when running as root
	dbSeq       atomic.Int64
}

var sharedMariaDB = onceShared(startMariaDB)

// MariaDB returns the package's shared mariadbd, started on first use and
// stopped by [Main]. A failed start is reported to every caller. If a test
// killed the server and left it down, MariaDB starts it again. Tests get a
// database of their own with [MariaDBServer.NewDatabase].
func MariaDB(tb testing.TB) *MariaDBServer {
	tb.Helper()
	return useShared(tb, "MariaDB", sharedMariaDB)
}

// NewMariaDB starts a private mariadbd that tb's Cleanup stops and deletes;
// for tests that kill and restart it. It takes about a second and 100 MB.
func NewMariaDB(tb testing.TB) *MariaDBServer {
	tb.Helper()
	return newPrivate(tb, startMariaDB)
}

func startMariaDB() (*MariaDBServer, error) {
	bins, err := lookPath("apt-get install mariadb-server", "mariadbd", "mariadb-install-db", "mariadb")
	if err != nil {
		return nil, err
	}
	m := &MariaDBServer{bin: bins[0], client: bins[2], user: currentUser()}
	m.cmdline, m.ping = m.argv, m.ready
	if err := m.init("mariadbd", "mariadb", "mariadbd.log"); err != nil {
		return nil, err
	}
	m.Socket = filepath.Join(m.Dir, "mysqld.sock")
	if err := m.installDB(bins[1]); err != nil {
		os.RemoveAll(m.Dir)
		return nil, err
	}
	if err := m.listen(nil); err != nil {
		return nil, err
	}
	return m, nil
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if os.Getuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Getuid())
}

// installDB creates the system tables in Dir/data (about 0.8 s).
//
// Its temporary files go to Dir/tmp: in the shared /tmp, installs running
// at once (one per test package) collided on their temporary tables and
// one failed ("Unknown table 'mysql.tmp_user_sys'", or a crash), 2 of 12
// when four ran at once on the CI machine; 0 of 24 with a tmpdir each.
func (m *MariaDBServer) installDB(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*readyTimeout)
	defer cancel()
	if err := os.MkdirAll(m.tmpDir(), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin,
		"--no-defaults", // must come first
		"--datadir="+filepath.Join(m.Dir, "data"),
		"--tmpdir="+m.tmpDir(),
		"--user="+m.user,
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		logFile := filepath.Join(m.Dir, "install.log")
		os.WriteFile(logFile, out, 0o644)
		return fmt.Errorf("mariadb-install-db: %w\n%s", err, logTail(logFile, 25))
	}
	return nil
}

// tmpDir holds the server's temporary files, its own (see installDB).
func (m *MariaDBServer) tmpDir() string { return filepath.Join(m.Dir, "tmp") }

func (m *MariaDBServer) argv() []string {
	return []string{m.bin,
		"--no-defaults", // must come first
		"--user=" + m.user,
		"--datadir=" + filepath.Join(m.Dir, "data"),
		"--port=" + strconv.Itoa(m.port),
		"--bind-address=127.0.0.1",
		"--socket=" + m.Socket,
		"--pid-file=" + filepath.Join(m.Dir, "mysqld.pid"),
		"--tmpdir=" + m.tmpDir(),
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--max-connections=1000",
	}
}

// ready checks the TCP port first, which is cheap, then runs SELECT 1
// through it with the client.
func (m *MariaDBServer) ready() error {
	conn, err := net.DialTimeout("tcp", m.Addr, time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	return m.Ping()
}

// Ping runs SELECT 1 over TCP with the mariadb client.
func (m *MariaDBServer) Ping() error {
	out, err := m.run("--protocol=TCP", "--host=127.0.0.1", "--port="+strconv.Itoa(m.port),
		"--connect-timeout=2", "-e", "SELECT 1")
	if err != nil {
		return err
	}
	if out != "1" {
		return fmt.Errorf("mariadb %s: SELECT 1 returned %q", m.Addr, out)
	}
	return nil
}

// NewDatabase creates an empty database with a unique name, dropped by tb's
// Cleanup, and returns a go-sql-driver/mysql DSN for it:
//
//	root@tcp(127.0.0.1:PORT)/NAME?parseTime=false&multiStatements=true&interpolateParams=true
//
// See [MariaDBServer.DSN] for the parameters.
func (m *MariaDBServer) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", m.dbSeq.Add(1), sanitizeName(tb.Name(), 40))
	if _, err := m.run("-e", "CREATE DATABASE `"+name+"`"); err != nil {
		tb.Fatalf("testenv: create database: %v", err)
	}
	tb.Cleanup(func() {
		if !m.proc.running() {
			return // killed and left down: a private server goes with its dir
		}
		// A connection left holding a lock must not hang the cleanup.
		if _, err := m.run("-e", "SET SESSION lock_wait_timeout = 5; DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			tb.Logf("testenv: drop database %s: %v", name, err)
		}
	})
	return m.DSN(name)
}

// DSN returns a go-sql-driver/mysql DSN for database db as root over TCP:
//
//   - parseTime=false: DATE and DATETIME columns scan into []byte or string,
//     not time.Time (the driver's default, stated so tests match production);
//   - multiStatements=true: one Exec may run several statements, as a
//     migration file does;
//   - interpolateParams=true: the driver substitutes ? placeholders itself
//     instead of a prepare and execute round trip per query (15–60 % faster
//     here); safe with utf8mb4, the server's character set.
func (m *MariaDBServer) DSN(db string) string {
	return fmt.Sprintf("root@tcp(%s)/%s?parseTime=false&multiStatements=true&interpolateParams=true", m.Addr, db)
}

// Exec runs SQL as root through the unix socket with the mariadb client and
// returns its output in batch form: one line per row, tab-separated values,
// no column names, trailing newline trimmed. Several statements may be
// separated by semicolons. It fails the test on any error.
func (m *MariaDBServer) Exec(tb testing.TB, sql string) string {
	tb.Helper()
	out, err := m.run("-e", sql)
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	return out
}

// run runs the mariadb client as root; without connection flags it uses the
// unix socket.
func (m *MariaDBServer) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	argv := append([]string{
		"--no-defaults", // must come first
		"--user=root",
		"--socket=" + m.Socket,
		"--batch", "--skip-column-names",
	}, args...)
	cmd := exec.CommandContext(ctx, m.client, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("mariadb %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// sanitizeName keeps [a-z0-9_] of a test name, for a database name.
func sanitizeName(s string, n int) string {
	b := make([]byte, 0, len(s))
	for _, c := range []byte(strings.ToLower(s)) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
		if len(b) == n {
			break
		}
	}
	return string(b)
}
