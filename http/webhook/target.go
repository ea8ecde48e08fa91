package webhook

import (
	"net"
	"net/url"
	"sync"
	"sync/atomic"
)

// target is what a call needs of its callback URL, worked out once per
// URL: parsing it and deriving the breaker's host, the address to dial
// and the request line were about 3 % of toc's CPU a fire, and a topic's
// jobs nearly always share one URL.
type target struct {
	u    *url.URL // not to be changed: shared by every call to the URL
	host string   // the breaker's host:port (breakerHost)
	addr string   // host:port to dial, the port defaulted
	uri  string   // the request line's target: path and query
}

// targets keeps the targets of the URLs called lately, at most
// maxTargets of them: when that many are kept, they are all let go, so
// that URLs of one call each (a job's id in the query) cannot hold
// memory or crowd out the URLs called again and again.
type targets struct {
	m sync.Map // raw URL → *target
	n atomic.Int64
}

const maxTargets = 10_000

// get returns raw's target, parsing raw unless it is kept.
func (ts *targets) get(raw string) (*target, error) {
	if t, ok := ts.m.Load(raw); ok {
		return t.(*target), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	t := &target{u: u, host: breakerHost(u), addr: addr, uri: u.RequestURI()}
	if ts.n.Add(1) > maxTargets {
		ts.m.Clear()
		ts.n.Store(1)
	}
	ts.m.Store(raw, t)
	return t, nil
}
