// Package pull hands the due jobs of pull topics to workers that lease
// them over the API (issue 36): [Broker] is both the timer.Handler of the
// topics whose way is pull and what the API's lease routes call.
//
// # A delivery
//
// The worker fires a pull topic's job as any other: claimed, marked
// firing in the task store, handed to Fire at its due time. Fire offers
// it: it writes the job, as a webhook's body, into a lease in Redis and
// pushes the lease onto its topic's list of offers; then it waits for
// what becomes of the lease. A worker's long-poll (Take), on any member,
// takes offers off the list and leases them until an expiry; the worker
// then acks, nacks or extends the lease, on any member again. Every
// change of a lease's state is made by a Lua script, so Fire and the
// routes never disagree on it, and each publishes a message that wakes
// the Fire waiting on it. Fire ends the attempt as the lease ends:
//
//   - acked: done;
//   - nacked: failed, retried after the worker's delay or the backoff;
//   - expired (not acked in time, or the attempt's timeout, which bounds
//     the lease): failed, retried, its attempt counted;
//   - not taken within the offer window (OfferFor): not sent, back to the
//     index at once, no attempt counted.
//
// A job fired while a long-poll of the same member waits is handed to it
// at once, as its lease is written: the long-poll answers without waiting
// for Redis. When none waits but one did within demandLinger, the job is
// held for the next for up to HoldFor (3 ms) before it is offered to
// every member: a worker's long-poll just answered is on its way back.
// An ack, nack or extend of a handed lease on the same member waits for
// the write; one on another member that finds no lease reads it again
// for up to 75 ms (readAgain) before answering not_found. A long-poll
// reads the list only when an offer may have been pushed onto it since a
// read found it empty (waiters.offers), and at least every second.
//
// A member that dies while its jobs are leased loses nothing: the worker's
// own lease on them in Redis ends and they are fired again, as any job of
// a dead member; an ack that comes after is refused (lease_ended).
//
// # Demand
//
// The worker claims a pull topic's jobs only while workers wait for them
// (timer.Demand): each long-poll adds its max to its topic's demand while
// it waits. A member publishes its own waiting workers every second and
// at each change, and hears the others', so that the member owning a
// topic's slots knows of a worker waiting on another.
package pull

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/internal/pause"
	"github.com/toc-project/toc/timer"
)

// Defaults of a Config.
const (
	// DefaultOfferFor is how long an offered job waits to be taken before
	// it goes back to the index.
	DefaultOfferFor = 2 * time.Second
	// DefaultHoldFor is how long a Fire that finds no long-poll of its
	// topic waiting on this member, while some waited there within
	// demandLinger, holds its job for the next one before offering it to
	// every member: a worker's long-poll that has just been answered is
	// on its way back, and one handed the job needs no list of offers and
	// no reading of it.
	DefaultHoldFor = 3 * time.Millisecond
	// demandEvery is how often a member publishes its waiting workers;
	// demandFor how long a member's word holds without being said again.
	demandEvery = time.Second
	demandFor   = 3 * demandEvery
	// demandLinger is how long a topic's demand outlives the long-polls
	// that made it: a worker polls again as soon as it has handed out
	// what it got, and the jobs due meanwhile are claimed ahead as if it
	// still waited. An offer it does not take goes back after OfferFor.
	demandLinger = time.Second
	// recheckEvery bounds a wait on a message: messages are hints, and
	// Fire and Take read the state again at least this often.
	recheckEvery = time.Second
)

// Limits of a lease request.
const (
	MaxJobs     = 1000
	MaxWait     = 25 * time.Second // within the API's request timeout
	MinLease    = time.Second
	MaxLease    = time.Hour
	MaxNackWait = 24 * time.Hour
	MaxError    = 1024
)

// Config configures a Broker. Sign is required.
type Config struct {
	// Prefix starts every key and the channel (the --redis-prefix).
	Prefix string
	// Member names this process in the demand it publishes.
	Member string
	// Sign returns the body of d sent at now: (*webhook.Client).Message.
	Sign func(d timer.Delivery, now time.Time) (webhook.Message, error)
	// OfferFor is how long an offered job waits to be taken (default
	// DefaultOfferFor).
	OfferFor time.Duration
	// HoldFor is how long a job waits for a long-poll of this member
	// before it is offered to every member (default DefaultHoldFor;
	// negative: not at all).
	HoldFor time.Duration
	Now     func() time.Time
	Logger  *slog.Logger
}

