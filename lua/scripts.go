package lua

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/slots"
)

// AddMode says how add treats members already in the slot.
type AddMode string

// Modes of Add.
const (
	// ModeSet adds each member to its due set or replaces its score
	// there.
	ModeSet AddMode = "set"
	// ModeRestore adds only members in none of their due set, Prepare
	// and Dead.
	ModeRestore AddMode = "restore"
	// ModeNew is ModeRestore without the search of later buckets, for the
	// timers of jobs just committed: see add.lua.
	ModeNew AddMode = "new"
)

// Entry is one member with its decoded score. The member carries its
// priority (see Member).
type Entry struct {
	Member  string
	Ms      int64
	Attempt int
}

// AddCall is one run of the add script: entries for one slot.
type AddCall struct {
	Keys slots.KeySet
	Mode AddMode
	// WakeChannel is the channel the script publishes to when the slot's
	// earliest due time (over its three due sets) moves earlier; ""
	// publishes nothing.
	WakeChannel string
	// WakeMessage starts the published message, "<topic> <slot>"; the
	// script appends " <due ms>".
	WakeMessage string
	// Entries are at most MaxBatch members with their due ms and attempt.
	Entries []Entry
	// WindowMs, when not nil, holds the flexible window of each entry
	// (0 for none), in the order of Entries: a member with one goes in the
	// slot's window sets, and claim takes it by Ms + its window (plus its
	// priority's aging) among the due timers, never before Ms.
	WindowMs []int64
	// LaterFromMs, when above 0, sends each entry without a window due at
	// or after it to a later bucket of its due time instead of its due
	// set: a sorted set of one of BucketWidthsMs (finest first), the
	// widest whose bucket has room under Redis's 128 members of a
	// listpack, a quarter of a due set's memory a member. Claim moves a
	// bucket to the due sets once its earliest member is due.
	LaterFromMs    int64
	BucketWidthsMs []int64
}

// AddResult is the reply of one AddCall.
type AddResult struct {
	// Added counts the members new to their due set.
	Added int
	// Earliest is the lowest entry of the slot's due sets when their
	// earliest due ms moved earlier (OK false otherwise).
	Earliest Head
}

// Add runs calls and returns their results in order. On one server (a
// *redis.Client, a Sentinel's too) the calls that share a mode, a wake
// channel and later buckets go in one script call, up to MaxBatch entries
// a call: add.lua's fixed cost, about a fifth of a coalesced batch's
// Redis time when each of its slots had a call of its own, is then paid
// once (BENCHMARKS.md). On a Redis Cluster, and on any other client, each
// call is a script call of its own, its keys in one slot; the script
// calls go in one pipeline.
func Add(ctx context.Context, c Client, calls ...AddCall) ([]AddResult, error) {
	r := slotRuns{oneServer: isOneServer(c)}
	var head []any // the last call's, checked
	for i, ac := range calls {
		same := i > 0 && sameHead(calls[i-1], ac)
		if !same {
			var err error
			if head, err = addHead(ac); err != nil {
				return nil, err
			}
		}
		group, err := addGroup(ac)
		if err != nil {
			return nil, err
		}
		keys := []string{ac.Keys.DueHigh, ac.Keys.Due, ac.Keys.DueLow, ac.Keys.Prepare, ac.Keys.Dead,
			ac.Keys.Window, ac.Keys.WindowEnd, ac.Keys.Later}
		r.add(addScript, head, keys, group, len(ac.Entries), same)
	}
	ns, heads, err := r.run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	out := make([]AddResult, len(ns))
	for i := range ns {
		out[i] = AddResult{Added: int(ns[i]), Earliest: heads[i]}
	}
	return out, nil
}

// addHead checks what a script call of ac shares with the other slots
// it holds, and returns those arguments: mode, wake channel, later
// buckets.
func addHead(ac AddCall) ([]any, error) {
	if ac.Mode != ModeSet && ac.Mode != ModeRestore && ac.Mode != ModeNew {
		return nil, fmt.Errorf("add: mode %q: not set, restore or new", ac.Mode)
	}
	widths, err := formatWidths(ac.LaterFromMs, ac.BucketWidthsMs)
	if err != nil {
		return nil, fmt.Errorf("add: %w", err)
	}
	return []any{string(ac.Mode), ac.WakeChannel, ac.LaterFromMs, widths}, nil
}

