package slots

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/internal/testenv"
)

// A member refuses to join beside one that writes a newer Redis layout,
// and says who and which; beside one of its own layout it joins, and
// every member's build shows in the status.
func TestClusterRefusesANewerLayout(t *testing.T) {
	z := testenv.ZooKeeper(t)
	tc := newTestCluster(t, z.Addr, 8)
	newer := tc.join("newer", func(c *ClusterConfig) { c.Layout, c.Build = Layout+1, "v9.0.0" })
	same := tc.join("same", func(c *ClusterConfig) { c.Build = "v0.2.0" })
	tc.waitSettled("two members to share the slots", newer, same)
	for _, mi := range same.Status().Members {
		if want := map[string]string{"newer": "v9.0.0", "same": "v0.2.0"}[mi.ID]; mi.Build != want {
			t.Errorf("status of %s: build %q, want %q", mi.ID, mi.Build, want)
		}
	}

	c, err := NewCluster(ClusterConfig{Servers: []string{z.Addr}, Root: tc.root, SessionTimeout: testSession,
		ID: "older", Topics: tc.topics.Topics, Logger: tc.log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err = c.Run(ctx)
	var le *LayoutError
	if !errors.As(err, &le) || le.Member != "newer" || le.Layout != Layout+1 || le.Mine != Layout || ctx.Err() != nil {
		t.Fatalf("Run beside a newer layout = %v, want a *LayoutError naming member newer", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "v9.0.0") || !strings.Contains(msg, "Upgrades") {
		t.Errorf("the error does not say which build or where to read: %s", msg)
	}
	tc.waitSettled("the two members to keep the slots", newer, same)
}
