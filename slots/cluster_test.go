package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

// startThree starts members a, b and c of a fresh cluster over 64 topics of
// 16 slots on the ZooKeeper at zkAddr, and waits until they share the
// slots.
func startThree(t *testing.T, zkAddr string) (*testCluster, []*member) {
	t.Helper()
	tc := newTestCluster(t, zkAddr, 64)
	ms := []*member{tc.join("a"), tc.join("b"), tc.join("c")}
	tc.waitSettled("three members to share the slots", ms...)
	return tc, ms
}

// Three members share 1,024 slots: each slot owned once, none above
// ceil(1.25 × 1024 / 3) = 427, and each member's share is what Assign
// gives for the published inputs.
func TestClusterSharesSlots(t *testing.T) {
	z := testenv.ZooKeeper(t)
	tc, ms := startThree(t, z.Addr)
	t.Logf("counts: %v", counts(ms...))

	// The published znode holds the inputs; Owned is Assign's answer.
	conn, _, err := zk.Connect([]string{z.Addr}, testSession, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data, stat, err := conn.Get(tc.root + "/assignment")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("assignment znode, %d bytes: %s", len(data), data)
	var pub published
	if err := json.Unmarshal(data, &pub); err != nil {
		t.Fatal(err)
	}
	all, _ := tc.topics.Topics(t.Context())
	sum := summarize(all)
	if pub.Scheme != AssignScheme || pub.Digest != sum.Digest || pub.Topics != 64 || pub.Slots != 1024 || pub.Load != DefaultLoad {
		t.Fatalf("published %+v, want scheme %s, digest %s, 64 topics, 1024 slots", pub, AssignScheme, sum.Digest)
	}
	if got := pub.ids(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("published members %q", got)
	}
	m := Assign(pub.ids(), all, pub.Load)
	for _, mb := range ms {
		st := mb.Status()
		if st.Version != int64(stat.Version) {
			t.Fatalf("%s at version %d, znode at %d", mb.ID(), st.Version, stat.Version)
		}
		owned, _, _ := mb.Owned(t.Context())
		if want := m.Owned(mb.ID()); !slices.Equal(owned, want) {
			t.Errorf("%s owns %d slots, Assign gives it %d", mb.ID(), len(owned), len(want))
		}
		for _, mi := range st.Members {
			if mi.Slots != m.Counts()[mi.ID] || mi.Addr != mi.ID+".test:8080" || mi.Capacity != 64 {
				t.Errorf("%s's status of %s = %+v", mb.ID(), mi.ID, mi)
			}
		}
	}
	if leader := ms[0].Status().Leader; !slices.Contains([]string{"a", "b", "c"}, leader) {
		t.Errorf("leader %q", leader)
	}
}

// A member that stops deletes its znodes: its slots move to the others at
// once, without waiting for its session to expire.
func TestClusterMemberStops(t *testing.T) {
	tc, ms := startThree(t, testenv.ZooKeeper(t).Addr)
	a, b, c := ms[0], ms[1], ms[2]
	before := counts(a, b, c)

	start := time.Now()
	c.stop(t)
	if owned, _, _ := c.Owned(t.Context()); len(owned) != 0 {
		t.Fatalf("a stopped member owns %d slots", len(owned))
	}
	tc.waitSettled("two members to share the slots", a, b)
	t.Logf("the %d slots of the stopped member were unowned for at most %v; counts %v → %v",
		before["c"], time.Since(start).Round(time.Millisecond), before, counts(a, b))
}

// A member cut off from ZooKeeper owns nothing as soon as it notices; once
// its session expires the others take its slots; when it comes back it
// registers again, in a new session, and gets a share.
func TestClusterSessionLost(t *testing.T) {
	z := testenv.ZooKeeper(t)
	tc := newTestCluster(t, z.Addr, 64)
	a, b := tc.join("a"), tc.join("b")
	tc.waitSettled("two members to share the slots", a, b)
	px := newProxy(t, z.Addr)
	c := tc.join("c", via(px))
	tc.waitSettled("three members to share the slots", a, b, c)
	oldNode := memberNode(c.Cluster)

	px.setCut(true)
	cut := time.Now()
	waitFor(t, "the cut member to notice", func() error {
		if c.Status().Connected {
			return errors.New("still connected")
		}
		return nil
	})
	if owned, _, _ := c.Owned(t.Context()); len(owned) != 0 {
		t.Fatalf("a disconnected member owns %d slots", len(owned))
	}
	noticed := time.Since(cut)
	tc.waitSettled("the others to take the cut member's slots", a, b)
	t.Logf("cut member disconnected after %v; its slots were unowned for %v (session timeout %v)",
		noticed.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), testSession)

	px.setCut(false)
	tc.waitSettled("the member to come back", a, b, c)
	if n := len(snapshot(c.Cluster).owned); n == 0 {
		t.Fatal("the member came back with no slots")
	}
	if newNode := memberNode(c.Cluster); newNode == oldNode {
		t.Fatalf("the member kept znode %s: it did not register again", oldNode)
	}
	t.Logf("back: counts %v", counts(a, b, c))
}

