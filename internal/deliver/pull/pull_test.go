package pull

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

func newTestBroker(t *testing.T, offerFor time.Duration) *Broker {
	t.Helper()
	return newMember(t, miniredis.RunT(t), "", offerFor)
}

// newMember is a Broker on mr, as member (random for "") calls itself.
func newMember(t *testing.T, mr *miniredis.Miniredis, member string, offerFor time.Duration) *Broker {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { rdb.Close() })
	sign := func(d timer.Delivery, _ time.Time) (webhook.Message, error) {
		return webhook.Message{Body: fmt.Appendf(nil, `{"id":"%s","attempt":%d}`, d.Job.ID, d.Attempt)}, nil
	}
	b, err := New(rdb, Config{Prefix: "t:", Member: member, Sign: sign, OfferFor: offerFor})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = b.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return b
}

// fire runs Fire for a job of topic "work" under timeout, in the
// background.
func fire(b *Broker, id timer.JobID, timeout time.Duration) <-chan error {
	out := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out <- b.Fire(ctx, timer.Delivery{Job: &timer.Job{ID: id, Topic: "work"}, Attempt: 1})
	}()
	return out
}

func takeOne(t *testing.T, b *Broker, lease time.Duration) Lease {
	t.Helper()
	got, err := b.Take(t.Context(), "work", 1, 5*time.Second, lease)
	if err != nil || len(got) != 1 {
		t.Fatalf("Take: %v %v, want one lease", got, err)
	}
	return got[0]
}

func idOf(t *testing.T, l Lease) string {
	t.Helper()
	_, id, ok := ParseToken(l.Token)
	if !ok {
		t.Fatalf("token %q does not parse", l.Token)
	}
	return id
}

