package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// errClosed is the error of a delivery after Close.
var errClosed = errors.New("publisher closed")

// broker is one broker's connection, made on first use by one dial at a
// time, whatever the number of deliveries waiting for it.
type broker struct {
	name       string
	url        string
	opts       []nats.Option
	redialWait time.Duration

	mu     sync.Mutex
	js     jetstream.JetStream // nil until connected
	closed bool
	// dialing is closed when the dial in flight ends; nil when none is.
	dialing chan struct{}
	// dialErr is the last failed dial's error, failedAt when it failed.
	dialErr  error
	failedAt time.Time

	// inflight are the publishes waiting for their ack: nats.go leaves
	// them waiting when the connection is lost, lost ends them.
	flightMu sync.Mutex
	inflight map[*flight]struct{}
}

// flight is a publish waiting for its ack.
type flight struct{ cancel context.CancelCauseFunc }

// track returns ctx, ended by lost until done is called.
func (b *broker) track(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	f := &flight{cancel: cancel}
	b.flightMu.Lock()
	b.inflight[f] = struct{}{}
	b.flightMu.Unlock()
	return ctx, func() {
		b.flightMu.Lock()
		delete(b.inflight, f)
		b.flightMu.Unlock()
		cancel(nil)
	}
}

// lost ends the publishes in flight: the connection is gone, and their
// acks with it.
func (b *broker) lost(err error) {
	if err == nil {
		err = errors.New("connection lost")
	} else {
		err = fmt.Errorf("connection lost: %w", err)
	}
	b.flightMu.Lock()
	defer b.flightMu.Unlock()
	for f := range b.inflight {
		f.cancel(err)
	}
}

// jetStream returns the broker's JetStream, connecting first if it has
// no connection: one dial at a time, which those who wait for it leave
// when their ctx ends. A dial that failed less than redialWait ago is not
// tried again: its error is returned.
func (b *broker) jetStream(ctx context.Context) (jetstream.JetStream, error) {
	for waited := false; ; waited = true {
		b.mu.Lock()
		switch {
		case b.closed:
			b.mu.Unlock()
			return nil, errClosed
		case b.js != nil && !b.js.Conn().IsClosed():
			js := b.js
			b.mu.Unlock()
			return js, nil
		case b.dialing == nil && b.dialErr != nil && (waited || time.Since(b.failedAt) < b.redialWait):
			err := b.dialErr
			b.mu.Unlock()
			return nil, err
		case b.dialing == nil:
			b.js = nil // closed: nats.go gave up on it, or it was refused
			b.dialing = make(chan struct{})
			go b.dial(b.dialing)
		}
		wait := b.dialing
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// dial connects to the broker and closes done.
func (b *broker) dial(done chan struct{}) {
	defer close(done)
	nc, err := nats.Connect(b.url, b.opts...)
	var js jetstream.JetStream
	if err == nil {
		js, err = jetstream.New(nc)
		if err != nil {
			nc.Close()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dialing = nil
	switch {
	case err != nil:
		b.dialErr, b.failedAt = err, time.Now()
	case b.closed:
		nc.Close()
	default:
		b.js, b.dialErr = js, nil
	}
}

// ready connects to the broker if it is not connected, and asks its
// JetStream for the account's information.
func (b *broker) ready(ctx context.Context) error {
	js, err := b.jetStream(ctx)
	if err != nil {
		return err
	}
	if s := js.Conn().Status(); s != nats.CONNECTED {
		return errors.New("the connection is " + s.String())
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return err
	}
	return nil
}

// close closes the connection, and the one a dial in flight makes.
func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.js != nil {
		b.js.Conn().Close()
		b.js = nil
	}
}
