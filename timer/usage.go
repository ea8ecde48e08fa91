package timer

// TopicUsage is a worker's live use of one topic (see Usage for the sum
// over a cluster).
type TopicUsage struct {
	// InFlight counts the handler calls running; Held the leases this
	// worker holds (running, or waiting for a dispatcher).
	InFlight, Held int64
	// Rate is the dispatches per second over the last second.
	Rate float64
	// Dispatched and Throttled count handler calls started and claims held
	// back by the topic's rate or in-flight limit, since the worker
	// started.
	Dispatched, Throttled int64
	// RateShare and InFlightShare are this worker's shares of the topic's
	// limits (0: unlimited).
	RateShare     float64
	InFlightShare int64
	// Lateness counts the calls started over the last LatenessWindow by
	// how late they were, per bucket of LatenessBounds (and one beyond);
	// nil when there were none.
	Lateness []int64
	// SLOCalls counts the handler calls started while the topic declared
	// a lateness objective (Limits.LatenessSLO), since the worker started;
	// WithinSLO those of them that started within it. Their ratio is the
	// share of calls on time.
	SLOCalls, WithinSLO int64
	// WindowMissed counts the first calls of jobs with a flexible window
	// (Job.Window) that started after the window's end, since the worker
	// started.
	WindowMissed int64
}

// Usage is a topic's live use over a cluster: what its members'
// workers reported (each a TopicUsage, published about once a second),
// summed, and its due jobs still waiting in Redis.
type Usage struct {
	// DueWaiting counts the jobs due but not yet claimed: throttled, or
	// waiting for a worker.
	DueWaiting int64
	// InFlight counts the handler calls running, Rate the dispatches per
	// second, Throttled the claims held back by the topic's limits since
	// each member started, summed over the Members that reported.
	InFlight  int64
	Rate      float64
	Throttled int64
	Members   int
	// Lateness is the members' TopicUsage.Lateness added up; read its
	// percentiles with LatenessQuantile.
	Lateness []int64
}

// AddLateness adds one member's lateness counts to u's.
func (u *Usage) AddLateness(counts []int64) {
	if len(counts) == 0 {
		return
	}
	if u.Lateness == nil {
		u.Lateness = make([]int64, len(LatenessBounds)+1)
	}
	for i, c := range counts[:min(len(counts), len(u.Lateness))] {
		u.Lateness[i] += c
	}
}
