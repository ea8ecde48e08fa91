package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toc-project/toc/internal/testenv"
)

var nodeLine = regexp.MustCompile(`msg="node number leased" node=(\d+)`)

// nodeOf returns the node number p logged at start.
func nodeOf(t *testing.T, p *proc) int {
	t.Helper()
	m := nodeLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no node number in the log:\n%s", tail(p.stderr.String(), 10))
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// Issue 13: processes sharing a task store never share a node number.
// Two standalone members lease 0 and 1; a third asking for --node 0 is
// refused, naming the holder; a member that stops releases its number for
// the next.
func TestStandaloneMembersLeaseDistinctNodes(t *testing.T) {
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	serve := func(extra ...string) []string {
		return append([]string{"serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--api-token", "t",
			"--webhook-secret", e2eSecret}, extra...)
	}
	a := startToc(t, "t", serve()...)
	b := startToc(t, "t", serve()...)
	if na, nb := nodeOf(t, a), nodeOf(t, b); na == nb {
		t.Fatalf("both members lease node %d", na)
	}

	out, err := runTocCmd(t, append(serve("--node", strconv.Itoa(nodeOf(t, a))), "--addr", testenv.FreeAddr(t))...)
	if err == nil {
		t.Fatalf("a member given a held --node started:\n%s", out)
	}
	if !strings.Contains(out, "is leased by") {
		t.Errorf("the refusal does not name the holder:\n%s", tail(out, 5))
	}

	freed := nodeOf(t, a)
	a.stop(t)
	if c := startToc(t, "t", serve()...); nodeOf(t, c) != freed {
		t.Errorf("after the holder of %d stopped, the next member leased %d", freed, nodeOf(t, c))
	}
}

// Three members of a ZooKeeper cluster lease three numbers.
func TestClusterMembersLeaseDistinctNodes(t *testing.T) {
	_, members := startCluster(t, 3)
	seen := map[int]bool{}
	for _, m := range members {
		n := nodeOf(t, m)
		if seen[n] {
			t.Errorf("node %d leased twice", n)
		}
		seen[n] = true
	}
}
