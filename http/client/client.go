package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of a Client.
const (
	// DefaultTimeout bounds one attempt of a call: longer than the 30 s
	// toc gives itself to answer a request, so that its own 503 arrives
	// rather than a client timeout.
	DefaultTimeout = 35 * time.Second
	// DefaultMaxAttempts is how many times a call is sent at most, the
	// first included.
	DefaultMaxAttempts = 4
	// DefaultRetryBase and DefaultRetryMax bound the backoff between
	// attempts: the base doubles at each retry, up to the max.
	DefaultRetryBase = 250 * time.Millisecond
	DefaultRetryMax  = 10 * time.Second
	// DefaultUserAgent is the User-Agent of a Client's requests.
	DefaultUserAgent = "toc-client-go"
)

// maxErrorBody and maxRawBody bound what is read of an error answer and
// of a raw answer (the OpenAPI document).
const (
	maxErrorBody = 64 << 10
	maxRawBody   = 16 << 20
)

// Client calls toc's REST API. It is safe for concurrent use.
type Client struct {
	base      string // scheme://host[/prefix], no trailing slash
	token     string
	http      *http.Client
	retry     RetryPolicy
	userAgent string
	// coalescer, when set, queues Schedule calls into batches
	// (WithCoalescing).
	coalescer *coalescer

	// sleep waits d or until ctx is done, and rand is uniform in [0, 1):
	// tests replace them.
	sleep func(ctx context.Context, d time.Duration) error
	rand  func() float64
	now   func() time.Time
}

// New returns a client of the toc at baseURL ("http://127.0.0.1:8080"; a
// path prefix is kept, for a toc behind a proxy under one).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("toc client: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("toc client: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	c := &Client{
		base:      strings.TrimRight(u.String(), "/"),
		userAgent: DefaultUserAgent,
		sleep:     sleep,
		rand:      rand.Float64,
		now:       time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: DefaultTimeout}
	}
	c.retry = c.retry.withDefaults()
	return c, nil
}

// sleep is internal/pause.For, written again: the client imports the
// standard library only.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as the bearer token of every call (toc serve's
// --api-token; toc dev needs none).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the calls with hc instead of a client of
// DefaultTimeout over http.DefaultTransport. Its Timeout bounds each
// attempt; ctx bounds the call, retries included.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetry sets the retry policy; RetryPolicy{MaxAttempts: 1} sends
// every call once.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithUserAgent sets the User-Agent of the calls (default
// DefaultUserAgent).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// RetryPolicy says how often and after how long a call is repeated (see
// the package doc for which calls are). A zero field takes its default.
type RetryPolicy struct {
	// MaxAttempts is how many times a call is sent at most, the first
	// included (default DefaultMaxAttempts; 1: never repeated).
	MaxAttempts int
	// BaseDelay is the wait before the first retry, doubled at each one
	// after (default DefaultRetryBase); each wait is drawn between half
	// of it and all of it.
	BaseDelay time.Duration
	// MaxDelay caps the wait (default DefaultRetryMax). A Retry-After
	// longer than it ends the retries: the *Error returned carries it.
	MaxDelay time.Duration
}

// withDefaults fills in the zero fields.
func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxAttempts = cmp.Or(max(p.MaxAttempts, 0), DefaultMaxAttempts)
	p.BaseDelay = cmp.Or(max(p.BaseDelay, 0), DefaultRetryBase)
	p.MaxDelay = cmp.Or(max(p.MaxDelay, 0), DefaultRetryMax)
	return p
}

// backoff is the wait before retry n (1 for the first) for a draw r in
// [0, 1): the base doubled n-1 times, capped, of which the upper half is
// random (so that clients refused together do not come back together);
// at least retryAfter, plus up to a tenth of it at random.
func (p RetryPolicy) backoff(n int, retryAfter time.Duration, r float64) time.Duration {
	d := p.MaxDelay
	if n-1 < 32 && p.BaseDelay<<(n-1) > 0 { // no overflow
		d = min(d, p.BaseDelay<<(n-1))
	}
	d = d/2 + time.Duration(r*float64(d/2))
	if retryAfter > 0 {
		d = max(d, retryAfter+time.Duration(r*float64(retryAfter/10)))
	}
	return d
}

// safety says when a call may be sent again.
type safety int

const (
	// once: never repeated (a schedule without an idempotency key).
	once safety = iota
	// refused: repeated after an answer that refused it (429, 503), not
	// after a transport error, as it would act anew.
	refused
	// idempotent: repeated after a refusal or a transport error.
	idempotent
)

// request is one call of the API.
type request struct {
	method string
	path   string // escaped
	query  url.Values
	body   any    // sent as JSON when not nil
	raw    []byte // sent as it is when not nil (JSON made by the caller)
	safety safety
	// header holds headers of the call beyond those every call sends.
	header http.Header
}