// Broker hands pull topics' jobs to workers. Run must run for Fire and
// Take to hear the other members.
type Broker struct {
	rdb     redis.UniversalClient
	cfg     Config
	channel string

	mu sync.Mutex
	// waiting: this member's long-polls by topic, and the signal each
	// waits on, closed on an offer of its topic.
	waiting map[string]*waiters
	// firing: the Fires waiting on a lease, by its id.
	firing map[string]*firing
	// offered: this member's offers not yet taken or withdrawn, by topic.
	offered map[string]int
	// heard: the other members' waiting workers, by topic and member.
	heard   map[string]map[string]heardDemand
	changed chan struct{}
	// stopping is closed when Run's ctx is done: long-polls answer at
	// once, so that a shutdown does not wait for them.
	stopping chan struct{}
	stopOnce sync.Once
}

// waiters are a topic's long-polls on this member: how many jobs they
// would take, the most they would take in the last demandLinger, and the
// signal they wait on.
// firing is a lease a Fire of this member waits on.
type firing struct {
	topic string
	wake  chan struct{}
	// offered: not yet taken (counted in Broker.offered); acked: a
	// message said so, and the Fire need not read it.
	offered, acked bool
	// written, for a job handed to a long-poll of this member, is
	// closed once its lease is written.
	written chan struct{}
}

type waiters struct {
	n      int
	peak   int
	peakAt time.Time
	offer  chan struct{}
	// offers counts what may have pushed an offer onto the topic's list:
	// an offer of this member, as it is pushed and once it is, and one
	// of another heard of. drained is what offers was when a long-poll
	// began a read that found the list empty. A long-poll that begins
	// while they are equal need not read it.
	offers, drained uint64
	// takes are the long-polls waiting, oldest first, that a Fire of
	// this member may hand its job to directly; held the Fires holding
	// their jobs for the next, oldest first.
	takes []*take
	held  []*held
}

// take is a long-poll of this member waiting for jobs: a Fire that finds
// it hands its job to it as it writes the lease, so the job need not
// wait for the long-poll to wake and take it off the list. Its fields are
// guarded by Broker.mu.
type take struct {
	max   int
	lease time.Duration
	got   []Lease
	gone  bool          // it stopped waiting
	ready chan struct{} // 1: got grew
}

// room reports whether a Fire may hand t one more job. b.mu is held.
func (t *take) room() bool { return !t.gone && len(t.got) < t.max }

func (t *take) signal() {
	select {
	case t.ready <- struct{}{}:
	default:
	}
}

// demand is what w wants now: its long-polls', or its peak while it
// lingers.
func (w *waiters) demand(now time.Time) int {
	if now.Sub(w.peakAt) <= demandLinger {
		return max(w.n, w.peak)
	}
	return w.n
}

type heardDemand struct {
	n  int
	at time.Time
}

// New returns a Broker over rdb.
func New(rdb redis.UniversalClient, cfg Config) (*Broker, error) {
	if cfg.Sign == nil {
		return nil, errors.New("pull: Config.Sign is required")
	}
	cfg.OfferFor = cmp.Or(cfg.OfferFor, DefaultOfferFor)
	cfg.HoldFor = cmp.Or(cfg.HoldFor, DefaultHoldFor)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Member == "" {
		cfg.Member = newID()[:12]
	}
	return &Broker{
		rdb: rdb, cfg: cfg, channel: cfg.Prefix + "pull",
		waiting:  map[string]*waiters{},
		firing:   map[string]*firing{},
		offered:  map[string]int{},
		heard:    map[string]map[string]heardDemand{},
		changed:  make(chan struct{}, 1),
		stopping: make(chan struct{}),
	}, nil
}

// listKey is the list of topic's offers; leaseKey the hash of one lease.
// Both share the topic's hash tag, so that one script reaches both on a
// Redis Cluster.
func (b *Broker) listKey(topic string) string { return b.cfg.Prefix + "pull:{" + topic + "}:offers" }
func (b *Broker) leasePrefix(topic string) string {
	return b.cfg.Prefix + "pull:{" + topic + "}:lease:"
}

// Token is what a worker holds of a lease: the topic as its namespace
// knows it, a dot, and the lease's id.
func Token(topic, id string) string { return timer.TopicName(topic) + "." + id }

// ParseToken splits a token into the topic as the worker's namespace
// knows it and the lease's id; ok is false for anything else.
func ParseToken(token string) (topic, id string, ok bool) {
	topic, id, ok = strings.Cut(token, ".")
	if !ok || topic == "" || len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return "", "", false
	}
	return topic, id, true
}

func newID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The states of a lease, as its hash's field s holds them.
const (
	stateOffered   = "o"
	stateLeased    = "l"
	stateAcked     = "a"
	stateNacked    = "n"
	stateExpired   = "x"
	stateWithdrawn = "w"
)

