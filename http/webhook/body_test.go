package webhook

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// The body appended by hand is the bytes encoding/json writes, for
// plain strings and for those that need escaping, with and without the
// optional fields, and a payload that is not compact comes out compact.
func TestEncodeBody(t *testing.T) {
	due := time.Date(2026, 11, 30, 10, 2, 3, 250e6, time.FixedZone("CET", 3600))
	payloads := []string{"", `{"a":1}`, "{ \"a\" : [1, 2,\n 3] }", `"<b>&</b>"`, `null`, `12.5e3`}
	jobs := []timer.Job{
		{ID: 1, Topic: "orders", DueAt: due},
		{ID: 1<<63 - 1, Topic: "acme/orders", Key: "order-42", BizID: 7, BizType: 1<<64 - 1, DueAt: due},
		{ID: 9, Topic: "t", Key: `a "quoted" key\`, DueAt: due},
		{ID: 9, Topic: "t", Key: "tab\there, line\nthere", DueAt: due},
		{ID: 9, Topic: "t", Key: "<html> & ünïcode \u2028", DueAt: due},
		{ID: 9, Topic: "t", Key: "bad \xff utf-8", BizType: 3, DueAt: due},
		{ID: 9, Topic: "t", Key: "\x7f", DueAt: due.Add(-time.Hour * 24 * 365 * 60)},
	}
	for _, j := range jobs {
		for _, p := range payloads {
			if p != "" {
				j.Payload = []byte(p)
			}
			for _, attempt := range []int{1, 12} {
				d := timer.Delivery{Job: &j, Attempt: attempt}
				got, err := encodeBody(d)
				want, wantErr := encodeBodyJSON(d)
				if err != nil || wantErr != nil || !bytes.Equal(got, want) {
					t.Errorf("encodeBody(%q %q %s) =\n%s, %v\nwant\n%s, %v", j.Topic, j.Key, p, got, err, want, wantErr)
				}
				if !json.Valid(got) {
					t.Errorf("encodeBody(%q %q %s) = %s: not JSON", j.Topic, j.Key, p, got)
				}
			}
		}
	}
}

// A payload that is not JSON fails the body, by hand as through
// encoding/json.
func TestEncodeBodyBadPayload(t *testing.T) {
	d := timer.Delivery{Job: &timer.Job{ID: 1, Topic: "orders", Payload: []byte(`{"a":`)}, Attempt: 1}
	if b, err := encodeBody(d); err == nil {
		t.Errorf("encodeBody = %s, want an error", b)
	}
}

func BenchmarkEncodeBody(b *testing.B) {
	d := timer.Delivery{Job: &timer.Job{ID: 1234567890123, Topic: "acme/orders", BizID: 42,
		DueAt: time.Now(), Payload: []byte(`{"order":"A-1042","amount":1999}`)}, Attempt: 1}
	for _, v := range []struct {
		name   string
		encode func(timer.Delivery) ([]byte, error)
	}{{"by_hand", encodeBody}, {"encoding_json", encodeBodyJSON}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.encode(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