// sameHead reports whether a and b can share a script call: addHead
// gives them the same arguments.
func sameHead(a, b AddCall) bool {
	return a.Mode == b.Mode && a.WakeChannel == b.WakeChannel && a.LaterFromMs == b.LaterFromMs &&
		slices.Equal(a.BucketWidthsMs, b.BucketWidthsMs)
}

// addGroup checks ac's entries and returns its slot's arguments: wake
// message, count, and a member, score, end triple an entry.
func addGroup(ac AddCall) ([]any, error) {
	if len(ac.Entries) > MaxBatch {
		return nil, fmt.Errorf("add: %d entries: more than %d", len(ac.Entries), MaxBatch)
	}
	if ac.WindowMs != nil && len(ac.WindowMs) != len(ac.Entries) {
		return nil, fmt.Errorf("add: %d windows for %d entries", len(ac.WindowMs), len(ac.Entries))
	}
	args := make([]any, 0, 2+3*len(ac.Entries))
	args = append(args, ac.WakeMessage, len(ac.Entries))
	for j, e := range ac.Entries {
		n, err := scoreInt(e.Ms, e.Attempt)
		if err != nil {
			return nil, fmt.Errorf("add %s: %w", e.Member, err)
		}
		// Scores go as int64s: go-redis writes them in decimal, the
		// bytes formatScore made, and no score needs a string of its own.
		var end any = "0"
		w := int64(0)
		if ac.WindowMs != nil {
			w = ac.WindowMs[j]
		}
		if w < 0 || w > MaxMillis-e.Ms {
			return nil, fmt.Errorf("add %s: window %d ms: %w", e.Member, w, ErrRange)
		}
		if w > 0 {
			m, err := scoreInt(e.Ms+w, e.Attempt)
			if err != nil {
				return nil, fmt.Errorf("add %s: %w", e.Member, err)
			}
			end = m
		}
		args = append(args, e.Member, n, end)
	}
	return args, nil
}

// formatWidths checks later buckets' arguments and returns the widths
// as the add script takes them, comma-separated.
func formatWidths(from int64, widths []int64) (string, error) {
	if from < 0 || (from > 0 && len(widths) == 0) {
		return "", fmt.Errorf("later from %d ms with %d bucket widths: %w", from, len(widths), ErrRange)
	}
	var b strings.Builder
	for i, w := range widths {
		if w <= 0 || (i > 0 && w <= widths[i-1]) {
			return "", fmt.Errorf("bucket widths %v ms: %w (positive, finest first)", widths, ErrRange)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(w, 10))
	}
	return b.String(), nil
}

// Leased is one member moved to Prepare by Claim.
type Leased struct {
	Member string
	// Token is the member's Prepare score, which Ack and Retry present.
	Token float64
	// Attempt is the attempt count carried over from the due set.
	Attempt int
}

// ClaimResult is the reply of Claim.
type ClaimResult struct {
	// Leased are in claim order: by due ms plus aging offset.
	Leased []Leased
	// DueHead is the lowest entry left in the three due sets.
	DueHead Head
	// PrepareHead is the lowest entry in Prepare: the next lease deadline.
	PrepareHead Head
}

// Claim leases up to limit (1..MaxBatch) members of the slot's due sets
// due at or before nowMs, each until nowMs+leaseMs, taking them in the
// order of due ms plus their priority's offset in aging (ties: high,
// normal, low).
func Claim(ctx context.Context, c Client, keys slots.KeySet, nowMs int64, limit int, leaseMs int64, aging Aging) (ClaimResult, error) {
	rs, errs := ClaimEach(ctx, c, nowMs, aging, ClaimCall{Keys: keys, Limit: limit, LeaseMs: leaseMs})
	return rs[0], errs[0]
}