// Fire offers d to the topic's workers and waits for the lease to end;
// see the package comment.
func (b *Broker) Fire(ctx context.Context, d timer.Delivery) error {
	topic := d.Job.Topic
	now := b.cfg.Now()
	msg, err := b.cfg.Sign(d, now)
	if err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = now.Add(timer.DefaultAttemptTimeout)
	}
	id := newID()
	key := b.leasePrefix(topic) + id
	f := &firing{topic: topic, wake: make(chan struct{}, 1), offered: true}
	b.mu.Lock()
	b.firing[id] = f
	b.offered[topic]++
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.firing, id)
		b.taken(f)
		b.mu.Unlock()
	}()
	// The other members hear of the offer only when one of them has
	// workers waiting: each says so (and again every second) before its
	// long-polls wait, and they read the list again every second anyway.
	tell := ""
	b.mu.Lock()
	if len(b.heard[topic]) > 0 {
		tell = "o " + topic
	}
	expires := int64(0)
	var h *held
	if to := b.waitingTake(topic); to != nil {
		expires = b.handTo(to, f, id, msg.Body, now, deadline)
	} else if w := b.waiting[topic]; w != nil && w.demand(now) > 0 && b.cfg.HoldFor > 0 {
		// A long-poll here is about to wait again: hold the job for it.
		h = &held{f: f, id: id, body: msg.Body, deadline: deadline, expires: make(chan int64, 1)}
		w.held = append(w.held, h)
	}
	b.mu.Unlock()
	if h != nil {
		if expires = b.hold(ctx, topic, h); ctx.Err() != nil && expires == 0 {
			return &timer.NotSentError{Until: now, Err: ctx.Err()}
		}
	}
	if expires != 0 {
		err := offerScript.Run(ctx, b.rdb, []string{key, b.listKey(topic)},
			string(msg.Body), deadline.UnixMilli(), id, b.channel, "", expires, b.cfg.Member).Err()
		close(f.written)
		if err != nil {
			// The worker holds a lease that is not there: its ack is
			// refused, and the job is fired again.
			return &timer.NotSentError{Until: now, Err: fmt.Errorf("lease to a pull worker: %w", err)}
		}
	} else {
		b.mu.Lock()
		if w := b.waiting[topic]; w != nil {
			w.offers++ // before the push: a read begun now may miss it
		}
		b.mu.Unlock()
		if err := offerScript.Run(ctx, b.rdb, []string{key, b.listKey(topic)},
			string(msg.Body), deadline.UnixMilli(), id, b.channel, tell, "", b.cfg.Member).Err(); err != nil {
			return &timer.NotSentError{Until: now, Err: fmt.Errorf("offer to the pull workers: %w", err)}
		}
		b.heardMessage("o " + topic) // the long-polls here need not wait for Redis to say so
	}
	offerEnd := now.Add(b.cfg.OfferFor)
	next := minTime(offerEnd, now.Add(recheckEvery))
	for {
		t := time.NewTimer(max(next.Sub(now), time.Millisecond))
		select {
		case <-f.wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		b.mu.Lock()
		acked := f.acked
		b.mu.Unlock()
		if acked {
			return nil
		}
		now = b.cfg.Now()
		end := ctx.Err() != nil
		st, err := b.settle(context.WithoutCancel(ctx), key, now, !now.Before(offerEnd), end)
		if err != nil {
			if end {
				return fmt.Errorf("lease %s: %w", Token(topic, id), ctx.Err())
			}
			b.cfg.Logger.Warn("pull: reading a lease failed; reading it again", "lease", Token(topic, id), "err", err)
			st = settled{state: stateOffered}
		}
		if st.state != stateOffered {
			b.mu.Lock()
			b.taken(f)
			b.mu.Unlock()
		}
		next = now.Add(recheckEvery)
		switch st.state {
		case stateAcked:
			return nil
		case stateNacked:
			return nackError(st)
		case stateExpired:
			if end {
				return fmt.Errorf("lease %s ended with the attempt: %w", Token(topic, id), ctx.Err())
			}
			return fmt.Errorf("lease %s expired: not acked in time", Token(topic, id))
		case stateWithdrawn:
			return &timer.NotSentError{Until: now, Err: fmt.Errorf("no pull worker took it within %v", b.cfg.OfferFor)}
		case stateOffered:
			next = minTime(next, offerEnd)
		case stateLeased:
			next = minTime(next, st.expires)
		default:
			return fmt.Errorf("lease %s is gone from Redis", Token(topic, id))
		}
	}
}

// held is a Fire of this member holding its job for the next long-poll of
// its topic here (Config.HoldFor).
type held struct {
	f        *firing
	id       string
	body     []byte
	deadline time.Time
	// expires receives the expiry of the lease, in ms, when the job is
	// handed.
	expires chan int64
}

