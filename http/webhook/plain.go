package webhook

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// plainTransport sends the calls to http:// callbacks. A call takes a
// kept-alive connection to its host (or dials one), writes the request
// and reads the answer on it in the caller's goroutine, and gives the
// connection back when the answer's body is closed; the request's head
// is written here, and fasthttp parses the answer. net/http's transport
// costs a call about twice the CPU (a reader and a writer goroutine per
// connection and the hand-offs between them, header maps), and the drain
// of signed webhooks is bound by CPU (BENCHMARKS.md, "What net/http
// costs a webhook").
// https:// callbacks stay on net/http, which speaks HTTP/2 to receivers
// that offer it.
//
// What it keeps of net/http's behaviour: the call ends at ctx's deadline
// and as soon as ctx is cancelled (the end of a shutdown's grace); a
// request that fails on a kept-alive connection before any answer (the
// receiver had closed it) is sent once more on a new connection, since
// the webhook carries an Idempotency-Key; a connection is reused only
// when its answer's body was read to its end.
type plainTransport struct {
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int // kept-alive connections per host

	mu        sync.Mutex
	idle      map[string][]*plainConn // by host:port, the most recent last
	idleCount int
	swept     time.Time
}

// plainConn is a connection with its buffers.
type plainConn struct {
	addr      string // as dialed: host:port
	conn      net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// The buffers of a connection. A response head longer than the read
// buffer is refused, as net/http refuses one over its limit.
const (
	plainReadBuffer  = 16 << 10
	plainWriteBuffer = 4 << 10
)

func newPlainTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error), maxIdle int) *plainTransport {
	return &plainTransport{dial: dial, maxIdle: maxIdle, idle: make(map[string][]*plainConn)}
}

// Header is one header of a request, or of a message on a bus.
type Header struct{ Key, Value string }

// post sends body with headers to to (an http URL) and returns the
// answer as an *http.Response of which only StatusCode, ContentLength
// (0 for an answer without a body, -1 when its length is not given),
// Body and, when the answer has one, Header's Retry-After are set. Body
// must be closed; it is read on the connection, and closing it gives the
// connection back. Errors are net/http's in kind: a dial error, a
// timeout wrapping context.DeadlineExceeded, ctx's error when it is
// cancelled.
func (t *plainTransport) post(ctx context.Context, to *target, headers []Header, body []byte) (*http.Response, error) {
	addr := to.addr
	req := plainRequest{uri: to.uri, host: to.u.Host, headers: headers, body: body}
	pc, reused, err := t.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	resp, err := t.roundTrip(ctx, pc, &req)
	if err == nil || !reused || !staleConn(err) || ctx.Err() != nil {
		return resp, err
	}
	// The receiver closed a kept-alive connection, and likely the others
	// idle beside it: once more, on a new connection.
	t.closeIdle(addr)
	if pc, err = t.dialConn(ctx, addr); err != nil {
		return nil, err
	}
	return t.roundTrip(ctx, pc, &req)
}

// plainRequest is a POST of body with headers to uri on host.
type plainRequest struct {
	uri, host string
	headers   []Header
	body      []byte
}

// write writes r as an HTTP/1.1 request. The head is written here, not
// by fasthttp's Request: its headers are toc's own (the signature, the
// job's id, attempt and due time), which need neither fasthttp's copies
// nor its normalising, and setting them on a fasthttp.Request was about
// 5 % of toc's CPU a fire (BENCHMARKS.md, "The request head by hand,
// one ZMSCORE an ack"). A control character in a value (none of toc's has one) is
// sent as a space, as fasthttp did with CR and LF, so that no value
// can end the head.
func (r *plainRequest) write(bw *bufio.Writer) error {
	bw.WriteString("POST ")
	bw.WriteString(r.uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(r.host)
	for _, h := range r.headers {
		bw.WriteString("\r\n")
		bw.WriteString(h.Key)
		bw.WriteString(": ")
		writeHeaderValue(bw, h.Value)
	}
	bw.WriteString("\r\nContent-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(r.body)), 10))
	bw.WriteString("\r\n\r\n")
	_, err := bw.Write(r.body)
	return err
}

// writeHeaderValue writes v with each control character but a tab as a
// space.
func writeHeaderValue(bw *bufio.Writer, v string) {
	start := 0
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			bw.WriteString(v[start:i])
			bw.WriteByte(' ')
			start = i + 1
		}
	}
	bw.WriteString(v[start:])
}