// ClaimCall is one run of the claim script: one slot's claim.
type ClaimCall struct {
	Keys    slots.KeySet
	Limit   int // 1..MaxBatch
	LeaseMs int64
}

// ClaimEach runs Claim for each call at nowMs, in one pipeline when there
// are several (on a Redis Cluster, one a node). rs[i] and errs[i] answer
// calls[i]; a call that failed leaves the others standing.
func ClaimEach(ctx context.Context, c Client, nowMs int64, aging Aging, calls ...ClaimCall) (rs []ClaimResult, errs []error) {
	rs, errs = make([]ClaimResult, len(calls)), make([]error, len(calls))
	bad := checkMillis("now", nowMs)
	if bad == nil {
		bad = aging.check()
	}
	runs := make([]call, 0, len(calls))
	at := make([]int, 0, len(calls)) // the call each run is
	for i, cc := range calls {
		switch {
		case bad != nil:
			errs[i] = fmt.Errorf("claim: %w", bad)
		case cc.Limit < 1 || cc.Limit > MaxBatch:
			errs[i] = fmt.Errorf("claim: limit %d: not in 1..%d", cc.Limit, MaxBatch)
		case cc.LeaseMs < 1 || cc.LeaseMs > MaxMillis-nowMs:
			errs[i] = fmt.Errorf("claim: lease %d ms: %w", cc.LeaseMs, ErrRange)
		default:
			runs = append(runs, call{claimScript, []string{cc.Keys.DueHigh, cc.Keys.Due, cc.Keys.DueLow, cc.Keys.Prepare,
				cc.Keys.Window, cc.Keys.WindowEnd, cc.Keys.Later},
				[]any{nowMs, cc.Limit, cc.LeaseMs, aging.High, aging.Normal, aging.Low}})
			at = append(at, i)
		}
	}
	runDecoded(ctx, c, "claim", runs, at, rs, errs, decodeClaim)
	return rs, errs
}

// runDecoded runs runs, of which runs[j] answers the call at[j], in one
// pipeline, and decodes each reply into rs; a failed run's error goes to
// errs, named by op.
func runDecoded[R any](ctx context.Context, c Client, op string, runs []call, at []int, rs []R, errs []error, decode func(any) (R, error)) {
	replies, runErrs := runEach(ctx, c, runs)
	for j, i := range at {
		err := runErrs[j]
		if err == nil {
			rs[i], err = decode(replies[j])
		}
		if err != nil {
			errs[i] = fmt.Errorf("%s: %w", op, err)
		}
	}
}

func decodeClaim(v any) (ClaimResult, error) {
	a, err := replyArray(v, 4)
	if err != nil {
		return ClaimResult{}, err
	}
	members, tokens, err := replyPairs(a[0], a[1], "tokens")
	if err != nil {
		return ClaimResult{}, err
	}
	var r ClaimResult
	if r.DueHead, err = headOf(a[2]); err != nil {
		return ClaimResult{}, err
	}
	if r.PrepareHead, err = headOf(a[3]); err != nil {
		return ClaimResult{}, err
	}
	r.Leased = make([]Leased, len(members))
	for i, m := range members {
		_, attempt := splitInt(tokens[i])
		r.Leased[i] = Leased{Member: m, Token: float64(tokens[i]), Attempt: attempt}
	}
	return r, nil
}

// Held is a lease presented to Ack, Retry or Defer.
type Held struct {
	Member string
	Token  float64
}

// AckCall is one run of the ack script: leases of one slot.
type AckCall struct {
	Keys slots.KeySet
	// Leases are at most MaxBatch leases.
	Leases []Held
}

// Ack removes the leases of calls that are still held and returns how
// many it removed. On one server the calls go in one script call, up to
// MaxBatch leases a call, as Add's do; elsewhere a script call a slot, in
// one pipeline.
func Ack(ctx context.Context, c Client, calls ...AckCall) (int, error) {
	rs, err := AckEach(ctx, c, calls...)
	total := 0
	for _, r := range rs {
		total += r.Removed
	}
	return total, err
}

