package amqp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	amqp091 "github.com/rabbitmq/amqp091-go"
)

// closeTimeout bounds closing a connection at Close, which also cuts a
// write the broker does not read.
const closeTimeout = 2 * time.Second

// request is one delivery handed to a publisher.
type request struct {
	ctx      context.Context
	exchange string
	key      string
	attempt  string // the toc-attempt header, to match a returned message
	msg      amqp091.Publishing
	done     chan result // buffered: the publisher never waits on it
}

// result is a publish's outcome: returned is the message the broker gave
// back as unroutable, if it did.
type result struct {
	err      error
	returned *amqp091.Return
}

// broker is one broker's connection and its pool of publishers.
type broker struct {
	name           string
	url            string
	channels       int
	connectTimeout time.Duration
	redialWait     time.Duration
	heartbeat      time.Duration
	log            *slog.Logger

	reqs chan *request
	stop chan struct{} // closed by close
	// dialLock is held by the one who (re)connects.
	dialLock chan struct{}
	// wg counts the publishers and the watchers of connections.
	wg sync.WaitGroup

	mu       sync.Mutex
	started  bool        // the publishers run
	conn     *connection // nil before the first connection
	dialErr  error       // the last failed dial's error, when it failed
	failedAt time.Time
}

// connection is a connection and whether the broker blocks its
// publishers (a resource alarm), as its watcher learns.
type connection struct {
	*amqp091.Connection
	blocked atomic.Pointer[string] // the broker's reason while it blocks
}

func newBroker(name, url string, cfg Config) *broker {
	return &broker{
		name: name, url: url,
		channels:       cfg.Channels,
		connectTimeout: cfg.ConnectTimeout,
		redialWait:     cfg.RedialWait,
		heartbeat:      cfg.Heartbeat,
		log:            cfg.Logger.With(slog.String("broker", name)),
		reqs:           make(chan *request),
		stop:           make(chan struct{}),
		dialLock:       make(chan struct{}, 1),
	}
}

func (b *broker) stopped() bool {
	select {
	case <-b.stop:
		return true
	default:
		return false
	}
}

// do hands req to a free publisher and returns its outcome, or the end
// of req.ctx, whichever comes first.
func (b *broker) do(req *request) result {
	if !b.startPublishers() {
		return result{err: errClosed}
	}
	select {
	case b.reqs <- req:
	case <-req.ctx.Done():
		return result{err: fmt.Errorf("all %d channels busy: %w", b.channels, context.Cause(req.ctx))}
	case <-b.stop:
		return result{err: errClosed}
	}
	select {
	case res := <-req.done:
		return res
	case <-req.ctx.Done():
		return result{err: fmt.Errorf("no confirm: %w", context.Cause(req.ctx))}
	}
}

// startPublishers starts the pool on first use; false after close.
func (b *broker) startPublishers() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped() {
		return false
	}
	if !b.started {
		b.started = true
		b.wg.Add(b.channels)
		for range b.channels {
			go b.publisher()
		}
	}
	return true
}

// publisher publishes the requests it takes, one at a time, on a channel
// of its own, opened on the current connection when it needs one.
func (b *broker) publisher() {
	defer b.wg.Done()
	var pc *pubChannel
	defer func() { pc.close() }()
	for {
		select {
		case <-b.stop:
			return
		case req := <-b.reqs:
			var res result
			if err := context.Cause(req.ctx); err != nil {
				res.err = err // its Fire has returned
			} else {
				pc, res = b.publish(pc, req)
			}
			req.done <- res
		}
	}
}

// pubChannel is a channel in confirm mode and its notifications.
type pubChannel struct {
	conn    *connection
	ch      *amqp091.Channel
	returns chan amqp091.Return
	closes  chan *amqp091.Error
}

func openChannel(c *connection) (*pubChannel, error) {
	ch, err := c.Channel()
	if err != nil {
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return nil, err
	}
	return &pubChannel{
		conn: c,
		ch:   ch,
		// One message is in flight at a time, so one return at most; the
		// buffer keeps the connection's reader from waiting on us.
		returns: ch.NotifyReturn(make(chan amqp091.Return, 1)),
		closes:  ch.NotifyClose(make(chan *amqp091.Error, 1)),
	}, nil
}

// close closes the channel, if there is one.
func (pc *pubChannel) close() {
	if pc != nil {
		_ = pc.ch.Close()
	}
}

