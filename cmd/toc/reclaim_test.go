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
// plus a second over the p99 of the jobs due in the calm before the
// kill, where waiting out the leases would make some a minute late.
func TestClusterMemberDeathCostsSessionTimeout(t *testing.T) {
	const session = 3 * time.Second
	r, members := startClusterWith(t, tocBin, 3, session, time.Minute)
	hook := r.srv.URL + "/hook"
	start := time.Now().Add(5 * time.Second)
	var ids []string
	for i := range 6 {
		ids = append(ids, scheduleBatches(t, members[i%3], fmt.Sprintf("death%d", i), hook, 1000, start, 12*time.Second)...)
	}
	scheduled := time.Now()
	time.Sleep(time.Until(start.Add(6 * time.Second)))
	killed := time.Now()
	members[1].kill(t)
	r.wait(t, r.expect(ids), 90*time.Second)
	r.check(t)

	// The jobs due from a second after the last was scheduled (those due
	// earlier were late by the scheduling, or by the backlog it left) to
	// a second before the kill (those due later may be under way in the
	// member killed) show how late the machine is without the death: a
	// few ms idle, more on CI's beside other packages' tests. The death
	// may add a session timeout and a second to that, not a lease.
	before := r.dueWhere(ids, func(due time.Time) bool {
		return due.After(scheduled.Add(time.Second)) && due.Before(killed.Add(-time.Second))
	})
	var calm time.Duration
	if len(before) >= 100 {
		calm = percentile(r.lateness(before), .99)
	}
	late := r.lateness(ids)
	worst := late[len(late)-1]
	t.Logf("%d jobs arrived; lateness p50 %v p99 %v max %v (session timeout %v); p99 of the %d due in the calm before the kill %v (0 if under 100)",
		len(ids), percentile(late, .5), percentile(late, .99), worst, session, len(before), calm)
	if limit := session + time.Second + calm; worst > limit {
		t.Errorf("a job arrived %v late, more than the session timeout plus 1 s over the calm's p99 (%v)", worst, limit)
	}
}
