// This file owns membership: the session loop (Run), the ZooKeeper
// session and what happens when it expires, the registration of this
// member's ephemeral znodes, their deletion when it stops, and the helper
// that reads a znode and re-arms its watch.

package slots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Run takes part in the cluster until ctx is done, then gives up its
// slots, deletes its znodes, closes its session and returns nil. (If
// ZooKeeper cannot be reached then, it returns at once and the session
// expires on the server.) It survives ZooKeeper outages and session expiry
// by itself. A Cluster runs once at a time.
func (c *Cluster) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("slots: Cluster.Run is already running")
	}
	defer c.running.Store(false)
	retry := newBackoff(retryMin, sessionRetries)
	for {
		registered, err := c.runSession(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if le := (*LayoutError)(nil); errors.As(err, &le) {
			return err
		}
		if registered {
			retry.reset()
		}
		c.warn("session", "zookeeper session ended; starting a new one", err)
		if !retry.wait(ctx) {
			return nil
		}
	}
}

// session is one ZooKeeper session and what this member created in it.
type session struct {
	conn   *zk.Conn
	cancel context.CancelFunc
	// up receives a token each time the session is (again) connected.
	up chan struct{}
	// leaderKick passes TopicsChanged to the leader loop.
	leaderKick chan struct{}
	// member and candidate are the names of this member's znodes under
	// members/ and election/; set before the session's goroutines start.
	member, candidate string

	// Guarded by Cluster.mu.
	epoch   uint64 // counts session events: a read made in an older epoch is stale
	expired bool
}

var errExpired = errors.New("zookeeper session expired")

