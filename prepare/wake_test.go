package prepare

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/lua"
	"github.com/toc-project/toc/lua/luatest"
	"github.com/toc-project/toc/slots"
	"github.com/toc-project/toc/timer"
)

// waitFor bounds every wait for an event, so a lost event fails the test
// instead of hanging it.
const waitFor = 10 * time.Second

// syncBuffer is a log sink safe for the Wakes goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waker runs q.Wakes until the test ends.
type waker struct {
	wakes      chan timer.Wake
	subscribed chan struct{}
	log        *syncBuffer
	stop       func() error
}

func startWakes(t *testing.T, q *Index) *waker {
	t.Helper()
	w := &waker{
		wakes:      make(chan timer.Wake, 100),
		subscribed: make(chan struct{}, 10),
		log:        &syncBuffer{},
	}
	q.cfg.Logger = slog.New(slog.NewTextHandler(w.log, nil))
	q.subscribed = func() { w.subscribed <- struct{}{} }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- q.Wakes(ctx, func(wk timer.Wake) { w.wakes <- wk }) }()
	var once sync.Once
	var err error
	w.stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitFor):
				err = fmt.Errorf("Wakes did not return %v after its context was cancelled", waitFor)
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := w.stop(); err != nil {
			t.Error(err)
		}
	})
	return w
}

func (w *waker) waitSubscribed(t *testing.T) {
	t.Helper()
	select {
	case <-w.subscribed:
	case <-time.After(waitFor):
		t.Fatalf("not subscribed after %v; log:\n%s", waitFor, w.log)
	}
}

func (w *waker) next(t *testing.T) timer.Wake {
	t.Helper()
	select {
	case wk := <-w.wakes:
		return wk
	case <-time.After(waitFor):
		t.Fatalf("no wake after %v; log:\n%s", waitFor, w.log)
		return timer.Wake{}
	}
}

func TestWakes(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		w := startWakes(t, q)
		w.waitSubscribed(t)
		for _, junk := range []string{"", "garbage", "orders x 5", "orders 1 -5", "Orders 1 5", "orders 70000 5", "orders 1 5 6", "orders 01 5"} {
			if err := b.Client.Publish(ctx, q.cfg.WakeChannel, junk).Err(); err != nil {
				t.Fatal(err)
			}
		}
		tt := tm(42, "orders", 16, at(7))
		wakes, err := q.Add(ctx, []timer.Timer{tt})
		if err != nil || len(wakes) != 1 {
			t.Fatalf("Add = %v, %v", wakes, err)
		}
		if got := w.next(t); got != wakes[0] {
			t.Errorf("Waker delivered %+v, want %+v (and no junk)", got, wakes[0])
		}
		// A later timer publishes nothing; the next wake is the earlier one.
		later := timer.Timer{ID: 2, Topic: "orders", Slots: 16, Basis: 42, DueAt: at(8)}
		if _, err := q.Add(ctx, []timer.Timer{later}); err != nil {
			t.Fatal(err)
		}
		earlier := timer.Timer{ID: 1, Topic: "orders", Slots: 16, Basis: 42, DueAt: at(6)}
		if _, err := q.Add(ctx, []timer.Timer{earlier}); err != nil {
			t.Fatal(err)
		}
		if got, want := w.next(t), (timer.Wake{Slot: wakes[0].Slot, DueAt: at(6)}); got != want {
			t.Errorf("second wake %+v, want %+v", got, want)
		}
		if err := w.stop(); err != nil {
			t.Errorf("Wakes returned %v after cancel, want nil", err)
		}
	})
}