// publish publishes req on pc, or on a new channel when pc is nil or
// gone, and waits for the confirm. It returns the channel to publish on
// next, nil when it should not be used again.
func (b *broker) publish(pc *pubChannel, req *request) (*pubChannel, result) {
	c, err := b.connection(req.ctx)
	if err != nil {
		pc.close()
		return nil, result{err: err}
	}
	if reason := c.blocked.Load(); reason != nil {
		return pc, result{err: fmt.Errorf("the broker blocks publishers: %s", *reason)}
	}
	if pc != nil && (pc.conn != c || pc.ch.IsClosed()) {
		pc.close()
		pc = nil
	}
	if pc == nil {
		if pc, err = openChannel(c); err != nil {
			return nil, result{err: fmt.Errorf("open a channel: %w", err)}
		}
	}
	dc, err := pc.ch.PublishWithDeferredConfirmWithContext(req.ctx, req.exchange, req.key, true, false, req.msg)
	if err != nil {
		pc.close()
		return nil, result{err: err}
	}
	select {
	case <-dc.Done():
	case e := <-pc.closes:
		return nil, result{err: channelClosed(e)}
	case <-req.ctx.Done():
		// Its confirm or return may still come: a channel in that state
		// is not used again.
		pc.close()
		return nil, result{err: fmt.Errorf("no confirm: %w", context.Cause(req.ctx))}
	}
	if !dc.Acked() {
		select {
		case e := <-pc.closes:
			return nil, result{err: channelClosed(e)}
		default:
			return pc, result{err: errors.New("the broker nacked the message")}
		}
	}
	// The broker sends an unroutable message's return before its confirm,
	// and the connection hands them over in that order.
	for {
		select {
		case r, ok := <-pc.returns:
			if !ok {
				return nil, result{err: channelClosed(nil)}
			}
			if r.MessageId == req.msg.MessageId && r.Headers["toc-attempt"] == req.attempt {
				return pc, result{
					err:      fmt.Errorf("unroutable: no queue is bound for it (%d %s)", r.ReplyCode, r.ReplyText),
					returned: &r,
				}
			}
		default:
			return pc, result{}
		}
	}
}

// channelClosed is the error of a channel closed under a publish.
func channelClosed(e *amqp091.Error) error {
	if e == nil {
		return errors.New("channel closed")
	}
	return fmt.Errorf("channel closed: %w", e)
}

// connection returns the broker's connection, making it first when there
// is none or it was closed: one dial at a time. A dial that failed less
// than redialWait ago is not tried again: its error is returned.
func (b *broker) connection(ctx context.Context) (*connection, error) {
	b.mu.Lock()
	c := b.conn
	b.mu.Unlock()
	if c != nil && !c.IsClosed() {
		return c, nil
	}
	select {
	case b.dialLock <- struct{}{}:
		defer func() { <-b.dialLock }()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-b.stop:
		return nil, errClosed
	}
	b.mu.Lock()
	c, dialErr, failedAt := b.conn, b.dialErr, b.failedAt
	b.mu.Unlock()
	switch {
	case c != nil && !c.IsClosed(): // made while we waited
		return c, nil
	case dialErr != nil && time.Since(failedAt) < b.redialWait:
		return nil, dialErr
	}
	conn, err := b.dial(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		b.dialErr, b.failedAt = err, time.Now()
		return nil, err
	case b.stopped():
		_ = conn.Close()
		return nil, errClosed
	}
	c = &connection{Connection: conn}
	closes := conn.NotifyClose(make(chan *amqp091.Error, 1))
	blocks := conn.NotifyBlocked(make(chan amqp091.Blocking, 1))
	b.conn, b.dialErr = c, nil
	b.wg.Add(1)
	go b.watch(c, closes, blocks)
	return c, nil
}

// dial connects within ctx and ConnectTimeout, the handshake included.
func (b *broker) dial(ctx context.Context) (*amqp091.Connection, error) {
	deadline := time.Now().Add(b.connectTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	props := amqp091.NewConnectionProperties()
	props.SetClientConnectionName("toc")
	return amqp091.DialConfig(b.url, amqp091.Config{
		Heartbeat:  b.heartbeat,
		Properties: props,
		Dial: func(network, addr string) (net.Conn, error) {
			d := net.Dialer{Deadline: deadline}
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Cleared by amqp091 once the handshake is done.
			if err := nc.SetDeadline(deadline); err != nil {
				nc.Close()
				return nil, err
			}
			return nc, nil
		},
	})
}

// watch follows c until it closes: whether the broker blocks it, and why
// it closed.
func (b *broker) watch(c *connection, closes <-chan *amqp091.Error, blocks <-chan amqp091.Blocking) {
	defer b.wg.Done()
	for {
		select {
		case e, ok := <-closes:
			if ok && e != nil {
				b.log.Warn("amqp connection closed; the next delivery reconnects", slog.Any("err", e))
			}
			return
		case bl, ok := <-blocks:
			switch {
			case !ok:
				blocks = nil // closed with the connection; closes says why
			case bl.Active:
				c.blocked.Store(&bl.Reason)
				b.log.Warn("amqp broker blocks publishers", slog.String("reason", bl.Reason))
			default:
				c.blocked.Store(nil)
				b.log.Info("amqp broker unblocks publishers")
			}
		}
	}
}

// ready connects to the broker if it is not connected, and reports
// whether it blocks publishers.
func (b *broker) ready(ctx context.Context) error {
	if b.stopped() {
		return errClosed
	}
	c, err := b.connection(ctx)
	if err != nil {
		return err
	}
	if reason := c.blocked.Load(); reason != nil {
		return fmt.Errorf("blocks publishers: %s", *reason)
	}
	return nil
}

// close stops the publishers and closes the connection, cutting a write
// in flight after closeTimeout.
func (b *broker) close() {
	b.mu.Lock()
	if b.stopped() {
		b.mu.Unlock()
		return
	}
	close(b.stop)
	c := b.conn
	b.mu.Unlock()
	if c != nil {
		_ = c.CloseDeadline(time.Now().Add(closeTimeout))
	}
	b.wg.Wait()
}