// Each way a lease ends is what Fire returns: an ack done, a nack a retry
// after the delay asked, an expiry a failed attempt, an offer no worker
// took not sent at all.
func TestFireEndsAsTheLease(t *testing.T) {
	b := newTestBroker(t, 200*time.Millisecond)

	errc := fire(b, 1, 10*time.Second)
	l := takeOne(t, b, 5*time.Second)
	if string(l.Job) != `{"id":"1","attempt":1}` || l.Expires.Before(time.Now()) {
		t.Errorf("lease %+v", l)
	}
	if st, err := b.Ack(t.Context(), "work", idOf(t, l)); err != nil || st.State != "acked" {
		t.Fatalf("Ack: %+v %v", st, err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Fire after an ack: %v, want nil", err)
	}
	if _, err := b.Nack(t.Context(), "work", idOf(t, l), 0, ""); !errors.Is(err, ErrEnded) {
		t.Errorf("Nack after the ack: %v, want ErrEnded", err)
	}

	errc = fire(b, 2, 10*time.Second)
	l = takeOne(t, b, 5*time.Second)
	if _, err := b.Nack(t.Context(), "work", idOf(t, l), 300*time.Millisecond, "busy"); err != nil {
		t.Fatal(err)
	}
	ra, ok := errors.AsType[*timer.RetryAfterError](<-errc)
	if !ok || !ra.Exact || ra.After != 300*time.Millisecond || ra.Error() != "nacked by the worker: busy" {
		t.Errorf("Fire after a nack: %#v, want an exact retry after 300ms", ra)
	}

	errc = fire(b, 3, 10*time.Second)
	l = takeOne(t, b, time.Second)
	start := time.Now()
	err := <-errc
	if err == nil || errors.As(err, new(*timer.NotSentError)) || time.Since(start) < 800*time.Millisecond {
		t.Errorf("Fire of a lease left to expire: %v after %v, want a failed attempt after about 1s", err, time.Since(start))
	}
	if _, err := b.Ack(t.Context(), "work", idOf(t, l)); !errors.Is(err, ErrEnded) {
		t.Errorf("Ack after the expiry: %v, want ErrEnded", err)
	}

	// Nobody waits: the offer goes back, no attempt counted.
	err = <-fire(b, 4, 10*time.Second)
	if _, ok := errors.AsType[*timer.NotSentError](err); !ok {
		t.Errorf("Fire with no worker: %v, want not sent", err)
	}
	if got, err := b.Take(t.Context(), "work", 10, 0, time.Second); err != nil || len(got) != 0 {
		t.Errorf("Take after the offer was withdrawn: %v %v, want none", got, err)
	}
}

// The lease is bounded by the attempt's timeout, and an extension too.
func TestLeaseWithinTheAttempt(t *testing.T) {
	b := newTestBroker(t, time.Second)
	errc := fire(b, 1, 2*time.Second)
	l := takeOne(t, b, time.Hour)
	if d := time.Until(l.Expires); d > 2*time.Second {
		t.Errorf("a lease of an hour in an attempt of 2s expires in %v", d)
	}
	st, err := b.Extend(t.Context(), "work", idOf(t, l), time.Hour)
	if err != nil || st.State != "leased" || st.Expires.After(l.Expires) {
		t.Errorf("Extend by an hour: %+v %v, want at most the attempt's end %v", st, err, l.Expires)
	}
	if err := <-errc; err == nil {
		t.Error("Fire of a lease never acked returned nil")
	}
}

// Waiting counts the workers waiting here (lingering a moment after they
// leave) and heard from elsewhere, less the offers not yet taken.
func TestWaiting(t *testing.T) {
	b := newTestBroker(t, time.Second)
	if n := b.Waiting("work"); n != 0 {
		t.Fatalf("Waiting = %d with no worker", n)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _, _ = b.Take(ctx, "work", 7, 5*time.Second, time.Second); close(done) }()
	for b.Waiting("work") != 7 {
		time.Sleep(time.Millisecond)
	}
	// Changed says so just after the count rises.
	select {
	case <-b.Changed():
	case <-time.After(5 * time.Second):
		t.Error("a worker came to wait and Changed said nothing")
	}
	b.heardMessage("d work other 5")
	b.heardMessage("d work " + b.cfg.Member + " 100") // its own word, heard back
	if n := b.Waiting("work"); n != 12 {
		t.Errorf("Waiting = %d, want 7 here and 5 on another member", n)
	}
	cancel()
	<-done
	b.heardMessage("d work other 0")
	if n := b.Waiting("work"); n != 7 {
		t.Errorf("Waiting = %d just after the worker here left, want its 7 lingering", n)
	}
	time.Sleep(demandLinger + 50*time.Millisecond)
	if n := b.Waiting("work"); n != 0 {
		t.Errorf("Waiting = %d a while after every worker left, want 0", n)
	}
}

func TestParseToken(t *testing.T) {
	for token, ok := range map[string]bool{
		"work.0123456789abcdef0123456789abcdef": true,
		"work.0123456789ABCDEF0123456789abcdef": false,
		"work.0123":                             false,
		".0123456789abcdef0123456789abcdef":     false,
		"work":                                  false,
	} {
		if _, _, got := ParseToken(token); got != ok {
			t.Errorf("ParseToken(%q) ok = %v, want %v", token, got, ok)
		}
	}
}

// A worker waiting on one member gets the job another member fires, and
// its ack there ends the Fire here: what the members tell one another
// through Redis.
func TestTwoMembers(t *testing.T) {
	mr := miniredis.RunT(t)
	firing, serving := newMember(t, mr, "a", 5*time.Second), newMember(t, mr, "b", 5*time.Second)
	taken := make(chan []Lease, 1)
	go func() {
		got, _ := serving.Take(t.Context(), "work", 3, 10*time.Second, 5*time.Second)
		taken <- got
	}()
	deadline := time.Now().Add(5 * time.Second)
	for firing.Waiting("work") != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the firing member sees %d jobs wanted, want the other's 3", firing.Waiting("work"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	errc := fire(firing, 9, 10*time.Second)
	var got []Lease
	select {
	case got = <-taken:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker got nothing within 5 s")
	}
	if len(got) != 1 {
		t.Fatalf("leased %d jobs, want the 1 fired", len(got))
	}
	if _, err := serving.Ack(t.Context(), "work", idOf(t, got[0])); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Fire after the ack on the other member: %v", err)
		}
	case <-time.After(500 * time.Millisecond):
		t.Error("the Fire did not hear of the ack on the other member within 500 ms")
	}
}

