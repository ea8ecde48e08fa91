package main

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// Issue 34, item 1: a member whose clock is 2 s ahead of the task
// store's, or 2 s behind it (--clock-skew), beside a correct one on the
// same MariaDB, Redis and ZooKeeper, with jobs due across both members'
// slots: every job arrives, none before its due time by the receiver's
// clock (the machine's, which the task store's is), none seconds late,
// and the wrong member says so in /readyz and toc_clock_offset_seconds.
// The control: the same member told to trust its own clock
// (--clock-reference local) fires early, so the drill can tell.
func TestSkewedMemberFiresNothingEarly(t *testing.T) {
	for _, tc := range []struct {
		skew  time.Duration
		ref   string
		early bool // the control: some job must arrive early
	}{
		{2 * time.Second, "store", false},
		{-2 * time.Second, "store", false},
		{2 * time.Second, "local", true},
	} {
		t.Run(fmt.Sprintf("%v %s", tc.skew, tc.ref), func(t *testing.T) {
			clockDrill(t, tc.skew, tc.ref, tc.early)
		})
	}
}

func clockDrill(t *testing.T, skew time.Duration, ref string, wantEarly bool) {
	zkAddr := testenv.ZooKeeper(t).Addr
	dsn := testenv.MariaDB(t).NewDatabase(t)
	rds := testenv.Redis(t)
	secret := "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	prefix := fmt.Sprintf("ck%d:", time.Now().UnixNano())
	root := fmt.Sprintf("/toc-clock-%d", time.Now().UnixNano())
	r := newReceiver(t, secret)
	hook := r.srv.URL + "/hook"
	member := func(id string, extra ...string) *proc {
		return startToc(t, "tok3n", append([]string{"serve", "--mysql-dsn", dsn, "--redis-addr", rds.Addr, "--redis-prefix", prefix,
			"--api-token", "tok3n", "--webhook-secret", secret, "--allow-private-callbacks", "--slots", "64",
			"--zk", zkAddr, "--zk-root", root, "--zk-session-timeout", "2s", "--member-id", id}, extra...)...)
	}
	right := member("right")
	wrong := member("wrong", "--clock-skew", skew.String(), "--clock-reference", ref)
	ps := []*proc{right, wrong}
	if status, body := right.call(t, "POST", "/v1/jobs", map[string]any{"topic": "orders", "delay_ms": 0, "callback_url": hook}); status != http.StatusCreated {
		t.Fatalf("schedule: %d %v", status, body)
	}
	counts := waitSettled(t, ps, 2, 64, 30*time.Second)
	if counts["right"] == 0 || counts["wrong"] == 0 {
		t.Fatalf("both members must own slots: %v", counts)
	}

	// 600 jobs at fire_at over 2 s, through the correct member, and 100
	// by delay_ms through the wrong one (its "now" makes their due time).
	start := time.Now().Add(3 * time.Second)
	ids := scheduleBatches(t, right, "orders", hook, 600, start, 2*time.Second)
	type delayed struct {
		id   string
		sent time.Time
	}
	var byDelay []delayed
	for i := range 100 {
		sent := time.Now()
		status, body := wrong.call(t, "POST", "/v1/jobs", map[string]any{"topic": "orders", "delay_ms": 2500 + 10*i, "callback_url": hook})
		if status != http.StatusCreated {
			t.Fatalf("schedule by delay through the wrong member: %d %v", status, body)
		}
		byDelay = append(byDelay, delayed{body["id"].(string), sent.Add(time.Duration(2500+10*i) * time.Millisecond)})
		ids = append(ids, body["id"].(string))
	}
	r.wait(t, r.expect(ids), 60*time.Second)

	early := 0
	r.mu.Lock()
	for _, b := range r.bad {
		if strings.Contains(b, "before its due time") {
			early++
		}
	}
	// A job scheduled by delay is due delay after the request at the
	// earliest: before that it is early whatever fire_at it was given.
	for _, d := range byDelay {
		if at := r.arrived[d.id][0]; at.Before(d.sent) {
			early++
			r.bad = append(r.bad, fmt.Sprintf("job %s, scheduled by delay_ms, arrived %v before the delay ran out", d.id, d.sent.Sub(at)))
		}
	}
	r.mu.Unlock()
	if wantEarly {
		if early == 0 {
			t.Fatalf("trusting a clock %v ahead, no job arrived early: the drill cannot tell", skew)
		}
		t.Logf("the control: trusting its own clock, %v ahead, the member fired %d of %d jobs early", skew, early, len(ids))
		return
	}
	r.check(t)
	late := r.lateness(ids)
	if worst := late[len(late)-1]; worst > 1500*time.Millisecond {
		t.Errorf("a job arrived %v late: the wrong member's %v is not corrected", worst, skew)
	}
	t.Logf("%d jobs, none early; lateness p50 %v, max %v", len(ids), late[len(late)/2], late[len(late)-1])

	// The wrong member says so; the right one does not.
	body := waitReady(t, wrong, 15*time.Second, map[string]string{"clock": "failing"})
	if body["status"] != "unavailable" {
		t.Errorf("/readyz of the member %v off: %v", skew, body)
	}
	_, body = readyz(t, wrong, "tok3n")
	errs, _ := body["errors"].(map[string]any)
	way := map[bool]string{true: "ahead of", false: "behind"}[skew > 0]
	if msg, _ := errs["clock"].(string); !strings.Contains(msg, way) {
		t.Errorf("/readyz's clock error of the member %v off: %q, want it to say %q", skew, msg, way)
	}
	offset, err := strconv.ParseFloat(metricOf(t, wrong, "toc_clock_offset_seconds"), 64)
	if err != nil || offset < skew.Seconds()-0.1 || offset > skew.Seconds()+0.1 {
		t.Errorf("toc_clock_offset_seconds of the member %v off = %v (%v)", skew, offset, err)
	}
	waitReady(t, right, 15*time.Second, map[string]string{"clock": "ok"})
}
