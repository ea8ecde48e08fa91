package slots

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/toc-project/toc/timer"
)

// Defaults of a Cluster.
const (
	DefaultRoot           = "/toc"
	DefaultSessionTimeout = 6 * time.Second
	DefaultTopicPoll      = 2 * time.Second
)

// AssignScheme names the algorithm of Assign (its hash, RingPoints, the
// bound) in the assignment znode. A member that finds another scheme there
// owns nothing rather than compute a map its peers would not: change it
// whenever Assign's result changes.
const AssignScheme = "bounded-load-v1"

// Znodes under the root.
const (
	membersDir     = "members"
	electionDir    = "election"
	assignmentNode = "assignment"
	kickNode       = "kick"
	memberPrefix   = "m-"
	electionPrefix = "n-"
)

// Timing of a Cluster's retries and shutdown.
const (
	retryMin       = 50 * time.Millisecond
	retryMax       = 2 * time.Second
	sessionRetries = 5 * time.Second // the most Run waits between sessions
	topicTimeout   = 10 * time.Second
	deleteTimeout  = time.Second
	logEvery       = 10 * time.Second // rate limit of repeated warnings
	maxIDBytes     = 128
)

// ClusterConfig configures a Cluster. Fields marked with a default may be
// left zero.
type ClusterConfig struct {
	// Servers are the ZooKeeper servers, host:port each (port 2181 when
	// omitted).
	Servers []string
	// Root is the znode under which the members of one cluster meet;
	// DefaultRoot by default. Use one root per task store.
	Root string
	// SessionTimeout is how long ZooKeeper keeps the session, and so the
	// slots, of a member it no longer hears from: the bound on how long the
	// slots of a dead member stay unowned. DefaultSessionTimeout by
	// default; the server clamps it (by default to 2..20 of its ticks).
	SessionTimeout time.Duration
	// ID names this member and must be unique in the cluster;
	// "<hostname>-<pid>-<random>" by default. A second process with the same
	// ID owns nothing.
	ID string
	// Addr is where this member serves its API, shown in Status.
	Addr string
	// Capacity is shown in Status (the worker's concurrency, say); Assign
	// does not weigh members by it.
	Capacity int
	// Load bounds the slots of one member to Load times the average (see
	// Assign); DefaultLoad by default. The leader publishes its own value,
	// which every member then uses.
	Load float64
	// Topics lists every topic of the task store, as
	// timer.TopicStore.Topics does. Required.
	Topics func(ctx context.Context) ([]timer.Topic, error)
	// TopicPoll is how often the leader re-reads the topics;
	// DefaultTopicPoll by default. TopicsChanged makes it read them at once.
	TopicPoll time.Duration
	// Logger receives state changes and rate-limited warnings; discarded
	// when nil.
	Logger *slog.Logger
}

func (c ClusterConfig) withDefaults() ClusterConfig {
	c.Root = cmp.Or(c.Root, DefaultRoot)
	c.SessionTimeout = cmp.Or(c.SessionTimeout, DefaultSessionTimeout)
	c.Load = cmp.Or(c.Load, DefaultLoad)
	c.TopicPoll = cmp.Or(c.TopicPoll, DefaultTopicPoll)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first field of c that is out of range, after
// defaults are applied, as a *timer.FieldError.
func (c ClusterConfig) Validate() error {
	c = c.withDefaults()
	invalid := func(field, format string, args ...any) error {
		return &timer.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(c.Servers) == 0:
		return invalid("Servers", "at least one ZooKeeper server is required")
	case slices.Contains(c.Servers, ""):
		return invalid("Servers", "must not hold an empty address")
	case !validPath(c.Root):
		return invalid("Root", "%q is not a ZooKeeper path such as /toc", c.Root)
	case c.SessionTimeout < 0:
		return invalid("SessionTimeout", "must be positive")
	case len(c.ID) > maxIDBytes:
		return invalid("ID", "must be at most %d bytes", maxIDBytes)
	case !utf8.ValidString(c.ID):
		return invalid("ID", "must be UTF-8")
	case c.Capacity < 0:
		return invalid("Capacity", "must not be negative")
	case !(c.Load >= 1) || c.Load > 1e6:
		return invalid("Load", "%v must be from 1 to 1e6", c.Load)
	case c.Topics == nil:
		return invalid("Topics", "is required")
	case c.TopicPoll < 0:
		return invalid("TopicPoll", "must be positive")
	}
	return nil
}

// validPath reports whether p is an absolute znode path other than "/":
// no empty, "." or ".." segment, no trailing slash.
func validPath(p string) bool {
	if len(p) < 2 || p[0] != '/' {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, 0) {
			return false
		}
	}
	return true
}

