// This file holds the Cluster type, its constructor and the znode names
// under its root; the parts of its work live in the other cluster_*.go
// files (see the package doc).

package slots

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toc-project/toc/internal/ratelog"
	"github.com/toc-project/toc/timer"
)

// Znodes under the root.
const (
	membersDir     = "members"
	electionDir    = "election"
	assignmentNode = "assignment"
	kickNode       = "kick"
	memberPrefix   = "m-"
	electionPrefix = "n-"
)

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
	limit   *ratelog.Limiter
	// replacePrevious: see ReplacePrevious.
	replacePrevious atomic.Bool

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
	orphans []timer.Slot  // owned slots whose last owner died, for Orphans
	shards  int           // task store shards, for Status (see SetShards)
}

var (
	_ timer.Assignment = (*Cluster)(nil)
	_ timer.Handover   = (*Cluster)(nil)
)

// NewCluster returns a member that joins the cluster when Run is called.
func NewCluster(cfg ClusterConfig) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster config: %w", err)
	}
	cfg = cfg.withDefaults()
	if cfg.ID == "" {
		cfg.ID = DefaultID()
	}
	return &Cluster{
		cfg:     cfg,
		log:     cfg.Logger.With("member", cfg.ID),
		kick:    make(chan struct{}, 1),
		limit:   ratelog.NewLimiter(logEvery, nil),
		changed: make(chan struct{}),
	}, nil
}

// ID returns the member's ID.
func (c *Cluster) ID() string { return c.cfg.ID }

func (c *Cluster) path(parts ...string) string {
	return c.cfg.Root + "/" + strings.Join(parts, "/")
}
