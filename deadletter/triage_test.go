package deadletter

import (
	"strings"
	"testing"

	"github.com/toc-project/toc/timer"
)

// Errors that differ only in numbers or spacing share a signature; an
// HTTP answer is its status.
func TestSignature(t *testing.T) {
	for _, c := range []struct {
		job  timer.Job
		want string
	}{
		{timer.Job{LastStatus: 503, LastError: "receiver answered 503"}, "HTTP 503"},
		{timer.Job{LastError: "dial tcp 10.0.0.7:8080: connect: connection refused"}, "dial tcp N.N.N.N:N: connect: connection refused"},
		{timer.Job{LastError: "  context deadline exceeded after 10s\n\tretry 3 "}, "context deadline exceeded after Ns retry N"},
		{timer.Job{}, "no error"},
		{timer.Job{LastError: strings.Repeat("é", 200)}, strings.Repeat("é", 60)},
	} {
		if got := Signature(&c.job); got != c.want {
			t.Errorf("Signature(%q, %d) = %q, want %q", c.job.LastError, c.job.LastStatus, got, c.want)
		}
	}
}
