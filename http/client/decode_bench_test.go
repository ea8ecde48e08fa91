package client

import (
	"encoding/json"
	"strings"
	"testing"
)

// BenchmarkDecodeBatchAnswer decodes a batch's answer of 64 jobs, as the
// coalescing client reads one, and converts its jobs: without reflection
// (batchAnswer.decodeFast, what send does), against encoding/json into
// the same types (what it did before, and still does for an answer not
// in its plain form).
func BenchmarkDecodeBatchAnswer(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"results":[`)
	for i := range 64 {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(`{"id":"4737258989562101760","status":"pending","created":true,"job":` + jobAnswer + `}`)
	}
	body.WriteString("]}\n")
	raw := []byte(body.String())
	for _, v := range []struct {
		name   string
		decode func(*batchAnswer) error
	}{
		{"fast", func(a *batchAnswer) error {
			if !a.decodeFast(raw) {
				b.Fatal("not read")
			}
			return nil
		}},
		{"encoding_json", func(a *batchAnswer) error { return json.Unmarshal(raw, a) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out batchAnswer
				if err := v.decode(&out); err != nil {
					b.Fatal(err)
				}
				for _, r := range out.Results {
					var j Job
					r.Job.to(&j)
				}
			}
		})
	}
}