// hold waits up to HoldFor, or until ctx is done, for h's job to be
// handed to a long-poll of topic, and returns its lease's expiry, or 0
// when none took it.
func (b *Broker) hold(ctx context.Context, topic string, h *held) int64 {
	t := time.NewTimer(b.cfg.HoldFor)
	defer t.Stop()
	select {
	case e := <-h.expires:
		return e
	case <-t.C:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[topic]; w != nil {
		w.held = slices.DeleteFunc(w.held, func(x *held) bool { return x == h })
	}
	select {
	case e := <-h.expires: // handed as the wait ended
		return e
	default:
		return 0
	}
}

// handTo hands the job of f, as lease id, to the long-poll to, and
// returns the lease's expiry in ms. It is handed before its lease is
// written, so that the worker need not wait for Redis: an ack here waits
// for the write (firing.written), one on another member reads a missing
// lease again (change). b.mu is held.
func (b *Broker) handTo(to *take, f *firing, id string, job []byte, now, deadline time.Time) int64 {
	b.taken(f)
	expires := minTime(now.Add(to.lease), deadline).UnixMilli()
	f.written = make(chan struct{})
	to.got = append(to.got, Lease{Token: Token(f.topic, id), Job: json.RawMessage(job), Expires: time.UnixMilli(expires)})
	to.signal()
	return expires
}

// waitingTake is the oldest long-poll of topic on this member that has
// room for one more job, or nil. b.mu is held.
func (b *Broker) waitingTake(topic string) *take {
	if w := b.waiting[topic]; w != nil {
		for _, t := range w.takes {
			if t.room() {
				return t
			}
		}
	}
	return nil
}

// taken counts f's offer as no longer offered. b.mu is held.
func (b *Broker) taken(f *firing) {
	if f.offered {
		f.offered = false
		b.offered[f.topic]--
	}
}

// nackError is the failed attempt of a nacked lease.
func nackError(st settled) error {
	err := errors.New("nacked by the worker")
	if st.reason != "" {
		err = fmt.Errorf("nacked by the worker: %s", st.reason)
	}
	if st.delay >= 0 {
		return &timer.RetryAfterError{After: st.delay, Exact: true, Err: err}
	}
	return err
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// settled is a lease's state as settleScript leaves it.
type settled struct {
	state   string
	expires time.Time     // leased
	delay   time.Duration // nacked: -1 for the backoff
	reason  string        // nacked
}

// settle reads the lease at key, first withdrawing it if still offered
// and withdraw is set, and expiring it if leased and past its expiry, or
// end is set.
func (b *Broker) settle(ctx context.Context, key string, now time.Time, withdraw, end bool) (settled, error) {
	v, err := settleScript.Run(ctx, b.rdb, []string{key}, now.UnixMilli(), flag(withdraw || end), flag(end)).StringSlice()
	if err != nil {
		return settled{}, err
	}
	st := settled{state: v[0], delay: -1}
	switch {
	case st.state == stateLeased && len(v) == 2:
		ms, _ := strconv.ParseInt(v[1], 10, 64)
		st.expires = time.UnixMilli(ms)
	case st.state == stateNacked && len(v) == 3:
		if ms, err := strconv.ParseInt(v[1], 10, 64); err == nil && ms >= 0 {
			st.delay = time.Duration(ms) * time.Millisecond
		}
		st.reason = v[2]
	}
	return st, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Lease is a job handed to a worker.
type Lease struct {
	Token   string
	Expires time.Time
	// Job is the job as a webhook's body carries it.
	Job json.RawMessage
}

// Take waits up to wait for jobs of topic (as toc holds it) to be
// offered, and leases at most max of them for lease each (at most until
// each job's attempt times out). It answers as soon as it holds one.
func (b *Broker) Take(ctx context.Context, topic string, maxJobs int, wait, lease time.Duration) ([]Lease, error) {
	end := b.cfg.Now().Add(wait)
	b.addWaiting(topic, maxJobs)
	defer b.addWaiting(topic, -maxJobs)
	tk := &take{max: maxJobs, lease: lease, ready: make(chan struct{}, 1)}
	defer b.stopTaking(topic, tk)
	recheck := false
	for {
		offer := b.offerSignal(topic)
		// Not handed jobs while it reads the list: it could get more than
		// maxJobs.
		if got := b.stopTaking(topic, tk); len(got) > 0 {
			return got, nil
		}
		// The list is read unless no offer was pushed since a read found
		// it empty, and at least every recheckEvery.
		if gen, unread := b.unread(topic); unread || recheck {
			leases, err := b.take(ctx, topic, maxJobs, lease)
			if err != nil || len(leases) > 0 {
				return leases, err
			}
			b.drained(topic, gen)
		}
		recheck = false
		left := end.Sub(b.cfg.Now())
		if left <= 0 {
			return nil, nil
		}
		b.startTaking(topic, tk)
		t := time.NewTimer(min(left, recheckEvery))
		select {
		case <-offer:
		case <-tk.ready: // handed a job: the loop's stopTaking returns it
		case <-t.C:
			recheck = true
		case <-b.stopping:
			t.Stop()
			return b.stopTaking(topic, tk), nil
		case <-ctx.Done():
			t.Stop()
			// What was handed to it expires, and is retried.
			b.stopTaking(topic, tk)
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

// unread reports whether topic's list may hold offers that no read has
// found, and what waiters.offers is now.
func (b *Broker) unread(topic string) (uint64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[topic]; w != nil {
		return w.offers, w.offers != w.drained
	}
	return 0, true
}

// drained notes that a read of topic's list begun when waiters.offers
// was gen found it empty.
func (b *Broker) drained(topic string, gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[topic]; w != nil && gen != 0 {
		w.drained = gen
	}
}

// startTaking lets this member's Fires hand jobs of topic to tk.
func (b *Broker) startTaking(topic string, tk *take) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[topic]; w != nil && !slices.Contains(w.takes, tk) {
		tk.gone = false
		w.takes = append(w.takes, tk)
		now := b.cfg.Now()
		for len(w.held) > 0 && tk.room() {
			h := w.held[0]
			w.held = w.held[1:]
			h.expires <- b.handTo(tk, h.f, h.id, h.body, now, h.deadline)
		}
	}
}

// stopTaking ends the Fires' handing jobs to tk, and returns what tk was
// handed since it last returned.
func (b *Broker) stopTaking(topic string, tk *take) []Lease {
	b.mu.Lock()
	defer b.mu.Unlock()
	tk.gone = true
	if w := b.waiting[topic]; w != nil {
		w.takes = slices.DeleteFunc(w.takes, func(t *take) bool { return t == tk })
	}
	got := tk.got
	tk.got = nil
	return got
}

// take leases what topic's list offers now.
func (b *Broker) take(ctx context.Context, topic string, maxJobs int, lease time.Duration) ([]Lease, error) {
	v, err := takeScript.Run(ctx, b.rdb, []string{b.listKey(topic)},
		b.leasePrefix(topic), maxJobs, b.cfg.Now().UnixMilli(), lease.Milliseconds(), b.channel, b.cfg.Member).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("lease jobs of %s: %w", timer.TopicName(topic), err)
	}
	leases := make([]Lease, 0, len(v)/3)
	for i := 0; i+2 < len(v); i += 3 {
		b.heardMessage("t " + v[i]) // a Fire here need not wait for Redis to say so
		ms, _ := strconv.ParseInt(v[i+2], 10, 64)
		leases = append(leases, Lease{Token: Token(topic, v[i]), Job: json.RawMessage(v[i+1]), Expires: time.UnixMilli(ms)})
	}
	return leases, nil
}

// State is what a worker's ack, nack or extend left its lease in.
type State struct {
	// State is "leased", "acked" or "nacked".
	State   string
	Expires time.Time // leased
}

// ErrEnded answers a change to a lease that was acked, nacked or has
// expired, or was never taken; ErrNotFound one that does not exist.
var (
	ErrEnded    = errors.New("the lease has ended")
	ErrNotFound = fmt.Errorf("no such lease: %w", timer.ErrNotFound)
)

// Ack ends the lease id of topic (as toc holds it): its job is done.
// Acking an acked lease again answers the same.
func (b *Broker) Ack(ctx context.Context, topic, id string) (State, error) {
	return b.change(ctx, topic, id, "ack", "", "")
}

// Nack ends the lease: its attempt failed, and the job is retried after
// delay (negative: the topic's backoff).
func (b *Broker) Nack(ctx context.Context, topic, id string, delay time.Duration, reason string) (State, error) {
	ms := int64(-1)
	if delay >= 0 {
		ms = delay.Milliseconds()
	}
	return b.change(ctx, topic, id, "nack", strconv.FormatInt(ms, 10), reason)
}

// Extend holds the lease for lease from now, at most until its job's
// attempt times out.
func (b *Broker) Extend(ctx context.Context, topic, id string, lease time.Duration) (State, error) {
	return b.change(ctx, topic, id, "extend", strconv.FormatInt(lease.Milliseconds(), 10), "")
}

// LeaseRef names a lease: its topic as toc holds it, and its id.
type LeaseRef struct{ Topic, ID string }

// AckMany acks the leases of refs in one round trip to Redis (a pipeline;
// on a Redis Cluster, one a node), each as Ack would: errs[i] is nil when
// refs[i] is acked, else what Ack would answer. err is set, and errs nil,
// when Redis did not answer.
func (b *Broker) AckMany(ctx context.Context, refs []LeaseRef) (errs []error, err error) {
	cmds := make([]*redis.Cmd, len(refs))
	here := make([]bool, len(refs))
	run := func(load bool) error {
		if load {
			if err := changeScript.Load(ctx, b.rdb).Err(); err != nil {
				return err
			}
		}
		_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			now := b.cfg.Now().UnixMilli()
			for i, r := range refs {
				channel := b.channel
				if here[i] {
					channel = ""
				}
				cmds[i] = changeScript.EvalSha(ctx, p, []string{b.leasePrefix(r.Topic) + r.ID},
					"ack", now, "", "", channel, "s "+r.ID)
			}
			return nil
		})
		return err
	}
	for i, r := range refs {
		if here[i], err = b.isHere(ctx, r.ID); err != nil {
			return nil, fmt.Errorf("ack leases: %w", err)
		}
	}
	if err := run(false); err != nil {
		// The script is not loaded on some node yet (NOSCRIPT): load it
		// and run them all again; an ack repeated answers the same.
		if !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return nil, fmt.Errorf("ack leases: %w", err)
		}
		if err := run(true); err != nil {
			return nil, fmt.Errorf("ack leases: %w", err)
		}
	}
	errs = make([]error, len(refs))
	for i, r := range refs {
		v, err := cmds[i].StringSlice()
		if err != nil {
			errs[i] = fmt.Errorf("ack lease %s: %w", Token(r.Topic, r.ID), err)
			continue
		}
		if v[0] == "" && !here[i] {
			_, errs[i] = b.change(ctx, r.Topic, r.ID, "ack", "", "") // read again, as Ack would
			continue
		}
		_, errs[i] = b.afterChange("ack", r.Topic, r.ID, here[i], v)
	}
	return errs, nil
}

func (b *Broker) change(ctx context.Context, topic, id, op, arg, reason string) (State, error) {
	// The Fire waiting on the lease hears of the change: from here when
	// it is this member's, else through Redis.
	here, err := b.isHere(ctx, id)
	if err != nil {
		return State{}, fmt.Errorf("%s lease %s: %w", op, Token(topic, id), err)
	}
	channel := b.channel
	if here {
		channel = ""
	}
	var v []string
	for try := 0; ; try++ {
		v, err = changeScript.Run(ctx, b.rdb, []string{b.leasePrefix(topic) + id},
			op, b.cfg.Now().UnixMilli(), arg, reason, channel, "s "+id).StringSlice()
		if err != nil {
			return State{}, fmt.Errorf("%s lease %s: %w", op, Token(topic, id), err)
		}
		// A lease handed by another member may be read before it is
		// written there (Fire).
		if v[0] != "" || here || try == len(readAgain) || pause.For(ctx, readAgain[try]) != nil {
			break
		}
	}
	return b.afterChange(op, topic, id, here, v)
}

// readAgain are the waits before a lease found missing is read again: a
// member hands a job to its long-poll as it writes the lease, and the
// worker's ack may reach Redis through another member first.
var readAgain = []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}

