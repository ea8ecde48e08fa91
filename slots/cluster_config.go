// This file owns the configuration of a Cluster: ClusterConfig, its
// defaults and its validation.

package slots

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toc-project/toc/timer"
)

// Defaults of a ClusterConfig (and DefaultLoad, in assign.go).
const (
	// DefaultRoot is the root znode of a cluster.
	DefaultRoot = "/toc"
	// DefaultSessionTimeout is the ZooKeeper session timeout: about how
	// long the slots of a member that died stay unowned.
	DefaultSessionTimeout = 6 * time.Second
	// DefaultTopicPoll is how often the leader re-reads the topics.
	DefaultTopicPoll = 2 * time.Second
)

// Layout is the version of the Redis layout this build writes: its key
// names, the scores of the slot sets and what the Lua scripts move. Every
// build since v0.1.0 writes layout 1. A build that changes the layout
// raises it, and writes the older layout while a member that serves only
// that one is in the cluster; a member that finds one writing a newer
// layout than it knows refuses to join (see LayoutError). A member that
// advertises none (v0.1.0) writes layout 1.
const Layout = 1

// maxIDBytes bounds ClusterConfig.ID.
const maxIDBytes = 128

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
	// Build names the build of this member (its version), shown in Status.
	Build string
	// Layout is the version of the Redis layout this member writes and
	// serves; Layout by default. A member refuses to join beside one that
	// writes a newer layout (a *LayoutError from Run).
	Layout int
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
	c.Layout = cmp.Or(c.Layout, Layout)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
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
		return invalid("SessionTimeout", "%v is negative; leave it zero for %v", c.SessionTimeout, DefaultSessionTimeout)
	case len(c.ID) > maxIDBytes:
		return invalid("ID", "%d bytes, more than %d", len(c.ID), maxIDBytes)
	case !utf8.ValidString(c.ID):
		return invalid("ID", "%q is not UTF-8", c.ID)
	case c.Capacity < 0:
		return invalid("Capacity", "%d is negative", c.Capacity)
	case c.Layout < 0:
		return invalid("Layout", "%d is negative; leave it zero for %d", c.Layout, Layout)
	case !(c.Load >= 1) || c.Load > 1e6:
		return invalid("Load", "%v must be from 1 to 1e6", c.Load)
	case c.Topics == nil:
		return invalid("Topics", "is required: the leader and every member read the topics to compute the map")
	case c.TopicPoll < 0:
		return invalid("TopicPoll", "%v is negative; leave it zero for %v", c.TopicPoll, DefaultTopicPoll)
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

// DefaultID is a member id: "<hostname>-<pid>-<6 random hex digits>".
func DefaultID() string {
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