// A job fired while a long-poll of this member waits is leased to it in
// the script that writes the lease, never through the list, and a
// long-poll is never handed more than it asked for.
func TestHandedToAWaitingTake(t *testing.T) {
	mr := miniredis.RunT(t)
	b := newMember(t, mr, "", time.Second)
	var takeScripts atomic.Int32 // the takes of offers off the list
	b.rdb.(*redis.Client).AddHook(countScript{takeScript.Hash(), takeSource, &takeScripts})
	// Subscribed: its first subscription wakes every long-poll to read
	// the list again.
	for mr.PubSubNumSub("t:pull")["t:pull"] == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	waitTaking := func(n int) {
		t.Helper()
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			w := b.waiting["work"]
			taking := w != nil && len(w.takes) == n
			b.mu.Unlock()
			if taking {
				return
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("no %d long-polls waiting", n)
			}
		}
	}
	takeAsync := func(maxJobs int) <-chan []Lease {
		out := make(chan []Lease, 1)
		go func() {
			got, err := b.Take(t.Context(), "work", maxJobs, 5*time.Second, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			out <- got
		}()
		return out
	}

	took := takeAsync(2)
	waitTaking(1)
	errc := fire(b, 1, 10*time.Second)
	got := <-took
	if len(got) != 1 || string(got[0].Job) != `{"id":"1","attempt":1}` || time.Until(got[0].Expires) < 4*time.Second {
		t.Fatalf("the waiting long-poll got %+v, want job 1 leased for 5s", got)
	}
	for start := time.Now(); mr.HGet("t:pull:{work}:lease:"+idOf(t, got[0]), "s") != stateLeased; time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the handed lease is in state %q, want %q", mr.HGet("t:pull:{work}:lease:"+idOf(t, got[0]), "s"), stateLeased)
		}
	}
	if n := takeScripts.Load(); n != 1 || mr.Exists("t:pull:{work}:offers") {
		t.Errorf("a handed job went through the list of offers: %d takes off it, want the long-poll's first", n)
	}
	if _, err := b.Ack(t.Context(), "work", idOf(t, got[0])); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Fire of a handed lease, acked: %v", err)
	}

	took = takeAsync(1)
	waitTaking(1)
	errs := []<-chan error{fire(b, 2, 10*time.Second), fire(b, 3, 10*time.Second)}
	first := <-took
	second := takeOne(t, b, 5*time.Second)
	if len(first) != 1 || idOf(t, first[0]) == idOf(t, second) {
		t.Fatalf("a long-poll of one job got %d, then the next one the same lease", len(first))
	}
	for _, l := range []Lease{first[0], second} {
		if _, err := b.Ack(t.Context(), "work", idOf(t, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, errc := range errs {
		if err := <-errc; err != nil {
			t.Errorf("Fire: %v", err)
		}
	}
}

// A job is handed to a waiting long-poll before its lease is written: an
// ack on this member waits for the write, and one on another member that
// finds no lease reads it again.
func TestAckBeforeTheLeaseIsWritten(t *testing.T) {
	mr := miniredis.RunT(t)
	a, b := newMember(t, mr, "a", 5*time.Second), newMember(t, mr, "b", 5*time.Second)
	a.rdb.(*redis.Client).AddHook(delayScript{offerScript.Hash(), 30 * time.Millisecond})
	for _, acker := range []*Broker{a, b} {
		took := make(chan []Lease, 1)
		go func() {
			got, err := a.Take(t.Context(), "work", 1, 5*time.Second, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			took <- got
		}()
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			a.mu.Lock()
			w := a.waiting["work"]
			taking := w != nil && len(w.takes) == 1
			a.mu.Unlock()
			if taking {
				break
			}
			if time.Since(start) > 5*time.Second {
				t.Fatal("the long-poll is not waiting")
			}
		}
		errc := fire(a, 1, 10*time.Second)
		got := <-took
		if len(got) != 1 {
			t.Fatalf("the long-poll got %d jobs, want 1", len(got))
		}
		key := "t:pull:{work}:lease:" + idOf(t, got[0])
		if mr.Exists(key) {
			t.Errorf("the lease was written before the long-poll answered: the test's delay did not hold it")
		}
		if _, err := acker.Ack(t.Context(), "work", idOf(t, got[0])); err != nil {
			t.Errorf("an ack on member %s as the lease is written: %v", acker.cfg.Member, err)
		}
		if err := <-errc; err != nil {
			t.Errorf("Fire, its lease acked on member %s: %v", acker.cfg.Member, err)
		}
	}
}

// A long-poll reads the topic's list of offers only when an offer may
// have been pushed since a read found it empty.
func TestListReadWhenOffered(t *testing.T) {
	b := newTestBroker(t, time.Second)
	var reads atomic.Int32
	b.rdb.(*redis.Client).AddHook(countScript{takeScript.Hash(), takeSource, &reads})
	poll := func(want int32, after string) {
		t.Helper()
		if got, err := b.Take(t.Context(), "work", 1, 0, time.Second); err != nil || len(got) != 0 {
			t.Fatalf("Take: %v, %v; want nothing", got, err)
		}
		if n := reads.Load(); n != want {
			t.Errorf("%s: %d reads of the list, want %d", after, n, want)
		}
	}
	poll(1, "a first long-poll")
	poll(1, "a second, nothing offered since")
	b.heardMessage("o work") // another member's offer
	poll(2, "one after an offer was heard of")
	poll(2, "one after that")
}

// A job fired while no long-poll waits here, but one did within
// demandLinger, is held for the next long-poll here, and offered to every
// member only when none came within HoldFor.
func TestHeldForTheNextLongPoll(t *testing.T) {
	mr := miniredis.RunT(t)
	b := newMember(t, mr, "", time.Second)
	b.cfg.HoldFor = 10 * time.Second
	var reads atomic.Int32
	b.rdb.(*redis.Client).AddHook(countScript{takeScript.Hash(), takeSource, &reads})
	if got, err := b.Take(t.Context(), "work", 1, 0, time.Second); err != nil || len(got) != 0 {
		t.Fatalf("Take: %v, %v; want nothing", got, err) // a long-poll came, and went
	}
	errc := fire(b, 1, 10*time.Second)
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		held := len(b.waiting["work"].held)
		b.mu.Unlock()
		if held == 1 {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the job is not held")
		}
	}
	l := takeOne(t, b, 5*time.Second)
	if string(l.Job) != `{"id":"1","attempt":1}` || reads.Load() != 1 || mr.Exists("t:pull:{work}:offers") {
		t.Errorf("the next long-poll got %s after %d reads of the list (want the first long-poll's only), the list there: %v",
			l.Job, reads.Load(), mr.Exists("t:pull:{work}:offers"))
	}
	if _, err := b.Ack(t.Context(), "work", idOf(t, l)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Fire of a held job, acked: %v", err)
	}

	b.cfg.HoldFor = 20 * time.Millisecond
	errc = fire(b, 2, 10*time.Second)
	for start := time.Now(); !mr.Exists("t:pull:{work}:offers"); time.Sleep(time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("a job held with no long-poll coming was not offered to every member")
		}
	}
	if l := takeOne(t, b, 5*time.Second); string(l.Job) != `{"id":"2","attempt":1}` {
		t.Errorf("took %s off the list, want job 2", l.Job)
	} else if _, err := b.Ack(t.Context(), "work", idOf(t, l)); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Errorf("Fire of a job offered after its hold: %v", err)
	}
}

