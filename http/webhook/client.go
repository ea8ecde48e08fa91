package webhook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toc-project/toc/internal/jsonw"
	"github.com/toc-project/toc/timer"
)

// Defaults of a Client.
const (
	DefaultTimeout             = 10 * time.Second
	DefaultMaxIdleConnsPerHost = 64
	DefaultMaxResponseBytes    = 64 << 10
	DefaultUserAgent           = "toc"
	// MaxRetryAfter bounds the wait a receiver can ask for with
	// Retry-After.
	MaxRetryAfter = 24 * time.Hour
)

// Settings of the transport that are not configurable.
const (
	idleConnTimeout     = 90 * time.Second
	maxIdleConns        = 1024
	tlsHandshakeTimeout = 10 * time.Second
	// errorBodyBytes is how much of a failed response's body goes into
	// the error.
	errorBodyBytes = 200
	// timeLayout is how times are written: RFC 3339, UTC, milliseconds,
	// as the REST API writes them.
	timeLayout = jsonw.TimeLayout
)

// Config configures a Client. Only Secrets is required.
type Config struct {
	// Secrets sign every request, each in the Standard Webhooks form
	// whsec_<base64 key>. A request carries one signature per secret, so
	// while a secret is rotated both can be given and the receiver may
	// verify with either.
	Secrets []string
	// NamespaceSecrets sign the calls of the topics of other namespaces
	// than the default, by namespace (see timer.QualifiedTopic), in place
	// of Secrets: a namespace's receivers need not trust another's. A
	// namespace it does not hold signs with Secrets.
	NamespaceSecrets map[string][]string
	// Timeout bounds one attempt whose ctx has no deadline (default
	// DefaultTimeout). A ctx with a deadline is the caller's bound, and
	// is honoured as it is, longer or shorter: the worker sets it from
	// the topic's callback timeout.
	Timeout time.Duration
	// AllowPrivate lets callbacks reach addresses that IsPrivate refuses:
	// for development, or receivers on the same private network.
	AllowPrivate bool
	// MaxIdleConnsPerHost is how many kept-alive connections to one
	// receiver are kept for reuse (default DefaultMaxIdleConnsPerHost).
	MaxIdleConnsPerHost int
	// UserAgent is sent with every request (default DefaultUserAgent);
	// cmd sets "toc/<version>".
	UserAgent string
	// MaxResponseBytes is how much of a response body is read so that its
	// connection can be reused; a longer body closes the connection
	// (default DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// Now gives the time of each send, and the circuit breaker's clock
	// (default time.Now).
	Now func() time.Time
	// BreakerThreshold is how many consecutive failed calls to a callback
	// host open its circuit breaker (default DefaultBreakerThreshold); a
	// negative value disables the breaker. See Client.
	BreakerThreshold int
	// BreakerCooldown is how long a breaker stays open the first time
	// (default DefaultBreakerCooldown), and how long jobs wait while a
	// half-open breaker's probe is in flight.
	BreakerCooldown time.Duration
	// BreakerMaxCooldown bounds the cooldown, which doubles each time a
	// breaker opens again after a failed probe (default
	// DefaultBreakerMaxCooldown, or BreakerCooldown if that is longer).
	BreakerMaxCooldown time.Duration
	// Observer receives the breaker's events (default: none); *metrics.Observer
	// is one. The jobs it defers are counted by timer.Observer.Deferred.
	Observer BreakerObserver
}

func (c Config) withDefaults() Config {
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.MaxIdleConnsPerHost = cmp.Or(c.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost)
	c.UserAgent = cmp.Or(c.UserAgent, DefaultUserAgent)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, DefaultMaxResponseBytes)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.BreakerThreshold = cmp.Or(c.BreakerThreshold, DefaultBreakerThreshold)
	c.BreakerCooldown = cmp.Or(c.BreakerCooldown, DefaultBreakerCooldown)
	c.BreakerMaxCooldown = cmp.Or(c.BreakerMaxCooldown, max(DefaultBreakerMaxCooldown, c.BreakerCooldown))
	if c.Observer == nil {
		c.Observer = nopBreakerObserver{}
	}
	return c
}

