package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toc-project/toc/internal/pause"
)

// Defaults of ClockConfig.
const (
	// DefaultClockEvery is how often a Clock measures the reference again.
	DefaultClockEvery = 10 * time.Second
	// DefaultClockTolerance is the offset from the reference past which a
	// member says its clock is wrong.
	DefaultClockTolerance = 500 * time.Millisecond
	// clockSamples is how many round trips one measurement makes; the
	// shortest one's reading is kept, as NTP does.
	clockSamples = 5
)

// ClockConfig configures a Clock.
type ClockConfig struct {
	// Source reads the reference clock: the time every member of a
	// cluster decides "due" by (the task store's, taskdb.Store.ClockNow).
	// Nil: the local clock is the reference (a Clock of one process).
	Source func(ctx context.Context) (time.Time, error)
	// Every is how often the reference is measured again;
	// DefaultClockEvery when 0.
	Every time.Duration
	// Tolerance is the offset past which Check reports an error (the
	// member says its clock is wrong; it still decides by the reference);
	// DefaultClockTolerance when 0, never when negative.
	Tolerance time.Duration
	// Skew shifts this process's reading of the local clock: a drill or
	// a test runs a member whose clock is wrong by Skew with it.
	Skew   time.Duration
	Logger *slog.Logger
	// Observer, when it implements ClockObserver, hears each measurement.
	Observer Observer
}

// ClockObserver is implemented by an Observer that exports the offset of
// this member's clock.
type ClockObserver interface {
	// ClockMeasured: the local clock was offset ahead of the reference
	// (negative: behind), give or take bound.
	ClockMeasured(offset, bound time.Duration)
}

// Validate reports the first field of c that is out of range.
func (c ClockConfig) Validate() error {
	if c.Every < 0 {
		return invalid("Every", "must not be negative")
	}
	return nil
}

// Clock is the reference time of a member: the task store's clock, read
// over the network and carried forward by the local monotonic clock. A
// member whose wall clock is seconds off (a VM after a pause, a container
// on a drifting host, a mis-set clock) still decides by the reference, so
// it fires nothing early by it; past Tolerance it says so (Check).
//
// Each measurement reads the reference clockSamples times and keeps the
// reading of the shortest round trip. Now is that reading plus the
// monotonic time since the round trip ended: the reading was taken
// within the round trip, so Now is behind the reference by at most the
// round trip (a fraction of a millisecond on a LAN), never ahead of it.
// Steps of the local wall clock between measurements change nothing.
type Clock struct {
	cfg ClockConfig
	obs ClockObserver

	mu       sync.RWMutex
	anchor   time.Time // the reference's reading (no monotonic part)
	at       time.Time // local instant (monotonic) by which it was read
	offset   time.Duration
	bound    time.Duration
	measured bool
	err      error // of the last measurement, if it failed
	wrong    bool  // the last measurement was past Tolerance (logged once)
}

// NewClock returns a clock that reads the local clock (shifted by Skew)
// until its first Measure.
func NewClock(cfg ClockConfig) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Every = cmp.Or(cfg.Every, DefaultClockEvery)
	cfg.Tolerance = cmp.Or(cfg.Tolerance, DefaultClockTolerance)
	var now func() time.Time
	fillCommon(&now, &cfg.Logger, &cfg.Observer)
	c := &Clock{cfg: cfg}
	c.obs, _ = cfg.Observer.(ClockObserver)
	return c, nil
}

// local is this process's reading of the local wall clock.
func (c *Clock) local() time.Time { return time.Now().Add(c.cfg.Skew) }

// Now returns the reference time: the last measurement carried forward
// by the monotonic clock, or the local clock before the first.
func (c *Clock) Now() time.Time {
	c.mu.RLock()
	anchor, at, ok := c.anchor, c.at, c.measured
	c.mu.RUnlock()
	if !ok {
		return c.local()
	}
	return anchor.Add(time.Since(at))
}

