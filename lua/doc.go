// Package lua holds the Redis scripts of the timer index and their typed
// Go wrappers. It is the only code that knows the KEYS and ARGV positions
// of a script, and the only code that encodes and decodes scores.
//
// # Scripts
//
// Each script lives in its own file (add.lua, claim.lua, ack.lua,
// retry.lua, defer.lua, sweep.lua, revive.lua), embedded in the binary,
// opening with a header that lists its KEYS, ARGV and reply. Every script
// touches only the keys passed in KEYS, and the later buckets named by
// one of them (Later + ":" + bucket name), which all belong to one slot
// and share its hash tag (see package slots), so it runs on one Redis
// Cluster node. Scripts that take due sets take all three, highest priority
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
// # Later buckets
//
// A due set beyond 128 members is a skiplist and hash table in Redis,
// about 110 bytes a member; up to 128, a listpack, about 25. So add puts
// a timer without a window due at or after [AddCall.LaterFromMs] (package
// prepare: two of the finest widths from now) in a later bucket instead
// of its due set: the sorted set Later + ":<width>:<due ms / width>", of
// the widest width of [AddCall.BucketWidthsMs] whose bucket holds fewer
// than 128 members, or of the finest. The slot's Later set holds each
// bucket's name scored by the lowest score given to it, so the head of
// Later is a candidate for the slot's next due time beside the due sets'
// (add, claim and revive take it into the earliest they report). claim
// first moves every bucket whose score in Later is due into the due sets,
// whole, earliest first, until limit members moved, then leases as
// before: a bucket costs one extra call when it comes due, and none
// before. A member moves with NX (an entry in its due set wins), and not
// while leased.
//
// A timer is in one place, as without buckets, but for a copy a bucket
// keeps after the timer moved without it: set mode does not look for a
// member's old bucket, and a removal looks only in the buckets of the due
// time it is given. Such a copy comes to the due set at its old time,
// where the worker reads the job's row before it fires anything: it acks
// a copy whose row is done or cancelled, and puts back one whose row is
// due later, at that time; so a copy costs a claim, never an early or a
// second call. Restore mode looks for a member
// in each bucket of its due time (a scan of up to 128 members each); mode
// new, for jobs just committed, does not.
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