// delayScript holds each run of a script, by its hash, for d.
type delayScript struct {
	sha string
	d   time.Duration
}

func (c delayScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c delayScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c delayScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[1] == c.sha {
			time.Sleep(c.d)
		}
		return next(ctx, cmd)
	}
}

// countScript counts the runs of a script, by its hash or its source.
type countScript struct {
	sha, src string
	n        *atomic.Int32
}

func (c countScript) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c countScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c countScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); err == nil && len(args) > 1 && (args[1] == c.sha || args[0] == "eval" && args[1] == c.src) {
			c.n.Add(1)
		}
		return err
	}
}

// AckMany acks each lease as Ack would, in one round trip, on a Redis
// that has not loaded its script yet.
func TestAckMany(t *testing.T) {
	b := newTestBroker(t, 2*time.Second)
	var errs []<-chan error
	var refs []LeaseRef
	for id := range timer.JobID(3) {
		errs = append(errs, fire(b, id+1, 10*time.Second))
		refs = append(refs, LeaseRef{"work", idOf(t, takeOne(t, b, 5*time.Second))})
	}
	if _, err := b.Nack(t.Context(), "work", refs[2].ID, 0, "no"); err != nil {
		t.Fatal(err)
	}
	refs = append(refs, refs[0], LeaseRef{"work", newID()})
	got, err := b.AckMany(t.Context(), refs)
	if err != nil || len(got) != 5 {
		t.Fatalf("AckMany: %v, %v", got, err)
	}
	if got[0] != nil || got[1] != nil || got[3] != nil {
		t.Errorf("AckMany of two leases, the first twice: %v, want nil each", got)
	}
	if !errors.Is(got[2], ErrEnded) || !errors.Is(got[4], ErrNotFound) {
		t.Errorf("AckMany of a nacked lease and an unknown one: %v, %v, want ErrEnded and ErrNotFound", got[2], got[4])
	}
	for i, errc := range errs {
		if err := <-errc; (err == nil) != (i < 2) {
			t.Errorf("Fire of job %d: %v", i+1, err)
		}
	}
}
