package timer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// clockObs records ClockMeasured.
type clockObs struct {
	NopObserver
	mu     sync.Mutex
	offset []time.Duration
}

func (o *clockObs) ClockMeasured(offset, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.offset = append(o.offset, offset)
}

// A clock follows its reference, not the local clock: with the reference
// 3 s behind the machine's, Now is 3 s behind time.Now, the offset is
// +3 s, and Check says the local clock is ahead.
func TestClockFollowsTheReference(t *testing.T) {
	behind := 3 * time.Second
	obs := &clockObs{}
	c, err := NewClock(ClockConfig{
		Source:   func(context.Context) (time.Time, error) { return time.Now().Add(-behind), nil },
		Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(t.Context()); err == nil {
		t.Error("Check before the first measurement: nil, want an error")
	}
	if err := c.Measure(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(c.Now()) - behind; d < 0 || d > 50*time.Millisecond {
		t.Errorf("Now is %v behind the machine's clock, want %v", time.Since(c.Now()), behind)
	}
	offset, bound, ok := c.Offset()
	if !ok || (offset-behind).Abs() > 50*time.Millisecond || bound < 0 {
		t.Errorf("Offset = %v ± %v (%v), want %v", offset, bound, ok, behind)
	}
	if len(obs.offset) != 1 || obs.offset[0] != offset {
		t.Errorf("the observer heard %v, want [%v]", obs.offset, offset)
	}
	err = c.Check(t.Context())
	if err == nil || !strings.Contains(err.Error(), "3s ahead of") {
		t.Errorf("Check = %v, want the clock 3s ahead of the task store's", err)
	}
}

// Now is never ahead of the reference, however slow the round trip: the
// reading is carried forward from the end of the round trip.
func TestClockNeverAhead(t *testing.T) {
	// The reference is the machine's clock, read halfway through a
	// round trip of 40 ms.
	c, err := NewClock(ClockConfig{Source: func(context.Context) (time.Time, error) {
		time.Sleep(20 * time.Millisecond)
		now := time.Now()
		time.Sleep(20 * time.Millisecond)
		return now, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Measure(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if now, ref := c.Now(), time.Now(); now.After(ref) {
			t.Fatalf("Now %v is ahead of the reference %v", now, ref)
		}
	}
	if _, bound, _ := c.Offset(); bound < 20*time.Millisecond {
		t.Errorf("bound = %v, want half the 40 ms round trip at least", bound)
	}
	if err := c.Check(t.Context()); err != nil {
		t.Errorf("Check of a clock within tolerance: %v", err)
	}
}

// A failed measurement keeps the last one (Now goes on from it) and
// Check reports the failure; one within the tolerance clears it.
func TestClockKeepsItsLastMeasurement(t *testing.T) {
	var fail bool
	down := errors.New("connection refused")
	c, err := NewClock(ClockConfig{Source: func(context.Context) (time.Time, error) {
		if fail {
			return time.Time{}, down
		}
		return time.Now().Add(-time.Hour), nil
	}, Tolerance: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Measure(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Check(t.Context()); err != nil {
		t.Errorf("Check with no tolerance: %v", err)
	}
	fail = true
	if err := c.Measure(t.Context()); !errors.Is(err, down) {
		t.Errorf("Measure with the reference down = %v, want %v", err, down)
	}
	if err := c.Check(t.Context()); !errors.Is(err, down) {
		t.Errorf("Check after a failed measurement = %v, want %v", err, down)
	}
	if d := time.Since(c.Now()) - time.Hour; d < 0 || d > 50*time.Millisecond {
		t.Errorf("after a failed measurement Now is %v behind, want the hour it was", time.Since(c.Now()))
	}
}

// Without a source the local clock is the reference, read with Skew:
// the drill's member that trusts a wrong clock.
func TestClockLocalWithSkew(t *testing.T) {
	c, err := NewClock(ClockConfig{Skew: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"before", "after"} {
		if d := time.Until(c.Now()) - 2*time.Second; d < -50*time.Millisecond || d > 50*time.Millisecond {
			t.Errorf("%s measuring: Now is %v ahead of the machine's clock, want 2s", when, time.Until(c.Now()))
		}
		if err := c.Measure(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if offset, _, ok := c.Offset(); !ok || offset != 0 {
		t.Errorf("the offset of the local clock from itself = %v (%v), want 0", offset, ok)
	}
}