// TestWakesReconnect kills the server under a subscribed Waker and starts
// it again: the Waker subscribes again by itself.
func TestWakesReconnect(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		b := luatest.Mini(t)
		reconnect(t, b, func() {
			b.Mini.Close()
			if err := b.Mini.Restart(); err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("redis", func(t *testing.T) {
		srv := testenvNewRedis(t)
		b := &luatest.Backend{Name: "redis", Server: srv, Prefix: luatest.NewPrefix()}
		b.Client, b.Calls = luatest.NewClient(t, srv.Addr)
		reconnect(t, b, func() {
			srv.Kill(t)
			srv.Start(t)
		})
	})
}

func reconnect(t *testing.T, b *luatest.Backend, bounce func()) {
	q := newIndex(t, b)
	w := startWakes(t, q)
	w.waitSubscribed(t)
	bounce()
	w.waitSubscribed(t)
	if got := w.next(t); got != (timer.Wake{}) {
		t.Errorf("first wake after the subscription came back %+v, want the zero Wake that asks for a rescan", got)
	}
	if err := lua.Load(t.Context(), b.Client); err != nil { // a restarted redis-server forgot them
		t.Fatal(err)
	}
	wakes, err := q.Add(t.Context(), []timer.Timer{tm(7, "orders", 4, at(1))})
	if err != nil || len(wakes) != 1 {
		t.Fatalf("Add after restart = %v, %v", wakes, err)
	}
	if got := w.next(t); got != wakes[0] {
		t.Errorf("wake after restart %+v, want %+v", got, wakes[0])
	}
	if !strings.Contains(w.log.String(), "wake subscription failed") {
		t.Errorf("no warning logged for the lost subscription; log:\n%s", w.log)
	}
}

func TestWakesCancelledWhileDown(t *testing.T) {
	b := luatest.Mini(t)
	q := newIndex(t, b)
	w := startWakes(t, q)
	w.waitSubscribed(t)
	b.Mini.Close() // stays down: Wakes is in its backoff or dialing
	if err := w.stop(); err != nil {
		t.Errorf("Wakes = %v, want nil", err)
	}
}

func TestParseWake(t *testing.T) {
	w, ok := ParseWake("orders 3 1893456000007")
	if !ok || w != (timer.Wake{Slot: timer.Slot{Topic: "orders", Index: 3}, DueAt: timer.TimeOf(1893456000007)}) {
		t.Errorf("ParseWake = %+v, %v", w, ok)
	}
	max := fmt.Sprintf("a %d %d", slots.Max-1, int64(lua.MaxMillis))
	if _, ok := ParseWake(max); !ok {
		t.Errorf("ParseWake(%q) failed", max)
	}
	for _, s := range []string{"", "orders", "orders 3", "orders 3 ", " orders 3 5", "orders  3 5", "orders 3 5 ",
		"orders -1 5", "orders 65536 5", "orders 3 -1", fmt.Sprintf("orders 3 %d", int64(lua.MaxMillis)+1),
		"orders +3 5", "orders 3 +5", "orders 03 5", "orders 3 05", "ORDERS 3 5", "a{b} 3 5"} {
		if w, ok := ParseWake(s); ok {
			t.Errorf("ParseWake(%q) = %+v, want failure", s, w)
		}
	}
}

// FuzzParseWake checks that ParseWake accepts only the canonical form the
// add script publishes, and reads it back exactly.
func FuzzParseWake(f *testing.F) {
	f.Add("orders 3 1893456000007")
	f.Add("a-b_c 65535 70368744177663")
	f.Add("x 0 0")
	f.Fuzz(func(t *testing.T, s string) {
		w, ok := ParseWake(s)
		if !ok {
			return
		}
		back := w.Slot.Topic + " " + strconv.Itoa(w.Slot.Index) + " " + strconv.FormatInt(timer.MillisOf(w.DueAt), 10)
		if back != s {
			t.Fatalf("ParseWake(%q) = %+v, which formats as %q", s, w, back)
		}
	})
}

// TestReviveWakes: timer.Index.Revive returns no Wake, so a revival that
// makes its slot due sooner is announced over pub/sub.
func TestReviveWakes(t *testing.T) {
	luatest.Run(t, func(t *testing.T, b *luatest.Backend) {
		ctx := t.Context()
		q := newIndex(t, b)
		s := timer.Slot{Topic: "orders"}
		if _, err := q.Add(ctx, []timer.Timer{tm(1, "orders", 1, at(0)), tm(2, "orders", 1, at(50))}); err != nil {
			t.Fatal(err)
		}
		c, err := q.Claim(ctx, s, at(0), 1, time.Second)
		if err != nil || len(c.Leases) != 1 {
			t.Fatal(c, err)
		}
		if o, err := q.Retry(ctx, c.Leases[0], at(0), 1, at(1)); err != nil || o != timer.Buried {
			t.Fatal(o, err)
		}
		w := startWakes(t, q)
		w.waitSubscribed(t)
		ok, wakes, err := q.Revive(ctx, tm(1, "orders", 1, at(10)))
		if want := (timer.Wake{Slot: s, DueAt: at(10)}); err != nil || !ok || len(wakes) != 1 || wakes[0] != want {
			t.Fatalf("Revive = %v, %v, %v; want the wake %+v", ok, wakes, err, want)
		}
		if got, want := w.next(t), (timer.Wake{Slot: s, DueAt: at(10)}); got != want {
			t.Errorf("wake %+v, want %+v", got, want)
		}
	})
}
