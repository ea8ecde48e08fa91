package webhook

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toc-project/toc/timer"
)

// Defaults of a Client's circuit breaker.
const (
	DefaultBreakerThreshold   = 5
	DefaultBreakerCooldown    = time.Second
	DefaultBreakerMaxCooldown = time.Minute
)

// maxBreakerHosts bounds how many hosts a breaker keeps.
const maxBreakerHosts = 10_000

// ErrBreakerOpen is wrapped by the *timer.NotSentError of a job that was
// not sent because its callback host's circuit breaker was open.
var ErrBreakerOpen = errors.New("circuit breaker open")

// BreakerObserver receives the events of a Client's circuit breaker, for
// metrics. Its methods are called under the breaker's lock and must not
// block. (The jobs it defers are counted by timer.Observer.Deferred.)
type BreakerObserver interface {
	// BreakerOpened: a host's breaker opened, or opened again after a
	// failed probe.
	BreakerOpened()
	// BreakerOpenHosts: the number of hosts whose breaker is open or
	// half-open changed by delta.
	BreakerOpenHosts(delta int)
}

type nopBreakerObserver struct{}

func (nopBreakerObserver) BreakerOpened()       {}
func (nopBreakerObserver) BreakerOpenHosts(int) {}

// breaker is a Client's circuit breaker, one circuit per callback host,
// so that a host that keeps failing is left alone for a while instead of
// burning an attempt of every job bound for it. A nil *breaker is a
// disabled one: it lets every call through.
//
// A host is the callback URL's host and port, lowercased, the port
// defaulting to 80 for http and 443 for https. A call's outcome is one of:
//
//   - a failure: no response (connection refused or reset, DNS, TLS, a
//     timeout) or a 5xx, 503 with Retry-After included;
//   - a success: any other response, 3xx and 4xx included (429 and 410
//     too): the host is up and answering;
//   - neither: the caller gave up (its ctx was cancelled, as at the end
//     of a shutdown), or the dial guard refused a private address.
//
// A closed circuit counts consecutive failures, and a success resets the
// count. At threshold failures it opens for a cooldown: base at the first
// opening, doubled at each consecutive one up to maxCooldown, then ±10%.
// While it is open no call is made: the job is not sent, and is due again
// at the end of the open period plus up to a quarter of the cooldown, so
// that the deferred jobs do not come back as one wave. When the period is
// over the circuit is half-open: the first call is a probe and goes
// through; until the probe ends, other jobs are not sent and are due
// again after base, plus up to a quarter of it (a probe lasts at most the
// webhook timeout). A probe that succeeds closes the circuit and resets
// the cooldown to base; one that fails opens it again for twice the
// cooldown; one that is neither lets the next call probe. Calls made
// while the circuit was closed that end after it opened do not count.
//
// Only hosts with a failure or a circuit that is not closed are kept, at
// most maxHosts of them. When that many are kept, a closed circuit, or a
// half-open one that is not probing, is dropped to make room for a new
// host; when there is none, the new host is not kept, and is called as if
// it had no breaker.
type breaker struct {
	threshold   int
	base        time.Duration
	maxCooldown time.Duration
	maxHosts    int
	obs         BreakerObserver

	mu    sync.Mutex
	hosts map[string]*circuit
}

// circuit is one host's state in a breaker. A closed circuit is kept only
// while failures > 0.
type circuit struct {
	failures int // consecutive failures while closed
	// streak counts the consecutive failures since the last success,
	// across openings (failed probes included), for BreakerState.
	streak int
	// since is when the circuit took its state: the first failure of a
	// closed one, the opening of an open one.
	since time.Time
	// topics are the topics of the jobs whose calls failed or were held
	// back since the circuit was kept, each with the due time of the
	// oldest of its jobs held back (zero: none); at most
	// maxCircuitTopics.
	topics map[string]time.Time
	// open is true while open or half-open: half-open once until passed.
	open  bool
	until time.Time
	// cooldown is the length of the last open period; opens counts the
	// consecutive openings, for the doubling.
	cooldown time.Duration
	opens    int
	probing  bool // half-open, with the probe's call in flight
}