// Validate reports the first field of c that is out of range, after
// defaults are applied, as a *timer.FieldError. A bad secret is named by
// its index, never quoted.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case len(c.Secrets) == 0:
		return &timer.FieldError{Field: "Secrets", Message: "at least one is required (toc dev prints one)"}
	case c.Timeout < 0:
		return &timer.FieldError{Field: "Timeout", Message: "must not be negative"}
	case c.MaxIdleConnsPerHost < 0:
		return &timer.FieldError{Field: "MaxIdleConnsPerHost", Message: "must not be negative"}
	case c.MaxResponseBytes < 0:
		return &timer.FieldError{Field: "MaxResponseBytes", Message: "must not be negative"}
	case c.BreakerCooldown < 0:
		return &timer.FieldError{Field: "BreakerCooldown", Message: "must not be negative"}
	case c.BreakerMaxCooldown < 0:
		return &timer.FieldError{Field: "BreakerMaxCooldown", Message: "must not be negative"}
	case c.BreakerCooldown > c.BreakerMaxCooldown:
		return &timer.FieldError{Field: "BreakerCooldown", Message: "must not exceed BreakerMaxCooldown"}
	}
	for i, s := range c.Secrets {
		if _, err := parseSecret(s); err != nil {
			return &timer.FieldError{Field: "Secrets[" + strconv.Itoa(i) + "]", Message: err.Error()}
		}
	}
	for ns, secrets := range c.NamespaceSecrets {
		field := "NamespaceSecrets[" + ns + "]"
		if len(secrets) == 0 {
			return &timer.FieldError{Field: field, Message: "at least one is required"}
		}
		for i, s := range secrets {
			if _, err := parseSecret(s); err != nil {
				return &timer.FieldError{Field: field + "[" + strconv.Itoa(i) + "]", Message: err.Error()}
			}
		}
	}
	return nil
}

// newSigners returns the signers of secrets, which Validate checked.
func newSigners(secrets []string) []*Signer {
	signers := make([]*Signer, len(secrets))
	for i, s := range secrets {
		key, _ := parseSecret(s)
		signers[i] = NewSigner(key)
	}
	return signers
}

// Client is the timer.Handler that POSTs each job to its callback URL,
// signed as the Standard Webhooks specification says
// (https://www.standardwebhooks.com).
//
// The body is a JSON object:
//
//	{"id": "123", "topic": "orders", "key": "k", "biz_id": "42", "biz_type": "7",
//	 "fire_at": "2026-01-02T15:04:05.250Z", "attempt": 1, "payload": {...}}
//
// where key, biz_id and biz_type are left out when empty (the 64-bit
// biz_id and biz_type are decimal strings, which every JSON reader can
// hold, as in the API), and payload is the job's payload as given (null
// when there is none). The headers are
// webhook-id (the job id, the same on every attempt), webhook-timestamp,
// webhook-signature, and toc-attempt, toc-due-at and toc-lateness-ms;
// and traceparent (W3C Trace Context) when the delivery has one
// (timer.Delivery.TraceParent): the scheduling request's, or, when toc
// traces, that of its delivery span, so that the receiver's span joins
// the trace of the request that scheduled the job.
//
// A 2xx answer is success; 410 Gone discards the job (timer.ErrDiscard);
// 429 and 503 ask for the next attempt after Retry-After
// (*timer.RetryAfterError); anything else, including a redirect, which is
// not followed, is a failed attempt.
//
// A circuit breaker per callback host (host and port) keeps a host that
// keeps failing from burning the attempts of all its jobs: after
// BreakerThreshold consecutive failures (no response, or a 5xx) the host
// is not called for a cooldown, and its jobs are deferred with a
// *timer.NotSentError, which counts no attempt. Then one call probes the
// host; its success closes the breaker, its failure opens it again for
// twice as long, up to BreakerMaxCooldown. Any other answer, 4xx
// included, shows the host is up. The breaker's doc comment has the
// details.
type Client struct {
	cfg       Config
	signers   []*Signer
	nsSigners map[string][]*Signer // by namespace (Config.NamespaceSecrets)
	client    *http.Client         // https:// callbacks
	plain     *plainTransport      // http:// callbacks
	targets   targets              // the callback URLs called lately, parsed
	breaker   *breaker             // nil when disabled
}