// Cluster makes this process one member of a cluster that shares the slots
// of every topic through ZooKeeper: each slot is owned by exactly one live
// member, and the slots of a member that dies move to the others once its
// session expires. It is the timer.Assignment of a worker in a cluster.
//
// # Znodes
//
// Under Root (default /toc):
//
//	members/m-<guid>-<seq>    ephemeral sequential, one per member:
//	                          {"id", "addr", "capacity"}
//	election/n-<guid>-<seq>   ephemeral sequential: the leader election
//	assignment                persistent, written by the leader only: the
//	                          inputs of Assign, and its version
//	kick                      persistent, touched by a member that created
//	                          a topic so that the leader re-reads topics
//
// The sequential znodes carry a random GUID so that a create whose answer
// was lost with the connection is found again instead of made twice.
//
// # Leadership and publication
//
// The member whose election znode has the lowest sequence leads; each other
// member watches only the znode just before its own (no herd). The leader
// watches members/ and publishes the inputs of the map, never the map:
//
//	{"scheme": "bounded-load-v1", "leader": "<id>",
//	 "members": [{"id", "node", "addr", "capacity"}, ...],   sorted by id
//	 "topics": 10000, "slots": 640000, "digest": "<sha-256 hex>", "load": 1.25}
//
// The digest covers the sorted topic list ("<name>\x00<slots>\n" each), so
// the znode stays a few hundred bytes per member however many topics there
// are. The znode's data version is the assignment's version. The leader
// rewrites it when the members change, when the leader changes, and when
// the topics' digest changes: it re-reads topics every TopicPoll and when
// kicked. Each write is a multi-op that first checks that the leader's
// election znode still exists, so a leader whose session has expired
// cannot overwrite its successor's work.
//
// Every member watches the assignment (re-arming the watch each time it
// fires). For each version it reads the topics itself, from the task store,
// and computes Assign(members, topics, load) once its topic digest equals
// the published one. It keeps its previous share while it reads and
// computes; if the digests differ, or the store cannot be read, it owns
// nothing and reads again shortly (a member that sees more topics than the
// leader kicks it). When the inputs did not change (a new leader, say), the
// map is reused. A member owns slots only when the published member list
// names its own znode, so a duplicate ID owns nothing.
//
// The publication is one-phase: when a slot moves between two live
// members, the one that gains it may start before the one that loses it
// has read the new version (milliseconds, up to the time to read the topics
// and compute the map). Members at the same version never overlap, and a
// member that is not connected owns nothing. The Redis lease, not
// ownership, keeps a job with one worker; ownership spares Redis the
// duplicate claims.
//
// # Failures
//
//   - Disconnected: the member owns nothing at once, in the client's event
//     callback, before the server can expire the session (the client notices
//     the silence after 2/3 of the timeout, the server after all of it).
//     When it reconnects within the session it reads the assignment again
//     and then owns its share of it.
//   - Session expired: the member drops everything, closes the connection,
//     and starts a new session: registers again and re-enters the election.
//   - ZooKeeper down: as disconnected, for every member; they recover by
//     themselves when it returns, in their old sessions or in new ones.
//   - Member stopped: Run deletes its znodes and closes the session, so its
//     slots move at once rather than after the session timeout.
//   - Leader lost: the next member in the election leads and publishes.
//   - Task store down: the leader keeps publishing membership changes with
//     the last known topics; a member that cannot read topics owns nothing
//     until it can, unless the map it has already computed still applies.
type Cluster struct {
	cfg     ClusterConfig
	log     *slog.Logger
	kick    chan struct{}
	running atomic.Bool
	limit   logLimiter

	mu      sync.Mutex
	sess    *session   // nil between sessions
	online  bool       // sess is connected
	leader  bool       // this member leads in sess
	current *published // the assignment last installed; nil: none yet
	m       *Map       // the map of mKey's inputs, kept while they stand
	mKey    string
	mOwned  []timer.Slot
	owned   []timer.Slot  // what Owned returns
	changed chan struct{} // closed when owned changes
}

