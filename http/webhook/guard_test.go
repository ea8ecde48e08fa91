package webhook_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

func TestIsPrivate(t *testing.T) {
	tests := []struct {
		addr    string
		private bool
	}{
		// Loopback, in every spelling.
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"::1", true},
		{"::ffff:127.0.0.1", true},
		{"::127.0.0.1", true}, // IPv4-compatible
		// RFC 1918 and RFC 4193.
		{"10.0.0.1", true},
		{"10.255.255.255", true},
		{"172.16.0.1", true},
		{"172.31.255.254", true},
		{"172.15.255.255", false},
		{"172.32.0.0", false},
		{"192.168.1.1", true},
		{"::ffff:192.168.1.1", true},
		{"::ffff:10.1.2.3", true},
		{"fc00::1", true},
		{"fd12:3456:789a::1", true},
		// Link-local, including the cloud metadata address.
		{"169.254.169.254", true},
		{"::ffff:169.254.169.254", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"febf::1", true},
		// Unspecified and "this network".
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"::", true},
		{"::ffff:0.0.0.0", true},
		// Multicast and broadcast.
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"ff02::1", true},
		{"ff05::2", true},
		{"255.255.255.255", true},
		// Shared address space (CGNAT).
		{"100.64.0.1", true},
		{"100.127.255.254", true},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		// Other reserved ranges.
		{"192.0.0.8", true},
		{"198.18.0.1", true},
		{"240.0.0.1", true},
		{"fec0::1", true},
		{"100::1", true},
		{"64:ff9b:1::1", true},
		// IPv4 carried in IPv6 through a gateway.
		{"64:ff9b::7f00:1", true},   // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", true},    // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", false}, // NAT64 of 8.8.8.8
		{"2002:7f00:1::", true},     // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", true}, // 6to4 of 169.254.169.254
		{"2002:808:808::1", false},  // 6to4 of 8.8.8.8
		// Public.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.215.14", false},
		{"::ffff:8.8.8.8", false},
		{"2606:4700::1", false},
		{"2001:4860:4860::8888", false},
	}
	for _, tt := range tests {
		addr := netip.MustParseAddr(tt.addr)
		if got := webhook.IsPrivate(addr); got != tt.private {
			t.Errorf("IsPrivate(%s) = %v, want %v", tt.addr, got, tt.private)
		}
	}
	if !webhook.IsPrivate(netip.Addr{}) {
		t.Error("the zero Addr is not private")
	}
}

func TestCheckCallbackURL(t *testing.T) {
	resolver := fakeResolver(map[string]netip.Addr{
		"public.test.":   netip.MustParseAddr("93.184.215.14"),
		"internal.test.": netip.MustParseAddr("10.1.2.3"),
		"metadata.test.": netip.MustParseAddr("fe80::1"),
	})
	tests := []struct {
		url string
		// want is part of the message, "" when the URL is accepted.
		want string
		// private marks a URL that allowPrivate accepts.
		private bool
	}{
		{url: "https://public.test/hook?token=x", want: ""},
		{url: "http://public.test:8080/", want: ""},
		{url: "http://8.8.8.8/hook", want: ""},
		{url: "http://[2606:4700::1]/hook", want: ""},

		{url: "ftp://public.test/hook", want: "scheme"},
		{url: "public.test/hook", want: "scheme"},
		{url: "http:///hook", want: "host"},
		{url: "http://", want: "host"},
		{url: "http:public.test", want: "host"},
		{url: "http://user:pass@public.test/", want: "userinfo"},
		{url: "http://user@public.test/", want: "userinfo"},
		{url: "http://public.test/" + strings.Repeat("a", 2048), want: "longer than 2048"},
		{url: "http://public.test/%zz", want: "not a valid URL"},
		{url: "http://nowhere.test/", want: "does not resolve"},
		// Shorthand IPv4 forms are names to Go; only what they resolve to counts.
		{url: "http://127.1/", want: "does not resolve"},
		{url: "http://2130706433/", want: "does not resolve"},

		{url: "http://127.0.0.1/", want: "loopback", private: true},
		{url: "http://127.0.0.1:9000/hook", want: "loopback", private: true},
		{url: "http://localhost/", want: "loopback", private: true},
		{url: "http://[::1]/", want: "loopback", private: true},
		{url: "http://[::ffff:127.0.0.1]/", want: "loopback", private: true},
		{url: "http://10.0.0.1/", want: "private", private: true},
		{url: "http://192.168.0.10/", want: "private", private: true},
		{url: "http://169.254.169.254/latest/meta-data", want: "link-local", private: true},
		{url: "http://100.64.0.1/", want: "CGNAT", private: true},
		{url: "http://0.0.0.0/", want: "unspecified", private: true},
		{url: "http://internal.test/", want: "resolves to 10.1.2.3, a private address", private: true},
		{url: "http://metadata.test/", want: "link-local", private: true},
	}
	for _, tt := range tests {
		t.Run(tt.url[:min(len(tt.url), 60)], func(t *testing.T) {
			res := resolver
			if strings.Contains(tt.url, "localhost") {
				res = nil // the system resolver, which reads /etc/hosts
			}
			err := webhook.NewGuard(webhook.GuardConfig{Resolver: res}).Check(t.Context(), tt.url)
			checkCallbackError(t, err, tt.want)

			err = webhook.NewGuard(webhook.GuardConfig{AllowPrivate: true, Resolver: res}).Check(t.Context(), tt.url)
			if tt.private || tt.want == "does not resolve" {
				// allowPrivate does not look the host up at all.
				checkCallbackError(t, err, "")
			} else {
				checkCallbackError(t, err, tt.want)
			}
		})
	}
}

