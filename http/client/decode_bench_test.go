package client

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// BenchmarkDecodeBatchAnswer decodes a batch's answer of 64 jobs, as the
// coalescing client reads one: into jobJSONs then converted (what send
// and coalescer.request do), against into Jobs through their
// UnmarshalJSON, by a json.Decoder (what they did before).
func BenchmarkDecodeBatchAnswer(b *testing.B) {
	var body strings.Builder
	body.WriteString(`{"results":[`)
	for i := range 64 {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(`{"index":1,"status":"pending","created":true,"job":` + jobAnswer + `}`)
	}
	body.WriteString("]}\n")
	raw := []byte(body.String())
	b.Run("jobJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out struct {
				Results []struct {
					Created bool     `json:"created"`
					Job     *jobJSON `json:"job"`
				} `json:"results"`
			}
			data, _ := io.ReadAll(bytes.NewReader(raw))
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
			for _, r := range out.Results {
				r.Job.to(new(Job))
			}
		}
	})
	b.Run("Job_by_Decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out struct {
				Results []struct {
					Created bool `json:"created"`
					Job     *Job `json:"job"`
				} `json:"results"`
			}
			if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