var _ timer.Assignment = (*Cluster)(nil)

// NewCluster returns a member that joins the cluster when Run is called.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster config: %w", err)
	}
	cfg = cfg.withDefaults()
	if cfg.ID == "" {
		cfg.ID = defaultID()
	}
	return &Cluster{
		cfg:     cfg,
		log:     cfg.Logger.With("member", cfg.ID),
		kick:    make(chan struct{}, 1),
		limit:   logLimiter{every: logEvery},
		changed: make(chan struct{}),
	}, nil
}

// defaultID is "<hostname>-<pid>-<6 random hex digits>".
func defaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "toc"
	}
	var b [3]byte
	rand.Read(b[:])
	id := host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	if len(id) > maxIDBytes {
		id = id[len(id)-maxIDBytes:]
	}
	return id
}

// ID returns the member's ID.
func (c *Cluster) ID() string { return c.cfg.ID }

// Owned returns the slots this member owns now, and a channel closed when
// that changes. It never blocks and never fails; it returns nothing while
// the member is disconnected from ZooKeeper, has no assignment yet, or is
// still computing the map of a new one.
func (c *Cluster) Owned(context.Context) ([]timer.Slot, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.owned), c.changed, nil
}

// TopicsChanged tells the cluster that a topic was created: the leader
// re-reads the topics now instead of at its next poll. It never blocks; a
// member that is not the leader touches the kick znode, which the leader
// watches.
func (c *Cluster) TopicsChanged() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Status describes the cluster as this member sees it.
type Status struct {
	// Self is this member's ID.
	Self string `json:"self"`
	// Connected reports whether this member is connected to ZooKeeper.
	Connected bool `json:"connected"`
	// Leader is the ID of the member that published the assignment.
	Leader string `json:"leader"`
	// Version is the assignment's version; -1 before the first.
	Version int64 `json:"version"`
	// Members are the members of the assignment, sorted by ID; Slots is
	// 0 for all of them until this member has computed the map.
	Members []MemberInfo `json:"members"`
}

// MemberInfo is one member in a Status.
type MemberInfo struct {
	ID       string `json:"id"`
	Addr     string `json:"addr,omitempty"`
	Capacity int    `json:"capacity"`
	Slots    int    `json:"slots"`
}

// Status returns the cluster as this member last saw it. It does no I/O.
func (c *Cluster) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Self: c.cfg.ID, Connected: c.online, Version: -1, Members: []MemberInfo{}}
	a := c.current
	if a == nil {
		return st
	}
	st.Leader, st.Version = a.Leader, a.Version
	var counts map[string]int
	if c.m != nil && c.mKey == a.key() {
		counts = c.m.Counts()
	}
	for _, m := range a.Members {
		st.Members = append(st.Members, MemberInfo{ID: m.ID, Addr: m.Addr, Capacity: m.Capacity, Slots: counts[m.ID]})
	}
	return st
}

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
		if registered {
			retry.reset()
		}
		if c.limit.allow("session") {
			c.log.Warn("zookeeper session ended; starting a new one", "err", err)
		}
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
		zk.WithLogger(zkLogger{c.log}),
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

