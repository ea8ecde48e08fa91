package timer

import (
	"context"
	"sync"
	"time"
)

// commitTimeout bounds one group commit. It is detached from the callers'
// contexts: a caller that gave up must still learn whether its row was
// written, so that "an error means nothing was written" stays true.
const commitTimeout = 30 * time.Second

// maxGroup caps the requests committed together.
const maxGroup = 1000

// group gathers concurrent Schedule calls into shared commits: one
// multi-row INSERT and one Redis pipeline for all the requests that
// arrived while the previous commit was running. There is no timer: with
// one caller a request commits at once, and under load batches form by
// themselves, as large as the commit is slow.
//
// A commit has two steps: commit writes the rows, and the func it returns
// (nil for none) does what follows, the Redis write. The next group's
// INSERT starts as soon as commit returns, while this group's Redis write
// runs: the two steps of consecutive groups overlap, and the callers are
// answered after both of theirs.
type group struct {
	commit func(ctx context.Context, reqs []Request) ([]Result, func(), error)

	mu      sync.Mutex
	pending []*groupCall
	busy    bool // a leader is committing
}

type groupCall struct {
	req  Request
	res  Result
	err  error
	done chan struct{}
	lead chan struct{} // closed when this call must commit the next group
}

// do commits r with whatever else is waiting and returns its result.
func (g *group) do(ctx context.Context, r Request) (Result, error) {
	c := &groupCall{req: r, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, c)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !lead {
		select {
		case <-c.done:
			return c.res, c.err
		case <-c.lead:
		}
	}
	g.flush(context.WithoutCancel(ctx))
	<-c.done
	return c.res, c.err
}

// flush commits one group, hands leadership to the oldest waiting call,
// if any, so that no caller leads forever, and then finishes the group
// and answers its callers.
func (g *group) flush(ctx context.Context) {
	g.mu.Lock()
	n := min(len(g.pending), maxGroup)
	batch := g.pending[:n:n]
	g.pending = g.pending[n:]
	g.mu.Unlock()

	reqs := make([]Request, len(batch))
	for i, c := range batch {
		reqs[i] = c.req
	}
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	results, then, err := g.commit(ctx, reqs)
	g.handOff()
	if then != nil {
		then()
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res, c.err = results[i], results[i].Err
		}
		close(c.done)
	}
}

// handOff makes the oldest waiting call the leader, or the group idle.
func (g *group) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) == 0 {
		g.busy = false
		return
	}
	close(g.pending[0].lead)
}