var _ timer.Handler = (*Client)(nil)

// NewClient returns a Client configured by cfg.
func NewClient(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("webhook config: %w", err)
	}
	cfg = cfg.withDefaults()
	signers := newSigners(cfg.Secrets)
	nsSigners := make(map[string][]*Signer, len(cfg.NamespaceSecrets))
	for ns, secrets := range cfg.NamespaceSecrets {
		nsSigners[ns] = newSigners(secrets)
	}
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = dialGuard
	}
	transport := &http.Transport{
		// No proxy: the dial guard must see the receiver's address.
		Proxy:               nil,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        maxIdleConns,
		MaxIdleConnsPerHost: cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:     idleConnTimeout,
		TLSHandshakeTimeout: tlsHandshakeTimeout,
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &Client{cfg: cfg, signers: signers, nsSigners: nsSigners, client: client,
		plain: newPlainTransport(dialer.DialContext, cfg.MaxIdleConnsPerHost), breaker: newBreaker(cfg)}, nil
}

// requestBody is the JSON body of a webhook.
type requestBody struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	Key     string          `json:"key,omitempty"`
	BizID   uint64          `json:"biz_id,omitempty,string"`
	BizType uint64          `json:"biz_type,omitempty,string"`
	FireAt  string          `json:"fire_at"`
	Attempt int             `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
}

// Fire POSTs d to its job's callback URL and returns the outcome: a
// *timer.NotSentError, without a call, while the host's circuit breaker
// is open. When d.Response is set it receives the status answered and
// the first timer.MaxExcerptBytes of the body.
func (c *Client) Fire(ctx context.Context, d timer.Delivery) error {
	j := d.Job
	if j.CallbackURL == "" {
		return errors.New("no callback_url")
	}
	now := c.cfg.Now()
	id := j.ID.String()
	m, err := c.message(d, now, id, append(make([]Header, 0, messageHeaders+2),
		Header{"Content-Type", "application/json"},
		Header{"User-Agent", c.cfg.UserAgent},
		// The job id is also the idempotency key. It lets the transport
		// resend the request when a kept-alive connection turns out to
		// have been closed by the receiver, instead of failing the attempt.
		Header{"Idempotency-Key", id},
	))
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	to, err := c.targets.get(j.CallbackURL)
	if err != nil {
		return errors.New("callback_url is not a valid URL")
	}
	u := to.u
	t, err := c.breaker.allow(to.host, now)
	if err != nil {
		c.breaker.hold(to.host, j.Topic, j.DueAt)
		return err
	}
	t.topic = j.Topic
	resp, err := c.post(ctx, to, m.Headers, m.Body)
	c.breaker.done(t, callOutcome(resp, err), c.cfg.Now())
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its message repeats the whole URL, query included
		}
		return fmt.Errorf("POST %s: %w", endpoint(u), err)
	}
	defer drainClose(resp, c.cfg.MaxResponseBytes)
	if d.Response != nil {
		keepExcerpt(resp, d.Response)
	}
	return c.outcome(resp, u)
}

// Message is a delivery as every way sends it: the webhook's JSON body
// and the headers that carry the job id, the attempt, the due time and
// the Standard Webhooks signature over the body, so that a consumer on a
// message bus verifies and de-duplicates it as a webhook receiver does.
type Message struct {
	// ID is the job id, the webhook-id.
	ID      string
	Body    []byte
	Headers []Header
}

// Message signs d at now as the webhook to its job would be, with the
// topic's keys (its namespace's), for a delivery by another way.
func (c *Client) Message(d timer.Delivery, now time.Time) (Message, error) {
	return c.message(d, now, d.Job.ID.String(), append(make([]Header, 0, messageHeaders), Header{"Content-Type", "application/json"}))
}

// messageHeaders is how many headers a message has at most: the
// Content-Type and those message adds.
const messageHeaders = 8

// message is d's body and its headers after first; id is the job's.
func (c *Client) message(d timer.Delivery, now time.Time, id string, first []Header) (Message, error) {
	j := d.Job
	body, err := encodeBody(d)
	if err != nil {
		return Message{}, fmt.Errorf("encode webhook: %w", err)
	}
	var due [32]byte // AppendTime's 24 bytes, on the stack
	headers := append(first,
		Header{"webhook-id", id},
		Header{"webhook-timestamp", strconv.FormatInt(now.Unix(), 10)},
		Header{"webhook-signature", signatures(c.signersOf(j.Topic), id, now.Unix(), body)},
		Header{"toc-attempt", strconv.Itoa(d.Attempt)},
		Header{"toc-due-at", string(jsonw.AppendTime(due[:0], j.DueAt))},
		Header{"toc-lateness-ms", strconv.FormatInt(now.Sub(j.DueAt).Milliseconds(), 10)},
	)
	if d.TraceParent != "" {
		headers = append(headers, Header{"traceparent", d.TraceParent})
	}
	return Message{ID: id, Body: body, Headers: headers}, nil
}

// post sends the request: to an http:// callback on the plain transport,
// to any other through net/http.
func (c *Client) post(ctx context.Context, to *target, headers []Header, body []byte) (*http.Response, error) {
	if to.u.Scheme == "http" && to.u.User == nil {
		return c.plain.post(ctx, to, headers, body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for _, h := range headers {
		req.Header.Set(h.Key, h.Value)
	}
	return c.client.Do(req)
}

// keepExcerpt puts resp's status and the start of its body in into,
// leaving the body to be read from its start.
func keepExcerpt(resp *http.Response, into *timer.Response) {
	if resp.ContentLength == 0 { // as most receivers answer
		into.StatusCode, into.Excerpt = resp.StatusCode, nil
		return
	}
	excerpt, err := io.ReadAll(io.LimitReader(resp.Body, timer.MaxExcerptBytes))
	into.StatusCode, into.Excerpt = resp.StatusCode, excerpt
	if len(excerpt) == 0 && err == nil {
		return // the body is empty and read to its end, as most receivers answer
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(excerpt), resp.Body), resp.Body}
}

// CloseIdleConnections closes the kept-alive connections not in use.
func (c *Client) CloseIdleConnections() {
	c.client.CloseIdleConnections()
	c.plain.closeIdle("")
}

// encodeBody is the webhook's JSON body: a requestBody as encoding/json
// writes it without escaping HTML, appended by hand into one buffer (on
// the hot path of every fire, where encoding/json's reflection cost a
// fifth of the body's CPU). TestEncodeBody holds it to encodeBodyJSON's
// bytes; a payload that is not JSON fails as encodeBodyJSON fails it.
func encodeBody(d timer.Delivery) ([]byte, error) {
	j := d.Job
	topic := timer.TopicName(j.Topic) // as the namespace's client knows it
	b := make([]byte, 0, 160+len(topic)+len(j.Key)+len(j.Payload))
	b = strconv.AppendUint(append(b, `{"id":"`...), uint64(j.ID), 10)
	b = jsonw.AppendString(append(b, `","topic":`...), topic)
	if j.Key != "" {
		b = jsonw.AppendString(append(b, `,"key":`...), j.Key)
	}
	if j.BizID != 0 {
		b = append(strconv.AppendUint(append(b, `,"biz_id":"`...), j.BizID, 10), '"')
	}
	if j.BizType != 0 {
		b = append(strconv.AppendUint(append(b, `,"biz_type":"`...), j.BizType, 10), '"')
	}
	b = append(jsonw.AppendTime(append(b, `,"fire_at":"`...), j.DueAt), '"')
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(d.Attempt), 10)
	b, ok := jsonw.AppendRaw(append(b, `,"payload":`...), j.Payload)
	if !ok {
		return encodeBodyJSON(d) // which fails in encoding/json's words
	}
	return append(b, '}'), nil
}

