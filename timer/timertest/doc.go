// Package timertest holds in-memory fakes of the task store and the Redis
// timer index, for fast, deterministic unit tests of the packages that
// use them (the worker's parts in timer), and the conformance suites that
// keep the fakes honest. It is for tests only; it imports timer and slots
// and the standard library, never a driver or go-redis.
//
// # Fakes
//
// [Store] is a timer.Store with the semantics of taskdb.Store: status
// changes conditional on the current status, ErrConflict on a duplicate
// id or (topic, key) with nothing written, ErrInvalid on what a row
// cannot hold, times in whole milliseconds, LastError cut to 1,024 bytes
// at a UTF-8 boundary, ScanPending in (due time, id) order.
//
// [Index] is a timer.Index and timer.Leaser with the semantics of the Lua
// scripts of package lua as package prepare runs them: per slot three due
// sets (one per priority), a prepare set of leases whose scores are their
// tokens, and a dead set; scores pack a Unix millisecond and an attempt
// count; claims follow timer.PriorityAging; Retry and Sweep bury at the
// attempt limits; Add, Restore and Revive report Wakes. Slots are
// slots.Of, as in prepare.
//
// Both are safe for concurrent use, read no clock where a call carries a
// time, and have two hooks: FailNext(method, err, n) makes the next n
// calls of a method fail with err, and Calls(method) counts the calls.
// Index also shows a slot's sets: Len, Due, Leased, Dead.
//
// # Conformance suites
//
// [TestStore] and [TestIndex] are the contracts of timer.Store and of
// timer.Index with timer.Leaser, as exported tests. taskdb runs TestStore
// against MariaDB and SQLite, prepare runs TestIndex against miniredis and
// redis-server, and this package runs both against its fakes: a fake that
// drifts from the real thing fails the same test the real one passes.
// Where miniredis and redis-server differ, the suites follow
// redis-server. They pass every time explicitly, so they never sleep.
//
// # Known differences
//
// Index orders members with equal scores (same millisecond and attempt)
// by job id; Redis orders them bytewise by their base-60 member, which
// agrees for ids below 60 only. The suites use such ids where they tie.
// Store sorts its pending jobs on each ScanPending and holds everything
// in memory: fine for tests, not a database.
package timertest