// roundTrip writes req on pc and reads the answer's head.
func (t *plainTransport) roundTrip(ctx context.Context, pc *plainConn, req *plainRequest) (*http.Response, error) {
	// The call ends when ctx does, its deadline included: ctx's own timer
	// ends it, and a past deadline on the connection then ends its
	// reads and writes. A deadline of the connection's own, set before
	// the call and cleared after it, was two more timer changes a fire.
	stop := context.AfterFunc(ctx, func() { _ = pc.conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = pc.conn.Close()
		return nil, ctxError(ctx, err)
	}
	if err := req.write(pc.bw); err != nil {
		return fail(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err)
	}
	resp := fasthttp.AcquireResponse()
	resp.StreamBody = true
	if err := resp.Read(pc.br); err != nil {
		fasthttp.ReleaseResponse(resp)
		return fail(shortError(err))
	}
	stream := resp.BodyStream()
	hr := &http.Response{StatusCode: resp.StatusCode(), ContentLength: -1}
	switch n := resp.Header.ContentLength(); {
	case stream == nil:
		hr.ContentLength = 0
	case n >= 0:
		hr.ContentLength = int64(n)
	}
	if v := resp.Header.Peek("Retry-After"); len(v) > 0 {
		hr.Header = http.Header{"Retry-After": {string(v)}}
	}
	hr.Body = &plainBody{t: t, pc: pc, resp: resp, ctx: ctx, stop: stop, stream: stream, eof: hr.ContentLength == 0,
		reusable: !resp.ConnectionClose() && (stream == nil || resp.Header.ContentLength() >= -1)}
	return hr, nil
}

// plainBody is an answer's body, read from its connection.
type plainBody struct {
	t      *plainTransport
	pc     *plainConn
	resp   *fasthttp.Response
	ctx    context.Context
	stop   func() bool
	stream io.Reader // nil: no body
	// reusable: the connection may carry another call once the body is
	// read to its end, which a body of a given length or in chunks has;
	// one that lasts until the connection closes (length -2) has not.
	reusable bool
	eof      bool // read to its end: from the start when it is empty
	err      error
	closed   bool
}

func (b *plainBody) Read(p []byte) (int, error) {
	if b.stream == nil || b.eof {
		b.eof = true
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.stream.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.err = ctxError(b.ctx, err)
		err = b.err
	}
	return n, err
}

// Close gives the connection back when the body was read to its end on
// a connection that stays open, and closes it otherwise.
func (b *plainBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.stream != nil {
		_ = b.resp.CloseBodyStream()
	}
	fasthttp.ReleaseResponse(b.resp)
	// stop is false when the AfterFunc ran: the deadline is in the past.
	if b.stop() && b.eof && b.err == nil && b.reusable {
		b.t.put(b.pc)
		return nil
	}
	return b.pc.conn.Close()
}

// get returns a kept-alive connection to addr, reporting that it was
// used before, or dials a new one.
func (t *plainTransport) get(ctx context.Context, addr string) (*plainConn, bool, error) {
	now := time.Now()
	t.mu.Lock()
	for conns := t.idle[addr]; len(conns) > 0; conns = t.idle[addr] {
		pc := conns[len(conns)-1]
		t.idle[addr] = conns[:len(conns)-1]
		t.idleCount--
		if now.Sub(pc.idleSince) < idleConnTimeout {
			t.mu.Unlock()
			return pc, true, nil
		}
		_ = pc.conn.Close()
	}
	t.mu.Unlock()
	pc, err := t.dialConn(ctx, addr)
	return pc, false, err
}

// dialConn dials a new connection to addr.
func (t *plainTransport) dialConn(ctx context.Context, addr string) (*plainConn, error) {
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	return &plainConn{addr: addr, conn: conn, br: bufio.NewReaderSize(conn, plainReadBuffer), bw: bufio.NewWriterSize(conn, plainWriteBuffer)}, nil
}

// put keeps pc for the next call to its host, unless the host or the
// transport has as many as it keeps; then, at most once per
// idleConnTimeout, it closes the connections idle for longer.
func (t *plainTransport) put(pc *plainConn) {
	addr, now := pc.addr, time.Now()
	pc.idleSince = now
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.swept) > idleConnTimeout {
		t.swept = now
		t.sweep(now)
	}
	if len(t.idle[addr]) >= t.maxIdle || t.idleCount >= maxIdleConns {
		_ = pc.conn.Close()
		return
	}
	t.idle[addr] = append(t.idle[addr], pc)
	t.idleCount++
}

// sweep closes the connections idle for longer than idleConnTimeout.
// The caller holds t.mu.
func (t *plainTransport) sweep(now time.Time) {
	for addr, conns := range t.idle {
		kept := conns[:0]
		for _, pc := range conns {
			if now.Sub(pc.idleSince) < idleConnTimeout {
				kept = append(kept, pc)
			} else {
				_ = pc.conn.Close()
				t.idleCount--
			}
		}
		if len(kept) == 0 {
			delete(t.idle, addr)
		} else {
			t.idle[addr] = kept
		}
	}
}

// closeIdle closes the idle connections to addr, or to every host when
// addr is "".
func (t *plainTransport) closeIdle(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a, conns := range t.idle {
		if addr != "" && a != addr {
			continue
		}
		for _, pc := range conns {
			_ = pc.conn.Close()
		}
		t.idleCount -= len(conns)
		delete(t.idle, a)
	}
}

// staleConn reports whether err is what a request meets on a kept-alive
// connection that the receiver closed: the answer ended before its first
// byte, or the write or read found the connection reset or broken.
func staleConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// maxErrorBytes bounds the message of an error reading an answer:
// fasthttp's quotes the start of a malformed answer, up to a buffer's
// worth, and the message goes into logs and the attempt's error.
const maxErrorBytes = 200

// shortError is err, or, when its message is longer than maxErrorBytes,
// an error of its start.
func shortError(err error) error {
	if msg := err.Error(); len(msg) > maxErrorBytes {
		return errors.New(strings.ToValidUTF8(msg[:maxErrorBytes], "") + "...")
	}
	return err
}

// ctxError is err, or ctx's error when ctx ended: a connection whose
// deadline (ctx's own, or one in the past when ctx is cancelled) passed
// reports a timeout that may come a moment before ctx's.
func ctxError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, fasthttp.ErrTimeout) {
		if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline.Add(-time.Millisecond)) {
			return context.DeadlineExceeded
		}
	}
	return err
}