// encodeBodyJSON is encodeBody through encoding/json: the error of a
// payload that is not JSON, and TestEncodeBody's reference.
func encodeBodyJSON(d timer.Delivery) ([]byte, error) {
	j := d.Job
	v := requestBody{
		ID:      j.ID.String(),
		Topic:   timer.TopicName(j.Topic),
		Key:     j.Key,
		BizID:   j.BizID,
		BizType: j.BizType,
		FireAt:  j.DueAt.UTC().Format(timeLayout),
		Attempt: d.Attempt,
	}
	if len(j.Payload) > 0 {
		v.Payload = j.Payload
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // leave <, > and & in the payload as they are
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// outcome turns a response into Fire's result. A failure carries the
// status answered (timer.StatusError), which the task store keeps with
// the attempt's error and dead letters are grouped by.
func (c *Client) outcome(resp *http.Response, u *url.URL) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	target := endpoint(u)
	status := strconv.Itoa(code)
	if text := http.StatusText(code); text != "" {
		status += " " + text
	}
	answered := func(err error) error { return &timer.StatusError{Code: code, Err: err} }
	switch {
	case code >= 300 && code < 400:
		return answered(fmt.Errorf("POST %s: %s (redirects are not followed)", target, status))
	case code == http.StatusGone:
		return answered(fmt.Errorf("POST %s: %s: %w", target, status, timer.ErrDiscard))
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return &timer.RetryAfterError{
			After: retryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()),
			Err:   answered(fmt.Errorf("POST %s: %s%s", target, status, bodySnippet(resp.Body))),
		}
	}
	return answered(fmt.Errorf("POST %s: %s%s", target, status, bodySnippet(resp.Body)))
}

