package http

import (
	"errors"
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
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

// A batch body of many small items is refused at the item past
// MaxBatchJobs, having read no more of it than that.
func TestReadBatchBodyStopsAtTheLimit(t *testing.T) {
	item := `{"topic":"a","delay_ms":1,"callback_url":"http://127.0.0.1:1/x"}`
	body := `{"jobs":[` + strings.Repeat(item+",", 100_000) + item + `]}`
	in := &countingReader{r: strings.NewReader(body)}
	_, _, err := readBatchBody(in)
	if !errors.Is(err, errBatchSize) {
		t.Fatalf("err = %v, want %v", err, errBatchSize)
	}
	if in.n > len(body)/50 {
		t.Errorf("read %d of %d bytes before refusing", in.n, len(body))
	}
	group, items, err := readBatchBody(strings.NewReader(`{"jobs":[` + item + `,` + item + `],"group":{"id":"g"}}`))
	if err != nil || len(items) != 2 || string(group) != `{"id":"g"}` {
		t.Errorf("two items and a group: %v %d %s", err, len(items), group)
	}
	for body, field := range map[string]string{
		`{"jobs":[],"jobs":[]}`:    "jobs",
		`{"jobz":[]}`:              "jobz",
		`{"jobs":{}}`:              "jobs",
		`{"jobs":[` + item + `]}x`: "",
	} {
		_, _, err := readBatchBody(strings.NewReader(body))
		if fe, ok := errors.AsType[*timer.FieldError](err); !ok || fe.Field != field {
			t.Errorf("%s: %v, want a field error of %q", body, err, field)
		}
	}
}
