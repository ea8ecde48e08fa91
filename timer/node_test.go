package timer_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/toc-project/toc/timer"
)

// fakeNodes answers renewals from a script: errs[i] for the i-th.
type fakeNodes struct {
	mu       sync.Mutex
	errs     []error
	renews   int
	released bool
}

func (f *fakeNodes) LeaseNode(context.Context, int, string, time.Duration) (int, error) {
	return 3, nil
}

func (f *fakeNodes) RenewNode(context.Context, int, string, time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renews++
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return err
}

func (f *fakeNodes) ReleaseNode(context.Context, int, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = true
	return nil
}

// KeepNode rides out a renewal that fails (the store away) and stops with
// ErrNodeLost once another holder has the number; stopped by its context
// it releases the number.
func TestKeepNode(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fakeNodes{errs: []error{errors.New("store away"), nil, timer.ErrNodeLost}}
	err := timer.KeepNode(t.Context(), f, 3, "me", 30*time.Millisecond, log)
	if !errors.Is(err, timer.ErrNodeLost) || f.renews != 3 || f.released {
		t.Errorf("KeepNode = %v after %d renewals (released %v); want ErrNodeLost after 3, not released", err, f.renews, f.released)
	}

	f = &fakeNodes{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- timer.KeepNode(ctx, f, 3, "me", 30*time.Millisecond, log) }()
	for {
		f.mu.Lock()
		n := f.renews
		f.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil || !f.released {
		t.Errorf("stopped KeepNode = %v, released %v; want nil and released", err, f.released)
	}
}
