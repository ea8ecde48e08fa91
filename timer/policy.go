package timer

import (
	"cmp"
	"time"
)

// The callback-timeout and lease policy, in one place.
//
// A lease is how long a claimed job stays with its worker before another
// may take it back. It must outlast the attempt it covers, or a slow
// attempt is fired twice: a lease is at least the callback timeout plus
// LeaseMargin (the time to load a batch and record its outcome). A lease
// left unset is DefaultLease, or twice the timeout plus the margin when
// that is longer, so that an attempt delayed behind a full batch still
// finishes within it.

// Defaults of the attempt timing.
const (
	DefaultLease          = 30 * time.Second
	DefaultAttemptTimeout = 10 * time.Second
	// LeaseMargin is the least a lease must exceed the attempt timeout by.
	LeaseMargin = 2 * time.Second
)

// LeaseFor returns the lease of attempts bounded by timeout when lease is
// left zero: max(DefaultLease, 2×timeout+LeaseMargin); a set lease is
// returned as it is.
func LeaseFor(lease, timeout time.Duration) time.Duration {
	if lease > 0 {
		return lease
	}
	return max(DefaultLease, 2*timeout+LeaseMargin)
}

// checkLease reports a lease too short for timeout, naming leaseField and
// timeoutField as the caller knows them (a config field, or the API's).
func checkLease(lease, timeout time.Duration, leaseField, timeoutField string) error {
	if lease < timeout+LeaseMargin {
		return invalid(leaseField, "%v must exceed %s %v by %v, or a slow attempt is fired twice", lease, timeoutField, timeout, LeaseMargin)
	}
	return nil
}

// timing is the timeout, lease and retry policy of one topic's attempts.
type timing struct {
	timeout time.Duration
	lease   time.Duration
	retry   RetryPolicy
}

// timingOf returns the timing of a topic with limits l on a worker whose
// own timeout, lease and retry policy are def: the topic's where set, else
// the worker's, and a lease never shorter than the timeout plus the
// margin unless the topic set one (Limits.Validate checked it then).
func timingOf(l Limits, def timing) timing {
	t := timing{
		timeout: cmp.Or(l.CallbackTimeout, def.timeout),
		retry:   RetryPolicy{Base: cmp.Or(l.Retry.Base, def.retry.Base), Max: cmp.Or(l.Retry.Max, def.retry.Max)},
	}
	t.lease = cmp.Or(l.Lease, max(def.lease, t.timeout+LeaseMargin))
	return t
}
