package timertest

import "sync"

// faults counts the calls of each method of a fake and makes chosen calls
// fail. The zero value is ready to use.
type faults struct {
	mu    sync.Mutex
	calls map[string]int
	fail  map[string][]error // errors for the next calls, in order
}

// FailNext makes the next n calls of method (its name, as "Insert" or
// "Claim") return err, without doing anything else. A later FailNext of
// the same method queues its failures after those still pending.
func (f *faults) FailNext(method string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail == nil {
		f.fail = make(map[string][]error)
	}
	for range n {
		f.fail[method] = append(f.fail[method], err)
	}
}

// Calls returns how many times method was called, failed calls included.
func (f *faults) Calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// call counts a call of method and returns the error it must fail with,
// or nil.
func (f *faults) call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = make(map[string]int)
	}
	f.calls[method]++
	errs := f.fail[method]
	if len(errs) == 0 {
		return nil
	}
	f.fail[method] = errs[1:]
	return errs[0]
}