// onEvent is the client's event callback: it must not block. Ownership is
// dropped here, synchronously, the moment the connection is lost.
func (c *Cluster) onEvent(s *session, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	if c.sess != s || s.expired {
		c.mu.Unlock()
		return
	}
	s.epoch++
	was, online := c.online, ev.State == zk.StateHasSession
	c.online = online
	if ev.State == zk.StateExpired {
		s.expired = true
	}
	if !online {
		c.setOwnedLocked(nil)
	}
	c.mu.Unlock()

	switch {
	case ev.State == zk.StateExpired:
		s.cancel()
		c.log.Warn("zookeeper session expired; owning no slots until registered again")
	case online:
		select {
		case s.up <- struct{}{}:
		default:
		}
		if !was && c.limit.allow("connected") {
			c.log.Info("zookeeper connected", "server", ev.Server)
		}
	case was && c.limit.allow("disconnected"):
		c.log.Warn("zookeeper disconnected; owning no slots until reconnected", "server", ev.Server)
	}
}

// endSession forgets s: nothing is owned until the next session says so.
func (c *Cluster) endSession(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.sess, c.online, c.leader = nil, false, false
		c.setOwnedLocked(nil)
	}
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

func (c *Cluster) path(parts ...string) string {
	return c.cfg.Root + "/" + strings.Join(parts, "/")
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
	data, err := json.Marshal(memberData{ID: c.cfg.ID, Addr: c.cfg.Addr, Capacity: c.cfg.Capacity})
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	if s.member, err = c.createSequential(ctx, s, membersDir, memberPrefix, data); err != nil {
		return err
	}
	s.candidate, err = c.createSequential(ctx, s, electionDir, electionPrefix, []byte(c.cfg.ID))
	return err
}

// createSequential creates an ephemeral sequential znode under dir (and
// dir, if missing) and returns its name. Its name holds a random GUID: a
// create whose reply was lost may have happened, and is then found by
// listing dir rather than made twice (a second election znode of one's own
// would stall the election).
func (c *Cluster) createSequential(ctx context.Context, s *session, dir, prefix string, data []byte) (string, error) {
	var guid [16]byte
	rand.Read(guid[:])
	name := prefix + hex.EncodeToString(guid[:]) + "-"
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
		children, _, err := s.conn.Children(dirPath)
		if err != nil {
			continue
		}
		for _, ch := range children {
			if strings.HasPrefix(ch, name) {
				return ch, nil
			}
		}
	}
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

