package main

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/client"
	"github.com/toc-project/toc/internal/contract"
)

// The group methods of package client and the toc groups commands
// against toc dev: create, a member joining with --group, seal, and the
// group completing once its member fired.
func TestGroupsClientAndCLI(t *testing.T) {
	p, _ := startDev(t)
	c, err := client.New(p.url, client.WithHTTPClient(&http.Client{Transport: contract.Shared(t).Transport(t, nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	run := func(args ...string) string {
		t.Helper()
		r := cli(t, nil, append(args, "--server", p.url)...)
		if r.code != 0 {
			t.Fatalf("toc %q: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	out := run("groups", "create", "export-7")
	if !strings.Contains(out, "export-7") || !strings.Contains(out, "PENDING") {
		t.Errorf("groups create printed:\n%s", out)
	}
	run("schedule", "--topic", "parts", "--callback", "http://127.0.0.1:9/part", "--delay", "1h", "--group", "export-7")
	j, _, err := c.Schedule(ctx, client.JobRequest{Topic: "parts", CallbackURL: "http://127.0.0.1:9/part", Delay: time.Hour, GroupID: "export-7"})
	if err != nil || j.GroupID != "export-7" {
		t.Fatalf("Schedule: %+v, %v", j, err)
	}
	if _, _, err := c.Schedule(ctx, client.JobRequest{Topic: "parts", CallbackURL: "http://127.0.0.1:9/part", GroupID: "nope"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a job of an unknown group: %v, want ErrInvalid", err)
	}
	g, err := c.SealGroup(ctx, "export-7")
	if err != nil || !g.Sealed || g.Total != 2 || g.Counts[client.Status("pending")] != 2 {
		t.Fatalf("SealGroup: %+v, %v", g, err)
	}
	out = run("groups", "get", "export-7")
	if !strings.Contains(out, "true") || !strings.Contains(out, "2") {
		t.Errorf("groups get printed:\n%s", out)
	}
	if _, err := c.Cancel(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Search(ctx, client.SearchQuery{Topic: "parts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Jobs {
		if j.Status == "pending" {
			if _, err := c.Cancel(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		g, err = c.GetGroup(ctx, "export-7")
		if err == nil && g.Completed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not completed: %+v, %v", g, err)
		}
	}
	if g.CompletedCounts[client.Status("cancelled")] != 2 || g.OnComplete != nil {
		t.Errorf("completed group: %+v", g)
	}
}
