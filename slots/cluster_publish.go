// This file owns the publication of the assignment: its format (the
// inputs of Assign, not the map), the leader loop that writes it when the
// members or the topics' digest change, and the kick znode through which
// any member makes the leader re-read the topics.

package slots

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/toc-project/toc/timer"
)

// AssignScheme names the algorithm of Assign (its hash, RingPoints, the
// bound) in the assignment znode. A member that finds another scheme there
// owns nothing rather than compute a map its peers would not: change it
// whenever Assign's result changes.
const AssignScheme = "bounded-load-v1"

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
		m, err := parseMember(name, data)
		if err != nil {
			c.warn("member-data", "ignoring a member znode", err)
			continue
		}
		l.members[name] = m
	}
	for name := range l.members {
		if !seen[name] {
			delete(l.members, name)
		}
	}
	out, younger := oldestPerID(l.children, l.members)
	for _, m := range younger {
		c.warn("duplicate-"+m.ID, "two members share an ID; the younger owns nothing", fmt.Errorf("id %q, znode %s", m.ID, m.Node))
	}
	return out, nil
}

// oldestPerID returns the members of the znodes names whose data members
// holds, one per ID, the oldest znode (lowest sequence) winning, sorted by
// ID; and, in the order of their znodes, the younger ones it left out.
func oldestPerID(names []string, members map[string]memberData) (out, younger []memberData) {
	names = slices.Clone(names)
	sortBySequence(names)
	byID := make(map[string]bool)
	for _, name := range names {
		m, ok := members[name]
		if !ok {
			continue
		}
		if byID[m.ID] {
			younger = append(younger, m)
			continue
		}
		byID[m.ID] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b memberData) int { return strings.Compare(a.ID, b.ID) })
	return out, younger
}