// followAssignment reads the assignment each time it changes (re-arming
// the watch, which fires once) or the session reconnects, and installs
// this member's share of it.
func (c *Cluster) followAssignment(ctx context.Context, s *session) {
	path := c.path(assignmentNode)
	retry := newBackoff(retryMin, retryMax)
	for ctx.Err() == nil {
		epoch := c.epoch(s)
		data, stat, watch, err := getW(s.conn, path)
		if err != nil {
			c.warn("read-assignment", "read the assignment failed; retrying", err)
			t := time.NewTimer(retry.delay())
			select {
			case <-t.C:
			case <-s.up:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		retry.reset()
		var a *published
		if stat != nil {
			if a, err = decodePublished(data, stat.Version); err != nil {
				c.warn("decode-assignment", "the published assignment is unreadable; owning no slots", err)
				a = &published{Version: int64(stat.Version)}
			}
		}
		if c.follow(ctx, s, epoch, a, watch) {
			continue
		}
		select {
		case <-watch:
		case <-s.up:
		case <-ctx.Done():
		}
	}
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

// follow installs this member's share of a (nil: no assignment yet). When
// the map needs topics that do not match the published digest yet, it owns
// nothing and reads them again with backoff; it returns true, to read the
// assignment again, when watch fires or the session reconnects meanwhile.
func (c *Cluster) follow(ctx context.Context, s *session, epoch uint64, a *published, watch <-chan zk.Event) (again bool) {
	switch {
	case a == nil || a.Scheme == "":
		c.install(s, epoch, a, nil)
		return false
	case a.Scheme != AssignScheme:
		c.warn("scheme", "the assignment uses another scheme (a member of another version leads); owning no slots", fmt.Errorf("scheme %q, want %q", a.Scheme, AssignScheme))
		c.install(s, epoch, a, nil)
		return false
	}
	if node, ok := a.node(c.cfg.ID); !ok || node != s.member {
		// Not published yet, or with a znode of an ended session of this
		// member, or of another process with the same ID.
		if ok {
			if alive, _, err := s.conn.Exists(c.path(membersDir, node)); err == nil && alive {
				c.warn("duplicate", "another member has this member's ID; owning no slots", fmt.Errorf("id %q is published with znode %s, this member's is %s", c.cfg.ID, node, s.member))
			}
		}
		c.install(s, epoch, a, nil)
		return false
	}
	if m := c.mapFor(a.key()); m != nil {
		c.install(s, epoch, a, m)
		return false
	}
	retry := newBackoff(retryMin, retryMax)
	for attempt := 0; ; attempt++ {
		topics, err := c.readTopics(ctx)
		if err == nil {
			sum := summarize(topics)
			if sum.Digest == a.Digest {
				c.install(s, epoch, a, Assign(a.ids(), topics, a.Load))
				return false
			}
			if sum.Topics > a.Topics {
				c.TopicsChanged() // this member knows a topic the leader does not yet
			}
			err = fmt.Errorf("%d topics here, %d published: the digests differ", sum.Topics, a.Topics)
		}
		if attempt == 0 {
			c.install(s, epoch, a, nil)
		}
		c.warn("topics", "cannot compute the assignment yet; owning no slots", err)
		t := time.NewTimer(retry.delay())
		select {
		case <-t.C:
		case <-watch:
			again = true
		case <-s.up:
			again = true
		case <-ctx.Done():
		}
		t.Stop()
		if again || ctx.Err() != nil {
			return again
		}
	}
}

func (c *Cluster) readTopics(ctx context.Context) ([]timer.Topic, error) {
	ctx, cancel := context.WithTimeout(ctx, topicTimeout)
	defer cancel()
	topics, err := c.cfg.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return topics, nil
}

func (c *Cluster) epoch(s *session) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.epoch
}

// mapFor returns the map computed for the inputs key, if it is the last.
func (c *Cluster) mapFor(key string) *Map {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m != nil && c.mKey == key {
		return c.m
	}
	return nil
}

// install makes a the current assignment and m (nil: own nothing) its map,
// unless a session event came since the read of a began: then a newer read
// follows.
func (c *Cluster) install(s *session, epoch uint64, a *published, m *Map) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != s || s.epoch != epoch || !c.online {
		return
	}
	prev := c.current
	c.current = a
	if m == nil {
		c.setOwnedLocked(nil)
	} else {
		if key := a.key(); c.m != m {
			c.m, c.mKey, c.mOwned = m, key, m.Owned(c.cfg.ID)
		}
		c.setOwnedLocked(c.mOwned)
	}
	if a != nil && (prev == nil || prev.Version != a.Version) {
		c.log.Debug("assignment", "version", a.Version, "leader", a.Leader, "members", len(a.Members), "owned", len(c.owned), "computed", m != nil)
	}
}

// setOwnedLocked sets what Owned returns and wakes its callers if that
// changed.
func (c *Cluster) setOwnedLocked(owned []timer.Slot) {
	if slices.Equal(owned, c.owned) {
		return
	}
	c.owned = owned
	close(c.changed)
	c.changed = make(chan struct{})
}

// elect runs for leader: the member with the lowest election znode leads;
// every other one watches the znode just before its own.
func (c *Cluster) elect(ctx context.Context, s *session) {
	dir := c.path(electionDir)
	retry := newBackoff(retryMin, retryMax)
	for ctx.Err() == nil {
		children, _, err := s.conn.Children(dir)
		if err != nil {
			c.warn("election", "list election znodes failed; retrying", err)
			retry.wait(ctx)
			continue
		}
		sortBySequence(children)
		i := slices.Index(children, s.candidate)
		switch {
		case i < 0:
			// Only if someone deleted it: start over with a new session.
			c.log.Warn("this member's election znode is gone; starting a new session", "node", s.candidate)
			s.cancel()
			return
		case i == 0:
			c.lead(ctx, s)
			return
		}
		ok, _, watch, err := s.conn.ExistsW(dir + "/" + children[i-1])
		switch {
		case err != nil:
			c.warn("election", "watch the previous election znode failed; retrying", err)
			retry.wait(ctx)
			continue
		case !ok:
			continue // gone already
		}
		retry.reset()
		select {
		case <-watch:
		case <-ctx.Done():
		}
	}
}

// sortBySequence sorts sequential znode names by their sequence number
// (the digits after the last '-'), then by name.
func sortBySequence(names []string) {
	seq := func(name string) int64 {
		n, err := strconv.ParseInt(name[strings.LastIndexByte(name, '-')+1:], 10, 64)
		if err != nil {
			return 1<<63 - 1
		}
		return n
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(seq(a), seq(b)), strings.Compare(a, b))
	})
}

