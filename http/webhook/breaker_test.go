package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// Tests of the breaker itself, with its clock in hand; webhook_test.go
// runs it through a Client against real servers.

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// countingObserver counts a breaker's events.
type countingObserver struct {
	opened, openHosts atomic.Int64
}

func (o *countingObserver) BreakerOpened()         { o.opened.Add(1) }
func (o *countingObserver) BreakerOpenHosts(d int) { o.openHosts.Add(int64(d)) }

// testBreaker returns a breaker with the given threshold, a base cooldown
// of 1s and a maximum of 8s.
func testBreaker(t testing.TB, threshold int) (*breaker, *countingObserver) {
	t.Helper()
	obs := &countingObserver{}
	b := newBreaker(Config{
		BreakerThreshold:   threshold,
		BreakerCooldown:    time.Second,
		BreakerMaxCooldown: 8 * time.Second,
		Observer:           obs,
	}.withDefaults())
	if b == nil {
		t.Fatal("newBreaker = nil")
	}
	return b, obs
}

// call makes one call to host at now that ends with o, and returns
// allow's error (nil when the call went through).
func call(b *breaker, host string, o outcome, now time.Time) error {
	tk, err := b.allow(host, now)
	if err == nil {
		b.done(tk, o, now)
	}
	return err
}

// wantNotSent checks that err defers the job to a time in [from, to].
func wantNotSent(t testing.TB, err error, host string, from, to time.Time) {
	t.Helper()
	ns, ok := errors.AsType[*timer.NotSentError](err)
	if !ok {
		t.Fatalf("err = %v, want a NotSentError", err)
	}
	if ns.Until.Before(from) || ns.Until.After(to) {
		t.Errorf("Until = +%v, want +%v to +%v", ns.Until.Sub(t0), from.Sub(t0), to.Sub(t0))
	}
	if !errors.Is(err, ErrBreakerOpen) || !strings.Contains(err.Error(), host) {
		t.Errorf("err = %q, want ErrBreakerOpen naming %s", err, host)
	}
}

// within is [d - d/10, d + d/10].
func within(d time.Duration) (lo, hi time.Duration) { return d - d/10, d + d/10 }

func TestBreakerOpensAfterThreshold(t *testing.T) {
	// f: failure, s: success, n: neither.
	tests := []struct {
		calls string
		open  bool
	}{
		{"fffff", true},
		{"ffff", false},
		{"ffffsffff", false},
		{"sffffnf", true}, // neither does not reset the count
		{"ffffsfffff", true},
	}
	for _, tt := range tests {
		t.Run(tt.calls, func(t *testing.T) {
			b, obs := testBreaker(t, 5)
			for i, c := range tt.calls {
				o := map[rune]outcome{'f': failure, 's': success, 'n': neither}[c]
				if err := call(b, "h:80", o, t0); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			err := call(b, "h:80", success, t0)
			if open := err != nil; open != tt.open {
				t.Fatalf("open = %v (err %v), want %v", open, err, tt.open)
			}
			if tt.open && (obs.opened.Load() != 1 || obs.openHosts.Load() != 1) {
				t.Errorf("opened %d, open hosts %d, want 1 and 1", obs.opened.Load(), obs.openHosts.Load())
			}
			if err := call(b, "other:80", success, t0); err != nil {
				t.Errorf("another host is refused: %v", err)
			}
		})
	}
}

func TestBreakerOpenUntil(t *testing.T) {
	b, obs := testBreaker(t, 1)
	call(b, "h:443", failure, t0)
	lo, hi := within(time.Second)
	untils := map[time.Time]bool{}
	for i := range 50 {
		err := call(b, "h:443", success, t0.Add(time.Duration(i)*time.Millisecond))
		// The end of the open period, plus up to a quarter of it.
		wantNotSent(t, err, "h:443", t0.Add(lo), t0.Add(hi+hi/4))
		untils[err.(*timer.NotSentError).Until] = true
	}
	if len(untils) < 10 {
		t.Errorf("50 deferred jobs share %d due times", len(untils))
	}
	if n := obs.opened.Load(); n != 1 {
		t.Errorf("opened %d times, want 1", n)
	}
}

// While the probe is in flight, every other caller is refused; only one
// gets through however many call at once.
func TestBreakerHalfOpenOneProbe(t *testing.T) {
	b, _ := testBreaker(t, 1)
	call(b, "h:80", failure, t0)
	now := t0.Add(2 * time.Second) // past the cooldown

	const callers = 64
	var (
		wg     sync.WaitGroup
		probes atomic.Int32
		probe  ticket
		errs   = make(chan error, callers)
	)
	for range callers {
		wg.Go(func() {
			tk, err := b.allow("h:80", now)
			if err != nil {
				errs <- err
				return
			}
			if !tk.probe {
				errs <- errors.New("let through without probing")
				return
			}
			probes.Add(1)
			probe = tk
		})
	}
	wg.Wait()
	close(errs)
	if n := probes.Load(); n != 1 {
		t.Fatalf("%d probes, want 1", n)
	}
	for err := range errs {
		// Due again after the base cooldown, plus up to a quarter of it.
		wantNotSent(t, err, "h:80", now.Add(time.Second), now.Add(1250*time.Millisecond))
	}

	b.done(probe, success, now)
	for i := range 10 {
		if err := call(b, "h:80", success, now); err != nil {
			t.Fatalf("call %d after the probe succeeded: %v", i, err)
		}
	}
	if len(b.hosts) != 0 {
		t.Errorf("a closed host is still kept")
	}
}

func TestBreakerProbe(t *testing.T) {
	tests := []struct {
		name string
		o    outcome
		// after the probe: is the next call let through, as a probe?
		through, probe bool
	}{
		{"success closes", success, true, false},
		{"failure opens again", failure, false, false},
		{"neither lets the next call probe", neither, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, obs := testBreaker(t, 1)
			call(b, "h:80", failure, t0)
			now := t0.Add(2 * time.Second)
			tk, err := b.allow("h:80", now)
			if err != nil || !tk.probe {
				t.Fatalf("allow after the cooldown = %+v, %v; want a probe", tk, err)
			}
			b.done(tk, tt.o, now)
			tk, err = b.allow("h:80", now)
			if (err == nil) != tt.through || tk.probe != tt.probe {
				t.Fatalf("next allow = %+v, %v; want through %v, probe %v", tk, err, tt.through, tt.probe)
			}
			wantOpen := int64(1)
			if tt.o == success {
				wantOpen = 0
			}
			if n := obs.openHosts.Load(); n != wantOpen {
				t.Errorf("open hosts %d, want %d", n, wantOpen)
			}
		})
	}
}