// newBreaker returns the breaker cfg asks for, or nil when it is
// disabled. cfg has its defaults.
func newBreaker(cfg Config) *breaker {
	if cfg.BreakerThreshold < 0 {
		return nil
	}
	return &breaker{
		threshold:   cfg.BreakerThreshold,
		base:        cfg.BreakerCooldown,
		maxCooldown: cfg.BreakerMaxCooldown,
		maxHosts:    maxBreakerHosts,
		obs:         cfg.Observer,
		hosts:       make(map[string]*circuit),
	}
}

// maxCircuitTopics bounds the topics a circuit remembers.
const maxCircuitTopics = 64

// ticket is a call let through by allow, to be handed back to done.
type ticket struct {
	host  string
	probe bool
	// topic is the topic of the job called, which done records with a
	// failure ("" for none).
	topic string
}

// outcome is what a call says of its host's health.
type outcome int8

const (
	neither outcome = iota
	success
	failure
)

// allow lets a call to host through, or returns the *timer.NotSentError
// that defers its job.
func (b *breaker) allow(host string, now time.Time) (ticket, error) {
	if b == nil {
		return ticket{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.hosts[host]
	switch {
	case c == nil || !c.open:
		return ticket{host: host}, nil
	case now.Before(c.until):
		return ticket{}, &timer.NotSentError{
			Until: c.until.Add(spread(c.cooldown)),
			Err:   fmt.Errorf("host %s: %w", host, ErrBreakerOpen),
		}
	case !c.probing:
		c.probing = true
		return ticket{host: host, probe: true}, nil
	}
	return ticket{}, &timer.NotSentError{
		Until: now.Add(b.base + spread(b.base)),
		Err:   fmt.Errorf("host %s: %w (half-open, probing)", host, ErrBreakerOpen),
	}
}

// hold records that a job of topic due at due was held back by host's
// circuit, for BreakerStates: the topic's oldest held job.
func (b *breaker) hold(host, topic string, due time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.hosts[host]; c != nil && c.open {
		c.note(topic, due)
	}
}

// note remembers topic in c, with a job held back due at due (zero for a
// failed call). b.mu is held.
func (c *circuit) note(topic string, due time.Time) {
	if topic == "" {
		return
	}
	if c.topics == nil {
		c.topics = make(map[string]time.Time)
	}
	oldest, ok := c.topics[topic]
	switch {
	case !ok && len(c.topics) >= maxCircuitTopics:
	case !due.IsZero() && (oldest.IsZero() || due.Before(oldest)):
		c.topics[topic] = due
	case !ok:
		c.topics[topic] = time.Time{}
	}
}

// done records the outcome of a call that allow let through, at now.
func (b *breaker) done(t ticket, o outcome, now time.Time) {
	if b == nil || (o == neither && !t.probe) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.hosts[t.host]
	switch {
	case t.probe:
		c.probing = false
		switch o {
		case success:
			delete(b.hosts, t.host)
			b.obs.BreakerOpenHosts(-1)
		case failure:
			c.streak++
			c.note(t.topic, time.Time{})
			b.open(c, now)
		}
	case c != nil && c.open:
		// Let through while closed, it ended after the circuit opened.
	case o == success:
		delete(b.hosts, t.host) // no-op when not kept
	default:
		if c == nil {
			if c = b.keep(t.host, now); c == nil {
				return
			}
			c.since = now
		}
		c.streak++
		c.note(t.topic, time.Time{})
		if c.failures++; c.failures >= b.threshold {
			b.open(c, now)
		}
	}
}

// open opens c, or opens it again after a failed probe, at now.
func (b *breaker) open(c *circuit, now time.Time) {
	if !c.open {
		b.obs.BreakerOpenHosts(1)
	}
	c.opens++
	c.cooldown = b.cooldown(c.opens)
	c.open, c.until, c.failures, c.since = true, now.Add(c.cooldown), 0, now
	b.obs.BreakerOpened()
}

// Breaker states, as BreakerState.State gives them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// BreakerState is one callback host's circuit breaker as a Client's
// Breakers shows it.
type BreakerState struct {
	// Host is the callback host, host:port.
	Host string
	// State is BreakerClosed (failing, below the threshold), BreakerOpen
	// (no call made until OpenUntil) or BreakerHalfOpen (the next call
	// probes the host).
	State string
	// Since is when the state began: a closed circuit's first failure, an
	// open one's opening, a half-open one's OpenUntil.
	Since time.Time
	// Failures counts the consecutive failed calls since the last
	// success, failed probes included.
	Failures int
	// OpenUntil is when an open circuit turns half-open (zero when
	// closed).
	OpenUntil time.Time
	// OldestHeld is the due time of the oldest job of the topic asked
	// about that the circuit held back since it opened, not sent (zero:
	// none).
	OldestHeld time.Time
}

// Breakers returns, by host, the circuits that are not closed or have
// failures and that jobs of topic have met: their calls failed or were
// held back. A disabled breaker has none.
func (c *Client) Breakers(topic string, now time.Time) []BreakerState {
	return c.breaker.states(topic, now)
}

// states is Breakers.
func (b *breaker) states(topic string, now time.Time) []BreakerState {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []BreakerState
	for host, c := range b.hosts {
		oldest, ok := c.topics[topic]
		if !ok {
			continue
		}
		st := BreakerState{Host: host, State: BreakerClosed, Since: c.since, Failures: c.streak}
		switch {
		case c.open && now.Before(c.until):
			st.State, st.OpenUntil, st.OldestHeld = BreakerOpen, c.until, oldest
		case c.open:
			st.State, st.Since, st.OpenUntil, st.OldestHeld = BreakerHalfOpen, c.until, c.until, oldest
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b BreakerState) int { return strings.Compare(a.Host, b.Host) })
	return out
}

// cooldown is the open period after the nth consecutive opening:
// min(maxCooldown, base·2^(n-1)), ±10%.
func (b *breaker) cooldown(n int) time.Duration {
	d := b.maxCooldown
	if n <= 40 && b.base<<(n-1) > 0 && b.base<<(n-1) < d {
		d = b.base << (n - 1)
	}
	return d - d/10 + rand.N(d/5+1)
}

// keep adds a closed circuit for host, making room if it has to, or
// returns nil when there is none. b.mu is held.
func (b *breaker) keep(host string, now time.Time) *circuit {
	if len(b.hosts) >= b.maxHosts && !b.evict(now) {
		return nil
	}
	c := &circuit{}
	b.hosts[host] = c
	return c
}

// evict drops a closed circuit, or a half-open one that is not probing,
// and reports whether it found one. b.mu is held.
func (b *breaker) evict(now time.Time) bool {
	for host, c := range b.hosts {
		switch {
		case !c.open:
		case !c.probing && !now.Before(c.until):
			b.obs.BreakerOpenHosts(-1)
		default:
			continue
		}
		delete(b.hosts, host)
		return true
	}
	return false
}

// spread is a random wait in [0, d/4], which spreads out the jobs that
// a breaker defers.
func spread(d time.Duration) time.Duration { return rand.N(d/4 + 1) }

// breakerHost is the key of u's host in a breaker: host:port, lowercased,
// the port defaulting by scheme.
func breakerHost(u *url.URL) string {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(host, port)
}

// callOutcome is what a call's response, or its error, says of the host.
func callOutcome(resp *http.Response, err error) outcome {
	switch {
	case err == nil && resp.StatusCode >= 500:
		return failure
	case err == nil:
		return success
	case errors.Is(err, context.Canceled), errors.Is(err, ErrPrivateAddress):
		return neither
	}
	return failure
}
