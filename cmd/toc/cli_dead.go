// The client's dead letter commands: dead list|replay|purge.

package main

import (
	"context"
	"strconv"

	"github.com/toc-project/toc/http/client"
)

// deadFields are the columns of a table of dead letters: a job's, with
// when it died.
var deadFields = []string{"id", "topic", "died_at", "status", "fire_at", "attempts", "max_attempts", "last_status", "last_error", "version", "group_id"}

// deadQuery are the flags of toc dead list.
func deadQuery(fs *flagSet) prepareCall {
	var q client.DeadQuery
	fs.StringVar(&q.Topic, "topic", "", "the dead letters' topic (none: every topic the token may see)")
	from := fs.timeVar("from", "dead at or after this RFC 3339 time")
	to := fs.timeVar("to", "dead before this RFC 3339 time")
	fs.StringVar(&q.Error, "error", "", "whose last error holds this text")
	fs.StringVar(&q.Cursor, "cursor", "", "where the page starts: the next of the page before")
	fs.Var(fs.Lookup("cursor").Value, "after", "the same as --cursor")
	fs.IntVar(&q.Limit, "limit", 0, "page size (0: the API's, 100)")
	return func([]string) (call, error) {
		q.From, q.To = *from, *to
		return func(ctx context.Context, c *client.Client) (any, error) { return c.DeadLetters(ctx, q) }, nil
	}
}

// replayFlags are the flags of toc dead replay.
func replayFlags(fs *flagSet) prepareCall {
	return idWhenFlags(fs, false, (*client.Client).ReplayDead)
}

// purged is the answer of toc dead purge, as the API's.
type purged struct {
	ID     string `json:"id"`
	Purged bool   `json:"purged"`
}

// purge purges a dead letter; in the form of a method of the client, for
// onJob.
func purge(c *client.Client, ctx context.Context, id uint64) (purged, error) {
	if err := c.PurgeDead(ctx, id); err != nil {
		return purged{}, err
	}
	return purged{ID: strconv.FormatUint(id, 10), Purged: true}, nil
}
