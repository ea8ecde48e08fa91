// Package lua holds the Redis scripts of the timer index and their typed
// Go wrappers. It is the only code that knows the KEYS and ARGV positions
// of a script, and the only code that encodes and decodes scores.
//
// # Scripts
//
// Each script lives in its own file (add.lua, claim.lua, ack.lua,
// retry.lua, defer.lua, sweep.lua, revive.lua), embedded in the binary,
// opening with a header that lists its KEYS, ARGV and reply. Every script
// touches only the keys passed in KEYS, which all belong to one slot and
// share its hash tag (see package slots), so it runs on one Redis Cluster
// node. Scripts that take due sets take all three, highest priority
// first, before the slot's other keys: KEYS = dueHigh, due, dueLow,
// then prepare and dead as the script needs them. Every script is bounded:
// by a LIMIT, or by the number of arguments, which the wrappers cap at
// [MaxBatch]. Scripts never read the clock: the caller passes now in ARGV
// as integer Unix milliseconds.
//
// Wrappers run a script by its SHA (EVALSHA) and fall back to EVAL when
// the server answers NOSCRIPT (after a restart or SCRIPT FLUSH), also
// inside pipelines. They accept any go-redis client that can script and
// pipeline: [*redis.Client], [*redis.ClusterClient], [redis.UniversalClient].
//
// # Priorities and members
//
// A slot has three due sets, one per priority, where timers wait for
// their due time: DueHigh, Due (normal) and DueLow (see slots.KeySet,
// whose keys keep their older names ":store", ":store:high" and
// ":store:low"); its Prepare and Dead sets are shared. A member is the job
// id in base 60 (digits, A-Z, a-z without h and l) with a suffix naming its
// priority ([Member], [ParseMember]); for job 123 (2×60 + 3):
//
//	"23"   normal, in Due
//	"23h"  high, in DueHigh
//	"23l"  low, in DueLow
//
// Base 60 keeps the member of any job id within 12 bytes, which Redis
// stores in 16 (its decimal form took 32): 16 bytes less per pending job.
// The member keeps its suffix in Prepare and Dead, so the scripts that
// move a member back (retry, defer, sweep, revive) put it in the due
// set its last byte names without being told, and normal members read as
// they did before priorities. An empty set costs Redis nothing.
//
// # Claim order and aging
//
// claim reads up to limit due members from each due set and merges them
// by rank = due ms + the aging offset of the member's priority ([Aging],
// passed in ARGV; package prepare takes it from timer.PriorityAging: high
// 0, normal 10 s, low 60 s). Equal ranks go high, normal, low; members of
// one set keep its order. So a high job goes before a normal one due up to
// 10 s earlier and a low one due up to 60 s earlier, but a job is never
// overtaken by one of higher priority that came due more than its offset
// difference after it: aging bounds the wait, so low jobs do not starve.
// Priority reorders only jobs that are due; it never makes one due sooner.
//
// # Wake-ups
//
// add and revive compare the slot's earliest due millisecond over its
// three due sets before and after; when it moved earlier they report the
// new earliest score and, given a channel, PUBLISH "<topic> <slot> <due
// ms>" to it from inside the script, so every worker hears of a slot due
// sooner.
//
// # Scores
//
// A member of the due, Prepare and Dead sets has a score that packs a
// time in Unix milliseconds and an attempt count:
//
//	score = ms*128 + attempt    (0 <= attempt <= 127)
//
// The time is the due time in a due set, the lease deadline in Prepare and the
// time of death in Dead. Sets order by ms first; the attempt breaks ties
// (a fresh job before a retried one due the same millisecond), then the
// member, byte by byte. "Due at or before now" is score <= now*128+127.
//
// Scores are float64 in Redis, exact for integers below 2^53, so ms must
// be below 2^46 ([MaxMillis], in the year 4199) and not negative. [Score]
// rejects anything outside 0 <= ms <= MaxMillis and 0 <= attempt <=
// [MaxAttempt] instead of wrapping it. Outside the scripts a score is
// written and read only here: [FormatScore] and [ParseScore] for its
// decimal form (ZRANGEBYSCORE bounds, [ScoreBound], and the dead-letter
// cursors), [SplitScore] and [DecodeEntry] for replies; [ParseMember]
// likewise is the one decoder of members, and checks the job id
// (timer.JobID.Valid). In a lease, the Prepare score is
// also the lease token: ack, retry and defer act only while it is
// unchanged. Scripts that add one to an attempt saturate it at 127; defer
// keeps it.
package lua
