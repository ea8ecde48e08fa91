// The client's group commands: groups create|get|seal.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toc-project/toc/http/client"
)

// statusOrder is the order a group's counts are printed in.
var statusOrder = []string{"pending", "firing", "done", "cancelled", "dead", "purged", "expired"}

// printGroup prints a group and its members' counts by status.
func printGroup(w io.Writer, o map[string]any) {
	printTable(w, []string{"id", "sealed", "completed", "total", "created_at", "sealed_at", "completed_at", "completion_job_id"}, o)
	fmt.Fprintln(w)
	counts, _ := o["counts"].(map[string]any)
	row := map[string]any{}
	for _, st := range statusOrder {
		row[st] = counts[st]
	}
	printTable(w, statusOrder, row)
	if cb, ok := o["on_complete"].(map[string]any); ok {
		fmt.Fprintln(w)
		printTable(w, []string{"callback_url", "topic"}, cb)
	}
}

// groupCreateFlags are the flags of toc groups create.
func groupCreateFlags(fs *flagSet) prepareCall {
	url := fs.string("on-complete", "", "callback URL called once every member has ended (none: the group only counts)")
	topic := fs.string("topic", "", "topic of the completion job (default groups)")
	payload := fs.string("payload", "", "payload of the completion, a JSON value")
	return func(args []string) (call, error) {
		r := client.GroupRequest{ID: args[0]}
		if *url != "" {
			r.OnComplete = &client.GroupCallback{CallbackURL: *url, Topic: *topic}
			if *payload != "" {
				if !json.Valid([]byte(*payload)) {
					return nil, errors.New("--payload is not valid JSON")
				}
				r.OnComplete.Payload = json.RawMessage(*payload)
			}
		} else if *topic != "" || *payload != "" {
			return nil, errors.New("--topic and --payload need --on-complete")
		}
		return func(ctx context.Context, c *client.Client) (any, error) {
			g, _, err := c.CreateGroup(ctx, r)
			return g, err
		}, nil
	}
}

// onGroup is a command of one group id.
func onGroup(do func(c *client.Client, ctx context.Context, id string) (*client.Group, error)) func(fs *flagSet) prepareCall {
	return func(*flagSet) prepareCall {
		return func(args []string) (call, error) {
			if args[0] == "" {
				return nil, errors.New("a group id is required")
			}
			return func(ctx context.Context, c *client.Client) (any, error) { return do(c, ctx, args[0]) }, nil
		}
	}
}
