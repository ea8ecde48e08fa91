// The client's cluster command.

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/toc-project/toc/http/client"
)

func cluster(ctx context.Context, c *client.Client) (any, error) { return c.Cluster(ctx) }

// printCluster prints GET /v1/cluster: the mode, and in a cluster this
// member's view and the members.
func printCluster(w io.Writer, c map[string]any) {
	printTable(w, []string{"mode"}, c)
	s, ok := c["status"].(map[string]any)
	if !ok {
		return
	}
	fmt.Fprintln(w)
	printTable(w, []string{"self", "leader", "version", "connected"}, s)
	fmt.Fprintln(w)
	printTable(w, []string{"id", "build", "addr", "capacity", "slots", "shards"}, objects(s["members"])...)
}