func memberNode(c *Cluster) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return ""
	}
	return c.sess.member
}

// ZooKeeper down for 10 s: members own nothing while it is down, and share
// every slot again after, by themselves.
func TestClusterZooKeeperDown(t *testing.T) {
	z := testenv.NewZooKeeper(t)
	tc, ms := startThree(t, z.Addr)

	z.Kill(t)
	down := time.Now()
	waitFor(t, "every member to notice", func() error {
		for _, m := range ms {
			if v := snapshot(m.Cluster); v.online || len(v.owned) > 0 {
				return errors.New(m.ID() + " still connected or owning")
			}
		}
		return nil
	})
	t.Logf("every member owned nothing %v after the kill", time.Since(down).Round(time.Millisecond))
	// A member stopped while ZooKeeper is down returns promptly.
	stopping := time.Now()
	ms[2].stop(t)
	t.Logf("a member stopped while ZooKeeper was down returned in %v", time.Since(stopping).Round(time.Millisecond))
	ms = ms[:2]
	for time.Since(down) < 10*time.Second {
		for _, m := range ms {
			if owned, _, _ := m.Owned(t.Context()); len(owned) > 0 {
				t.Fatalf("%s owns %d slots while ZooKeeper is down", m.ID(), len(owned))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	z.Start(t)
	up := time.Now()
	tc.waitSettled("the members to share the slots again", ms...)
	t.Logf("shared again %v after ZooKeeper came back; counts %v", time.Since(up).Round(time.Millisecond), counts(ms...))
}

// When the leader dies another member leads and keeps publishing: once
// when it stops (its election znode is deleted at once), and once when it
// is cut off (its session must expire first).
func TestClusterLeaderDies(t *testing.T) {
	z := testenv.ZooKeeper(t)
	tc := newTestCluster(t, z.Addr, 64)
	px := newProxy(t, z.Addr)
	// a joins first through the proxy, so it leads.
	a := tc.join("a", via(px))
	tc.waitSettled("a to own every slot", a)
	b, c := tc.join("b"), tc.join("c")
	tc.waitSettled("three members to share the slots", a, b, c)
	if l := b.Status().Leader; l != "a" {
		t.Fatalf("leader %q, want a", l)
	}

	px.setCut(true)
	cut := time.Now()
	waitFor(t, "b or c to lead without a", func() error {
		if err := settled(tc.topics, b, c); err != nil {
			return err
		}
		if l := b.Status().Leader; l != "b" && l != "c" {
			return errors.New("leader still " + l)
		}
		return nil
	})
	next := b.Status().Leader
	t.Logf("leader a cut off; %s leads and published without a after %v", next, time.Since(cut).Round(time.Millisecond))
	follower := map[string]*member{"b": c, "c": b}[next]

	// The new leader keeps publishing: a member that joins gets a share,
	// and so does a when it comes back (no longer leading).
	d := tc.join("d")
	tc.waitSettled("d to get a share", b, c, d)
	px.setCut(false)
	tc.waitSettled("a to come back", a, b, c, d)
	if l := a.Status().Leader; l != next {
		t.Fatalf("leader %s after a came back, want %s", l, next)
	}

	// The leader stops: the next one takes over at once.
	leader := map[string]*member{"b": b, "c": c}[next]
	stopped := time.Now()
	leader.stop(t)
	waitFor(t, "another leader without "+next, func() error {
		if err := settled(tc.topics, a, follower, d); err != nil {
			return err
		}
		if l := d.Status().Leader; l == next {
			return errors.New("leader still " + l)
		}
		return nil
	})
	t.Logf("leader %s stopped; %s leads and published after %v; counts %v",
		next, d.Status().Leader, time.Since(stopped).Round(time.Millisecond), counts(a, follower, d))
}

// A topic created on a member that does not lead reaches the leader through
// the kick znode at once, not at the next poll (an hour here).
func TestClusterTopicsChanged(t *testing.T) {
	tc := newTestCluster(t, testenv.ZooKeeper(t).Addr, 8)
	hourly := func(c *ClusterConfig) { c.TopicPoll = time.Hour }
	a, b := tc.join("a", hourly), tc.join("b", hourly)
	tc.waitSettled("two members to share the slots", a, b)

	for i, name := range []string{"new-1", "new-2"} {
		follower := b
		if b.Status().Leader == "b" {
			follower = a
		}
		if i == 1 { // the leader's own hint takes the local path
			follower = map[*member]*member{a: b, b: a}[follower]
		}
		tc.topics.add(timer.Topic{Name: name, Slots: 16})
		follower.TopicsChanged()
		tc.waitSettled("the slots of "+name+" to be owned", a, b)
	}
}

// A second process with a taken ID owns nothing; the first keeps its share.
func TestClusterDuplicateID(t *testing.T) {
	tc := newTestCluster(t, testenv.ZooKeeper(t).Addr, 16)
	a, b := tc.join("a"), tc.join("b")
	tc.waitSettled("two members to share the slots", a, b)
	version := a.Status().Version

	twin := tc.join("a")
	waitFor(t, "the twin to follow the assignment", func() error {
		if v := snapshot(twin.Cluster); !v.online || v.version < version {
			return errors.New("not yet")
		}
		return nil
	})
	twin.TopicsChanged() // one more publication, which must still name the first "a"
	for range 20 {
		if err := settled(tc.topics, a, b); err != nil {
			t.Fatal(err)
		}
		if owned, _, _ := twin.Owned(t.Context()); len(owned) != 0 {
			t.Fatalf("the twin owns %d slots", len(owned))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run stops every goroutine it started, the ZooKeeper client's included.
func TestClusterNoGoroutineLeak(t *testing.T) {
	tc := newTestCluster(t, testenv.ZooKeeper(t).Addr, 8)
	before := runtime.NumGoroutine() // the sampler's included: it runs to the end
	ms := []*member{tc.join("a"), tc.join("b")}
	tc.waitSettled("two members to share the slots", ms...)
	for _, m := range ms {
		m.stop(t)
	}
	waitFor(t, "the goroutines to end", func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines more than before", n-before)
		}
		return nil
	})
}

// A member that cannot read the topics owns nothing rather than guess, and
// recovers when the task store answers again.
func TestClusterTopicsUnavailable(t *testing.T) {
	tc := newTestCluster(t, testenv.ZooKeeper(t).Addr, 16)
	var down atomic.Bool
	flaky := func(c *ClusterConfig) {
		c.Topics = func(ctx context.Context) ([]timer.Topic, error) {
			if down.Load() {
				return nil, errTopicsDown
			}
			return tc.topics.Topics(ctx)
		}
	}
	a, b := tc.join("a", flaky), tc.join("b", flaky)
	tc.waitSettled("two members to share the slots", a, b)

	down.Store(true)
	b.stop(t) // the leader publishes the new members with the last known topics
	waitFor(t, "a to follow the new version without slots", func() error {
		v := snapshot(a.Cluster)
		if len(a.Status().Members) != 1 || len(v.owned) != 0 {
			return errors.New("not yet")
		}
		return nil
	})
	down.Store(false)
	tc.waitSettled("a to own every slot", a)
}
