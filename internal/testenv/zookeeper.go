package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ZooKeeper server settings. With tickTime 500 ms a client may ask for
// session timeouts from 1 s (so expiry tests are quick) to 60 s.
const (
	zkTickTime          = 500
	zkMinSessionTimeout = 1000
	zkMaxSessionTimeout = 60000
	zkMain              = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	debianZKJar         = "/usr/share/java/zookeeper.jar"
)

// ZKServer is a standalone ZooKeeper server listening on 127.0.0.1: Addr
// is the client port, Dir holds zoo.cfg, data/ and the log (Addr, Dir and
// LogFile are fields of the embedded server). Start, after a
// Kill, waits until it serves ("srvr" reports a Mode); sessions survive a
// Kill and Start if clients reconnect within their session timeout.
type ZKServer struct {
	server

	java, classpath string
}

var sharedZK = onceShared(startZK)

// ZooKeeper returns the package's shared ZooKeeper server, started on first
// use and stopped by [Main]. A failed start is reported to every caller. If a
// test killed the server and left it down, ZooKeeper starts it again.
func ZooKeeper(tb testing.TB) *ZKServer {
	tb.Helper()
	return useShared(tb, "ZooKeeper", sharedZK)
}

// NewZooKeeper starts a private ZooKeeper server that tb's Cleanup stops and
// deletes; for tests that kill and restart it.
func NewZooKeeper(tb testing.TB) *ZKServer {
	tb.Helper()
	return newPrivate(tb, startZK)
}

func startZK() (*ZKServer, error) {
	bins, err := lookPath("apt-get install zookeeper, which pulls a JRE", "java")
	if err != nil {
		return nil, err
	}
	cp, err := zkClasspath()
	if err != nil {
		return nil, err
	}
	z := &ZKServer{java: bins[0], classpath: cp}
	z.cmdline, z.ping = z.argv, z.Ping
	if err := z.init("zookeeper", "zk", "zookeeper.log"); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(z.Dir, "data"), 0o755); err != nil {
		os.RemoveAll(z.Dir)
		return nil, fmt.Errorf("zookeeper: %w", err)
	}
	if err := z.listen(z.writeConfig); err != nil {
		return nil, err
	}
	return z, nil
}

// zkClasspath finds the ZooKeeper jars: an upstream distribution under
// $ZOOKEEPER_HOME, else Debian's zookeeper.jar, whose manifest Class-Path
// names its dependencies (jute, netty, slf4j-api, ...) but no slf4j binding,
// so one is added for the server to log anything.
func zkClasspath() (string, error) {
	if home := os.Getenv("ZOOKEEPER_HOME"); home != "" {
		jars, _ := filepath.Glob(filepath.Join(home, "lib", "*.jar"))
		if len(jars) == 0 {
			return "", &missingError{what: "no jars in $ZOOKEEPER_HOME/lib", hint: "ZOOKEEPER_HOME=" + home}
		}
		return strings.Join(append([]string{filepath.Join(home, "conf")}, jars...), ":"), nil
	}
	if _, err := os.Stat(debianZKJar); err != nil {
		return "", &missingError{what: debianZKJar + " not found", hint: "apt-get install zookeeper, or set ZOOKEEPER_HOME"}
	}
	cp := []string{debianZKJar}
	for _, binding := range []string{"slf4j-simple.jar", "slf4j-jdk14.jar", "slf4j-nop.jar"} {
		p := filepath.Join(filepath.Dir(debianZKJar), binding)
		if _, err := os.Stat(p); err == nil {
			cp = append(cp, p)
			break
		}
	}
	return strings.Join(cp, ":"), nil
}

func (z *ZKServer) writeConfig() error {
	cfg := fmt.Sprintf(`tickTime=%d
minSessionTimeout=%d
maxSessionTimeout=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=*
`, zkTickTime, zkMinSessionTimeout, zkMaxSessionTimeout, filepath.Join(z.Dir, "data"), z.port)
	if err := os.WriteFile(filepath.Join(z.Dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

func (z *ZKServer) argv() []string {
	return []string{z.java,
		"-Xms64m", "-Xmx256m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", // starts faster; tests do not need C2
		"-XX:-UsePerfData",        // no /tmp/hsperfdata_* files
		"-Djava.awt.headless=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-cp", z.classpath,
		zkMain, filepath.Join(z.Dir, "zoo.cfg"),
	}
}

// Ping sends "srvr" and reports an error unless the answer has a Mode: line
// ("ruok" answers imok before the server serves).
func (z *ZKServer) Ping() error {
	// A server that is not serving yet may answer and then leave the
	// connection open: stop reading as soon as the answer is known.
	out, err := z.fourLetter("srvr", time.Second, func(out string) bool {
		return strings.Contains(out, zkNotServing) || zkModeLine.MatchString(out)
	})
	if zkModeLine.MatchString(out) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("zookeeper %s: not serving: srvr answered %q", z.Addr, out)
}

const zkNotServing = "not currently serving requests"

var zkModeLine = regexp.MustCompile(`(?m)^Mode: \S+\n`)

// FourLetterWord sends a four-letter command ("srvr", "stat", "cons",
// "mntr", ...; all are allowed) and returns the answer.
func (z *ZKServer) FourLetterWord(word string) (string, error) {
	return z.fourLetter(word, 5*time.Second, nil)
}

// fourLetter sends word and reads the answer until the server closes the
// connection, done reports the answer complete, or timeout passes.
func (z *ZKServer) fourLetter(word string, timeout time.Duration, done func(string) bool) (string, error) {
	conn, err := net.DialTimeout("tcp", z.Addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", z.Addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", fmt.Errorf("zookeeper %s: %w", z.Addr, err)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		return "", fmt.Errorf("zookeeper %s: %s: %w", z.Addr, word, err)
	}
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		out.Write(buf[:n])
		if done != nil && done(out.String()) {
			return out.String(), nil
		}
		if errors.Is(err, io.EOF) {
			return out.String(), nil
		}
		if err != nil {
			return out.String(), fmt.Errorf("zookeeper %s: %s: %w", z.Addr, word, err)
		}
	}
}
