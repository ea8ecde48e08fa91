package webhook

import (
	"testing"
	"time"
)

// callOf makes one call of a job of topic to host at now that ends with
// o, holding the job back as Client.Fire does when the circuit is open;
// it returns allow's error.
func callOf(b *breaker, host, topic string, due time.Time, o outcome, now time.Time) error {
	tk, err := b.allow(host, now)
	if err != nil {
		b.hold(host, topic, due)
		return err
	}
	tk.topic = topic
	b.done(tk, o, now)
	return nil
}

// The snapshot of a topic's breakers: closed with its failures, open
// with the oldest job it held back, half-open, and gone once a probe
// succeeds; a topic whose jobs never met the host sees none of it.
func TestBreakerStates(t *testing.T) {
	b, _ := testBreaker(t, 3)
	due := t0.Add(-5 * time.Second)
	if got := b.states("orders", t0); len(got) != 0 {
		t.Fatalf("a fresh breaker: %+v", got)
	}
	for i := range 2 {
		if err := callOf(b, "h:80", "orders", due, failure, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	want := BreakerState{Host: "h:80", State: BreakerClosed, Since: t0, Failures: 2}
	if got := b.states("orders", t0.Add(time.Second)); len(got) != 1 || got[0] != want {
		t.Fatalf("after 2 failures: %+v, want [%+v]", got, want)
	}
	if got := b.states("billing", t0.Add(time.Second)); len(got) != 0 {
		t.Errorf("another topic sees %+v", got)
	}

	opened := t0.Add(2 * time.Second)
	if err := callOf(b, "h:80", "orders", due, failure, opened); err != nil {
		t.Fatal(err)
	}
	until := b.hosts["h:80"].until
	held := opened.Add(100 * time.Millisecond)
	for _, d := range []time.Duration{-time.Second, -5 * time.Second, -3 * time.Second} {
		if err := callOf(b, "h:80", "orders", opened.Add(d), success, held); err == nil {
			t.Fatal("an open circuit let a call through")
		}
	}
	want = BreakerState{Host: "h:80", State: BreakerOpen, Since: opened, Failures: 3, OpenUntil: until, OldestHeld: opened.Add(-5 * time.Second)}
	if got := b.states("orders", held); len(got) != 1 || got[0] != want {
		t.Fatalf("open: %+v, want [%+v]", got, want)
	}
	if got := b.states("billing", held); len(got) != 0 {
		t.Errorf("a topic none of whose jobs met the host sees %+v", got)
	}
	if err := callOf(b, "h:80", "billing", t0, success, held); err == nil {
		t.Fatal("an open circuit let a call through")
	}
	if got := b.states("billing", held); len(got) != 1 || got[0].State != BreakerOpen || !got[0].OldestHeld.Equal(t0) {
		t.Errorf("billing, held back once: %+v", got)
	}

	want.State, want.Since = BreakerHalfOpen, until
	if got := b.states("orders", until); len(got) != 1 || got[0] != want {
		t.Fatalf("half-open: %+v, want [%+v]", got, want)
	}
	// A failed probe opens it again, one failure more.
	if err := callOf(b, "h:80", "orders", due, failure, until); err != nil {
		t.Fatal(err)
	}
	if got := b.states("orders", until); len(got) != 1 || got[0].State != BreakerOpen || got[0].Failures != 4 || !got[0].Since.Equal(until) {
		t.Fatalf("after a failed probe: %+v", got)
	}
	again := b.hosts["h:80"].until
	if err := callOf(b, "h:80", "orders", due, success, again); err != nil {
		t.Fatal(err)
	}
	if got := b.states("orders", again); len(got) != 0 {
		t.Errorf("after a successful probe: %+v, want none", got)
	}
	var disabled *breaker
	if got := disabled.states("orders", t0); got != nil {
		t.Errorf("a disabled breaker: %+v", got)
	}
}
