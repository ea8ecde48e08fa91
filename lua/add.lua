-- add: put timers in the due sets of one or more slots, or their later
-- buckets.
--
-- The keys come in groups of eight, one group a slot, and the arguments
-- after the fourth in groups of the same slots, in the same order. A
-- group's keys share one hash tag; the groups of one call share none on a
-- Redis Cluster, where a call holds one slot (package lua sends a call
-- for each slot there, and one for all of a batch's slots on one server,
-- whose script overhead is then paid once: BENCHMARKS.md).
--
-- KEYS[1]  dueHigh    the slot's due set of high priority
-- KEYS[2]  due        the slot's due set of normal priority
-- KEYS[3]  dueLow     the slot's due set of low priority
-- KEYS[4]  prepare    the slot's Prepare set (read only)
-- KEYS[5]  dead       the slot's Dead set (read in restore and new modes)
-- KEYS[6]  window     the slot's timers with a window, by due time
-- KEYS[7]  windowEnd  the same members, by the end of their window
-- KEYS[8]  later      the slot's later buckets: bucket name, scored by
--                     the lowest score given to a member of the bucket
-- ARGV[1]  mode     "set": add each member to its due set, or replace its
--                   score there; "restore": add only members in none of
--                   their due set, window, Prepare and Dead (nor in a
--                   later bucket of their due time); "new": as restore,
--                   but without looking in later buckets, for timers of
--                   jobs just committed (see below)
-- ARGV[2]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[3]  laterFrom  integer Unix ms: a member without a window due at
--                     or after it goes in a later bucket; 0 for none
-- ARGV[4]  widths   the widths of later buckets in ms, finest first,
--                   comma-separated ("" when laterFrom is 0)
-- ARGV[5]  prefix   the first slot's wake message prefix, "<topic> <slot>"
-- ARGV[6]  count    how many timers of the first slot follow
-- ARGV[7..] count member, score, end triples (score = due ms * 128 +
--           attempt; end = (due ms + window ms) * 128 + attempt, or 0 for
--           a timer without a window)
-- KEYS[9..16], ARGV after the first slot's, ...: the next slot's, as
--           KEYS[1..8] and ARGV[5..]
--
-- A member without a window goes in the due set its last byte names: "h"
-- high, "l" low, anything else normal; or, when due at or after
-- laterFrom and not leased (in Prepare), in a later bucket of its due
-- time, whatever its priority: the sorted set later .. ':' .. name,
-- where name is "<width>:<floor(due ms / width)>", of the widest width
-- whose bucket holds fewer than 128 members (a listpack), or of the
-- finest. A sparse slot so keeps its later timers in few keys, a dense
-- one in many small ones. Claim moves a bucket to the due sets once its
-- lowest score is due, leaving out members leased then. A member added
-- again while leased goes in its due set, claimable again as before. A
-- member with a window goes in window (score) and windowEnd (end)
-- instead. In set mode a member leaves the due set and window sets it is
-- not put in, so a timer that gains or loses its window, or moves to a
-- later bucket, is in one place; a copy left in another later bucket
-- (the timer was rescheduled from there, or that bucket had filled) is
-- moved to the due sets at its old time, where the store, the truth,
-- answers for it. Mode new skips the search of a member's buckets, a scan
-- of up to 128 members each: a job just committed is in one only if the
-- backstop restored it in between, and then nearly always in the bucket
-- new picks, where it is replaced; a copy elsewhere is such a copy.
--
-- Reply: {added, earliest, ...}, a pair a slot, in the order of the groups
--   added     how many members were new to their due set (or window, or
--             later bucket)
--   earliest  the lowest score of the three due sets, window and later
--             when their earliest due ms moved earlier (they were all
--             empty before, or their lowest ms dropped); else nil. Then,
--             if channel is not "", the script also publishes "<prefix>
--             <due ms>" to channel.
--
-- Bounded by the number of triples, which the caller caps at 1000 a call
-- (unpack takes a slot's in at most five ZADDs, and one a later bucket).
-- A member given twice takes its last score, but for one given for two
-- later buckets, which is in both: one is a copy. The layout is checked
-- before anything is written: a call refused writes nothing.

local mode, channel = ARGV[1], ARGV[2]
local laterFrom = tonumber(ARGV[3])
if mode ~= 'set' and mode ~= 'restore' and mode ~= 'new' then
  return redis.error_reply('ERR add: mode must be set, restore or new')
end
-- The widths, split by plain search: a pattern iterator costs a call as
-- much as a few ZADDs. A piece that is no number is left out.
local widths = {}
local list = ARGV[4]
local from = 1
while from <= #list do
  local comma = string.find(list, ',', from, true) or #list + 1
  widths[#widths + 1] = tonumber(string.sub(list, from, comma - 1))
  from = comma + 1
end
if not laterFrom or (laterFrom > 0 and #widths == 0) then
  return redis.error_reply('ERR add: laterFrom must be a number, with widths when above 0')
end
for _, w in ipairs(widths) do
  if w < 1 then
    return redis.error_reply('ERR add: widths must be positive numbers')
  end
end
local levels = #widths
local setMode = mode == 'set'
-- The groups, checked before any is added: where each slot's triples
-- start, and how many it has.
local firsts, counts = {}, {}
local at = 5
while at <= #ARGV do
  local count = tonumber(ARGV[at + 1])
  if not count or count < 0 or count ~= math.floor(count) or at + 1 + 3 * count > #ARGV then
    return redis.error_reply('ERR add: a slot needs a prefix, a count and that many triples')
  end
  firsts[#firsts + 1], counts[#counts + 1] = at + 2, count
  at = at + 2 + 3 * count
end
if #firsts * 8 ~= #KEYS then
  return redis.error_reply('ERR add: eight keys a slot')
end

-- addSlot adds the count triples from ARGV[first] to the slot whose keys
-- follow KEYS[base], and returns how many were new and the new earliest
-- score (false when it did not move).
local function addSlot(base, first, count, prefix)
  local dueHigh, due, dueLow, prepare, dead = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], KEYS[base + 4], KEYS[base + 5]
  local window, windowEnd, later = KEYS[base + 6], KEYS[base + 7], KEYS[base + 8]
  local dues = {dueHigh, due, dueLow}
  -- The same, and window and later, the sets most often holding a slot's
  -- earliest first.
  local busiest = {due, later, dueHigh, dueLow, window}

  -- Tables are made when first needed: a call of one member, the most
  -- common, so makes few. Redis's Lua spends about as much making a table
  -- as on a ZSCORE.
  local hasWindow = redis.call('EXISTS', window) == 1
  local batches = {}      -- [s]: score, member pairs for dues[s]; [4]: for window
  local ends, gone, windowed = nil, nil, nil
  local buckets, bucketOrder, lows = nil, nil, nil
  -- A bucket is looked up by keyOf its level (its width's index) and
  -- number, its name made once. held counts its members in Redis when
  -- this call first looked, adding those this call puts there. The keys
  -- are negative: miniredis's Lua would grow an array up to a positive one.
  local held, adding, names = {}, {}, {}
  local function keyOf(l, n)
    return -(n * levels + l)
  end
  local function nameOf(l, n, k)
    local name = names[k]
    if not name then
      name = string.format('%d:%d', widths[l], n)
      names[k] = name
    end
    return name
  end
  local function size(l, n, k)
    local c = held[k]
    if not c then
      local bucket = later .. ':' .. nameOf(l, n, k)
      c = redis.call('ZCARD', bucket)
      held[k], adding[k] = c, 0
    end
    return c
  end
  -- bucketOf returns the name of the bucket a member due at ms goes in.
  local function bucketOf(ms)
    for l = levels, 1, -1 do
      local n = math.floor(ms / widths[l])
      local k = keyOf(l, n)
      if size(l, n, k) + adding[k] < 128 or l == 1 then
        adding[k] = adding[k] + 1
        return names[k]
      end
    end
  end
  -- inLater reports whether member, of score, is in a later bucket of its
  -- due ms. A bucket is searched only when score lies between its lowest
  -- and highest, read once a call: a restore in due order (the backstop's,
  -- after Redis lost its data) finds the wider buckets holding earlier
  -- timers, and skips them.
  local bounds = {}
  local function inLater(member, score, ms)
    for l = 1, levels do
      local n = math.floor(ms / widths[l])
      local k = keyOf(l, n)
      if size(l, n, k) > 0 then
        local bucket = later .. ':' .. nameOf(l, n, k)
        local b = bounds[bucket]
        if not b then
          local low = redis.call('ZRANGE', bucket, 0, 0, 'WITHSCORES')
          local high = redis.call('ZRANGE', bucket, -1, -1, 'WITHSCORES')
          b = {tonumber(low[2]), tonumber(high[2])}
          bounds[bucket] = b
        end
        if score >= b[1] and score <= b[2] and redis.call('ZSCORE', bucket, member) then
          return true
        end
      end
    end
    return false
  end
  -- A call of many members looks them up only in the sets that exist
  -- (present: dueHigh, due, dueLow, prepare, dead); a call of a few looks
  -- them up in each, at a ZSCORE on a missing key apiece.
  local presentDues, presentPrepare, presentDead = {true, true, true}, true, true
  if count >= 8 then
    presentDues = {redis.call('EXISTS', dueHigh) == 1, redis.call('EXISTS', due) == 1, redis.call('EXISTS', dueLow) == 1}
    presentPrepare = redis.call('EXISTS', prepare) == 1
    presentDead = redis.call('EXISTS', dead) == 1
  end
  -- low is the lowest score given to a set or bucket here.
  local low = nil
  for i = first, first + 3 * count - 3, 3 do
    local member, score, wend = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    local s = level(member)
    local w = wend ~= '0'
    local sc = tonumber(score)
    local ms = math.floor(sc / 128)
    local toLater = not w and laterFrom > 0 and ms >= laterFrom
    if setMode
        or (not (presentDues[s] and redis.call('ZSCORE', dues[s], member))
          and not (hasWindow and redis.call('ZSCORE', window, member))
          and not (presentPrepare and redis.call('ZSCORE', prepare, member))
          and not (presentDead and redis.call('ZSCORE', dead, member))
          and not (toLater and mode == 'restore' and inLater(member, sc, ms))) then
      local b = nil
      if toLater and not (setMode and presentPrepare and redis.call('ZSCORE', prepare, member)) then
        b = bucketOf(ms)
      end
      if w then
        local batch = batches[4]
        if not batch then
          batch, ends = {}, {}
          batches[4] = batch
        end
        batch[#batch + 1] = score
        batch[#batch + 1] = member
        ends[#ends + 1] = wend
        ends[#ends + 1] = member
      elseif b then
        if not buckets then
          buckets, bucketOrder, lows = {}, {}, {}
        end
        local batch = buckets[b]
        if not batch then
          batch = {}
          buckets[b] = batch
          bucketOrder[#bucketOrder + 1] = b
        end
        batch[#batch + 1] = score
        batch[#batch + 1] = member
        if not lows[b] or sc < lows[b] then
          lows[b] = sc
        end
      else
        local batch = batches[s]
        if not batch then
          batch = {}
          batches[s] = batch
        end
        batch[#batch + 1] = score
        batch[#batch + 1] = member
      end
      if setMode then
        -- What leaves which set once the members are in (see below).
        if w or b then
          if not gone then
            gone = {{}, {}, {}}
          end
          local g = gone[s]
          g[#g + 1] = member
        end
        if hasWindow and not w then
          if not windowed then
            windowed = {}
          end
          windowed[#windowed + 1] = member
        end
      end
      if low == nil or sc < low then
        low = sc
      end
    end
  end
  -- Whether the earliest due ms moves: the lowest score given against the
  -- lowest of each set, read before anything is added and only until one
  -- set holds a timer due no later (in a busy slot, the first set read).
  -- Nothing was added below the lowest score given, and nothing else below
  -- the sets' lowest before: if it is due earlier than all of them, it is
  -- the new earliest. (Set mode may move the member holding the earliest to
  -- a later bucket; then, given nothing lower, no wake is due and none is
  -- sent.)
  -- A set holds one when it has a score below (lowMs + 1) * 128: ZCOUNT
  -- answers an integer, which costs Redis's Lua less than ZRANGE's member
  -- and score (BenchmarkAddNew: a call 4-15 % less, BENCHMARKS.md).
  local moved = false
  local lowMs = nil
  if low ~= nil then
    lowMs = math.floor(low / 128)
    moved = true
    local below = '(' .. string.format('%d', (lowMs + 1) * 128)
    for i = 1, #busiest do
      if redis.call('ZCOUNT', busiest[i], '-inf', below) > 0 then
        moved = false
        break
      end
    end
  end

  local added = 0
  for s = 1, 3 do
    if batches[s] then
      added = added + redis.call('ZADD', dues[s], unpack(batches[s]))
    end
  end
  if batches[4] then
    added = added + redis.call('ZADD', window, unpack(batches[4]))
    redis.call('ZADD', windowEnd, unpack(ends))
  end
  if buckets then
    for _, b in ipairs(bucketOrder) do
      added = added + redis.call('ZADD', later .. ':' .. b, unpack(buckets[b]))
      -- LT: the bucket's score in later only ever drops, to its lowest
      -- member's; a removal leaves it low, which costs an early look only.
      redis.call('ZADD', later, 'LT', lows[b], b)
    end
  end
  if setMode then
    -- A member is in one place: one with a window or in a later bucket
    -- leaves its due set, one without a window leaves window and windowEnd.
    if gone then
      for s = 1, 3 do
        if #gone[s] > 0 and (presentDues[s] or batches[s]) then
          redis.call('ZREM', dues[s], unpack(gone[s]))
        end
      end
    end
    if windowed then
      redis.call('ZREM', window, unpack(windowed))
      redis.call('ZREM', windowEnd, unpack(windowed))
    end
  end

  if not moved then
    return added, false
  end
  if channel ~= '' then
    redis.call('PUBLISH', channel, prefix .. ' ' .. string.format('%d', lowMs))
  end
  return added, low
end

local reply = {}
for g = 1, #firsts do
  local first = firsts[g]
  local added, earliest = addSlot(8 * (g - 1), first, counts[g], ARGV[first - 2])
  reply[2 * g - 1], reply[2 * g] = added, earliest
end
return reply