// Each failed probe doubles the cooldown, up to the maximum; a probe that
// succeeds resets it.
func TestBreakerCooldownDoubles(t *testing.T) {
	b, obs := testBreaker(t, 1)
	now := t0
	call(b, "h:80", failure, now)
	for i, want := range []time.Duration{1, 2, 4, 8, 8, 8} {
		c := b.hosts["h:80"]
		if lo, hi := within(want * time.Second); c.cooldown < lo || c.cooldown > hi {
			t.Fatalf("opening %d: cooldown %v, want %v ±10%%", i+1, c.cooldown, want*time.Second)
		}
		now = c.until
		tk, err := b.allow("h:80", now)
		if err != nil || !tk.probe {
			t.Fatalf("opening %d: allow at its end = %+v, %v", i+1, tk, err)
		}
		b.done(tk, failure, now)
	}
	if n := obs.opened.Load(); n != 7 {
		t.Errorf("opened %d times, want 7", n)
	}

	now = b.hosts["h:80"].until
	if err := call(b, "h:80", success, now); err != nil {
		t.Fatal(err)
	}
	call(b, "h:80", failure, now)
	if lo, hi := within(time.Second); b.hosts["h:80"].cooldown < lo || b.hosts["h:80"].cooldown > hi {
		t.Errorf("after a successful probe the cooldown is %v, want 1s ±10%%", b.hosts["h:80"].cooldown)
	}
	if d := b.cooldown(1 << 20); d > 8800*time.Millisecond || d < 7200*time.Millisecond {
		t.Errorf("cooldown(2^20) = %v", d)
	}
}

// Calls let through while closed that end after the breaker opened
// neither close it nor extend it.
func TestBreakerIgnoresLateResults(t *testing.T) {
	b, obs := testBreaker(t, 2)
	slowOK, _ := b.allow("h:80", t0)
	slowFail, _ := b.allow("h:80", t0)
	call(b, "h:80", failure, t0)
	call(b, "h:80", failure, t0)
	until := b.hosts["h:80"].until
	b.done(slowOK, success, t0)
	b.done(slowFail, failure, t0.Add(100*time.Millisecond))
	c := b.hosts["h:80"]
	if c == nil || !c.open || !c.until.Equal(until) || obs.opened.Load() != 1 {
		t.Errorf("late results changed the breaker: %+v, opened %d", c, obs.opened.Load())
	}
}

func TestBreakerDisabled(t *testing.T) {
	b := newBreaker(Config{BreakerThreshold: -1}.withDefaults())
	if b != nil {
		t.Fatal("a negative threshold does not disable the breaker")
	}
	for range 100 {
		if err := call(b, "h:80", failure, t0); err != nil {
			t.Fatal(err)
		}
	}
}

