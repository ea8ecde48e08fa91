package main

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Timing of await: the first retry after awaitMin, doubling up to
// awaitMax, each delay jittered within [d/2, d]. awaitTry bounds one
// attempt to connect (the try functions apply it: a migration may take
// longer).
const (
	awaitMin = 250 * time.Millisecond
	awaitMax = 5 * time.Second
	awaitTry = 5 * time.Second
)

// depState keeps a dependency's last error while toc waits for it, for
// /readyz, and whether it has answered.
type depState struct {
	mu  sync.Mutex
	err error
	up  bool
}

func (d *depState) set(up bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.up, d.err = up, err
}

// state returns whether the dependency answered, and its last error while
// it had not.
func (d *depState) state() (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.up, d.err
}

// await calls try until it succeeds or ctx is done (then it returns
// ctx's error), waiting between calls a
// bounded, jittered, exponential backoff. Each failure goes to
// state (still down) and is a warning with dep: the service's log handler
// passes one per dependency per 10 s, the next with suppressed=N. A
// dependency that answers after failing is logged at Info with the
// attempts it took; marking it up is the caller's, once what depends on
// it is in place.
//
// A try that fails with a permanentError (see permanent) ends the wait
// with that error: trying again cannot help.
func await(ctx context.Context, log *slog.Logger, dep string, state *depState, try func(context.Context) error) error {
	next := awaitMin
	for attempt := 1; ; attempt++ {
		err := try(ctx)
		if err == nil {
			if attempt > 1 {
				log.Info("dependency available", "dep", dep, "attempts", attempt)
			}
			return nil
		}
		if errors.As(err, new(permanentError)) {
			state.set(false, err)
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		state.set(false, err)
		d := next/2 + rand.N(next/2+1)
		next = min(2*next, awaitMax)
		log.Warn("dependency unavailable; retrying", "dep", dep, "err", err, "retry_in", d.Round(time.Millisecond).String())
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// permanentError is a dependency's answer that no retry changes: toc
// stops with it rather than wait.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// permanent marks err as a permanentError.
func permanent(err error) error { return permanentError{err} }
