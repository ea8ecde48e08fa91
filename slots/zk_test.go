package slots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
	"github.com/toc-project/toc/timer"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// testSession is the session timeout of test members: the server's tick is
// 500 ms, so 2 s is allowed.
const testSession = 2 * time.Second

// settleTimeout bounds every wait for the cluster to reach a state.
const settleTimeout = 30 * time.Second

// topicList is a task store's topic list that tests can add to.
type topicList struct {
	mu     sync.Mutex
	topics []timer.Topic
}

func newTopicList(topics []timer.Topic) *topicList {
	return &topicList{topics: slices.Clone(topics)}
}

func (l *topicList) Topics(context.Context) ([]timer.Topic, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.topics), nil
}

func (l *topicList) add(t timer.Topic) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.topics = append(l.topics, t)
}

func (l *topicList) all() []timer.Slot {
	topics, _ := l.Topics(context.Background())
	var all []timer.Slot
	for _, t := range topics {
		for i := range t.Slots {
			all = append(all, timer.Slot{Topic: t.Name, Index: i})
		}
	}
	return all
}

// testRoot returns a root of the test's own on a shared server.
func testRoot(t testing.TB) string {
	var b [4]byte
	rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return "/test/" + name + "-" + hex.EncodeToString(b[:])
}

// testLogger logs through t until the test ends; the zk client and the
// members' goroutines may outlive a failed test by a little.
func testLogger(t testing.TB) *slog.Logger {
	w := &testLog{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// testCluster is one test's cluster: a fresh root on a ZooKeeper server,
// the task store's topics, a logger, and a sampler that checks the safety
// rules on every member that joins, for the whole test.
type testCluster struct {
	t       testing.TB
	zkAddr  string
	root    string
	topics  *topicList
	log     *slog.Logger
	sampler *sampler
}

// newTestCluster prepares a cluster over n topics of 16 slots on the
// ZooKeeper at zkAddr; members join it with join.
func newTestCluster(t testing.TB, zkAddr string, n int) *testCluster {
	return &testCluster{
		t:       t,
		zkAddr:  zkAddr,
		root:    testRoot(t),
		topics:  newTopicList(uniformTopics("t", n, 16)),
		log:     testLogger(t),
		sampler: startSampler(t),
	}
}

// member is a Cluster running in the background.
type member struct {
	*Cluster
	cancel context.CancelFunc
	done   chan struct{}
}

type memberOption func(*ClusterConfig)

// via connects a member to ZooKeeper through p.
func via(p *proxy) memberOption {
	return func(c *ClusterConfig) { c.Servers = []string{p.Addr()} }
}

// join runs member id, connected to the cluster's ZooKeeper unless an
// option says otherwise, until the test ends or stop is called, and adds
// it to the sampler.
func (tc *testCluster) join(id string, opts ...memberOption) *member {
	t := tc.t
	t.Helper()
	cfg := ClusterConfig{
		Servers:        []string{tc.zkAddr},
		Root:           tc.root,
		SessionTimeout: testSession,
		ID:             id,
		Addr:           id + ".test:8080",
		Capacity:       64,
		Topics:         tc.topics.Topics,
		TopicPoll:      500 * time.Millisecond,
		Logger:         tc.log,
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{Cluster: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		if err := c.Run(ctx); err != nil {
			t.Errorf("%s: Run: %v", id, err)
		}
	}()
	t.Cleanup(func() { m.stop(t) })
	tc.sampler.add(m)
	return m
}

// stop cancels Run and waits for it to return.
func (m *member) stop(t testing.TB) {
	t.Helper()
	m.cancel()
	select {
	case <-m.done:
	case <-time.After(settleTimeout):
		t.Fatalf("%s: Run did not return", m.ID())
	}
}

// waitSettled waits until members, and only they, share every slot (see
// settled).
func (tc *testCluster) waitSettled(what string, members ...*member) {
	tc.t.Helper()
	waitFor(tc.t, what, func() error { return settled(tc.topics, members...) })
}

// view is a member's state at one instant.
type view struct {
	id      string
	online  bool
	version int64
	owned   []timer.Slot
}

func snapshot(c *Cluster) view {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := view{id: c.cfg.ID, online: c.online, version: -1, owned: slices.Clone(c.owned)}
	if c.current != nil {
		v.version = c.current.Version
	}
	return v
}

// checkViews reports a violation of the safety rules in views taken one
// after the other: a member that is not connected owns nothing, and
// members that follow the same assignment version own disjoint slots.
//
// Members at different versions may overlap: a slot moves from X to Y in
// version v, and Y has read v while X has not yet (ZooKeeper notifies them
// one by one, and each reads the znode and computes the map). That window
// is inherent to publishing one map for all; lag reports it, and the
// sampler logs how often and how long it was seen. (The Redis lease, not
// ownership, is what keeps a job from firing twice.)
func checkViews(views []view) (lag bool, err error) {
	type owner struct {
		id      string
		version int64
	}
	owners := make(map[timer.Slot]owner)
	for _, v := range views {
		if !v.online {
			if len(v.owned) > 0 {
				return false, fmt.Errorf("%s is disconnected but owns %d slots", v.id, len(v.owned))
			}
			continue
		}
		for _, s := range v.owned {
			o, dup := owners[s]
			switch {
			case !dup:
				owners[s] = owner{v.id, v.version}
			case o.version == v.version:
				return false, fmt.Errorf("slot %s owned by %s and %s, both connected at version %d", s, o.id, v.id, v.version)
			default:
				lag = true
			}
		}
	}
	return lag, nil
}

// sampler checks the safety rules on frequent samples of all members,
// for the whole test.
type sampler struct {
	mu         sync.Mutex
	members    []*Cluster
	samples    int
	violations []string
	lagged     int           // samples with members at different versions overlapping
	lagFrom    time.Time     // start of the current run of such samples
	lagMax     time.Duration // longest run
	stop       chan struct{}
	done       chan struct{}
}

// startSampler samples the members added to it until the test ends.
func startSampler(t testing.TB) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() {
		close(s.stop)
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		t.Logf("sampler: %d samples, %d violations; %d samples (longest run %v) with an overlap between members at different versions",
			s.samples, len(s.violations), s.lagged, s.lagMax.Round(time.Microsecond))
		for _, v := range s.violations {
			t.Error(v)
		}
	})
	return s
}

func (s *sampler) add(m *member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members = append(s.members, m.Cluster)
}

func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		members := slices.Clone(s.members)
		s.mu.Unlock()
		views := make([]view, len(members))
		for i, c := range members {
			views[i] = snapshot(c)
		}
		lag, err := checkViews(views)
		now := time.Now()
		s.mu.Lock()
		s.samples++
		if err != nil && len(s.violations) < 10 {
			s.violations = append(s.violations, "sampler: "+err.Error())
		}
		switch {
		case lag && s.lagFrom.IsZero():
			s.lagged++
			s.lagFrom = now
		case lag:
			s.lagged++
			s.lagMax = max(s.lagMax, now.Sub(s.lagFrom))
		default:
			s.lagFrom = time.Time{}
		}
		s.mu.Unlock()
	}
}

