// Package timer is toc's domain: jobs, their states and retry policy, the
// scheduling path, the worker loop that fires them, and the backstop that
// makes a committed job fire even when Redis loses it.
//
// It imports only the standard library and declares the small interfaces it
// needs of its adapters: a Store (package taskdb), an Index and a Leaser
// (package prepare, over the Lua scripts of package lua), and a Handler that
// fires a job (package http's webhook sender, or a function of a library
// user).
//
// # How a job flows
//
// Scheduler.Schedule commits the row as pending in the task store (the
// source of truth), then, when the job is due within the horizon, adds its
// timer to its slot's Store set in Redis. A Worker owning the slot sleeps
// until shortly before the slot's next due time (WorkerConfig.ClaimAhead),
// claims the jobs due within the look-ahead from every owned slot into each
// slot's Prepare set (a lease), loads their rows in one query, skips those
// no longer pending, and calls the Handler at each job's due time, with
// bounded concurrency. On success it marks the
// row done and then acks the lease; on failure it records the attempt and
// the script puts the job back with a backoff, or into the Dead set once
// its attempts are exhausted. A lease that is never acked (its worker
// died) expires and is swept back. The Backstop rescans the task store and
// restores pending jobs that Redis lost, and loads far-future jobs as they
// come within the horizon.
//
// # Guarantees
//
// A job whose row is committed fires at least once, never before its due
// time (kept in milliseconds, rounded up), unless it is cancelled first. A worker
// that dies costs a lease period of delay, not the job.
package timer
