// The service itself: its cluster, liveness, readiness and OpenAPI
// document.

package client

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Cluster is GET /v1/cluster: a standalone process, or a member of a
// cluster and how it sees the cluster.
type Cluster struct {
	// Mode is "standalone" or "cluster".
	Mode string
	// Status is nil when standalone.
	Status *ClusterStatus
}

// ClusterStatus is the cluster as the member that answered sees it.
type ClusterStatus struct {
	Self      string `json:"self"`
	Connected bool   `json:"connected"` // to ZooKeeper
	Leader    string `json:"leader"`
	// Version is the assignment's, -1 before the first.
	Version int64           `json:"version"`
	Members []ClusterMember `json:"members"`
}

// ClusterMember is one member of the assignment.
type ClusterMember struct {
	ID       string `json:"id"`
	Addr     string `json:"addr,omitempty"`
	Capacity int    `json:"capacity"`
	// Slots is how many slots it owns (0 until the answering member has
	// computed the map), and Shards the task store shards whose backstop
	// scan is its.
	Slots  int   `json:"slots"`
	Shards []int `json:"shards,omitempty"`
}

type clusterJSON struct {
	Mode    string          `json:"mode"`
	Members []ClusterMember `json:"members,omitempty"`
	Status  *ClusterStatus  `json:"status,omitempty"`
}

// MarshalJSON writes c as the API does: a standalone process has no
// members.
func (c Cluster) MarshalJSON() ([]byte, error) {
	w := clusterJSON{Mode: c.Mode, Status: c.Status}
	if c.Status == nil {
		return marshal(struct {
			Mode    string          `json:"mode"`
			Members []ClusterMember `json:"members"`
		}{c.Mode, []ClusterMember{}})
	}
	return marshal(w)
}

// UnmarshalJSON reads the API's JSON of the cluster.
func (c *Cluster) UnmarshalJSON(data []byte) error {
	var w clusterJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = Cluster{Mode: w.Mode, Status: w.Status}
	return nil
}

// Cluster returns the cluster as the member that answers sees it (GET
// /v1/cluster).
func (c *Client) Cluster(ctx context.Context) (*Cluster, error) {
	out := new(Cluster)
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/cluster", safety: idempotent}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Health reports whether toc is alive (GET /healthz). It is not retried.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/healthz", safety: once}, nil)
	return err
}

// Readiness is GET /readyz: whether toc can serve, by dependency.
type Readiness struct {
	// Status is "ok", "degraded" (some task store shards are down; the
	// others serve) or "unavailable".
	Status string `json:"status"`
	// Checks names each dependency (task_store, redis, zookeeper) "ok",
	// "failing" or "degraded".
	Checks map[string]string `json:"checks"`
	// Errors are the failing checks' error text, shown only to a caller
	// with a valid token (or any, when auth is off).
	Errors map[string]string `json:"errors,omitempty"`
}

// Ready returns toc's readiness (GET /readyz). When a dependency fails
// toc answers 503: Ready then returns the readiness and an *Error that is
// ErrUnavailable. It is not retried.
func (c *Client) Ready(ctx context.Context) (*Readiness, error) {
	out := new(Readiness)
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/readyz", safety: once}, out)
	if e, ok := errors.AsType[*Error](err); ok && e.Status == http.StatusServiceUnavailable {
		if json.Unmarshal(e.body, out) == nil && out.Status != "" {
			var failing []string
			for _, name := range slices.Sorted(maps.Keys(out.Checks)) {
				if out.Checks[name] != "ok" {
					failing = append(failing, name+" "+out.Checks[name])
				}
			}
			e.Code, e.Message = CodeUnavailable, "not ready: "+strings.Join(failing, ", ")
			return out, err
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// OpenAPI returns toc's OpenAPI document (GET /v1/openapi.json), as
// served.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	var doc []byte
	if _, err := c.call(ctx, request{method: http.MethodGet, path: "/v1/openapi.json", safety: idempotent}, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}
