package main

import (
	"fmt"
	"testing"
	"time"
)

// Issue 13: a member's death costs a session timeout, not a lease. Three
// members with a one-minute lease; 6,000 jobs due over 12 s across six
// topics; one member SIGKILLed halfway. The others take its slots once
// ZooKeeper ends its session and take back the leases it held at once, so
// every job arrives, none early, and none later than the session timeout
// plus a second, where waiting out the leases would make some a minute
// late.
func TestClusterMemberDeathCostsSessionTimeout(t *testing.T) {
	const session = 3 * time.Second
	r, members := startClusterWith(t, tocBin, 3, session, time.Minute)
	hook := r.srv.URL + "/hook"
	start := time.Now().Add(3 * time.Second)
	var ids []string
	for i := range 6 {
		ids = append(ids, scheduleBatches(t, members[i%3], fmt.Sprintf("death%d", i), hook, 1000, start, 12*time.Second)...)
	}
	time.Sleep(time.Until(start.Add(6 * time.Second)))
	members[1].kill(t)
	r.wait(t, r.expect(ids), 90*time.Second)
	r.check(t)

	late := r.lateness(ids)
	worst := late[len(late)-1]
	t.Logf("%d jobs arrived; lateness p50 %v p99 %v max %v (session timeout %v)",
		len(ids), percentile(late, .5), percentile(late, .99), worst, session)
	if limit := session + time.Second; worst > limit {
		t.Errorf("a job arrived %v late, more than the session timeout plus 1 s (%v)", worst, limit)
	}
}