// isHere reports whether a Fire of this member waits on lease id, once its
// lease is written if the Fire handed it to a long-poll before.
func (b *Broker) isHere(ctx context.Context, id string) (bool, error) {
	b.mu.Lock()
	f, here := b.firing[id]
	var written chan struct{}
	if here {
		written = f.written
	}
	b.mu.Unlock()
	if written != nil {
		select {
		case <-written:
		case <-ctx.Done():
			return true, ctx.Err()
		}
	}
	return here, nil
}

// afterChange tells a Fire of this member (here) of a change op made, and
// reads the state changeScript answered, v.
func (b *Broker) afterChange(op, topic, id string, here bool, v []string) (State, error) {
	if here {
		msg := "s " + id
		if v[0] == stateAcked {
			msg += " " + stateAcked
		}
		b.heardMessage(msg)
	}
	switch v[0] {
	case "":
		return State{}, fmt.Errorf("lease %s: %w", Token(topic, id), ErrNotFound)
	case stateAcked:
		if op == "ack" {
			return State{State: "acked"}, nil
		}
		return State{}, fmt.Errorf("lease %s was acked: %w", Token(topic, id), ErrEnded)
	case stateNacked:
		if op == "nack" {
			return State{State: "nacked"}, nil
		}
		return State{}, fmt.Errorf("lease %s was nacked: %w", Token(topic, id), ErrEnded)
	case stateLeased:
		ms, _ := strconv.ParseInt(v[1], 10, 64)
		return State{State: "leased", Expires: time.UnixMilli(ms)}, nil
	case stateExpired:
		return State{}, fmt.Errorf("lease %s has expired: the job will be offered again: %w", Token(topic, id), ErrEnded)
	}
	return State{}, fmt.Errorf("lease %s was never taken: %w", Token(topic, id), ErrEnded)
}

