// Package pause holds the one way toc's packages sleep: for a while, or
// until a context is done.
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx is done, when it returns ctx's error.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
