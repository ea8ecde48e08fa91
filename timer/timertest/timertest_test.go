package timertest_test

import (
	"testing"

	"github.com/toc-project/toc/timer"
	"github.com/toc-project/toc/timer/timertest"
)

func TestFakeStore(t *testing.T) {
	timertest.TestStore(t, func(t *testing.T) timer.Store { return timertest.NewStore() })
}

func TestFakeIndex(t *testing.T) {
	timertest.TestIndex(t, func(t *testing.T) timertest.IndexLeaser { return timertest.NewIndex() })
}
