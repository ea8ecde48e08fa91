package lua

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// MaxBatch caps the members one script call handles, so no call blocks
// Redis for long. Callers split larger batches.
const MaxBatch = 1000

// Client is what the wrappers need of a go-redis client: scripting and
// pipelines. *redis.Client, *redis.ClusterClient and redis.UniversalClient
// all satisfy it.
type Client interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

var (
	//go:embed add.lua
	addSrc string
	//go:embed claim.lua
	claimSrc string
	//go:embed ack.lua
	ackSrc string
	//go:embed retry.lua
	retrySrc string
	//go:embed sweep.lua
	sweepSrc string
	//go:embed revive.lua
	reviveSrc string
	//go:embed defer.lua
	deferSrc string
	//go:embed unclaim.lua
	unclaimSrc string
	// memberSrc defines level(member), the due set a member's suffix
	// names, and earliest(sets), the lowest score of a slot's due
	// sets; it opens every script, as Redis scripts cannot share code.
	//go:embed member.lua
	memberSrc string
)

var (
	addScript     = redis.NewScript(memberSrc + addSrc)
	claimScript   = redis.NewScript(memberSrc + claimSrc)
	ackScript     = redis.NewScript(memberSrc + ackSrc)
	retryScript   = redis.NewScript(memberSrc + retrySrc)
	sweepScript   = redis.NewScript(memberSrc + sweepSrc)
	reviveScript  = redis.NewScript(memberSrc + reviveSrc)
	deferScript   = redis.NewScript(memberSrc + deferSrc)
	unclaimScript = redis.NewScript(memberSrc + unclaimSrc)
)

// scripts names every script, for Load and tests.
var scripts = map[string]*redis.Script{
	"add":     addScript,
	"claim":   claimScript,
	"ack":     ackScript,
	"retry":   retryScript,
	"sweep":   sweepScript,
	"revive":  reviveScript,
	"defer":   deferScript,
	"unclaim": unclaimScript,
}

// SlotGroups returns the scripts, by SHA1, whose calls on one server
// hold several slots, and how many keys each slot has in a call: add's
// eight, ack's one. Each group shares one Redis Cluster slot; on a
// cluster a call holds one group.
func SlotGroups() map[string]int {
	return map[string]int{addScript.Hash(): 8, ackScript.Hash(): 1}
}

// Load loads every script into the server's script cache (on a cluster,
// into every master), so that the first calls need no fallback. Calling
// it is optional: wrappers fall back to EVAL on NOSCRIPT.
func Load(ctx context.Context, c redis.Scripter) error {
	for name, s := range scripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("load script %s: %w", name, err)
		}
	}
	return nil
}

// call is one script invocation.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
}

// run runs calls by EVALSHA, in one pipeline when there are several, and
// returns their replies in order. A call answered NOSCRIPT did not run; it
// is run again by EVAL, which also caches the script. Any other error of
// any call is returned (calls that succeeded stay done).
func run(ctx context.Context, c Client, calls []call) ([]any, error) {
	out, errs := runEach(ctx, c, calls)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runEach is run, with each call's reply and error: out[i] and errs[i]
// answer calls[i].
func runEach(ctx context.Context, c Client, calls []call) (out []any, errs []error) {
	out, errs = make([]any, len(calls)), make([]error, len(calls))
	if len(calls) == 1 {
		cl := calls[0]
		out[0], errs[0] = cl.script.Run(ctx, c, cl.keys, cl.args...).Result()
		return out, errs
	}
	cmds := make([]*redis.Cmd, len(calls))
	pipe := c.Pipeline()
	for i, cl := range calls {
		cmds[i] = cl.script.EvalSha(ctx, pipe, cl.keys, cl.args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var again []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		pipe = c.Pipeline()
		for _, i := range again {
			cl := calls[i]
			cmds[i] = cl.script.Eval(ctx, pipe, cl.keys, cl.args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, cmd := range cmds {
		out[i], errs[i] = cmd.Val(), cmd.Err()
	}
	return out, errs
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// errReply is returned when a script's reply does not have the documented
// shape.
var errReply = errors.New("unexpected script reply")

func replyArray(v any, n int) ([]any, error) {
	a, ok := v.([]any)
	if !ok || len(a) != n {
		return nil, fmt.Errorf("%w: %v (%T), want %d-element array", errReply, v, v, n)
	}
	return a, nil
}

func replyInt(v any) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("%w: %v (%T), want integer", errReply, v, v)
	}
	return n, nil
}

func replyStrings(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %v (%T), want array", errReply, v, v)
	}
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %v (%T), want string", errReply, x, x)
		}
		out[i] = s
	}
	return out, nil
}

// replyPairs decodes a reply's array of members and the array of numbers
// (what: tokens, attempts) that goes with it, one for each member.
func replyPairs(members, numbers any, what string) ([]string, []int64, error) {
	ms, err := replyStrings(members)
	if err != nil {
		return nil, nil, err
	}
	ns, err := replyInts(numbers)
	if err != nil {
		return nil, nil, err
	}
	if len(ns) != len(ms) {
		return nil, nil, fmt.Errorf("%w: %d members, %d %s", errReply, len(ms), len(ns), what)
	}
	return ms, ns, nil
}

func replyInts(v any) ([]int64, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %v (%T), want array", errReply, v, v)
	}
	out := make([]int64, len(a))
	for i, x := range a {
		n, err := replyInt(x)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}
