// Package prepare is the Redis timer index: it keeps every pending job's
// timer in its slot's Store set and consumes timers in two phases, claim
// then ack, so that no timer is lost when a worker dies mid-fire.
//
// [Queue] implements [timer.Index] (add, restore, remove, revive),
// [timer.Leaser] (claim, ack, retry, sweep) and [timer.Waker] (wake-ups
// over Redis pub/sub), each state change being one script of package lua.
//
// # Flow of a timer
//
//	Add ──► Store ──Claim──► Prepare ──Ack──► (gone)
//	          ▲                 │
//	          └──Retry, Sweep───┤
//	                            └──Retry, Sweep at the attempt cap──► Dead ──Revive──► Store
//
// A claim moves due timers from Store to Prepare, scored by the lease
// deadline; the score is the lease token. Ack and Retry act only while the
// token is unchanged. A lease that is neither acked nor retried before its
// deadline is swept back to Store with one more attempt.
//
// # Batching
//
// Add, Restore, Remove and Ack group their input by slot and send one
// script call per slot and per [lua.MaxBatch] members, all in one
// pipeline; on Redis Cluster, go-redis splits that pipeline by node.
package prepare