// call sends r, repeating it as its safety and the policy allow, and
// decodes a 2xx answer's JSON into out (nil: none read; *[]byte: the body
// as it is). It returns the answer's status.
func (c *Client) call(ctx context.Context, r request, out any) (int, error) {
	body := r.raw
	if r.body != nil {
		var err error
		if body, err = encodeBody(r.body); err != nil {
			return 0, fmt.Errorf("%s %s: encode the body: %w", r.method, r.path, err)
		}
	}
	for attempt := 1; ; attempt++ {
		status, err := c.send(ctx, r, body, out)
		if err == nil {
			return status, nil
		}
		if ctx.Err() != nil {
			return status, err
		}
		retryAfter, again := c.again(r, err)
		// Not again when the server asks for a longer wait than we make.
		if !again || attempt >= c.retry.MaxAttempts || retryAfter > c.retry.MaxDelay {
			return status, tried(err, attempt)
		}
		wait := c.retry.backoff(attempt, retryAfter, c.rand())
		if deadline, ok := ctx.Deadline(); ok && c.now().Add(wait).After(deadline) {
			return status, tried(err, attempt) // the retry could not finish in time
		}
		if werr := c.sleep(ctx, wait); werr != nil {
			return status, fmt.Errorf("%w (waiting to retry after %w)", werr, err)
		}
	}
}

// tried is the error of the last of n attempts: it says how many there
// were, when more than one.
func tried(err error, n int) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("%w (after %d attempts)", err, n)
}

// again reports whether a call of r that failed with err may be sent
// again, and the Retry-After the server asked for.
func (c *Client) again(r request, err error) (time.Duration, bool) {
	if r.safety == once {
		return 0, false
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.RetryAfter, e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable
	}
	var tr *transportError
	return 0, errors.As(err, &tr) && r.safety == idempotent
}

// transportError is a call that got no answer.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// send makes one attempt of r.
func (c *Client) send(ctx context.Context, r request, body []byte, out any) (int, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", r.method, r.path, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, &transportError{err}
	}
	defer func() {
		// Drained, so that the connection is reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
	}()
	if resp.StatusCode >= 300 {
		return resp.StatusCode, c.answerError(r, resp)
	}
	switch out := out.(type) {
	case nil:
	case *[]byte:
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxRawBody))
		if err != nil {
			return resp.StatusCode, &transportError{fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)}
		}
		*out = b
	default:
		// Read whole, then decoded by json.Unmarshal, whose scanner is
		// pooled: a json.Decoder allocates its own, and scans the bytes
		// once more before decoding them.
		b, err := readAnswer(resp)
		if err == nil && len(bytes.TrimSpace(b)) == 0 {
			err = io.EOF
		}
		if err != nil {
			return resp.StatusCode, &transportError{fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)}
		}
		if f, ok := out.(fastDecoder); ok && f.decodeFast(b) {
			return resp.StatusCode, nil
		}
		if err := json.Unmarshal(b, out); err != nil {
			if se, ok := errors.AsType[*json.SyntaxError](err); ok && se.Offset == int64(len(b)) && se.Error() == "unexpected end of JSON input" {
				// Cut short: as a connection that closed before the end.
				err = fmt.Errorf("%w: %w", io.ErrUnexpectedEOF, err)
				return resp.StatusCode, &transportError{fmt.Errorf("%s %s: read the answer: %w", r.method, r.path, err)}
			}
			return resp.StatusCode, fmt.Errorf("%s %s: decode the answer: %w", r.method, r.path, err)
		}
	}
	return resp.StatusCode, nil
}

// answerError reads an error answer.
func (c *Client) answerError(r request, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{
		Method:     r.method,
		Path:       r.path,
		Status:     resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), c.now()),
		body:       b,
	}
	var eb errorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error.Code != "" {
		e.Code, e.Message, e.Field, e.Items = eb.Error.Code, eb.Error.Message, eb.Error.Field, eb.Error.Items
		e.CurrentVersion = eb.Error.CurrentVersion
		return e
	}
	// Not the API's error: a proxy's, say. Its text, on one line.
	msg := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "\uFFFD")), " ")
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	e.Message = msg
	return e
}

// readAnswer reads an answer's body whole: into one buffer of its
// Content-Length when it gives one, where io.ReadAll would grow its
// buffer step by step to the size of a batch's answer.
func readAnswer(resp *http.Response) ([]byte, error) {
	n := resp.ContentLength
	if n <= 0 || n > maxRawBody {
		return io.ReadAll(resp.Body)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		return nil, err
	}
	return b, nil
}

// encodeBody is json.Marshal of v, or v's own appendJSON where it has
// one: json.Marshal checks and compacts again what a MarshalJSON wrote.
func encodeBody(v any) ([]byte, error) {
	if r, ok := v.(JobRequest); ok {
		return r.appendJSON(make([]byte, 0, r.jsonSize()))
	}
	return json.Marshal(v)
}

// fastDecoder is an answer that can read itself without reflection when
// it is in its plain form, reporting false, unchanged, otherwise
// (jobscan.go).
type fastDecoder interface{ decodeFast([]byte) bool }