// Offset returns how far the local clock was ahead of the reference at
// the last measurement (negative: behind), give or take bound; ok is
// false before the first.
func (c *Clock) Offset() (offset, bound time.Duration, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.offset, c.bound, c.measured
}

// Measure reads the reference and sets the clock by it. On error the
// clock keeps its last measurement (carried forward, it stays as good as
// the monotonic clock) and Check reports the error.
func (c *Clock) Measure(ctx context.Context) error {
	if c.cfg.Source == nil {
		c.set(time.Now(), time.Now().Round(0).Add(c.cfg.Skew), 0, 0)
		return nil
	}
	var (
		best      time.Duration = -1
		ref, end  time.Time
		localMid  time.Time
		sampleErr error
	)
	for range clockSamples {
		t0 := time.Now()
		r, err := c.cfg.Source(ctx)
		t1 := time.Now()
		if err != nil {
			sampleErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if rtt := t1.Sub(t0); best < 0 || rtt < best {
			best, ref, end = rtt, r, t1
			localMid = t0.Round(0).Add(c.cfg.Skew + rtt/2)
		}
	}
	if best < 0 {
		err := fmt.Errorf("read the reference clock: %w", cmp.Or(sampleErr, ctx.Err(), errors.New("no sample")))
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		return err
	}
	c.set(end, ref, localMid.Sub(ref), best/2)
	return nil
}

// set anchors the clock: the reference read ref by the local instant at;
// the local clock was offset ahead of it, give or take bound.
func (c *Clock) set(at, ref time.Time, offset, bound time.Duration) {
	c.mu.Lock()
	c.anchor, c.at, c.offset, c.bound, c.measured, c.err = ref.Round(0), at, offset, bound, true, nil
	wrong := c.past(offset)
	was := c.wrong
	c.wrong = wrong
	c.mu.Unlock()
	if c.obs != nil {
		c.obs.ClockMeasured(offset, bound)
	}
	switch {
	case wrong && !was:
		c.cfg.Logger.Error("clock: this member's clock is off the task store's by more than the tolerance; it decides due times by the task store's clock, but fix its time (NTP)",
			"offset", offset, "bound", bound, "tolerance", c.cfg.Tolerance)
	case !wrong && was:
		c.cfg.Logger.Info("clock: this member's clock is back within the tolerance", "offset", offset, "tolerance", c.cfg.Tolerance)
	}
}

// past reports whether offset is past the tolerance.
func (c *Clock) past(offset time.Duration) bool {
	return c.cfg.Tolerance >= 0 && (offset > c.cfg.Tolerance || offset < -c.cfg.Tolerance)
}

// Check returns nil while the local clock is within Tolerance of the
// reference, else an error that says by how much (for /readyz); also
// the error of a failed measurement.
func (c *Clock) Check(context.Context) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	switch {
	case c.err != nil:
		return c.err
	case !c.measured:
		return errors.New("not measured yet: the task store's clock is read once it answers")
	case c.past(c.offset):
		way := "ahead of"
		if c.offset < 0 {
			way = "behind"
		}
		return fmt.Errorf("the local clock is %v %s the task store's (±%v), past the tolerance of %v: due times follow the task store's clock; fix this machine's time",
			c.offset.Abs().Round(time.Millisecond), way, c.bound.Round(time.Microsecond), c.cfg.Tolerance)
	}
	return nil
}

// Run measures the reference every Every until ctx is done; every
// second while it has not measured it yet.
func (c *Clock) Run(ctx context.Context) error {
	for {
		wait := c.cfg.Every
		if _, _, ok := c.Offset(); !ok {
			wait = min(wait, time.Second)
		}
		if err := pause.For(ctx, wait); err != nil {
			return nil
		}
		if err := c.Measure(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("clock: measuring the task store's clock failed; carrying the last measurement forward", "dep", "task_store", "err", err)
		}
	}
}
