package webhook

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
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

// ticket is a call let through by allow, to be handed back to done.
type ticket struct {
	host  string
	probe bool
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
		}
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
	c.open, c.until, c.failures = true, now.Add(c.cooldown), 0
	b.obs.BreakerOpened()
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