func (c *Cluster) isOnline(s *session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess == s && c.online
}

func (c *Cluster) setLeader(s *session, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.leader = leader
	}
}

func (c *Cluster) isLeader(s *session) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess == s && c.leader
}

// forwardKicks passes TopicsChanged to the leader: to the leader loop when
// this member leads, else through the kick znode.
func (c *Cluster) forwardKicks(ctx context.Context, s *session) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		if c.isLeader(s) {
			select {
			case s.leaderKick <- struct{}{}:
			default:
			}
			continue
		}
		p := c.path(kickNode)
		_, err := s.conn.Set(p, []byte(c.cfg.ID), -1)
		if errors.Is(err, zk.ErrNoNode) {
			_, err = s.conn.Create(p, []byte(c.cfg.ID), zk.FlagPersistent, zk.WorldACL(zk.PermAll))
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			c.warn("kick", "tell the leader of a new topic failed; it will see it at its next poll", err)
		}
	}
}

// leadership is the state of the leader loop.
type leadership struct {
	c *Cluster
	s *session

	children     []string              // of members/, as last listed
	members      map[string]memberData // by znode name; the data never changes
	membersWatch <-chan zk.Event       // nil: to list again
	kickWatch    <-chan zk.Event       // nil: to watch again
	readTopics   bool
	topics       *topicSummary // nil: unknown

	known   bool   // data and version are the znode's
	exists  bool   // the znode exists
	data    []byte // its data
	version int32
}

// lead publishes the assignment as long as this session lasts: on every
// membership change, and whenever the topics' digest changes.
func (c *Cluster) lead(ctx context.Context, s *session) {
	c.setLeader(s, true)
	defer c.setLeader(s, false)
	c.log.Info("leading the cluster")
	l := &leadership{c: c, s: s, members: make(map[string]memberData), readTopics: true}
	poll := time.NewTicker(c.cfg.TopicPoll)
	defer poll.Stop()
	retry := newBackoff(retryMin, retryMax)
	again := time.NewTimer(time.Hour) // armed only after a failure
	again.Stop()
	defer again.Stop()
	for {
		var retryC <-chan time.Time
		if err := l.publishOnce(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.warn("publish", "publish the assignment failed; retrying", err)
			again.Reset(retry.delay())
			retryC = again.C
		} else {
			retry.reset()
		}
		select {
		case <-ctx.Done():
			return
		case <-l.membersWatch:
			l.membersWatch = nil
		case <-l.kickWatch:
			l.kickWatch, l.readTopics = nil, true
		case <-s.leaderKick:
			l.readTopics = true
		case <-poll.C:
			l.readTopics = true
		case <-retryC:
		}
		again.Stop()
	}
}