func checkCallbackError(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Errorf("err = %v, want nil", err)
		}
		return
	}
	fe, ok := errors.AsType[*timer.FieldError](err)
	switch {
	case !ok:
		t.Errorf("err = %v, want a FieldError", err)
	case fe.Field != "callback_url" || !strings.Contains(fe.Message, want):
		t.Errorf("err = %v, want callback_url: …%s…", err, want)
	case !errors.Is(err, timer.ErrInvalid):
		t.Errorf("err = %v is not ErrInvalid", err)
	}
}

// A failing lookup is not the caller's fault: it is not a FieldError.
func TestCheckCallbackURLLookupFails(t *testing.T) {
	resolver := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			return nil, errors.New("network is down")
		},
	}
	err := webhook.NewGuard(webhook.GuardConfig{Resolver: resolver}).Check(t.Context(), "https://public.test/")
	if err == nil {
		t.Fatal("err = nil")
	}
	if _, ok := errors.AsType[*timer.FieldError](err); ok || errors.Is(err, timer.ErrInvalid) {
		t.Errorf("err = %v is blamed on the caller", err)
	}
}

// The test servers listen on 127.0.0.1, which the dial guard refuses
// however the host is written.
func TestWebhookDialGuard(t *testing.T) {
	rec := &recorder{}
	srv := newServer(t, rec)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	guarded, err := webhook.NewClient(webhook.Config{Secrets: []string{testSecret}})
	if err != nil {
		t.Fatal(err)
	}
	for _, callback := range []string{srv.URL, "http://localhost:" + u.Port() + "/hook"} {
		err := guarded.Fire(t.Context(), delivery(testJob(callback), 1))
		if !errors.Is(err, webhook.ErrPrivateAddress) {
			t.Errorf("Fire to %s: err = %v, want ErrPrivateAddress", callback, err)
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("the receiver got %d requests", n)
	}

	allowed := newClient(t, webhook.Config{}) // AllowPrivate
	if err := allowed.Fire(t.Context(), delivery(testJob(srv.URL), 1)); err != nil {
		t.Errorf("with AllowPrivate: %v", err)
	}
}

// A host found public is not looked up again for PublicHostTTL; one
// found private, or not found, is looked up every time; a negative TTL
// looks up every time; and the hosts remembered are bounded.
func TestGuardRemembersPublicHosts(t *testing.T) {
	hosts := map[string]netip.Addr{
		"public.test.":   netip.MustParseAddr("93.184.215.14"),
		"internal.test.": netip.MustParseAddr("10.1.2.3"),
	}
	for i := range 4100 {
		hosts[fmt.Sprintf("h%d.test.", i)] = netip.MustParseAddr("93.184.215.15")
	}
	var dials atomic.Int64
	resolver := fakeResolver(hosts)
	dial := resolver.Dial
	resolver.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
		dials.Add(1)
		return dial(ctx, network, address)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// looksUp reports whether checking url made a DNS query, and fails
	// the test if its verdict is not want ("" for accepted).
	looksUp := func(t *testing.T, g *webhook.Guard, url, want string) bool {
		t.Helper()
		before := dials.Load()
		checkCallbackError(t, g.Check(t.Context(), url), want)
		return dials.Load() > before
	}

	g := webhook.NewGuard(webhook.GuardConfig{Resolver: resolver, Now: clock})
	if !looksUp(t, g, "https://public.test/a", "") {
		t.Fatal("the first check of a host made no query")
	}
	if looksUp(t, g, "https://public.test/b", "") {
		t.Error("a public host was looked up again within the TTL")
	}
	now = now.Add(webhook.DefaultPublicHostTTL)
	if !looksUp(t, g, "https://public.test/c", "") {
		t.Error("a public host was not looked up again once the TTL was over")
	}
	for range 2 {
		if !looksUp(t, g, "http://internal.test/", "private address") {
			t.Error("a private host was not looked up again")
		}
		if !looksUp(t, g, "http://nowhere.test/", "does not resolve") {
			t.Error("a host not found was not looked up again")
		}
	}

	every := webhook.NewGuard(webhook.GuardConfig{Resolver: resolver, Now: clock, PublicHostTTL: -1})
	for range 2 {
		if !looksUp(t, every, "https://public.test/", "") {
			t.Error("with a negative TTL, a check made no query")
		}
	}

	// 4,100 hosts: the Guard forgets those it held when it holds 4,096,
	// so the first is looked up again, and the last is still known.
	bounded := webhook.NewGuard(webhook.GuardConfig{Resolver: resolver, Now: clock})
	for i := range 4100 {
		looksUp(t, bounded, fmt.Sprintf("https://h%d.test/", i), "")
	}
	if !looksUp(t, bounded, "https://h0.test/", "") {
		t.Error("the Guard still knew the first of 4,100 hosts")
	}
	if looksUp(t, bounded, "https://h4099.test/", "") {
		t.Error("the Guard forgot the last of 4,100 hosts")
	}
}

// BenchmarkGuardCheck is the check of a public callback host that a job
// scheduled names, looked up through a DNS server in memory, remembered
// for the TTL and looked up every time.
//
//	go test -run '^$' -bench GuardCheck ./http/webhook/
func BenchmarkGuardCheck(b *testing.B) {
	resolver := fakeResolver(map[string]netip.Addr{"public.test.": netip.MustParseAddr("93.184.215.14")})
	for _, v := range []struct {
		name string
		ttl  time.Duration
	}{{"remembered", 0}, {"every_time", -1}} {
		b.Run(v.name, func(b *testing.B) {
			g := webhook.NewGuard(webhook.GuardConfig{Resolver: resolver, PublicHostTTL: v.ttl})
			b.ReportAllocs()
			for b.Loop() {
				if err := g.Check(b.Context(), "https://public.test/hooks/close"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fakeResolver is a resolver backed by a DNS server in memory: A and AAAA
// queries for a name in hosts get its address (or no answer for the other
// family), and any other name NXDOMAIN.
func fakeResolver(hosts map[string]netip.Addr) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			client, server := net.Pipe()
			go serveDNS(server, hosts)
			return client, nil
		},
	}
}

// serveDNS answers queries in the TCP framing (a net.Pipe is not a
// PacketConn) until the client hangs up.
func serveDNS(conn net.Conn, hosts map[string]netip.Addr) {
	defer conn.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(conn, size[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(conn, q); err != nil || len(q) < 12 {
			return
		}
		// The question: length-prefixed labels, a zero, type and class.
		var name strings.Builder
		i := 12
		for i < len(q) && q[i] != 0 {
			n := int(q[i])
			if i+1+n > len(q) {
				return
			}
			name.Write(q[i+1 : i+1+n])
			name.WriteByte('.')
			i += 1 + n
		}
		if i+5 > len(q) {
			return
		}
		qtype := binary.BigEndian.Uint16(q[i+1:])
		question := q[12 : i+5]

		addr, found := hosts[strings.ToLower(name.String())]
		var rcode byte
		if !found {
			rcode = 3 // NXDOMAIN
		}
		var answer []byte
		switch {
		case found && qtype == 1 && addr.Is4():
			a := addr.As4()
			answer = append([]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4}, a[:]...)
		case found && qtype == 28 && addr.Is6():
			a := addr.As16()
			answer = append([]byte{0xc0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 16}, a[:]...)
		}
		var ancount byte
		if answer != nil {
			ancount = 1
		}
		// Header: the query's id; a recursive answer (QR, RD, RA) with
		// rcode; one question and ancount answers.
		resp := []byte{0, 0, q[0], q[1], 0x81, 0x80 | rcode, 0, 1, 0, ancount, 0, 0, 0, 0}
		resp = append(resp, question...)
		resp = append(resp, answer...)
		binary.BigEndian.PutUint16(resp, uint16(len(resp)-2))
		if _, err := conn.Write(resp); err != nil {
			return
		}
	}
}
