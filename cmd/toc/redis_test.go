package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The Redis flags choose the client: one address a server, a list (or
// --redis-cluster) a cluster, --redis-sentinel-master a failover client;
// contradictions are refused naming the flags.
func TestRedisFlagsChooseClient(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		want    string // the client's type, or the error's words
		wantErr bool
	}{
		{nil, "*redis.Client", false},
		{[]string{"--redis-addr", "127.0.0.1:7000,127.0.0.1:7001"}, "*redis.ClusterClient", false},
		{[]string{"--redis-addr", "127.0.0.1:7000", "--redis-cluster"}, "*redis.ClusterClient", false},
		{[]string{"--redis-addr", "127.0.0.1:26379", "--redis-sentinel-master", "mymaster"}, "*redis.Client", false},
		{[]string{"--redis-addr", "127.0.0.1:6379", "--redis-tls"}, "*redis.Client", false},
		{[]string{"--redis-addr", " , "}, "--redis-addr is empty", true},
		{[]string{"--redis-addr", "a:1,b:2", "--redis-db", "3"}, "--redis-db 3", true},
		{[]string{"--redis-cluster", "--redis-sentinel-master", "m"}, "exclude each other", true},
		{[]string{"--redis-tls-ca", ca}, "no PEM certificate", true},
		{[]string{"--redis-tls-ca", ca + ".missing"}, "--redis-tls-ca", true},
		{[]string{"--redis-tls-server-name", "redis.internal"}, "needs --redis-tls", true},
	} {
		fs := newFlagSet("t", "t")
		fs.SetOutput(io.Discard)
		f := addRedisFlags(fs)
		if err := fs.parse(tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		c, err := f.client()
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error saying %q", tc.args, err, tc.want)
		case !tc.wantErr && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case !tc.wantErr:
			if got := typeName(c); got != tc.want {
				t.Errorf("%q: a %s, want a %s", tc.args, got, tc.want)
			}
			c.Close()
		}
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	case *redis.Client:
		return "*redis.Client"
	}
	return "other"
}

// A node whose dial failed is not dialled again for nodeDownFor, and the
// failure asks for a reload of the slot map; a command error is no
// connection failure.
func TestNodeHookFailsFastAndReloads(t *testing.T) {
	reloads := 0
	h := &nodeHook{reload: func() { reloads++ }}
	dials := 0
	dial := h.DialHook(func(context.Context, string, string) (net.Conn, error) {
		dials++
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	ctx := t.Context()
	if _, err := dial(ctx, "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("dial succeeded")
	}
	_, err := dial(ctx, "tcp", "127.0.0.1:1")
	if dials != 1 || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("second dial within %v: %d dials, err %v; want 1 dial and a refusal", nodeDownFor, dials, err)
	}
	if reloads != 1 {
		t.Errorf("%d reloads, want 1", reloads)
	}

	for _, tc := range []struct {
		err    error
		broken bool
	}{
		{nil, false},
		{io.EOF, true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{errors.New("CLUSTERDOWN The cluster is down"), true},
		{errors.New("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{errors.New("ERR wrong number of arguments"), false},
		{redis.Nil, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
	} {
		if got := brokenConn(tc.err); got != tc.broken {
			t.Errorf("brokenConn(%v) = %v, want %v", tc.err, got, tc.broken)
		}
	}
}
