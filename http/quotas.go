// The quotas of a token (http/auth.Quotas): its rate of scheduling, the
// topics it may make exist and the jobs its topics may hold pending.

package http

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toc-project/toc/http/auth"
	"github.com/toc-project/toc/timer"
)

// How old a token's view of its topics and pending jobs may be before a
// check reads them again.
const (
	quotaTopicsAge  = 2 * time.Second
	quotaPendingAge = time.Second
)

// quotaError refuses a call over a token's quota: 429 with Retry-After
// (rate, max_pending) or 409 (max_topics).
type quotaError struct {
	status     int
	code       string
	field      string
	msg        string
	retryAfter time.Duration
	// topic is the topic max_topics refused to create.
	topic string
}

func (e *quotaError) Error() string { return e.msg }

// nothingWritten ends the message of a quota that refused a whole call; a
// bulk action that stopped partway says instead how far it got.
const nothingWritten = "; nothing was written"

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

// quotas holds the state of each token's quotas, by the token's name, so
// that it outlives a reload of the tokens file.
type quotas struct {
	mu     sync.Mutex
	byName map[string]*tenant
}

func newQuotas() *quotas { return &quotas{byName: map[string]*tenant{}} }

// tenant is one token's quota state.
type tenant struct {
	// mu guards the rate bucket.
	mu     sync.Mutex
	tokens float64
	filled time.Time

	// creating serialises this token's calls that create topics, so that
	// the count checked under max_topics is the count created.
	creating sync.Mutex

	// view guards the token's topics and pending count.
	view      sync.Mutex
	topics    map[string]bool // the existing topics it may use
	topicsAt  time.Time
	pending   int64 // counted at pendingAt
	pendingAt time.Time
	added     int64 // jobs scheduled since pendingAt
}

func (q *quotas) of(name string) *tenant {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.byName[name]
	if t == nil {
		t = &tenant{}
		q.byName[name] = t
	}
	return t
}

// allowRate takes n jobs from the token's bucket: it holds rate a second,
// at most max(rate, 1), and refuses a call while it holds less than one
// (a call goes when the bucket holds one, and may leave it in debt). A
// call of more jobs than the bucket holds is refused: it could never go.
// The error says in how long one job will go.
func (a *API) allowRate(ctx context.Context, n int) error {
	p := principalFrom(ctx)
	if p == nil || p.Rate <= 0 {
		return nil
	}
	t := a.quotas.of(p.Name)
	now := a.cfg.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	capacity := max(p.Rate, 1)
	if t.filled.IsZero() {
		t.tokens = capacity
	} else if d := now.Sub(t.filled); d > 0 {
		t.tokens = min(capacity, t.tokens+d.Seconds()*p.Rate)
	}
	t.filled = now
	if float64(n) > capacity {
		// Waiting would not help: the bucket never holds that many.
		return &quotaError{status: http.StatusTooManyRequests, code: CodeRateLimited, retryAfter: time.Second,
			msg: fmt.Sprintf("%d jobs in one call are more than token %s may schedule in a second (%g); send at most %d a call",
				n, p.Name, p.Rate, int(capacity)) + nothingWritten}
	}
	if t.tokens < 1 {
		wait := time.Duration((1 - t.tokens) / p.Rate * float64(time.Second))
		return &quotaError{status: http.StatusTooManyRequests, code: CodeRateLimited, retryAfter: wait,
			msg: fmt.Sprintf("token %s schedules at most %g jobs a second; retry after %d s", p.Name, p.Rate, retryAfterSeconds(wait))}
	}
	t.tokens -= float64(n)
	return nil
}

// refreshTopics reads the token's existing topics again when they are
// older than quotaTopicsAge; t.view is held.
func (a *API) refreshTopics(ctx context.Context, p *auth.Principal, t *tenant) error {
	now := a.cfg.Now()
	if t.topics != nil && now.Sub(t.topicsAt) < quotaTopicsAge {
		return nil
	}
	names, err := a.jobs.TopicNames(ctx, p.Allows)
	if err != nil {
		return err
	}
	t.topics = make(map[string]bool, len(names))
	for _, name := range names {
		t.topics[name] = true
	}
	t.topicsAt = now
	return nil
}

