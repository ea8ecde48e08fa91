// Package delivertest holds what the tests of the bus publishers share: a
// signer as the worker's webhook client signs, the check a consumer makes
// of a message's signature, and a job to deliver.
package delivertest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/http/webhook"
	"github.com/toc-project/toc/timer"
)

// Now is when the tests sign their deliveries.
var Now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// TraceParent is the traceparent of every Delivery.
const TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Signer signs deliveries with one new secret, as the worker's webhook
// client does.
type Signer struct {
	Client *webhook.Client
	key    []byte
}

// NewSigner returns a Signer with a secret of its own.
func NewSigner(tb testing.TB) Signer {
	tb.Helper()
	secret := webhook.NewSecret()
	c, err := webhook.NewClient(webhook.Config{Secrets: []string{secret}})
	if err != nil {
		tb.Fatal(err)
	}
	key, err := webhook.ParseSecret(secret)
	if err != nil {
		tb.Fatal(err)
	}
	return Signer{Client: c, key: key}
}

// Message is what s signs of d at Now.
func (s Signer) Message(tb testing.TB, d timer.Delivery) webhook.Message {
	tb.Helper()
	m, err := s.Client.Message(d, Now)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// Verify checks a message as a Standard Webhooks receiver does: one of
// the signatures is that of id, the timestamp and body with s's key, and
// the timestamp is Now.
func (s Signer) Verify(id, timestamp, signatures string, body []byte) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || ts != Now.Unix() {
		return fmt.Errorf("webhook-timestamp %q, want %d", timestamp, Now.Unix())
	}
	if want := webhook.Sign(s.key, id, ts, body); !slices.Contains(strings.Fields(signatures), want) {
		return fmt.Errorf("webhook-signature %q lacks %s", signatures, want)
	}
	return nil
}

// Delivery is attempt of job id of topic orders (key order-17, business
// id 17 and type 3), due 1.5 s before Now, to dest.
func Delivery(id timer.JobID, attempt int, dest timer.Destination) timer.Delivery {
	return timer.Delivery{
		Job: &timer.Job{
			ID: id, Topic: "orders", Key: "order-17", BizID: 17, BizType: 3,
			DueAt: Now.Add(-1500 * time.Millisecond), Payload: []byte(`{"order":17}`),
		},
		Attempt:     attempt,
		At:          Now,
		TraceParent: TraceParent,
		Destination: dest,
		Response:    &timer.Response{},
	}
}

// Sign is a Config's Sign that signs nothing, for tests of Validate.
func Sign(timer.Delivery, time.Time) (webhook.Message, error) { return webhook.Message{}, nil }

// CheckField reports an error unless err is a *timer.FieldError for
// field; nor may it quote a broker's URL, which holds its password: the
// URLs of the tests of Validate have the password "secret".
func CheckField(tb testing.TB, err error, field string) {
	tb.Helper()
	if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != field {
		tb.Errorf("Validate: %v, want a FieldError for %s", err, field)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		tb.Errorf("Validate quotes a URL: %v", err)
	}
}
