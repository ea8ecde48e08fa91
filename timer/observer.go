package timer

import (
	"log/slog"
	"time"
)

// Observer receives the engine's events, for metrics. Its methods are
// called on hot paths and must not block. NopObserver ignores them all.
type Observer interface {
	// Scheduled: n jobs of topic were committed.
	Scheduled(topic string, n int)
	// Claimed: a claim of slot returned n leases.
	Claimed(slot Slot, n int)
	// Unclaimed: n leases of slot, made by a claim whose reply was lost,
	// were taken back without waiting out their lease.
	Unclaimed(slot Slot, n int)
	// Fired: one attempt at a job ended, after took; it started lateness
	// after its due time (for the first attempt of a job scheduled already
	// past due, after the time it was scheduled); err is nil on success.
	Fired(topic string, attempt int, lateness, took time.Duration, err error)
	// Retried: a failed job was put back to try again.
	Retried(topic string)
	// Buried: a job ran out of attempts and is dead; once a job, by the
	// member whose update of the row made it dead.
	Buried(topic string)
	// Repaired: the backstop put n missing jobs back in the index.
	Repaired(n int)
	// IndexFailed: a write to the index failed after the task store
	// committed (the backstop will repair it).
	IndexFailed(op string, err error)
	// Assigned: the worker's set of owned slots changed; it now owns n.
	Assigned(n int)
	// Throttled: a claim from topic was held back by its rate limit or
	// in-flight cap.
	Throttled(topic string)
	// Deferred: a job of topic was not sent (its host's circuit breaker is
	// open) and was put back without counting an attempt.
	Deferred(topic string)
	// Expired: a job of topic ended expired: no attempt could start by
	// its deadline.
	Expired(topic string)
	// OccurrencesSkipped: n occurrences of a schedule of topic made no
	// job, for reason (SkipPendingQuota).
	OccurrencesSkipped(topic, reason string, n int)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

func (NopObserver) Scheduled(string, int)                                  {}
func (NopObserver) Claimed(Slot, int)                                      {}
func (NopObserver) Unclaimed(Slot, int)                                    {}
func (NopObserver) Fired(string, int, time.Duration, time.Duration, error) {}
func (NopObserver) Retried(string)                                         {}
func (NopObserver) Buried(string)                                          {}
func (NopObserver) Repaired(int)                                           {}
func (NopObserver) IndexFailed(string, error)                              {}
func (NopObserver) Assigned(int)                                           {}
func (NopObserver) Throttled(string)                                       {}
func (NopObserver) Deferred(string)                                        {}
func (NopObserver) Expired(string)                                         {}
func (NopObserver) OccurrencesSkipped(string, string, int)                 {}

// fillCommon defaults the fields every part's config has: the clock, the
// logger (discarding) and the observer (doing nothing).
func fillCommon(now *func() time.Time, log **slog.Logger, obs *Observer) {
	if *now == nil {
		*now = time.Now
	}
	if *log == nil {
		*log = slog.New(slog.DiscardHandler)
	}
	if *obs == nil {
		*obs = NopObserver{}
	}
}
