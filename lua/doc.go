// Package lua holds the Redis scripts of the timer index and their typed
// Go wrappers. It is the only code that knows the KEYS and ARGV positions
// of a script, and the only code that encodes and decodes scores.
//
// # Scripts
//
// Each script lives in its own file (add.lua, claim.lua, ack.lua,
// retry.lua, sweep.lua, revive.lua), embedded in the binary, opening with
// a header that lists its KEYS, ARGV and reply. Every script touches only
// the keys passed in KEYS, which all belong to one slot and share its hash
// tag (see package slots), so it runs on one Redis Cluster node. Every
// script is bounded: by a LIMIT, or by the number of arguments, which the
// wrappers cap at [MaxBatch]. Scripts never read the clock: the caller
// passes now in ARGV as integer Unix milliseconds.
//
// Wrappers run a script by its SHA (EVALSHA) and fall back to EVAL when
// the server answers NOSCRIPT (after a restart or SCRIPT FLUSH), also
// inside pipelines. They accept any go-redis client that can script and
// pipeline: [*redis.Client], [*redis.ClusterClient], [redis.UniversalClient].
//
// # Wake-ups
//
// add and revive compare the slot's earliest due millisecond in Store
// before and after; when it moved earlier they report the new earliest
// score and, given a channel, PUBLISH "<topic> <slot> <due ms>" to it from
// inside the script, so every worker hears of a slot due sooner.
//
// # Scores
//
// A member of the Store, Prepare and Dead sets is a job id in decimal. Its
// score packs a time in Unix milliseconds and an attempt count:
//
//	score = ms*128 + attempt    (0 <= attempt <= 127)
//
// The time is the due time in Store, the lease deadline in Prepare and the
// time of death in Dead. Sets order by ms first; the attempt breaks ties
// (a fresh job before a retried one due the same millisecond), then the
// member, byte by byte. "Due at or before now" is score <= now*128+127.
//
// Scores are float64 in Redis, exact for integers below 2^53, so ms must
// be below 2^46 ([MaxMillis], in the year 4199) and not negative. [Score]
// rejects anything outside 0 <= ms <= MaxMillis and 0 <= attempt <=
// [MaxAttempt] instead of wrapping it. In a lease, the Prepare score is
// also the lease token: ack and retry act only while it is unchanged.
// Scripts that add one to an attempt saturate it at 127.
package lua
