package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

func TestBrokerFlag(t *testing.T) {
	got, err := brokerFlag("amqp", []string{"main=amqp://u:secret@127.0.0.1:5672/v", "edge=amqps://127.0.0.1"}, "amqp", "amqps")
	if err != nil || len(got) != 2 || got["main"] != "amqp://u:secret@127.0.0.1:5672/v" {
		t.Fatalf("brokerFlag = %v, %v", got, err)
	}
	for _, bad := range [][]string{
		{"amqp://u:secret@127.0.0.1"},                                        // no name
		{"=amqp://u:secret@127.0.0.1"},                                       // empty name
		{"a b=amqp://u:secret@127.0.0.1"},                                    // bad name
		{"main=nats://u:secret@127.0.0.1"},                                   // wrong scheme
		{"main=amqp://u:secret@127.0.0.1", "main=amqp://u:secret@127.0.0.2"}, // twice
	} {
		_, err := brokerFlag("amqp", bad, "amqp", "amqps")
		if err == nil || !strings.Contains(err.Error(), "--amqp") {
			t.Errorf("brokerFlag(%q) = %v, want an error naming --amqp", bad, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("brokerFlag(%q) error quotes the password: %v", bad, err)
		}
	}
}

// A delivery goes to its way's handler; one of a way this member has no
// broker for is not sent, so that it costs no attempt.
func TestWays(t *testing.T) {
	var got []timer.Way
	record := func(way timer.Way) timer.Handler {
		return timer.HandlerFunc(func(context.Context, timer.Delivery) error { got = append(got, way); return nil })
	}
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	w := ways{webhook: record(timer.WayWebhook), others: map[timer.Way]timer.Handler{timer.WayNATS: record(timer.WayNATS)}, now: func() time.Time { return now }}
	for _, d := range []timer.Destination{{}, {Way: timer.WayWebhook}, {Way: timer.WayNATS}} {
		if err := w.Fire(t.Context(), timer.Delivery{Destination: d}); err != nil {
			t.Fatalf("Fire(%+v) = %v", d, err)
		}
	}
	if want := []timer.Way{timer.WayWebhook, timer.WayWebhook, timer.WayNATS}; strings.Join(ways2s(got), ",") != strings.Join(ways2s(want), ",") {
		t.Errorf("handlers called %v, want %v", got, want)
	}
	err := w.Fire(t.Context(), timer.Delivery{Destination: timer.Destination{Way: timer.WayAMQP}})
	if ns, ok := errors.AsType[*timer.NotSentError](err); !ok || !ns.Until.Equal(now.Add(notHere)) {
		t.Errorf("Fire(amqp) without an amqp broker = %v, want not sent until %v", err, now.Add(notHere))
	}
}

func ways2s(ws []timer.Way) []string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = string(w)
	}
	return s
}