// retryAfter parses a Retry-After value, delta-seconds or an HTTP-date,
// into a wait from now within [0, MaxRetryAfter]; 0 when it is absent or
// invalid.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0
		}
		return time.Duration(min(secs, int64(MaxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter)
	}
	return 0
}

// endpoint is u without its query, which may hold the receiver's token,
// for error messages.
func endpoint(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

// bodySnippet is the start of a failed response's body, quoted, for the
// error; "" for an empty body.
func bodySnippet(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, errorBodyBytes))
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
	if s == "" {
		return ""
	}
	return ": " + strconv.Quote(s)
}

// drainClose reads what is left of a response's body, up to limit
// bytes, so that its connection can be reused, and closes it. An answer
// without a body (ContentLength 0, as most receivers answer) has nothing
// to read.
func drainClose(resp *http.Response, limit int64) {
	if resp.ContentLength != 0 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, limit))
	}
	_ = resp.Body.Close()
}

// signersOf returns the signers of the calls of topic: its namespace's.
func (c *Client) signersOf(topic string) []*Signer {
	if ns, _ := timer.SplitTopic(topic); ns != "" {
		if signers, ok := c.nsSigners[ns]; ok {
			return signers
		}
	}
	return c.signers
}

// signatures is the webhook-signature header: one entry per signer.
func signatures(signers []*Signer, msgID string, ts int64, body []byte) string {
	if len(signers) == 1 {
		return signers[0].Sign(msgID, ts, body)
	}
	sigs := make([]string, len(signers))
	for i, s := range signers {
		sigs[i] = s.Sign(msgID, ts, body)
	}
	return strings.Join(sigs, " ")
}
