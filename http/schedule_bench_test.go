package http_test

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	tochttp "github.com/toc-project/toc/http"
	"github.com/toc-project/toc/timer"
)

// scheduleStub answers Schedule at once with the job a store would make
// of the request, so that BenchmarkScheduleRequest measures toc's HTTP
// layer alone: the commit has benchmarks of its own. Any other call of
// tochttp.Jobs panics.
type scheduleStub struct {
	tochttp.Jobs
	next atomic.Uint64
}

func (s *scheduleStub) Schedule(_ context.Context, r timer.Request) (timer.Result, error) {
	now := time.Now()
	j := &timer.Job{ID: timer.JobID(s.next.Add(1)), Topic: r.Topic, Key: r.Key, Status: timer.StatusPending,
		DueAt: now.Add(r.Delay), MaxAttempts: 3, CallbackURL: r.CallbackURL, Payload: r.Payload,
		CreatedAt: now, UpdatedAt: now, Version: 1}
	return timer.Result{Job: j, Created: true}, nil
}

// DestinationOf: every topic is a webhook topic, as one not created yet.
func (s *scheduleStub) DestinationOf(context.Context, string) (timer.Destination, error) {
	return timer.Destination{}, nil
}

// BenchmarkScheduleRequest is one single schedule as toc bench's clients
// send it (a bearer token, a job due 1.5 s later with a small payload),
// from the router to the answer written, with what it allocates:
//
//	go test -run '^$' -bench ScheduleRequest -benchmem -count 5 ./http/
func BenchmarkScheduleRequest(b *testing.B) {
	api := mustAPI(b, &scheduleStub{}, nil, nil, tochttp.APIConfig{Tokens: []string{"bench-token"}, AllowPrivateCallbacks: true})
	body := []byte(`{"topic":"bench","delay_ms":1500,"callback_url":"http://localhost:9000/hook","payload":{"bench":true}}`)
	rd := bytes.NewReader(body)
	r, err := http.NewRequest(http.MethodPost, "/v1/jobs", rd)
	if err != nil {
		b.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer bench-token")
	r.Header.Set("Content-Type", "application/json")
	w := &answerSink{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		clear(w.header)
		api.ServeHTTP(w, r)
		if w.status != http.StatusCreated {
			b.Fatalf("answer %d", w.status)
		}
	}
}

// answerSink is a ResponseWriter that keeps the status and the length
// of the answer, and allocates nothing of its own, unlike
// httptest.ResponseRecorder.
type answerSink struct {
	header http.Header
	status int
	n      int
}

func (w *answerSink) Header() http.Header { return w.header }

func (w *answerSink) WriteHeader(status int) { w.status = status }

func (w *answerSink) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
