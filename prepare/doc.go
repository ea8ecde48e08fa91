// Package prepare is the Redis timer index: it keeps every pending job's
// timer in its slot's due set and consumes timers in two phases, claim
// then ack, so that no timer is lost when a worker dies mid-fire.
//
// [Index] implements [timer.Index] (add, restore, remove, revive),
// [timer.Leaser] (claim, ack, retry, defer, sweep) and [timer.Waker]
// (wake-ups over Redis pub/sub), each state change being one script of
// package lua.
//
// # Flow of a timer
//
//	Add ──► Due ──Claim──► Prepare ──Ack──► (gone)
//	         ▲                 │
//	         └──Retry, Defer,──┤
//	              Sweep        └──Retry, Sweep at the attempt cap──► Dead ──Revive──► Due
//
// A claim moves due timers from the due sets to Prepare, scored by the lease
// deadline; the score is the lease token. Ack, Retry and Defer act only
// while the token is unchanged. A lease that is neither acked, retried
// nor deferred before its deadline is swept back to its due set with one more
// attempt. Defer returns a job that was not sent with its attempt count
// unchanged.
//
// # Priorities
//
// Each slot has a due set per priority (see package lua for the member
// encoding); Prepare and Dead are shared. A timer goes to the due set
// of its [timer.Priority], and every lease and dead job comes back with the
// priority its member names, so Ack, Retry and Defer find it again. Claim
// takes due timers of all three sets in the order of due time plus
// [timer.PriorityAging]: high before normal before low, but never a
// higher job over a lower one that came due more than the difference in
// aging earlier. Peek and Stats read all three sets.
//
// # Files
//
// index.go holds Index, its Config and the helpers its sides share;
// timers.go the timer.Index side (Add, Restore, Remove, Revive);
// leases.go the timer.Leaser side (Claim, Ack, Retry, Defer, Sweep);
// wake.go the timer.Waker side; stats.go Peek, Stats and the loss mark;
// usage.go the usage members publish to each other.
//
// # Batching
//
// Add, Restore, Remove and Ack group their input by slot and send one
// script call per slot and per [lua.MaxBatch] members, all in one
// pipeline; on Redis Cluster, go-redis splits that pipeline by node. On
// one server (not a cluster), [lua.Add] puts the slots of Add, Restore
// and IndexNew in one script call of up to [lua.MaxBatch] members, and
// [lua.AckEach] those of Ack: a batch spanning a topic's slots pays the
// script's fixed cost once.
package prepare