// Waiting is how many more jobs of topic the workers waiting on every
// member would take now: timer.Demand.
func (b *Broker) Waiting(topic string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	n := -b.offered[topic]
	if w := b.waiting[topic]; w != nil {
		n += w.demand(now)
	}
	cutoff := now.Add(-demandFor)
	for _, h := range b.heard[topic] {
		if h.at.After(cutoff) {
			n += h.n
		}
	}
	return n
}

// Changed receives when a topic's demand may have risen: timer.Demand.
func (b *Broker) Changed() <-chan struct{} { return b.changed }

func (b *Broker) rose() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}

// addWaiting adds n (negative: takes it away) to this member's waiting
// workers of topic, and says so to the others.
func (b *Broker) addWaiting(topic string, n int) {
	now := b.cfg.Now()
	b.mu.Lock()
	w := b.waiting[topic]
	if w == nil {
		w = &waiters{offer: make(chan struct{}), offers: 1} // the list unread
		b.waiting[topic] = w
	}
	before := w.demand(now)
	w.n += n
	if w.n >= w.peak || now.Sub(w.peakAt) > demandLinger {
		w.peak, w.peakAt = w.n, now
	}
	after := w.demand(now)
	b.mu.Unlock()
	if after > before {
		b.rose()
	}
	if after != before {
		b.say(context.Background(), topic, after)
	}
}