// AckResult is what the ack script did to one slot's Prepare set.
type AckResult struct {
	Removed int
	// PrepareHead is the lowest entry left in Prepare: the next lease end.
	PrepareHead Head
}

// AckEach is Ack, with what each call did: rs[i] answers calls[i].
func AckEach(ctx context.Context, c Client, calls ...AckCall) ([]AckResult, error) {
	r := slotRuns{oneServer: isOneServer(c)}
	for _, ac := range calls {
		if len(ac.Leases) > MaxBatch {
			return nil, fmt.Errorf("ack: %d leases: more than %d", len(ac.Leases), MaxBatch)
		}
		args := make([]any, 0, 1+2*len(ac.Leases))
		args = append(args, len(ac.Leases))
		for _, l := range ac.Leases {
			tok, err := formatToken(l.Token)
			if err != nil {
				return nil, fmt.Errorf("ack %s: %w", l.Member, err)
			}
			args = append(args, l.Member, tok)
		}
		r.add(ackScript, nil, []string{ac.Keys.Prepare}, args, len(ac.Leases), true)
	}
	ns, heads, err := r.run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("ack: %w", err)
	}
	rs := make([]AckResult, len(ns))
	for i := range ns {
		rs[i] = AckResult{Removed: int(ns[i]), PrepareHead: heads[i]}
	}
	return rs, nil
}

// isOneServer reports whether c talks to one server, where a script call
// may hold keys of several slots: a *redis.Client, a Sentinel's too, and
// not a Redis Cluster's client.
func isOneServer(c Client) bool {
	_, ok := c.(*redis.Client)
	return ok
}

// slotRuns packs the script calls of scripts that take slots in groups
// (add, ack): on one server as many slots a call as hold MaxBatch members
// in all, elsewhere a call a slot. Each reply is a count and a head a
// slot.
type slotRuns struct {
	oneServer bool
	runs      []call
	sizes     []int // slots in each of runs
	members   int   // in the last of runs
}

// add adds one slot's keys and arguments, which hold members members.
// head opens a call's arguments; join says whether the slot may share
// the last call (its head is that call's).
func (r *slotRuns) add(script *redis.Script, head []any, keys []string, args []any, members int, join bool) {
	if last := len(r.runs) - 1; r.oneServer && join && last >= 0 && r.members+members <= MaxBatch {
		r.runs[last].keys = append(r.runs[last].keys, keys...)
		r.runs[last].args = append(r.runs[last].args, args...)
		r.sizes[last]++
		r.members += members
		return
	}
	r.runs = append(r.runs, call{script, keys, slices.Concat(head, args)})
	r.sizes = append(r.sizes, 1)
	r.members = members
}

// run runs the calls and returns each slot's count and head, in the
// order the slots were added.
func (r *slotRuns) run(ctx context.Context, c Client) ([]int64, []Head, error) {
	replies, err := run(ctx, c, r.runs)
	if err != nil {
		return nil, nil, err
	}
	var ns []int64
	var heads []Head
	for i, v := range replies {
		a, err := replyArray(v, 2*r.sizes[i])
		if err != nil {
			return nil, nil, err
		}
		for j := 0; j < len(a); j += 2 {
			n, err := replyInt(a[j])
			if err != nil {
				return nil, nil, err
			}
			h, err := headOf(a[j+1])
			if err != nil {
				return nil, nil, err
			}
			ns, heads = append(ns, n), append(heads, h)
		}
	}
	return ns, heads, nil
}

func formatToken(token float64) (string, error) {
	if _, _, err := SplitScore(token); err != nil {
		return "", fmt.Errorf("lease token: %w", err)
	}
	return strconv.FormatFloat(token, 'f', -1, 64), nil
}

// RetryResult is what the retry script did.
type RetryResult int

// Replies of the retry script.
const (
	Retried RetryResult = 0
	Buried  RetryResult = 1
	Lost    RetryResult = 2
)

