// Package deadletter serves the jobs that exhausted their attempts: the
// dead letters.
//
// The task store is their record: a dead job is a row in status dead,
// with when it died (its last update), its last error and the HTTP status
// its receiver last answered. [Letters] lists those rows for the API, of
// one topic or of several together, filtered by time of death and error
// text, in the order they died, with cursors; it purges one by moving its
// row to purged. Nothing here
// reads Redis to list: after FLUSHALL or a failover the list is the same.
//
// In Redis, the scripts move a job whose attempts ran out to its slot's
// Dead set, and the worker clears it from there once its row says dead
// (timer.Leaser's Forget). [Box] clears what a failed Forget left, when
// a job is purged. Replaying a dead job is the scheduler's Replay: the row
// first, then timer.Index.Revive or Add in package prepare.
package deadletter