// offerSignal is closed when an offer of topic is heard.
func (b *Broker) offerSignal(topic string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.waiting[topic]; w != nil {
		return w.offer
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// say publishes this member's waiting workers of topic.
func (b *Broker) say(ctx context.Context, topic string, n int) {
	msg := "d " + topic + " " + b.cfg.Member + " " + strconv.Itoa(n)
	if err := b.rdb.Publish(ctx, b.channel, msg).Err(); err != nil {
		b.cfg.Logger.Warn("pull: could not publish the waiting workers; other members learn of them within a second", "err", err)
	}
}

// Run hears the other members' offers, lease changes and waiting workers,
// and publishes this member's every second, until ctx is done; then the
// long-polls waiting answer with no job.
func (b *Broker) Run(ctx context.Context) error {
	defer b.stopOnce.Do(func() { close(b.stopping) })
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(demandEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := b.cfg.Now()
			b.mu.Lock()
			counts := make(map[string]int, len(b.waiting))
			for topic, w := range b.waiting {
				counts[topic] = w.demand(now)
				if w.n == 0 && now.Sub(w.peakAt) > demandLinger {
					delete(b.waiting, topic) // said once more, as 0
				}
			}
			b.mu.Unlock()
			for topic, n := range counts {
				b.say(ctx, topic, n)
			}
		}
	})
	defer wg.Wait()
	backoff := 50 * time.Millisecond
	for {
		err := b.listen(ctx)
		if ctx.Err() != nil {
			return nil
		}
		b.cfg.Logger.Warn("pull: subscription failed; subscribing again", "channel", b.channel, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (b *Broker) listen(ctx context.Context) error {
	ps := b.rdb.Subscribe(ctx, b.channel)
	defer ps.Close()
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()
	if _, err := ps.Receive(ctx); err != nil {
		return err
	}
	// Messages were lost while unsubscribed: wake every waiter to read
	// the state again.
	b.wakeAll()
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		b.heardMessage(msg.Payload)
	}
}

func (b *Broker) heardMessage(m string) {
	kind, rest, _ := strings.Cut(m, " ")
	b.mu.Lock()
	defer b.mu.Unlock()
	switch kind {
	case "o":
		if w := b.waiting[rest]; w != nil {
			w.offers++
			close(w.offer)
			w.offer = make(chan struct{})
		}
	case "t":
		if f := b.firing[rest]; f != nil {
			b.taken(f)
		}
	case "s":
		id, state, _ := strings.Cut(rest, " ")
		if f := b.firing[id]; f != nil {
			f.acked = f.acked || state == stateAcked
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
	case "d":
		f := strings.Fields(rest)
		if len(f) != 3 || f[1] == b.cfg.Member {
			return
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return
		}
		byMember := b.heard[f[0]]
		if byMember == nil {
			byMember = map[string]heardDemand{}
			b.heard[f[0]] = byMember
		}
		if n <= 0 {
			delete(byMember, f[1]) // the member lingered already
			if len(byMember) == 0 {
				delete(b.heard, f[0])
			}
			return
		}
		if n > byMember[f[1]].n {
			b.rose()
		}
		byMember[f[1]] = heardDemand{n: n, at: b.cfg.Now()}
	}
}

func (b *Broker) wakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.waiting {
		close(w.offer)
		w.offer = make(chan struct{})
	}
	for _, f := range b.firing {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// offerScript writes a lease, offered, and pushes it onto its topic's
// list; or, given an expiry, writes it leased until then to a long-poll
// of this member, and returns the expiry. KEYS: lease, list. ARGV: job,
// deadline ms, id, channel, message (” for none), expiry ms (” to offer),
// the member firing it.
var offerScript = redis.NewScript(`
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[1], 's', 'l', 'j', ARGV[1], 'd', ARGV[2], 'e', ARGV[6], 'm', ARGV[7])
  redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]) + 60000)
  return tonumber(ARGV[6])
end
redis.call('HSET', KEYS[1], 's', 'o', 'j', ARGV[1], 'd', ARGV[2], 'm', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[2]) + 60000)
redis.call('RPUSH', KEYS[2], ARGV[3])
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[5]) end
return 1
`)

// settleScript reads a lease, withdrawing it if offered and ARGV[2] is
// set, and expiring it if leased and past its expiry or ARGV[3] is set.
// KEYS: lease. ARGV: now ms, withdraw, end. Returns {state, ...}.
var settleScript = redis.NewScript(`
local s = redis.call('HGET', KEYS[1], 's')
if not s then return {''} end
if s == 'o' and ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 's', 'w')
  return {'w'}
end
if s == 'l' then
  local e = redis.call('HGET', KEYS[1], 'e')
  if tonumber(e) <= tonumber(ARGV[1]) or ARGV[3] == '1' then
    redis.call('HSET', KEYS[1], 's', 'x')
    return {'x'}
  end
  return {'l', e}
end
if s == 'n' then
  local v = redis.call('HMGET', KEYS[1], 'n', 'r')
  return {'n', v[1] or '-1', v[2] or ''}
end
return {s}
`)

// takeScript leases up to ARGV[2] offers of a topic's list. KEYS: list.
// ARGV: lease key prefix, max, now ms, lease ms, channel (told "t <id>"
// of each whose Fire is on another member), this member. Returns {id,
// job, expiry ms, ...}. The lease keys share the list's hash tag.
var takeScript = redis.NewScript(takeSource)

const takeSource = `
local out = {}
local now = tonumber(ARGV[3])
local n = tonumber(ARGV[2])
while #out < 3 * n do
  local id = redis.call('LPOP', KEYS[1])
  if not id then break end
  local key = ARGV[1] .. id
  local v = redis.call('HMGET', key, 's', 'j', 'd', 'm')
  if v[1] == 'o' then
    local e = math.min(now + tonumber(ARGV[4]), tonumber(v[3]))
    redis.call('HSET', key, 's', 'l', 'e', e)
    if v[4] ~= ARGV[6] then redis.call('PUBLISH', ARGV[5], 't ' .. id) end
    table.insert(out, id)
    table.insert(out, v[2])
    table.insert(out, tostring(e))
  end
end
return out
`

// changeScript acks, nacks or extends a lease. KEYS: lease. ARGV: op,
// now ms, argument (nack: delay ms; extend: lease ms), reason, channel,
// message ("s <id>", and " a" after it for an ack, final: the Fire takes
// it at its word; no channel: none). Returns {state, ...} after the change, ” for no lease.
var changeScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 'e', 'd')
local s = v[1]
if not s then return {''} end
local now = tonumber(ARGV[2])
if s == 'l' and tonumber(v[2]) <= now then
  redis.call('HSET', KEYS[1], 's', 'x')
  if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
  return {'x'}
end
if s ~= 'l' then return {s} end
if ARGV[1] == 'ack' then
  redis.call('HSET', KEYS[1], 's', 'a')
  if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6] .. ' a') end
  return {'a'}
elseif ARGV[1] == 'nack' then
  redis.call('HSET', KEYS[1], 's', 'n', 'n', ARGV[3], 'r', ARGV[4])
else
  local e = math.min(now + tonumber(ARGV[3]), tonumber(v[3]))
  redis.call('HSET', KEYS[1], 'e', e)
  if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
  return {'l', tostring(e)}
end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[6]) end
return {redis.call('HGET', KEYS[1], 's')}
`)