// roomForTopics checks that creating the topics of names that do not
// exist yet keeps the token within its max_topics. When some would be
// created it returns with the token's creation lock held: the caller
// calls done once the call that may create them has returned, so that
// the next check counts them. A call past the quota is a 409 topic_quota
// and must write nothing.
func (a *API) roomForTopics(ctx context.Context, names []string) (done func(), err error) {
	p := principalFrom(ctx)
	if p == nil || p.MaxTopics <= 0 {
		return func() {}, nil
	}
	t := a.quotas.of(p.Name)
	unknown, err := a.unknownTopics(ctx, p, t, names)
	if err != nil || len(unknown) == 0 {
		return func() {}, err
	}
	t.creating.Lock()
	// Again under the lock: another call may have created them meanwhile.
	unknown, err = a.unknownTopics(ctx, p, t, names)
	if err != nil || len(unknown) == 0 {
		t.creating.Unlock()
		return func() {}, err
	}
	t.view.Lock()
	have := len(t.topics)
	t.view.Unlock()
	if have+len(unknown) > p.MaxTopics {
		t.creating.Unlock()
		return nil, &quotaError{status: http.StatusConflict, code: CodeTopicQuota, field: "topic", topic: unknown[0],
			msg: fmt.Sprintf("cannot create topic %s: token %s holds %d of its max_topics %d; delete unused topics or raise its max_topics"+nothingWritten,
				shownTopic(unknown[0]), p.Name, have, p.MaxTopics)}
	}
	return func() {
		t.view.Lock()
		t.topicsAt = time.Time{} // count what the call created
		t.view.Unlock()
		t.creating.Unlock()
	}, nil
}

// unknownTopics returns those of names that neither the token's view of
// its topics nor the store knows.
func (a *API) unknownTopics(ctx context.Context, p *auth.Principal, t *tenant, names []string) ([]string, error) {
	t.view.Lock()
	defer t.view.Unlock()
	if err := a.refreshTopics(ctx, p, t); err != nil {
		return nil, err
	}
	var unknown []string
	for _, name := range names {
		if t.topics[name] || slices.Contains(unknown, name) {
			continue
		}
		_, err := a.jobs.Topic(ctx, name)
		switch {
		case err == nil:
			t.topics[name] = true // created since the view was read
		case isNotFound(err):
			unknown = append(unknown, name)
		default:
			return nil, err
		}
	}
	return unknown, nil
}

func isNotFound(err error) bool { return errors.Is(err, timer.ErrNotFound) }

// PendingCounter counts a topic's pending jobs cheaply (a Stats that
// implements it is asked instead of TopicStats for max_pending).
type PendingCounter interface {
	PendingJobs(ctx context.Context, topic string) (int64, error)
}

// roomForPending checks that n jobs more keep the token's topics within
// its max_pending, against a count at most quotaPendingAge old plus the
// jobs this process let the token schedule since: approximate by what
// fired or was cancelled meanwhile (in the token's favour) and by what
// other processes scheduled (against it, for up to a second). Over it,
// 429 pending_quota.
func (a *API) roomForPending(ctx context.Context, n int) error { return a.pendingRoom(ctx, n, true) }

// pendingRoom is roomForPending; charge false checks the room without
// taking it.
func (a *API) pendingRoom(ctx context.Context, n int, charge bool) error {
	p := principalFrom(ctx)
	if p == nil || p.MaxPending <= 0 {
		return nil
	}
	t := a.quotas.of(p.Name)
	t.view.Lock()
	defer t.view.Unlock()
	now := a.cfg.Now()
	if t.pendingAt.IsZero() || now.Sub(t.pendingAt) >= quotaPendingAge {
		if err := a.refreshTopics(ctx, p, t); err != nil {
			return err
		}
		var sum int64
		for name := range t.topics {
			c, err := a.pendingOf(ctx, name)
			if err != nil && !isNotFound(err) {
				return err
			}
			sum += c
		}
		t.pending, t.pendingAt, t.added = sum, now, 0
	}
	if have := t.pending + t.added; have+int64(n) > p.MaxPending {
		return &quotaError{status: http.StatusTooManyRequests, code: CodePendingQuota, retryAfter: quotaPendingAge,
			msg: fmt.Sprintf("token %s's topics hold %d pending jobs of its max_pending %d", p.Name, have, p.MaxPending) + nothingWritten}
	}
	if charge {
		t.added += int64(n)
	}
	return nil
}

