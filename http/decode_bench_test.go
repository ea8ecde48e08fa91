package http

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// singleJobBody is a typical POST /v1/jobs body.
const singleJobBody = `{"topic": "orders", "key": "order-42-close", "biz_id": 42, "biz_type": 7,
	"delay_ms": 1800000, "callback_url": "https://orders.internal.example.com/hooks/close",
	"payload": {"order": 42, "customer": "c-1234", "items": [1, 2, 3], "note": "close if unpaid"},
	"max_attempts": 8, "priority": "high"}`

// BenchmarkDecodeJob measures decoding one job's body, the part of a
// single schedule request that the strict checks add to:
//
//	go test -run '^$' -bench DecodeJob -benchmem -count 5 ./http/
func BenchmarkDecodeJob(b *testing.B) {
	body := []byte(singleJobBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req jobRequest
		if err := decode(bytes.NewReader(body), &req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckKeys measures the strict pass alone.
func BenchmarkCheckKeys(b *testing.B) {
	body := []byte(singleJobBody)
	t := reflect.TypeFor[*jobRequest]()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := checkKeys(body, t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJobV1 is what decode did before the strict checks, for
// comparison in the same run.
func BenchmarkDecodeJobV1(b *testing.B) {
	body := []byte(singleJobBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var req jobRequest
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			b.Fatal(err)
		}
		if _, err := dec.Token(); err != io.EOF {
			b.Fatal(err)
		}
	}
}

// batchBody is a POST /v1/jobs/batch body of 1,000 typical jobs.
var batchBody = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"jobs": [`)
	for i := range MaxBatchJobs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(singleJobBody)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}()

// BenchmarkDecodeBatch measures reading a batch of 1,000 jobs as POST
// /v1/jobs/batch does: the body read with its items counted, then decoded
// in one pass:
//
//	go test -run '^$' -bench DecodeBatch -benchmem -count 5 ./http/
func BenchmarkDecodeBatch(b *testing.B) {
	b.SetBytes(int64(len(batchBody)))
	b.ReportAllocs()
	for b.Loop() {
		raw, err := readBatchBody(bytes.NewReader(batchBody), int64(len(batchBody)))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, errs, err := decodeBatch(raw); err != nil || errs != nil {
			b.Fatal(err, errs)
		}
	}
}

// BenchmarkDecodeBatchWhole is the batch decoded whole, as before the
// body was streamed, for comparison in the same run.
func BenchmarkDecodeBatchWhole(b *testing.B) {
	b.SetBytes(int64(len(batchBody)))
	b.ReportAllocs()
	for b.Loop() {
		var body struct {
			Jobs []jobRequest `json:"jobs"`
		}
		if err := decodeBytes(batchBody, &body); err != nil {
			b.Fatal(err)
		}
	}
}
