// Package timer is toc's domain: jobs, their states and retry policy, the
// scheduling path, the worker loop that fires them, and the backstop that
// makes a committed job fire even when Redis loses it.
//
// It imports only the standard library and declares the small interfaces it
// needs of its adapters: a Store (package taskdb), an Index, a Leaser and a
// HeadReader (package prepare, over the Lua scripts of package lua), a
// Handler that fires a job (package webhook's Client, or a function of a
// library user), and, optionally, a Tracer that records the spans of each
// attempt (internal/tracing, over OpenTelemetry; see trace.go).
//
// # How a job flows
//
// Scheduler.Schedule commits the row as pending in the task store (the
// source of truth), then, when the job is due within the horizon, adds its
// timer to its slot's due set in Redis and wakes the worker that owns the
// slot. The Worker is a pipeline of small parts, each in its own file with
// a step function its tests drive:
//
//   - the claimer (claimer.go) keeps the owned slots that hold something,
//     ordered by when each next needs serving, and sleeps until shortly
//     before the earliest (WorkerConfig.ClaimAhead); it then claims the
//     jobs due within the look-ahead into each slot's Prepare set (a
//     lease) and sweeps expired leases back;
//   - the limiter (limiter.go) decides which topic it serves next (least
//     virtual time for its weight) and how many jobs it may claim (token
//     bucket, in-flight cap); only topics with due work are in its queues;
//   - the loader (loader.go) reads the claimed rows in one query per pass
//     and routes each lease: to the executor at the job's due time, or
//     straight to the completer when the row says not to fire;
//   - the executor (executor.go) calls the Handler with bounded
//     concurrency and the topic's callback timeout;
//   - the completer (completer.go) records each outcome in the row first
//     and then in Redis: done and acked, retried with backoff, buried in
//     the Dead set once the attempts are exhausted, or put back without
//     an attempt when it was not sent.
//
// A lease that is never acked (its worker died) expires and is swept
// back. The leases of a claim whose reply was lost (a failover cut the
// connection after the script ran) are taken back at once by the member
// that sent it, by their tokens, with no attempt counted (an Unclaimer). The Backstop rescans the task store and restores pending jobs that
// Redis lost, loads far-future jobs as they come within the horizon, and
// ends expired the jobs whose deadline passed while nothing claimed them
// (a paused topic's).
// The Catalog is the process's one copy of the topic list.
//
// # Recurring schedules
//
// A Schedule is a job template and a rule: a cron expression in a time
// zone (read by a CronParser, package timer/cron) or an interval. The
// Materializer turns each occurrence into an ordinary job a few seconds
// ahead, through the Scheduler, under the idempotency key ScheduleKey, and
// moves the schedule's cursor past it with a compare-and-set
// (ScheduleWriter.AdvanceSchedule): the job first, so that a crash between
// the two repeats the job (which the key makes the same one), never skips
// it. Occurrences missed while no materializer ran follow the schedule's
// CatchUp policy. An occurrence that MaterializerConfig.Admit refuses with
// ErrQuota (its owner's pending jobs are at their quota) is skipped: the
// cursor moves past it in the same compare-and-set
// (ScheduleWriter.SkipOccurrences), which counts it in Schedule.Skipped.
// Schedules holds the API's operations on them.
//
// # Guarantees
//
// A job whose row is committed fires at least once, never before its due
// time (kept in milliseconds, rounded up), unless it is cancelled first. A worker
// that dies costs a lease period of delay, not the job.
package timer
