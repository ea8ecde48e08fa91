package client

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// normal is w with its times in UTC, so that two reads of one time
// compare equal with reflect.DeepEqual (an offset's time.Location is made
// anew by each time.Parse).
func (w jobJSON) normal() jobJSON {
	for _, t := range []*stamp{&w.FireAt, &w.CreatedAt, &w.UpdatedAt, &w.NextAttemptAt, &w.ExpireAt, &w.DiedAt} {
		*t = stamp(time.Time(*t).UTC())
	}
	return w
}

var scanSeeds = []string{
	jobAnswer, deadAnswer,
	`{"id":"1","topic":"t","payload":null,"fire_at":"","expire_after_ms":-1,"future_field":{"a":[1,{"b":"\""}]}}`,
	`{"id":1,"created_at":"2026-11-21T20:00:00.5+01:00","TOPIC":"t"}`, `{"id":"01"}`, `{"topic":"a\nb"}`,
	`{"topic":"t","topic":"u","expire_after_ms":1,"expire_after_ms":2}`, `{"attempts":1.5}`, `{"fire_at":"yesterday"}`,
	`{"topic":null}`, `{"payload": [1, 2] }`, `{"payload":"\u00e9"}`, `{}`, `[]`, `{"id":"1"} {}`,
}

// FuzzScanJob: whatever the fast path reads, encoding/json reads into the
// same jobJSON.
func FuzzScanJob(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast jobJSON
		if !fast.decodeFast(data) {
			if !reflect.DeepEqual(fast, jobJSON{}) {
				t.Fatalf("%q: not read, but changed: %+v", data, fast)
			}
			return
		}
		var slow jobJSON
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("%q: read, but encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(fast.normal(), slow.normal()) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}

// FuzzScanBatchAnswer: the same of a batch's answer.
func FuzzScanBatchAnswer(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(`{"results":[{"id":"1","status":"pending","created":true,"job":` + s + `},{"created":false,"job":` + jobAnswer + `}]}`))
	}
	for _, s := range []string{`{"results":[]}`, `{"results":null}`, `{}`, `{"results":[{}],"results":[{"created":true}]}`,
		`{"results":[{"job":{"id":"1"},"job":{"topic":"t"}}]}`, `{"results":[{"job":null}]}`, `{"Results":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast batchAnswer
		if !fast.decodeFast(data) {
			return
		}
		var slow batchAnswer
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("%q: read, but encoding/json refuses it: %v", data, err)
		}
		norm := func(a batchAnswer) batchAnswer {
			for i, r := range a.Results {
				if r.Job != nil {
					j := r.Job.normal()
					a.Results[i].Job = &j
				}
			}
			return a
		}
		if !reflect.DeepEqual(norm(fast), norm(slow)) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	})
}

// TestScanJobReadsTocsAnswers: what toc writes takes the fast path.
func TestScanJobReadsTocsAnswers(t *testing.T) {
	for _, s := range []string{jobAnswer, deadAnswer, scanSeeds[2]} {
		var w jobJSON
		if !w.decodeFast([]byte(s)) {
			t.Errorf("%s: not read", s)
		}
	}
	var a batchAnswer
	if !a.decodeFast([]byte(`{"results":[{"id":"1","status":"pending","created":true,"job":`+jobAnswer+`}]}`)) || len(a.Results) != 1 || !a.Results[0].Created || a.Results[0].Job.Topic != "orders" {
		t.Errorf("batch: %+v", a)
	}
}
