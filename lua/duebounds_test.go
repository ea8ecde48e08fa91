package lua

import (
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// The API refuses due times outside timer.MinDueMillis..MaxDueMillis
// because a score holds only 0..MaxMillis exactly: every due time it
// accepts, and a lease or a retry of a day after the latest, must score.
func TestDueBoundsFitScores(t *testing.T) {
	day := (24 * time.Hour).Milliseconds()
	for _, ms := range []int64{timer.MinDueMillis, timer.MaxDueMillis, timer.MaxDueMillis + day} {
		if _, err := Score(ms, MaxAttempt); err != nil {
			t.Errorf("Score(%d): %v", ms, err)
		}
	}
}
