package http

import (
	"errors"
	"strings"
	"testing"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r *strings.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// A batch body of many small items is refused once it holds more than a
// batch may, having read little more of it than that.
func TestReadBatchBodyStopsAtTheLimit(t *testing.T) {
	item := `{"topic":"a","delay_ms":1,"callback_url":"http://127.0.0.1:1/x","payload":{"s":"}{[\"\\"}}`
	body := `{"jobs":[` + strings.Repeat(item+",", 100_000) + item + `]}`
	in := &countingReader{r: strings.NewReader(body)}
	if _, err := readBatchBody(in, -1); !errors.Is(err, errBatchSize) {
		t.Fatalf("err = %v, want %v", err, errBatchSize)
	}
	if limit := (MaxBatchJobs+2)*(len(item)+1) + 32<<10; in.n > limit {
		t.Errorf("read %d of %d bytes before refusing, more than %d", in.n, len(body), limit)
	}
	// Exactly MaxBatchJobs items, with a group whose on_complete is an
	// object too, and braces inside strings: all of it is read.
	full := `{"group":{"id":"g","on_complete":{"callback_url":"x"}},"jobs":[` + strings.Repeat(item+",", MaxBatchJobs-1) + item + `]}`
	raw, err := readBatchBody(strings.NewReader(full), 0)
	if err != nil || string(raw) != full {
		t.Fatalf("a full batch: %v, %d of %d bytes", err, len(raw), len(full))
	}
	head, bodies, errs, err := decodeBatch(raw)
	if err != nil || errs != nil || len(bodies) != MaxBatchJobs || head.Group == nil || head.Group.ID != "g" {
		t.Errorf("decode a full batch: %v %v, %d jobs, group %v", err, errs, len(bodies), head.Group)
	}
}