// Retry ends the lease l after a failed attempt: the member goes back to
// its due set due at retryAtMs with one more attempt, or to Dead (died at nowMs)
// when that makes maxAttempts (1..MaxAttempt) attempts. Nothing changes
// when the lease is no longer held.
func Retry(ctx context.Context, c Client, keys slots.KeySet, l Held, retryAtMs int64, maxAttempts int, nowMs int64) (RetryResult, error) {
	tok, err := formatToken(l.Token)
	if err != nil {
		return 0, fmt.Errorf("retry %s: %w", l.Member, err)
	}
	if err := checkMillis("retry at", retryAtMs); err != nil {
		return 0, fmt.Errorf("retry %s: %w", l.Member, err)
	}
	if err := checkMillis("now", nowMs); err != nil {
		return 0, fmt.Errorf("retry %s: %w", l.Member, err)
	}
	if maxAttempts < 1 || maxAttempts > MaxAttempt {
		return 0, fmt.Errorf("retry %s: max attempts %d: %w (1..%d)", l.Member, maxAttempts, ErrRange, MaxAttempt)
	}
	replies, err := run(ctx, c, []call{{retryScript, []string{keys.DueHigh, keys.Due, keys.DueLow, keys.Prepare, keys.Dead},
		[]any{l.Member, tok, retryAtMs, maxAttempts, nowMs}}})
	if err != nil {
		return 0, fmt.Errorf("retry %s: %w", l.Member, err)
	}
	n, err := replyInt(replies[0])
	if err != nil || n < 0 || n > 2 {
		return 0, fmt.Errorf("retry %s: %w: %v", l.Member, errReply, replies[0])
	}
	return RetryResult(n), nil
}

// Defer ends the lease l of a member that was not fired: it goes back to
// its due set due at atMs with its attempt count unchanged. It reports
// false, changing nothing, when the lease is no longer held.
func Defer(ctx context.Context, c Client, keys slots.KeySet, l Held, atMs int64) (bool, error) {
	tok, err := formatToken(l.Token)
	if err != nil {
		return false, fmt.Errorf("defer %s: %w", l.Member, err)
	}
	if err := checkMillis("defer to", atMs); err != nil {
		return false, fmt.Errorf("defer %s: %w", l.Member, err)
	}
	replies, err := run(ctx, c, []call{{deferScript, []string{keys.DueHigh, keys.Due, keys.DueLow, keys.Prepare},
		[]any{l.Member, tok, atMs}}})
	if err != nil {
		return false, fmt.Errorf("defer %s: %w", l.Member, err)
	}
	n, err := replyInt(replies[0])
	if err != nil || n < 0 || n > 1 {
		return false, fmt.Errorf("defer %s: %w: %v", l.Member, errReply, replies[0])
	}
	return n == 1, nil
}

// UnclaimCall is one run of the unclaim script: the claim of one slot at
// NowMs with a lease of LeaseMs whose reply was lost.
type UnclaimCall struct {
	Keys           slots.KeySet
	NowMs, LeaseMs int64
}

// UnclaimEach takes back the leases of each call's claim: the members of
// Prepare whose tokens hold its NowMs+LeaseMs go back to their due sets
// due at atMs, their attempt counts unchanged. ns[i] and errs[i] answer
// calls[i] (how many members went back); the calls run in one pipeline
// when there are several (on a Redis Cluster, one a node). The caller
// must hold no lease of another claim of a call's slot at the same NowMs
// and LeaseMs: the tokens cannot tell the two apart.
func UnclaimEach(ctx context.Context, c Client, atMs int64, calls ...UnclaimCall) (ns []int, errs []error) {
	ns, errs = make([]int, len(calls)), make([]error, len(calls))
	bad := checkMillis("due time", atMs)
	runs := make([]call, 0, len(calls))
	at := make([]int, 0, len(calls)) // the call each run is
	for i, uc := range calls {
		err := bad
		if err == nil {
			err = checkMillis("claim time", uc.NowMs)
		}
		if err == nil && uc.LeaseMs < 1 {
			err = fmt.Errorf("lease %d ms: %w (at least 1)", uc.LeaseMs, ErrRange)
		}
		if err == nil {
			err = checkMillis("lease end", uc.NowMs+uc.LeaseMs)
		}
		if err != nil {
			errs[i] = fmt.Errorf("unclaim: %w", err)
			continue
		}
		runs = append(runs, call{unclaimScript, []string{uc.Keys.DueHigh, uc.Keys.Due, uc.Keys.DueLow, uc.Keys.Prepare},
			[]any{uc.NowMs + uc.LeaseMs, atMs}})
		at = append(at, i)
	}
	runDecoded(ctx, c, "unclaim", runs, at, ns, errs, func(v any) (int, error) {
		n, err := replyInt(v)
		if err != nil || n < 0 || n > MaxBatch {
			return 0, fmt.Errorf("%w: %v", errReply, v)
		}
		return int(n), nil
	})
	return ns, errs
}

