package http

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/toc-project/toc/timer"
)

// fastSeeds are job requests as clients write them, and the edges of
// what the fast path takes.
var fastSeeds = []string{
	singleJobBody,
	`{"topic":"orders","fire_at":"2026-11-30T10:00:00.25Z","callback_url":"http://localhost:9000/hook","payload":{"bench":true}}`,
	`{"topic":"orders","key":"k1","biz_id":"18446744073709551615","biz_type":7,"delay_ms":1500,"callback_url":"http://localhost/h",` +
		`"payload":[1,"a\"b",{"x":null}],"max_attempts":3,"priority":"high","expire_after_ms":-1,"window_ms":0,"concurrency_key":"c","group_id":"g"}`,
	` { "topic" : "t" , "delay_ms" : -0 , "payload" : "x\u00e9" } `,
	`{"topic":"t","payload":12.5e3}`, `{"topic":"t","payload":true}`, `{"topic":"t","payload":null}`,
	`{}`, `{"topic":"t","topic":"u"}`, `{"Topic":"t"}`, `{"topic":"t\u0041"}`, `{"topic":null}`,
	`{"topic":"t","delay_ms":1e3}`, `{"topic":"t","delay_ms":1.0}`, `{"topic":"t","delay_ms":9223372036854775808}`,
	`{"topic":"t","delay_ms":-9223372036854775808}`, `{"topic":"t","biz_id":"01"}`, `{"topic":"t","biz_id":"-1"}`,
	`{"topic":"t","payload":{"a":1,"a":2}}`, `{"topic":"t","payload":{"a":1,"b":{"a":1}}}`, `{"topic":"t","payload":{"a":}}`,
	`{"topic":"t"} x`, `{"topic":"t",}`, `{"topic":"\xff"}`, `{"topic":"t","payload":"\xff"}`, `{"topic":"t","payload":"abc`,
	`{"topic":"t","max_attempts":2147483648}`, `[]`, `"x"`, ``,
}

// FuzzDecodeJobFast: whatever the fast path takes, decodeBytes takes too,
// into the same jobRequest.
func FuzzDecodeJobFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast jobRequest
		if !decodeJobFast(data, &fast) {
			if !reflect.DeepEqual(fast, jobRequest{}) {
				t.Fatalf("%q: not taken, but the request was changed: %+v", data, fast)
			}
			return
		}
		var slow jobRequest
		if err := decodeBytes(data, &slow); err != nil {
			t.Fatalf("%q: taken, but decodeBytes refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}

// FuzzDecodeBatchFast: the same of a batch's body.
func FuzzDecodeBatchFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(`{"with_jobs":true,"jobs":[` + s + `,` + singleJobBody + `]}`))
		f.Add([]byte(`{"jobs":[` + s + `],"with_jobs":false}`))
	}
	for _, s := range []string{`{"jobs":[]}`, `{"with_jobs":true}`, `{"jobs":null}`, `{"group":{"id":"g"},"jobs":[{}]}`,
		`{"jobs":[{}],"jobs":[{}]}`, `{"with_jobs":1,"jobs":[{}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		head, jobs, ok := decodeBatchFast(data)
		if !ok {
			return
		}
		var slow struct {
			Group    *batchGroupRequest `json:"group"`
			WithJobs bool               `json:"with_jobs"`
			Jobs     []jobRequest       `json:"jobs"`
		}
		if err := decodeBytes(data, &slow); err != nil {
			t.Fatalf("%q: taken, but decodeBytes refuses it: %v", data, err)
		}
		if head != (batchHead{WithJobs: slow.WithJobs}) || slow.Group != nil || !reflect.DeepEqual(jobs, slow.Jobs) {
			t.Fatalf("%q:\nfast %+v %+v\nslow %+v", data, head, jobs, slow)
		}
	})
}

// TestDecodeJobFastTakesClientBodies: the bodies clients write do take
// the fast path, and the first seeds do, so that it is not dead code.
func TestDecodeJobFastTakesClientBodies(t *testing.T) {
	for _, s := range fastSeeds[:5] {
		var r jobRequest
		if !decodeJobFast([]byte(s), &r) {
			t.Errorf("%s: not taken", s)
		}
	}
	body := []byte(`{"with_jobs":true,"jobs":[` + fastSeeds[1] + `,` + fastSeeds[2] + `]}`)
	if head, jobs, ok := decodeBatchFast(body); !ok || !head.WithJobs || len(jobs) != 2 || *jobs[1].Priority != "high" {
		t.Errorf("batch: %v %+v %+v", ok, head, jobs)
	}
	// A body refused is refused as before, by decodeBytes, naming the key.
	var r jobRequest
	err := decode(bytes.NewReader([]byte(`{"topic":"t","topic":"u"}`)), &r)
	if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != "topic" {
		t.Errorf("a key twice: %v, want an error of field topic", err)
	}
}

// TestDecodeKeepsNothingOfThePooledBody: a job request decoded from a
// pooled buffer keeps none of its bytes. Each body is decoded, then every
// buffer in the pool is overwritten, and the request must still equal
// what decodeBytes makes of a copy of the body.
func TestDecodeKeepsNothingOfThePooledBody(t *testing.T) {
	for _, s := range fastSeeds[:5] {
		var got jobRequest
		if err := decode(bytes.NewReader([]byte(s)), &got); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		for range 4 {
			b := pooledBuf()
			*b = append((*b)[:0], bytes.Repeat([]byte{'#'}, len(s)+64)...)
			defer putPooledBuf(b)
		}
		var want jobRequest
		if err := decodeBytes([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", s, got, want)
		}
	}
}
