// Pull delivery's routes (issue 36): a worker leases the due jobs of a
// pull topic and acks, nacks or extends each lease (internal/deliver/pull
// holds the leases).

package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/toc-project/toc/internal/deliver/pull"
	"github.com/toc-project/toc/timer"
)

// leaseRequest is the body of POST /v1/topics/{topic}/leases.
type leaseRequest struct {
	Max     *int   `json:"max"`
	WaitMS  *int64 `json:"wait_ms"`
	LeaseMS *int64 `json:"lease_ms"`
}

type leaseIn struct {
	topic       string
	max         int
	wait, lease time.Duration
}

// Defaults of a lease request.
const (
	defaultLeaseWait = 20 * time.Second
	defaultLease     = 30 * time.Second
)

func readLeaseRequest(r *http.Request, in *leaseIn) (*claim, error) {
	in.topic = chi.URLParam(r, "topic")
	c := &claim{topics: []topicRef{{field: "topic", name: &in.topic}}}
	var req leaseRequest
	if err := decodeOptional(r, &req); err != nil {
		return c, err
	}
	in.max = 1
	if req.Max != nil {
		in.max = *req.Max
	}
	if in.max < 1 || in.max > pull.MaxJobs {
		return c, &timer.FieldError{Field: "max", Message: fmt.Sprintf("must be within 1..%d", pull.MaxJobs)}
	}
	var err error
	if in.wait, err = msWithin("wait_ms", req.WaitMS, defaultLeaseWait, 0, pull.MaxWait); err != nil {
		return c, err
	}
	in.lease, err = msWithin("lease_ms", req.LeaseMS, defaultLease, pull.MinLease, pull.MaxLease)
	return c, err
}