// runSession runs one session: connect, register, follow the assignment,
// run for leader, until the session expires or ctx is done. It reports
// whether the member got registered.
func (c *Cluster) runSession(ctx context.Context) (registered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{cancel: cancel, up: make(chan struct{}, 1), leaderKick: make(chan struct{}, 1)}
	c.mu.Lock()
	c.sess = s
	c.mu.Unlock()
	defer c.endSession(s)

	conn, _, err := zk.Connect(c.cfg.Servers, c.cfg.SessionTimeout,
		zk.WithLogger(zkLogger{log: c.log, limit: c.limit}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(func(ev zk.Event) { c.onEvent(s, ev) }))
	if err != nil {
		return false, fmt.Errorf("connect to zookeeper: %w", err)
	}
	s.conn = conn
	defer c.closeSession(s)
	// A call to a server that is gone waits for the client to give up on
	// it; closing the connection ends the wait at once. Connected, the
	// calls are quick, and closeSession first deletes the znodes.
	stop := context.AfterFunc(ctx, func() {
		if !c.isOnline(s) {
			conn.Close()
		}
	})
	defer stop()

	if err := c.register(ctx, s); err != nil {
		return false, c.sessionErr(s, err)
	}
	c.log.Info("joined the cluster", "node", s.member)
	var wg sync.WaitGroup
	wg.Go(func() { c.followAssignment(ctx, s) })
	wg.Go(func() { c.elect(ctx, s) })
	wg.Go(func() { c.forwardKicks(ctx, s) })
	wg.Wait()
	return true, c.sessionErr(s, ctx.Err())
}

func (c *Cluster) sessionErr(s *session, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.expired {
		return errExpired
	}
	return err
}

// closeSession deletes this member's znodes, so that the others learn at
// once that it left, and closes the connection, which ends the session.
func (c *Cluster) closeSession(s *session) {
	c.mu.Lock()
	c.setOwnedLocked(nil) // first: the others may own them soon
	live := !s.expired && c.online && s.member != ""
	c.mu.Unlock()
	if live {
		ops := []any{&zk.DeleteRequest{Path: c.path(membersDir, s.member), Version: -1}}
		if s.candidate != "" {
			ops = append(ops, &zk.DeleteRequest{Path: c.path(electionDir, s.candidate), Version: -1})
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.conn.Multi(ops...) // best effort: closing the session deletes them too
		}()
		t := time.NewTimer(deleteTimeout)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		s.conn.Close() // makes a Multi still waiting return
		<-done
		return
	}
	s.conn.Close()
}

// register waits for the session, creates the directories and this
// member's znodes.
func (c *Cluster) register(ctx context.Context, s *session) error {
	waiting := time.NewTicker(logEvery)
	defer waiting.Stop()
	for connected := false; !connected; {
		select {
		case <-s.up:
			connected = true
		case <-waiting.C:
			c.log.Warn("not connected to zookeeper yet; owning no slots", "servers", strings.Join(c.cfg.Servers, ","))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := c.checkLayouts(s); err != nil {
		return err
	}
	data, err := json.Marshal(memberData{ID: c.cfg.ID, Addr: c.cfg.Addr, Capacity: c.cfg.Capacity, Build: c.cfg.Build, Layout: c.cfg.Layout})
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	if s.member, err = c.registerMember(ctx, s, data); err != nil {
		return err
	}
	s.candidate, err = c.createSequential(ctx, s, electionDir, electionPrefix, []byte(c.cfg.ID))
	return err
}

// LayoutError is Run's error when a member of the cluster writes a newer
// Redis layout than this build serves: joining, this member would
// misread the jobs that one wrote. Upgrade this member's build.
type LayoutError struct {
	Member string // the newer member's id
	Build  string // its build, "" if it does not say
	Layout int    // the layout it writes
	Mine   int    // the layout this build serves
}

func (e *LayoutError) Error() string {
	build := ""
	if e.Build != "" {
		build = " (build " + e.Build + ")"
	}
	return fmt.Sprintf("member %s%s writes Redis layout %d, and this build serves layout %d at most: "+
		"it would misread that member's jobs, so it does not join; run a build that serves layout %d (see docs/operations.md, Upgrades)",
		e.Member, build, e.Layout, e.Mine, e.Layout)
}

// checkLayouts returns a *LayoutError when a member already registered
// writes a newer Redis layout than this build serves.
func (c *Cluster) checkLayouts(s *session) error {
	names, _, err := s.conn.Children(c.path(membersDir))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the members: %w", err)
	}
	for _, name := range names {
		data, _, err := s.conn.Get(c.path(membersDir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return fmt.Errorf("read member %s: %w", name, err)
		}
		m, err := parseMember(name, data)
		if err != nil {
			continue // not a member: the assignment skips it too
		}
		if m.layout() > c.cfg.Layout {
			return &LayoutError{Member: m.ID, Build: m.Build, Layout: m.layout(), Mine: c.cfg.Layout}
		}
	}
	return nil
}

// createSequential creates an ephemeral sequential znode under dir (and
// dir, if missing) and returns its name. Its name holds a random GUID: a
// create whose reply was lost may have happened, and is then found by
// listing dir rather than made twice (a second election znode of one's own
// would stall the election).
func (c *Cluster) createSequential(ctx context.Context, s *session, dir, prefix string, data []byte) (string, error) {
	name := protectedName(prefix)
	dirPath := c.path(dir)
	retry := newBackoff(retryMin, retryMax)
	for ensured := false; ; {
		p, err := s.conn.Create(dirPath+"/"+name, data, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
		if err == nil {
			return p[len(dirPath)+1:], nil
		}
		if errors.Is(err, zk.ErrNoNode) && !ensured { // nothing was created
			if err = c.ensurePath(s, dirPath); err == nil {
				ensured = true
				continue
			}
		}
		c.warn("create-"+dir, "create znode failed; retrying", err)
		if !retry.wait(ctx) {
			return "", ctx.Err()
		}
		if created, ok := c.findCreated(s, dir, name); ok {
			return created, nil
		}
	}
}

// protectedName is the name, before ZooKeeper's sequence number, of a
// sequential znode to create: prefix and a random GUID, by which
// findCreated finds it when the reply to its create was lost.
func protectedName(prefix string) string {
	var guid [16]byte
	rand.Read(guid[:])
	return prefix + hex.EncodeToString(guid[:]) + "-"
}

// findCreated returns the znode under dir whose name begins with name (a
// protectedName), if a create whose reply was lost made it.
func (c *Cluster) findCreated(s *session, dir, name string) (string, bool) {
	children, _, err := s.conn.Children(c.path(dir))
	if err != nil {
		return "", false
	}
	for _, ch := range children {
		if strings.HasPrefix(ch, name) {
			return ch, true
		}
	}
	return "", false
}

// ensurePath creates the persistent znode p and its parents.
func (c *Cluster) ensurePath(s *session, p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		_, err := s.conn.Create(p[:i], nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p[:i], err)
		}
	}
	return nil
}

// getW reads p and watches it; when p does not exist it returns a nil Stat
// and watches for its creation.
func getW(conn *zk.Conn, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	for {
		data, stat, watch, err := conn.GetW(p)
		if !errors.Is(err, zk.ErrNoNode) {
			return data, stat, watch, err
		}
		ok, _, watch, err := conn.ExistsW(p)
		if err != nil {
			return nil, nil, nil, err
		}
		if !ok {
			return nil, nil, watch, nil
		}
		// Created in between: the exists watch fires on its next change.
	}
}

// memberData is the data of a member znode, and a member in the
// assignment (where Node names its znode).
type memberData struct {
	ID       string `json:"id"`
	Node     string `json:"node,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Capacity int    `json:"capacity,omitempty"`
	Build    string `json:"build,omitempty"`
	// Layout is the Redis layout the member writes; 0 (a member that
	// does not say: v0.1.0) is layout 1.
	Layout int `json:"layout,omitempty"`
}

// layout is the Redis layout m writes.
func (m memberData) layout() int { return max(m.Layout, 1) }

// parseMember decodes the data of the member znode name; a member must
// have an ID.
func parseMember(name string, data []byte) (memberData, error) {
	var m memberData
	if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
		return memberData{}, fmt.Errorf("%s: %q is not a member", name, data)
	}
	m.Node = name
	return m, nil
}