// SweepResult is the reply of Sweep.
type SweepResult struct {
	// Returned counts the members put back in their due sets (or left
	// there).
	Returned int
	// Dead lists the members moved to Dead, with their attempt counts.
	Dead []Entry
	// PrepareHead is the lowest entry left in Prepare.
	PrepareHead Head
}

// Sweep takes up to limit (1..MaxBatch) leases that ended at or before
// nowMs out of Prepare: back to their due sets due at once with one more attempt,
// or to Dead when that makes attemptCap (1..MaxAttempt) attempts.
func Sweep(ctx context.Context, c Client, keys slots.KeySet, nowMs int64, limit, attemptCap int) (SweepResult, error) {
	rs, errs := SweepEach(ctx, c, nowMs, attemptCap, SweepCall{Keys: keys, Limit: limit})
	return rs[0], errs[0]
}

// Reclaim is Sweep of every lease, whatever its end: for leases whose
// holder is known to be dead, which would otherwise wait for their end.
// The holder's ack, retry and defer fail from then on, since its tokens
// changed.
func Reclaim(ctx context.Context, c Client, keys slots.KeySet, nowMs int64, limit, attemptCap int) (SweepResult, error) {
	rs, errs := SweepEach(ctx, c, nowMs, attemptCap, SweepCall{Keys: keys, Limit: limit, All: true})
	return rs[0], errs[0]
}

// SweepCall is one run of the sweep script: one slot's sweep.
type SweepCall struct {
	Keys  slots.KeySet
	Limit int  // 1..MaxBatch
	All   bool // Reclaim: every lease, whatever its end
}

// SweepEach runs Sweep (or Reclaim, for a call with All) for each call at
// nowMs, in one pipeline when there are several (on a Redis Cluster, one
// a node). rs[i] and errs[i] answer calls[i]; a call that failed leaves
// the others standing.
func SweepEach(ctx context.Context, c Client, nowMs int64, attemptCap int, calls ...SweepCall) (rs []SweepResult, errs []error) {
	rs, errs = make([]SweepResult, len(calls)), make([]error, len(calls))
	bad := checkMillis("now", nowMs)
	if bad == nil && (attemptCap < 1 || attemptCap > MaxAttempt) {
		bad = fmt.Errorf("attempt cap %d: %w (1..%d)", attemptCap, ErrRange, MaxAttempt)
	}
	runs := make([]call, 0, len(calls))
	at := make([]int, 0, len(calls)) // the call each run is
	for i, sc := range calls {
		switch {
		case bad != nil:
			errs[i] = fmt.Errorf("sweep: %w", bad)
		case sc.Limit < 1 || sc.Limit > MaxBatch:
			errs[i] = fmt.Errorf("sweep: limit %d: not in 1..%d", sc.Limit, MaxBatch)
		default:
			upto := nowMs
			if sc.All {
				upto = MaxMillis
			}
			runs = append(runs, call{sweepScript, []string{sc.Keys.DueHigh, sc.Keys.Due, sc.Keys.DueLow, sc.Keys.Prepare, sc.Keys.Dead},
				[]any{nowMs, sc.Limit, attemptCap, upto}})
			at = append(at, i)
		}
	}
	runDecoded(ctx, c, "sweep", runs, at, rs, errs, func(v any) (SweepResult, error) { return decodeSweep(v, nowMs) })
	return rs, errs
}