// Hosts that succeed are forgotten, and no more than maxHosts are kept:
// a new one replaces a closed or idle half-open host, or is not kept.
func TestBreakerBounded(t *testing.T) {
	b, obs := testBreaker(t, 1)
	b.maxHosts = 3

	b.threshold = 2
	for i := range 1000 {
		host := fmt.Sprintf("h%d:80", i)
		call(b, host, failure, t0)
		call(b, host, success, t0)
	}
	if len(b.hosts) != 0 {
		t.Fatalf("%d hosts kept after they all succeeded", len(b.hosts))
	}
	for i := range 1000 { // one failure each: closed, evictable
		call(b, fmt.Sprintf("h%d:80", i), failure, t0)
	}
	if len(b.hosts) != 3 {
		t.Fatalf("%d hosts kept, want 3", len(b.hosts))
	}

	b.threshold = 1
	for _, h := range []string{"a:80", "b:80", "c:80"} {
		call(b, h, failure, t0) // replaces a closed one, opens
	}
	for i := range 3 { // all three are open: d is not kept
		if err := call(b, "d:80", failure, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatalf("a host beyond the cap is refused: %v", err)
		}
	}
	if len(b.hosts) != 3 || b.hosts["d:80"] != nil {
		t.Fatalf("kept %d hosts, d among them: %v", len(b.hosts), b.hosts["d:80"] != nil)
	}
	if n := obs.openHosts.Load(); n != 3 {
		t.Errorf("open hosts %d, want 3", n)
	}

	// Past the cooldown they are half-open and idle, so d replaces one.
	later := t0.Add(time.Minute)
	call(b, "d:80", failure, later)
	if b.hosts["d:80"] == nil || len(b.hosts) != 3 {
		t.Fatalf("d is not kept in place of an idle half-open host (%d kept)", len(b.hosts))
	}
	if err := call(b, "d:80", success, later); err == nil {
		t.Error("d's breaker did not open")
	}
	if n := obs.openHosts.Load(); n != 3 {
		t.Errorf("open hosts %d, want 3", n)
	}
}

func TestBreakerHost(t *testing.T) {
	tests := []struct{ url, want string }{
		{"http://Example.COM/hook", "example.com:80"},
		{"https://example.com/hook?x=1", "example.com:443"},
		{"https://example.com:8443", "example.com:8443"},
		{"http://example.com.:80/", "example.com:80"},
		{"http://[2001:DB8::1]/", "[2001:db8::1]:80"},
		{"https://[2001:db8::1]:9000/", "[2001:db8::1]:9000"},
		{"http://192.0.2.1:8080/", "192.0.2.1:8080"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := breakerHost(u); got != tt.want {
			t.Errorf("breakerHost(%s) = %s, want %s", tt.url, got, tt.want)
		}
	}
}

func TestCallOutcome(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "http://h/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	tests := []struct {
		name   string
		status int
		err    error
		want   outcome
	}{
		{"200", 200, nil, success},
		{"204", 204, nil, success},
		{"302", 302, nil, success},
		{"400", 400, nil, success},
		{"404", 404, nil, success},
		{"410", 410, nil, success},
		{"429", 429, nil, success},
		{"500", 500, nil, failure},
		{"502", 502, nil, failure},
		{"503", 503, nil, failure},
		{"504", 504, nil, failure},
		{"599", 599, nil, failure},
		{"refused", 0, wrap(syscall.ECONNREFUSED), failure},
		{"reset", 0, wrap(syscall.ECONNRESET), failure},
		{"DNS", 0, wrap(&net.DNSError{Err: "no such host", Name: "h", IsNotFound: true}), failure},
		{"timeout", 0, &url.Error{Op: "Post", URL: "http://h/", Err: context.DeadlineExceeded}, failure},
		{"cancelled", 0, &url.Error{Op: "Post", URL: "http://h/", Err: context.Canceled}, neither},
		{"private address", 0, wrap(fmt.Errorf("%w: 10.0.0.1 is a private address", ErrPrivateAddress)), neither},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			if tt.err == nil {
				resp = &http.Response{StatusCode: tt.status}
			}
			if got := callOutcome(resp, tt.err); got != tt.want {
				t.Errorf("callOutcome = %d, want %d", got, tt.want)
			}
		})
	}
}

func BenchmarkBreakerClosed(b *testing.B) {
	br, _ := testBreaker(b, 5)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, _ := br.allow("h:80", t0)
			br.done(tk, success, t0)
		}
	})
}