// waitFor polls cond until it returns nil, or fails the test with its last
// error after settleTimeout.
func waitFor(t testing.TB, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settled reports nil when members, and only they, share every slot of
// topics: all connected, at one version that lists exactly them, every slot
// owned once, none above the bound.
func settled(topics *topicList, members ...*member) error {
	var ids []string
	views := make([]view, len(members))
	for i, m := range members {
		ids = append(ids, m.ID())
		views[i] = snapshot(m.Cluster)
		if !views[i].online {
			return fmt.Errorf("%s is not connected", m.ID())
		}
		if views[i].version != views[0].version {
			return fmt.Errorf("%s at version %d, %s at %d", m.ID(), views[i].version, members[0].ID(), views[0].version)
		}
	}
	slices.Sort(ids)
	for _, m := range members {
		st := m.Status()
		var got []string
		for _, mi := range st.Members {
			got = append(got, mi.ID)
		}
		if !slices.Equal(got, ids) {
			return fmt.Errorf("%s sees members %q, want %q", m.ID(), got, ids)
		}
	}
	all := topics.all()
	bound := (len(all)*5 + 4*len(members) - 1) / (4 * len(members)) // ceil(1.25 × slots / members)
	owners := make(map[timer.Slot]string, len(all))
	for _, v := range views {
		if len(v.owned) > bound {
			return fmt.Errorf("%s owns %d slots, above the bound %d", v.id, len(v.owned), bound)
		}
		for _, s := range v.owned {
			if o, dup := owners[s]; dup {
				return fmt.Errorf("slot %s owned by %s and %s", s, o, v.id)
			}
			owners[s] = v.id
		}
	}
	if len(owners) != len(all) {
		return fmt.Errorf("%d of %d slots owned", len(owners), len(all))
	}
	return nil
}

func counts(members ...*member) map[string]int {
	out := make(map[string]int)
	for _, m := range members {
		out[m.ID()] = len(snapshot(m.Cluster).owned)
	}
	return out
}

// proxy forwards TCP connections to a ZooKeeper server until cut, which
// closes them and refuses new ones: one member loses ZooKeeper while the
// others keep it.
type proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t testing.TB, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			down.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			io.Copy(dst, src)
			dst.Close()
			src.Close()
			p.mu.Lock()
			delete(p.conns, dst)
			delete(p.conns, src)
			p.mu.Unlock()
		}
		p.wg.Go(func() { pipe(up, down) })
		p.wg.Go(func() { pipe(down, up) })
	}
}

// setCut cuts (closing every connection) or restores the proxy.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

func TestCheckViews(t *testing.T) {
	a := timer.Slot{Topic: "t", Index: 0}
	b := timer.Slot{Topic: "t", Index: 1}
	tests := []struct {
		name    string
		views   []view
		ok, lag bool
	}{
		{"disjoint", []view{{id: "x", online: true, version: 3, owned: []timer.Slot{a}}, {id: "y", online: true, version: 3, owned: []timer.Slot{b}}}, true, false},
		{"overlap", []view{{id: "x", online: true, version: 3, owned: []timer.Slot{a}}, {id: "y", online: true, version: 3, owned: []timer.Slot{a}}}, false, false},
		{"overlap across versions", []view{{id: "x", online: true, version: 3, owned: []timer.Slot{a}}, {id: "y", online: true, version: 4, owned: []timer.Slot{a}}}, true, true},
		{"offline owner", []view{{id: "x", online: false, version: 3, owned: []timer.Slot{a}}}, false, false},
		{"offline empty", []view{{id: "x", online: false, version: 3}, {id: "y", online: true, version: 3, owned: []timer.Slot{a}}}, true, false},
	}
	for _, tt := range tests {
		lag, err := checkViews(tt.views)
		if (err == nil) != tt.ok || lag != tt.lag {
			t.Errorf("%s: checkViews = %v, %v; want ok=%v, lag=%v", tt.name, lag, err, tt.ok, tt.lag)
		}
	}
}

var errTopicsDown = errors.New("task store down")
