package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toc-project/toc/timer"
)

// MaxCallbackURLBytes bounds the length of a callback URL.
const MaxCallbackURLBytes = timer.MaxCallbackURLBytes

// ErrPrivateAddress is wrapped by the error of a webhook whose callback
// host resolved, at dispatch, to an address IsPrivate refuses.
var ErrPrivateAddress = errors.New("refusing to connect to a private address")

// GuardConfig configures a Guard. The zero value refuses private
// addresses and looks hosts up through net.DefaultResolver.
type GuardConfig struct {
	// AllowPrivate lets callback URLs reach addresses that IsPrivate
	// refuses: for development, or receivers on the same private network.
	AllowPrivate bool
	// Resolver looks up the host of a callback URL (default
	// net.DefaultResolver).
	Resolver *net.Resolver
	// PublicHostTTL is how long Check takes a host it resolved to public
	// addresses only to be public still, without looking it up again
	// (default DefaultPublicHostTTL; negative: look up on every check). A
	// host found private, or not found, is looked up again every time.
	PublicHostTTL time.Duration
	// Now is PublicHostTTL's clock (default time.Now).
	Now func() time.Time
}

// DefaultPublicHostTTL is GuardConfig.PublicHostTTL's default. Go's own
// resolver keeps no cache, so without one every job scheduled to a host
// name was a DNS query on its way to the caller's answer.
const DefaultPublicHostTTL = 10 * time.Second

// maxPublicHosts bounds the hosts a Guard remembers: a client naming new
// hosts without end makes it look each up, as without the cache, and
// holds no more memory than this.
const maxPublicHosts = 4096

func (c GuardConfig) withDefaults() GuardConfig {
	c.Resolver = cmp.Or(c.Resolver, net.DefaultResolver)
	c.PublicHostTTL = cmp.Or(c.PublicHostTTL, DefaultPublicHostTTL)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Guard refuses callback URLs that are malformed or point at a private
// address, when a job is scheduled.
type Guard struct {
	cfg GuardConfig

	mu     sync.Mutex
	public map[string]time.Time // host: when Check looks it up again
}

// NewGuard returns a Guard configured by cfg. Every GuardConfig is valid.
func NewGuard(cfg GuardConfig) *Guard {
	return &Guard{cfg: cfg.withDefaults(), public: make(map[string]time.Time)}
}

// Check checks a callback URL when a job is scheduled: an http or https
// URL with a host, no userinfo, at most MaxCallbackURLBytes long. Unless
// AllowPrivate, the host (an IP literal, or every address it resolves to
// through the Resolver) must not be private in the sense of IsPrivate.
//
// A bad URL, or a host that does not exist, is a *timer.FieldError on
// "callback_url". A lookup that fails otherwise (a DNS timeout) is
// returned wrapped as it is: the URL could not be checked, and the caller
// may try again.
//
// This check gives the caller early notice; the Client checks the
// address again when it connects, so DNS that changes in between
// cannot reach a private address. That is also why a host found public
// is taken as public for PublicHostTTL without another lookup.
func (g *Guard) Check(ctx context.Context, raw string) error {
	if len(raw) > MaxCallbackURLBytes {
		return callbackError("longer than %d bytes", MaxCallbackURLBytes)
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return callbackError("not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return callbackError("scheme must be http or https")
	case u.User != nil:
		return callbackError("must not contain userinfo")
	case u.Hostname() == "":
		return callbackError("must have a host")
	}
	if g.cfg.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if kind := privateKind(ip); kind != "" {
			return callbackError("host %s is a %s address", ip, kind)
		}
		return nil
	}
	if g.knownPublic(host) {
		return nil
	}
	ips, err := g.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if dnsErr, ok := errors.AsType[*net.DNSError](err); ok && dnsErr.IsNotFound {
		return callbackError("host %s does not resolve", host)
	}
	if err != nil {
		return fmt.Errorf("check callback_url: resolve %s: %w", host, err)
	}
	if len(ips) == 0 {
		return callbackError("host %s does not resolve", host)
	}
	for _, ip := range ips {
		if kind := privateKind(ip); kind != "" {
			return callbackError("host %s resolves to %s, a %s address", host, ip.Unmap(), kind)
		}
	}
	g.rememberPublic(host)
	return nil
}

// knownPublic reports whether host was found public less than
// PublicHostTTL ago.
func (g *Guard) knownPublic(host string) bool {
	if g.cfg.PublicHostTTL < 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.public[host]
	return ok && g.cfg.Now().Before(until)
}

// rememberPublic notes that host resolved to public addresses only. A
// Guard that holds maxPublicHosts already forgets them all first: one
// more lookup each is all that costs.
func (g *Guard) rememberPublic(host string) {
	if g.cfg.PublicHostTTL < 0 {
		return
	}
	until := g.cfg.Now().Add(g.cfg.PublicHostTTL)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.public) >= maxPublicHosts {
		clear(g.public)
	}
	g.public[strings.Clone(host)] = until // not the URL it was cut from
}

func callbackError(format string, args ...any) error {
	return &timer.FieldError{Field: "callback_url", Message: fmt.Sprintf(format, args...)}
}

// IsPrivate reports whether a webhook must not connect to addr: a
// loopback, private (RFC 1918, RFC 4193), link-local, unspecified,
// multicast, shared (100.64.0.0/10) or otherwise reserved address,
// including the IPv4 ones written in IPv6 (::ffff:127.0.0.1, and the
// IPv4-compatible, NAT64 and 6to4 forms). The zero Addr is private.
func IsPrivate(addr netip.Addr) bool { return privateKind(addr) != "" }

// Ranges that the netip predicates do not cover, with the reason each is
// refused.
var reservedPrefixes = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// IPv6 ranges that carry an IPv4 address in their bits, and where: a
// request to them reaches that IPv4 address through a gateway.
var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96") // last 4 bytes
	sixToFour   = netip.MustParsePrefix("2002::/16")    // bytes 2..5
)

// privateKind names the kind of non-public address addr is, or returns ""
// for a public one.
func privateKind(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsMulticast():
		return "multicast"
	}
	for _, r := range reservedPrefixes {
		if r.prefix.Contains(addr) {
			return r.kind
		}
	}
	b := addr.As16()
	switch {
	case nat64Prefix.Contains(addr):
		return privateKind(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(addr):
		return privateKind(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return ""
}

// dialGuard is a net.Dialer Control function that refuses to connect to
// a private address. It runs after DNS resolution, on the address being
// connected to, so a host that resolved to a public address when the job
// was scheduled cannot be pointed at a private one later.
func dialGuard(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial guard: cannot parse address %q", address)
	}
	if kind := privateKind(ap.Addr()); kind != "" {
		return fmt.Errorf("%w: %s is a %s address", ErrPrivateAddress, ap.Addr().Unmap(), kind)
	}
	return nil
}