func decodeSweep(v any, nowMs int64) (SweepResult, error) {
	a, err := replyArray(v, 4)
	if err != nil {
		return SweepResult{}, err
	}
	n, err := replyInt(a[0])
	if err != nil {
		return SweepResult{}, err
	}
	members, attempts, err := replyPairs(a[1], a[2], "attempts")
	if err != nil {
		return SweepResult{}, err
	}
	head, err := headOf(a[3])
	if err != nil {
		return SweepResult{}, err
	}
	r := SweepResult{Returned: int(n), PrepareHead: head}
	for i, m := range members {
		if attempts[i] < 0 || attempts[i] > MaxAttempt {
			return SweepResult{}, fmt.Errorf("%w: attempt %d", errReply, attempts[i])
		}
		r.Dead = append(r.Dead, Entry{Member: m, Ms: nowMs, Attempt: int(attempts[i])})
	}
	return r, nil
}

// ReviveCall is one run of the revive script.
type ReviveCall struct {
	Keys   slots.KeySet
	Member string
	// Ms is the new due time; the attempt count restarts at 0.
	Ms int64
	// WakeChannel and WakeMessage are as in AddCall.
	WakeChannel string
	WakeMessage string
}

// ReviveResult is the reply of Revive.
type ReviveResult struct {
	// Revived says whether the member was in Dead (and is now in its
	// due set).
	Revived bool
	// Earliest is the lowest entry of the slot's due sets when the
	// revival moved their earliest due ms earlier (OK false otherwise);
	// the script then published a wake-up.
	Earliest Head
}

// Revive moves a member from Dead to its due set, due at rc.Ms with
// attempt 0.
func Revive(ctx context.Context, c Client, rc ReviveCall) (ReviveResult, error) {
	n, err := scoreInt(rc.Ms, 0)
	if err != nil {
		return ReviveResult{}, fmt.Errorf("revive %s: %w", rc.Member, err)
	}
	replies, err := run(ctx, c, []call{{reviveScript, []string{rc.Keys.DueHigh, rc.Keys.Due, rc.Keys.DueLow, rc.Keys.Dead,
		rc.Keys.Window, rc.Keys.Later},
		[]any{rc.Member, formatScore(n), rc.WakeChannel, rc.WakeMessage}}})
	if err != nil {
		return ReviveResult{}, fmt.Errorf("revive %s: %w", rc.Member, err)
	}
	a, err := replyArray(replies[0], 2)
	if err != nil {
		return ReviveResult{}, fmt.Errorf("revive %s: %w", rc.Member, err)
	}
	v, err := replyInt(a[0])
	if err != nil {
		return ReviveResult{}, fmt.Errorf("revive %s: %w", rc.Member, err)
	}
	h, err := headOf(a[1])
	if err != nil {
		return ReviveResult{}, fmt.Errorf("revive %s: %w", rc.Member, err)
	}
	return ReviveResult{Revived: v == 1, Earliest: h}, nil
}

// DecodeEntry decodes a member and score as ZRANGE WITHSCORES returns them.
func DecodeEntry(z redis.Z) (Entry, error) {
	m, ok := z.Member.(string)
	if !ok {
		return Entry{}, fmt.Errorf("%w: member %v (%T)", errReply, z.Member, z.Member)
	}
	ms, attempt, err := SplitScore(z.Score)
	if err != nil {
		return Entry{}, fmt.Errorf("member %s: %w", m, err)
	}
	return Entry{Member: m, Ms: ms, Attempt: attempt}, nil
}

// HeadOf decodes the reply of ZRANGE key 0 0 WITHSCORES.
func HeadOf(zs []redis.Z) (Head, error) {
	if len(zs) == 0 {
		return Head{}, nil
	}
	e, err := DecodeEntry(zs[0])
	if err != nil {
		return Head{}, err
	}
	return Head{Ms: e.Ms, Attempt: e.Attempt, OK: true}, nil
}
