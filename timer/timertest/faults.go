package timertest

import "sync"

// faults counts the calls of each method of a fake and makes chosen calls
// fail. The zero value is ready to use.
type faults struct {
	mu    sync.Mutex
	calls map[string]int
	fail  errQueues // errors for the next calls, in order
	lose  errQueues // errors for the next calls after they ran
}

// errQueues holds, by method, the errors its next calls return.
type errQueues map[string][]error

// push queues n of err for method's next calls, after those pending.
func (q *errQueues) push(method string, err error, n int) {
	if *q == nil {
		*q = make(errQueues)
	}
	for range n {
		(*q)[method] = append((*q)[method], err)
	}
}

// pop returns the error method's next call returns, or nil.
func (q errQueues) pop(method string) error {
	errs := q[method]
	if len(errs) == 0 {
		return nil
	}
	q[method] = errs[1:]
	return errs[0]
}

// FailNext makes the next n calls of method (its name, as "Insert" or
// "Claim") return err, without doing anything else. A later FailNext of
// the same method queues its failures after those still pending.
func (f *faults) FailNext(method string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail.push(method, err, n)
}

// LoseReplyNext makes the next n calls of method do their work and then
// return err, as a call whose reply was lost on the way back does. Only
// the methods that call lost take them.
func (f *faults) LoseReplyNext(method string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lose.push(method, err, n)
}

// lost returns the error a call of method that did its work must return
// (see LoseReplyNext), or nil.
func (f *faults) lost(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lose.pop(method)
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
	return f.fail.pop(method)
}