// msWithin is the duration of a field in milliseconds, def when left out,
// within lo..hi.
func msWithin(field string, ms *int64, def, lo, hi time.Duration) (time.Duration, error) {
	if ms == nil {
		return def, nil
	}
	if *ms < lo.Milliseconds() || *ms > hi.Milliseconds() {
		return 0, &timer.FieldError{Field: field, Message: fmt.Sprintf("must be within %d..%d", lo.Milliseconds(), hi.Milliseconds())}
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// decodeOptional is decode for a body that may be left out.
func decodeOptional(r *http.Request, v any) error {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return decodeBytes(raw, v)
}

type leaseView struct {
	Token     string          `json:"token"`
	ExpiresAt string          `json:"expires_at"`
	Job       json.RawMessage `json:"job"`
}

// pulls reports whether this process delivers by pull, and answers 404
// when it does not.
func (a *API) pulls(w http.ResponseWriter, r *http.Request) bool {
	if a.cfg.Pull == nil {
		a.writeError(w, r, fmt.Errorf("no pull delivery in this process: %w", timer.ErrNotFound))
	}
	return a.cfg.Pull != nil
}

// lease: POST /v1/topics/{topic}/leases.
func (a *API) lease(w http.ResponseWriter, r *http.Request, in *leaseIn, _ *admission) {
	if !a.pulls(w, r) {
		return
	}
	d, err := a.jobs.DestinationOf(r.Context(), in.topic)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if way := d.Of(); way != timer.WayPull {
		a.writeError(w, r, &timer.FieldError{Field: "topic", Message: fmt.Sprintf("topic %s delivers by %s: workers lease the jobs of a topic whose delivery is pull", shownTopic(in.topic), way)})
		return
	}
	leases, err := a.cfg.Pull.Take(r.Context(), in.topic, in.max, in.wait, in.lease)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := struct {
		Leases []leaseView `json:"leases"`
	}{Leases: make([]leaseView, len(leases))}
	for i, l := range leases {
		out.Leases[i] = leaseView{Token: l.Token, ExpiresAt: formatTime(l.Expires), Job: l.Job}
	}
	writeJSON(w, http.StatusOK, out)
}

// leaseChange is an ack, nack or extend of the lease of the path.
type leaseChange struct {
	op        string
	topic, id string
	delay     time.Duration // nack: negative for the backoff
	reason    string
	lease     time.Duration // extend
}

func readLeaseChange(op string) func(*http.Request, *leaseChange) (*claim, error) {
	return func(r *http.Request, in *leaseChange) (*claim, error) {
		in.op = op
		token := chi.URLParam(r, "token")
		topic, id, ok := pull.ParseToken(token)
		if !ok {
			return nil, &timer.FieldError{Field: "token", Message: "not a lease token: the topic, a dot and 32 hex digits"}
		}
		in.topic, in.id = topic, id
		c := &claim{topics: []topicRef{{field: "token", name: &in.topic}}}
		switch op {
		case "nack":
			var req struct {
				DelayMS *int64 `json:"delay_ms"`
				Error   string `json:"error"`
			}
			if err := decodeOptional(r, &req); err != nil {
				return c, err
			}
			var err error
			if in.delay, err = msWithin("delay_ms", req.DelayMS, -1, 0, pull.MaxNackWait); err != nil {
				return c, err
			}
			if len(req.Error) > pull.MaxError {
				return c, &timer.FieldError{Field: "error", Message: fmt.Sprintf("at most %d bytes", pull.MaxError)}
			}
			in.reason = req.Error
		case "extend":
			var req struct {
				LeaseMS *int64 `json:"lease_ms"`
			}
			if err := decode(r.Body, &req); err != nil {
				return c, err
			}
			if req.LeaseMS == nil {
				return c, &timer.FieldError{Field: "lease_ms", Message: "required"}
			}
			var err error
			in.lease, err = msWithin("lease_ms", req.LeaseMS, 0, pull.MinLease, pull.MaxLease)
			return c, err
		}
		return c, nil
	}
}

// changeLease: POST /v1/leases/{token}/ack, /nack and /extend.
func (a *API) changeLease(w http.ResponseWriter, r *http.Request, in *leaseChange, _ *admission) {
	if !a.pulls(w, r) {
		return
	}
	var (
		st  pull.State
		err error
	)
	switch in.op {
	case "ack":
		st, err = a.cfg.Pull.Ack(r.Context(), in.topic, in.id)
	case "nack":
		st, err = a.cfg.Pull.Nack(r.Context(), in.topic, in.id, in.delay, in.reason)
	default:
		st, err = a.cfg.Pull.Extend(r.Context(), in.topic, in.id, in.lease)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := struct {
		Token     string `json:"token"`
		State     string `json:"state"`
		ExpiresAt string `json:"expires_at,omitempty"`
	}{Token: pull.Token(in.topic, in.id), State: st.State}
	if st.State == "leased" {
		out.ExpiresAt = formatTime(st.Expires)
	}
	writeJSON(w, http.StatusOK, out)
}

// leaseAcks are the leases of POST /v1/leases/ack: each token's topic (as
// the gate qualifies it) and id.
type leaseAcks struct {
	topics []string // distinct
	refs   []leaseAckRef
}

type leaseAckRef struct {
	topic int // in topics
	id    string
}

func readLeaseAcks(r *http.Request, in *leaseAcks) (*claim, error) {
	var req struct {
		Tokens []string `json:"tokens"`
	}
	if err := decode(r.Body, &req); err != nil {
		return nil, err
	}
	if len(req.Tokens) == 0 || len(req.Tokens) > pull.MaxJobs {
		return nil, &timer.FieldError{Field: "tokens", Message: fmt.Sprintf("1 to %d lease tokens", pull.MaxJobs)}
	}
	seen := map[string]int{}
	var fields []string // of each topic, its first token's
	in.refs = make([]leaseAckRef, len(req.Tokens))
	for i, token := range req.Tokens {
		topic, id, ok := pull.ParseToken(token)
		if !ok {
			return nil, &timer.FieldError{Field: fmt.Sprintf("tokens[%d]", i), Message: "not a lease token: the topic, a dot and 32 hex digits"}
		}
		k, ok := seen[topic]
		if !ok {
			k = len(in.topics)
			seen[topic] = k
			in.topics = append(in.topics, topic)
			fields = append(fields, fmt.Sprintf("tokens[%d]", i))
		}
		in.refs[i] = leaseAckRef{topic: k, id: id}
	}
	// Every topic is checked by the gate, by the first token naming it.
	c := &claim{topics: make([]topicRef, len(in.topics))}
	for k := range in.topics {
		c.topics[k] = topicRef{field: fields[k], name: &in.topics[k]}
	}
	return c, nil
}

// leaseAck is one lease's outcome in the answer to POST /v1/leases/ack.
type leaseAck struct {
	Token string       `json:"token"`
	State string       `json:"state,omitempty"`
	Error *errorDetail `json:"error,omitempty"`
}

// ackLeases: POST /v1/leases/ack, many acks in one call, each answered
// as its own POST /v1/leases/{token}/ack would be.
func (a *API) ackLeases(w http.ResponseWriter, r *http.Request, in *leaseAcks, _ *admission) {
	if !a.pulls(w, r) {
		return
	}
	refs := make([]pull.LeaseRef, len(in.refs))
	for i, ref := range in.refs {
		refs[i] = pull.LeaseRef{Topic: in.topics[ref.topic], ID: ref.id}
	}
	errs, err := a.cfg.Pull.AckMany(r.Context(), refs)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := struct {
		Leases []leaseAck `json:"leases"`
	}{Leases: make([]leaseAck, len(refs))}
	for i, ref := range refs {
		out.Leases[i].Token = pull.Token(ref.Topic, ref.ID)
		if errs[i] == nil {
			out.Leases[i].State = "acked"
			continue
		}
		_, d := toDetail(errs[i])
		d.Message = shownMessage(r.Context(), d.Message)
		out.Leases[i].Error = &d
	}
	writeJSON(w, http.StatusOK, out)
}