// roomForSchedule refuses a new schedule while the token's topics hold
// max_pending jobs: its occurrences could only be skipped. It charges
// nothing; each occurrence is admitted as it comes (AdmitOccurrence).
func (a *API) roomForSchedule(ctx context.Context) error { return a.pendingRoom(ctx, 1, false) }

func (a *API) pendingOf(ctx context.Context, topic string) (int64, error) {
	if pc, ok := a.stats.(PendingCounter); ok {
		return pc.PendingJobs(ctx, topic)
	}
	if a.stats == nil {
		return 0, nil
	}
	st, err := a.stats.TopicStats(ctx, topic)
	return st.Pending, err
}

// AdmitOccurrence is the gate of a schedule's occurrence, for the
// Materializer's Admit: the schedule's owner, as the tokens in force name
// it, must have room under its max_pending for one more job (which it
// charges, as a job scheduled through the API). Otherwise it returns an
// error wrapping timer.ErrQuota, and the occurrence is skipped. A
// schedule made without auth, or whose owner's token is gone, has no
// quota to keep.
func (a *API) AdmitOccurrence(ctx context.Context, s *timer.Schedule) error {
	if s.Owner == "" {
		return nil
	}
	p, ok := a.cfg.tokenSet().Named(s.Owner)
	if !ok {
		return nil
	}
	err := a.roomForPending(auth.With(ctx, p), 1)
	if qe, ok := errors.AsType[*quotaError](err); ok {
		return fmt.Errorf("%w: %s", timer.ErrQuota, strings.TrimSuffix(qe.msg, nothingWritten))
	}
	return err
}

// setTokens makes the set of the --api-token tokens.
func (c *APIConfig) setTokens() error {
	if len(c.Tokens) == 0 || c.TokenSet != nil {
		return nil
	}
	s, err := auth.Admins(c.Tokens)
	if err != nil {
		return &timer.FieldError{Field: "Tokens", Message: err.Error()}
	}
	c.staticTokens = s
	return nil
}

// metricsFor serves cfg.Metrics on the API's address. With a tokens file
// it needs a token: an admin gets every series, another token only the
// series labelled with one of its topics (and none of the others, nor
// those summed under topic="_other"). Without one (--api-token, or auth
// off) it is open, as before tenants; --metrics-addr serves every series
// to anyone who reaches that address.
func metricsFor(cfg *APIConfig) http.Handler {
	h := cfg.Metrics
	if cfg.TokenSet == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := cfg.TokenSet()
		p, ok := bearer(r, set)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toc"`)
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: errorDetail{Code: CodeUnauthenticated, Message: errUnauthenticated.Error()}})
			return
		}
		if p.Role == auth.Admin && !p.Fenced {
			h.ServeHTTP(w, r)
			return
		}
		// The text format, unzipped, to filter line by line.
		in := r.Clone(r.Context())
		in.Header.Del("Accept-Encoding")
		in.Header.Set("Accept", "text/plain; version=0.0.4")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, in)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(topicSeries(rec.Body.Bytes(), p))
	})
}

// topicSeries keeps of a text exposition the comment lines and the
// samples labelled with a topic p may use.
func topicSeries(text []byte, p *auth.Principal) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			out.WriteString(line)
			out.WriteByte('\n')
			continue
		}
		if topic, ok := topicLabel(line); ok && p.Allows(topic) {
			if shown := shownTopic(topic); shown != topic {
				line = strings.Replace(line, `topic="`+topic+`"`, `topic="`+shown+`"`, 1)
			}
			out.WriteString(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// topicLabel returns the value of a sample line's topic label.
func topicLabel(line string) (string, bool) {
	open := strings.IndexByte(line, '{')
	if open < 0 {
		return "", false
	}
	labels := line[open+1:]
	for _, prefix := range []string{`topic="`, `,topic="`} {
		i := strings.Index(labels, prefix)
		if i < 0 || (prefix == `topic="` && i != 0) {
			continue
		}
		rest := labels[i+len(prefix):]
		end := strings.IndexByte(rest, '"')
		if end < 0 {
			return "", false
		}
		return rest[:end], true
	}
	return "", false
}