// publishOnce brings what the leader knows up to date and writes the
// assignment if it differs from the published one.
func (l *leadership) publishOnce(ctx context.Context) error {
	c, conn := l.c, l.s.conn
	path := c.path(assignmentNode)
	if !l.known {
		data, stat, err := conn.Get(path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			l.exists, l.data, l.version = false, nil, 0
		case err != nil:
			return fmt.Errorf("read the assignment: %w", err)
		default:
			l.exists, l.data, l.version = true, data, stat.Version
		}
		l.known = true
		if l.topics == nil && l.exists {
			// The last leader's topics stand until the task store answers.
			if a, err := decodePublished(l.data, l.version); err == nil && a.Scheme == AssignScheme {
				l.topics = &topicSummary{Topics: a.Topics, Slots: a.Slots, Digest: a.Digest}
			}
		}
	}
	if l.readTopics {
		topics, err := c.readTopics(ctx)
		if err != nil {
			if l.topics == nil {
				return err
			}
			c.warn("leader-topics", "read topics failed; publishing with the last known ones", err)
		} else {
			sum := summarize(topics)
			l.topics, l.readTopics = &sum, false
		}
	}
	if l.membersWatch == nil {
		children, _, watch, err := conn.ChildrenW(c.path(membersDir))
		if err != nil {
			return fmt.Errorf("list members: %w", err)
		}
		l.children, l.membersWatch = children, watch
	}
	if l.kickWatch == nil {
		_, _, watch, err := conn.ExistsW(c.path(kickNode))
		if err != nil {
			return fmt.Errorf("watch %s: %w", kickNode, err)
		}
		l.kickWatch = watch
	}
	members, err := l.readMembers()
	if err != nil {
		return err
	}
	a := published{
		Scheme:  AssignScheme,
		Leader:  c.cfg.ID,
		Members: members,
		Topics:  l.topics.Topics,
		Slots:   l.topics.Slots,
		Digest:  l.topics.Digest,
		Load:    c.cfg.Load,
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode the assignment: %w", err)
	}
	if l.exists && bytes.Equal(data, l.data) {
		return nil
	}
	// Only while this member's election znode exists, that is while it
	// leads in a live session.
	ops := []any{&zk.CheckVersionRequest{Path: c.path(electionDir, l.s.candidate), Version: -1}}
	if l.exists {
		ops = append(ops, &zk.SetDataRequest{Path: path, Data: data, Version: l.version})
	} else {
		ops = append(ops, &zk.CreateRequest{Path: path, Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zk.FlagPersistent})
	}
	res, err := conn.Multi(ops...)
	if err != nil {
		l.known = false // a lost race or a lost reply: read it again
		return fmt.Errorf("write the assignment: %w", err)
	}
	l.exists, l.data, l.version = true, data, 0
	if st := res[1].Stat; st != nil {
		l.version = st.Version
	}
	c.log.Info("published the assignment", "version", l.version, "members", len(members), "topics", a.Topics, "slots", a.Slots)
	return nil
}

// readMembers reads the data of members not seen before and returns one
// entry per ID, the oldest znode winning, sorted by ID.
func (l *leadership) readMembers() ([]memberData, error) {
	c := l.c
	seen := make(map[string]bool, len(l.children))
	for _, name := range l.children {
		seen[name] = true
		if _, ok := l.members[name]; ok {
			continue
		}
		data, _, err := l.s.conn.Get(c.path(membersDir, name))
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone since the listing; the watch fires
		}
		if err != nil {
			return nil, fmt.Errorf("read member %s: %w", name, err)
		}
		var m memberData
		if err := json.Unmarshal(data, &m); err != nil || m.ID == "" {
			c.warn("member-data", "ignoring a member znode", fmt.Errorf("%s: %q is not a member", name, data))
			continue
		}
		m.Node = name
		l.members[name] = m
	}
	for name := range l.members {
		if !seen[name] {
			delete(l.members, name)
		}
	}
	names := slices.Clone(l.children)
	sortBySequence(names)
	var out []memberData
	byID := make(map[string]bool)
	for _, name := range names {
		m, ok := l.members[name]
		if !ok {
			continue
		}
		if byID[m.ID] {
			c.warn("duplicate-"+m.ID, "two members share an ID; the younger owns nothing", fmt.Errorf("id %q, znode %s", m.ID, name))
			continue
		}
		byID[m.ID] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b memberData) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// memberData is the data of a member znode, and a member in the
