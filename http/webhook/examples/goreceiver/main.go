// Command goreceiver is an example receiver of toc's webhooks, in Go with
// the Standard Webhooks library
// (github.com/standard-webhooks/standard-webhooks/libraries/go).
//
// It shows what every receiver should do:
//
//   - verify the signature, and answer 401 to a request that fails it;
//     it accepts any of several secrets, so that a secret can be rotated
//     (toc signs each delivery with every secret it is given);
//   - dedupe on webhook-id: toc delivers at least once, and the id is the
//     job's on every attempt, so a repeat is answered as before and not
//     processed again;
//   - answer 2xx when the job is done, or 410 Gone to stop it: toc then
//     cancels the job and calls no more. Here a job stops when its
//     payload says {"stop": true}.
//
// It logs one line per delivery on stdout.
//
// Usage:
//
//	WEBHOOK_SECRETS=whsec_OLD,whsec_NEW ADDR=127.0.0.1:9001 go run ./http/webhook/examples/goreceiver
//
// WEBHOOK_SECRETS holds the secrets, separated by commas or spaces (the
// form of toc's TOC_WEBHOOK_SECRET); ADDR is the address to listen on
// (default 127.0.0.1:9001; port 0 picks a free one, logged at start).
// Point a job's callback_url at any path of it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// maxBody bounds what one delivery may send.
	maxBody = 1 << 20
	// maxSeen bounds the webhook ids remembered for dedupe. The library
	// refuses a timestamp more than 5 minutes away, so a replay older than
	// that fails the signature check; a repeat within it is caught as long
	// as fewer than maxSeen deliveries came in between. A receiver with
	// more than one process keeps the ids in its database instead (a
	// unique key, in the transaction that does the work).
	maxSeen = 100_000
)

func main() {
	log := slog.New(slog.NewTextHandler(os.Stdout, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, log); err != nil {
		log.Error("receiver stopped", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	hooks, err := parseSecrets(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return err
	}
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:9001"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r := &receiver{hooks: hooks, seen: newSeenSet(maxSeen), log: log}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	log.Info("receiver listening", "addr", ln.Addr().String(), "secrets", len(hooks))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// parseSecrets reads whsec_ secrets separated by commas or spaces. Its
// errors never quote a secret.
func parseSecrets(list string) ([]*standardwebhooks.Webhook, error) {
	var hooks []*standardwebhooks.Webhook
	for i, s := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		if !strings.HasPrefix(s, "whsec_") || len(s) <= len("whsec_") {
			return nil, fmt.Errorf("WEBHOOK_SECRETS: secret %d does not have the form whsec_<base64>", i+1)
		}
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			return nil, fmt.Errorf("WEBHOOK_SECRETS: secret %d is not valid base64 after whsec_", i+1)
		}
		hooks = append(hooks, wh)
	}
	if len(hooks) == 0 {
		return nil, errors.New("WEBHOOK_SECRETS is empty: give the secrets toc signs with (toc dev prints its own)")
	}
	return hooks, nil
}

type receiver struct {
	hooks []*standardwebhooks.Webhook
	seen  *seenSet
	log   *slog.Logger
}

// delivery is the part of toc's webhook body this receiver reads.
type delivery struct {
	ID      string          `json:"id"`
	Topic   string          `json:"topic"`
	Attempt int             `json:"attempt"`
	Payload json.RawMessage `json:"payload"`
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	id := r.Header.Get(standardwebhooks.HeaderWebhookID)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		rc.answer(w, id, delivery{}, http.StatusRequestEntityTooLarge, "too_large")
		return
	}
	// Verify before reading anything else: the body is the signed bytes,
	// exactly as received.
	if !rc.verify(body, r.Header) {
		rc.answer(w, id, delivery{}, http.StatusUnauthorized, "bad_signature")
		return
	}
	var d delivery
	if err := json.Unmarshal(body, &d); err != nil {
		rc.answer(w, id, d, http.StatusBadRequest, "bad_body")
		return
	}
	// The job's work would go here, before the id is remembered; if it
	// failed, answer 5xx and do not remember the id, so the retry does it.
	status, result := http.StatusNoContent, "processed"
	if wantsStop(d.Payload) {
		status, result = http.StatusGone, "stopped"
	}
	if prev, dup := rc.seen.add(id, status); dup {
		status, result = prev, "duplicate" // the same answer as the first time
	}
	rc.answer(w, id, d, status, result)
}

// verify reports whether one of the secrets signed the request.
func (rc *receiver) verify(body []byte, h http.Header) bool {
	for _, wh := range rc.hooks {
		if wh.Verify(body, h) == nil {
			return true
		}
	}
	return false
}

// wantsStop reports whether a job's payload asks to stop: {"stop": true}.
func wantsStop(payload json.RawMessage) bool {
	var p struct {
		Stop bool `json:"stop"`
	}
	return json.Unmarshal(payload, &p) == nil && p.Stop
}

func (rc *receiver) answer(w http.ResponseWriter, id string, d delivery, status int, result string) {
	rc.log.Info("delivery", "id", id, "topic", d.Topic, "attempt", d.Attempt, "status", status, "result", result)
	w.WriteHeader(status)
}

// seenSet remembers the last n webhook ids and the status answered to
// each, forgetting the oldest first.
type seenSet struct {
	mu     sync.Mutex
	status map[string]int
	ring   []string
	next   int
}

func newSeenSet(n int) *seenSet {
	return &seenSet{status: make(map[string]int, n), ring: make([]string, 0, n)}
}

// add remembers id with the status answered to it, unless it is known:
// then it returns the status first answered and true.
func (s *seenSet) add(id string, status int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.status[id]; ok {
		return prev, true
	}
	if len(s.ring) < cap(s.ring) {
		s.ring = append(s.ring, id)
	} else {
		delete(s.status, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % len(s.ring)
	}
	s.status[id] = status
	return status, false
}