// assignment (where Node names its znode).
type memberData struct {
	ID       string `json:"id"`
	Node     string `json:"node,omitempty"`
	Addr     string `json:"addr,omitempty"`
	Capacity int    `json:"capacity,omitempty"`
}

// published is the data of the assignment znode: the inputs of Assign.
type published struct {
	Scheme  string       `json:"scheme"`
	Leader  string       `json:"leader"`
	Members []memberData `json:"members"`
	Topics  int          `json:"topics"`
	Slots   int          `json:"slots"`
	Digest  string       `json:"digest"`
	Load    float64      `json:"load"`

	Version int64 `json:"-"` // the znode's data version
}

func decodePublished(data []byte, version int32) (*published, error) {
	var a published
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("decode the assignment: %w", err)
	}
	a.Version = int64(version)
	return &a, nil
}

// ids returns the member IDs.
func (a *published) ids() []string {
	ids := make([]string, len(a.Members))
	for i, m := range a.Members {
		ids[i] = m.ID
	}
	return ids
}

// node returns the znode published for member id.
func (a *published) node(id string) (string, bool) {
	for _, m := range a.Members {
		if m.ID == id {
			return m.Node, true
		}
	}
	return "", false
}

// key identifies the inputs of the map: two assignments with the same key
// have the same map.
func (a *published) key() string {
	if a == nil {
		return ""
	}
	return strings.Join([]string{a.Scheme, strings.Join(a.ids(), "\x00"), a.Digest, strconv.FormatFloat(a.Load, 'g', -1, 64)}, "\x01")
}

// topicSummary identifies a topic list.
type topicSummary struct {
	Topics, Slots int
	// Digest is the hex SHA-256 of "<name>\x00<slots>\n" for each topic in
	// the order and form Assign uses (sorted by name, one per name).
	Digest string
}

func summarize(topics []timer.Topic) topicSummary {
	h := sha256.New()
	var sum topicSummary
	var buf []byte
	for _, t := range normalTopics(topics) {
		buf = append(buf[:0], t.Name...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, int64(t.Slots), 10)
		buf = append(buf, '\n')
		h.Write(buf)
		sum.Topics++
		sum.Slots += t.Slots
	}
	sum.Digest = hex.EncodeToString(h.Sum(nil))
	return sum
}

// backoff is an exponential delay with jitter.
type backoff struct {
	min, max, next time.Duration
}

func newBackoff(lo, hi time.Duration) *backoff { return &backoff{min: lo, max: hi, next: lo} }

// delay returns the next delay, in [d/2, d], and doubles d up to max.
func (b *backoff) delay() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d/2 + mathrand.N(d/2+1)
}

func (b *backoff) reset() { b.next = b.min }

// wait sleeps the next delay; false if ctx was done first.
func (b *backoff) wait(ctx context.Context) bool {
	t := time.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// warn logs err under key at most once per logEvery.
func (c *Cluster) warn(key, msg string, err error) {
	if c.limit.allow(key) {
		c.log.Warn(msg, "err", err)
	}
}

// logLimiter lets a message through per key at most once per every.
type logLimiter struct {
	every time.Duration
	mu    sync.Mutex
	last  map[string]time.Time
}

func (l *logLimiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return false
	}
	if l.last == nil {
		l.last = make(map[string]time.Time)
	}
	l.last[key] = now
	return true
}

// zkLogger sends the client library's messages to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("zookeeper client", "detail", fmt.Sprintf(format, args...))
}
