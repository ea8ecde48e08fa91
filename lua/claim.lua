-- claim: lease up to limit due timers of one slot, by priority with aging
-- and by the end of their window.
--
-- KEYS[1]  dueHigh    the slot's due set of high priority
-- KEYS[2]  due        the slot's due set of normal priority
-- KEYS[3]  dueLow     the slot's due set of low priority
-- KEYS[4]  prepare    the slot's Prepare set
-- KEYS[5]  window     the slot's timers with a window, by due time
-- KEYS[6]  windowEnd  the same members, by the end of their window
-- KEYS[7]  later      the slot's later buckets (see add), by their lowest
--                     score
-- ARGV[1]  now     integer Unix ms
-- ARGV[2]  limit   how many timers to lease at most (> 0)
-- ARGV[3]  lease   lease length in ms (> 0)
-- ARGV[4]  agingHigh    the aging offset of high priority, in ms (>= 0)
-- ARGV[5]  agingNormal  the aging offset of normal priority, in ms (>= 0)
-- ARGV[6]  agingLow     the aging offset of low priority, in ms (>= 0)
--
-- First it moves each later bucket whose score in later is due (<=
-- now*128+127) to the due sets, earliest first, whole, until limit
-- members have moved or none is due: a member goes to the due set its
-- last byte names unless it is already there (NX: that entry wins),
-- leased (in Prepare: the lease's end puts it back as the store says) or
-- in window. A bucket may hold members not due yet; in the due sets they
-- wait their time as any other. Then it reads up to limit members due at
-- or before now (score <= now*128+127)
-- from each due set, oldest first, and ranks each by due ms + the aging
-- offset of its priority. A timer with a window is ranked by the end of
-- its window + its aging offset instead, and is a candidate only once due
-- (its score in window <= now*128+127): the first limit members of
-- windowEnd that are due, and the first limit due members of window
-- (so that due timers are never hidden behind ones not yet due). The
-- candidates are merged by rank; equal ranks go high, normal, low, then
-- windowed, and members of one due set keep its order. The first limit
-- of that order move to Prepare with score (now+lease)*128 + attempt: the
-- attempt is kept, and the new score is the lease token. A member keeps
-- its priority suffix. limit must stay within what unpack() takes (the
-- caller caps it at 1000), so the script reads at most 5*limit members
-- and looks up at most 2*limit scores.
--
-- Reply: {members, tokens, dueHead, prepareHead}
--   members      the leased members, in the merged order
--   tokens       their Prepare scores, in the same order
--   dueHead      the lowest score left in the three due sets, window and
--                later, or nil when they are empty
--   prepareHead  the lowest score in Prepare, or nil when it is empty

local dueHigh, due, dueLow, prepare = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local window, windowEnd, later = KEYS[5], KEYS[6], KEYS[7]
local now, limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local aging = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
local dues = {dueHigh, due, dueLow}
local bound = now * 128 + 127

local moved = 0
while moved < limit do
  local b = redis.call('ZRANGEBYSCORE', later, '-inf', bound, 'LIMIT', 0, 1)[1]
  if not b then
    break
  end
  local bucket = later .. ':' .. b
  local entries = redis.call('ZRANGE', bucket, 0, -1, 'WITHSCORES')
  local hasLeases = redis.call('EXISTS', prepare) == 1
  local hasWindow = redis.call('EXISTS', window) == 1
  -- In chunks of MAX_UNPACK members: one ZMSCORE a set a chunk says which
  -- are leased or windowed.
  for from = 1, #entries, 2 * MAX_UNPACK do
    local names = {}
    for i = from, math.min(from + 2 * MAX_UNPACK - 1, #entries) - 1, 2 do
      names[#names + 1] = entries[i]
    end
    local leased = hasLeases and redis.call('ZMSCORE', prepare, unpack(names)) or {}
    local windowed = hasWindow and redis.call('ZMSCORE', window, unpack(names)) or {}
    local back = {{}, {}, {}}
    for j = 1, #names do
      if not leased[j] and not windowed[j] then
        local batch = back[level(names[j])]
        batch[#batch + 1] = entries[from + 2 * j - 1]
        batch[#batch + 1] = names[j]
      end
    end
    for s = 1, 3 do
      if #back[s] > 0 then
        redis.call('ZADD', dues[s], 'NX', unpack(back[s]))
      end
    end
  end
  redis.call('DEL', bucket)
  redis.call('ZREM', later, b)
  moved = moved + #entries / 2
end

local ready, pos = {}, {}
for s = 1, 3 do
  ready[s] = redis.call('ZRANGEBYSCORE', dues[s], '-inf', bound,
    'WITHSCORES', 'LIMIT', 0, limit)
  pos[s] = 1
end

-- The windowed candidates, as a fourth ready list of member, score pairs
-- sorted by rank; score is the member's score in window (its attempt is
-- in the low bits), rank its window's end + aging.
ready[4], pos[4] = {}, 1
local ranks = {}
if redis.call('EXISTS', window) == 1 then
  local cands, seen = {}, {}
  local function consider(member, score, wend)
    if seen[member] or not score or not wend or tonumber(score) > bound then
      return
    end
    seen[member] = true
    cands[#cands + 1] = {member, tonumber(score),
      math.floor(tonumber(wend) / 128) + aging[level(member)]}
  end
  local byEnd = redis.call('ZRANGE', windowEnd, 0, limit - 1, 'WITHSCORES')
  for i = 1, #byEnd, 2 do
    consider(byEnd[i], redis.call('ZSCORE', window, byEnd[i]), byEnd[i + 1])
  end
  local byDue = redis.call('ZRANGEBYSCORE', window, '-inf', bound, 'WITHSCORES', 'LIMIT', 0, limit)
  for i = 1, #byDue, 2 do
    if not seen[byDue[i]] then
      consider(byDue[i], byDue[i + 1], redis.call('ZSCORE', windowEnd, byDue[i]))
    end
  end
  table.sort(cands, function(a, b)
    if a[3] ~= b[3] then
      return a[3] < b[3]
    end
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return a[1] < b[1]
  end)
  for i = 1, #cands do
    ready[4][2 * i - 1] = cands[i][1]
    ready[4][2 * i] = cands[i][2]
    ranks[i] = cands[i][3]
  end
end

local base = (now + lease) * 128
local members, tokens, batch, taken = {}, {}, {}, {}
-- heads[s] is the score of list s's head as a number, read once a member.
local heads = {}
for s = 1, 4 do
  heads[s] = tonumber(ready[s][2])
end
while #members < limit do
  -- The head of each list with the lowest rank; on a tie the first list
  -- checked, the higher priority, keeps it.
  local best, bestRank = nil, nil
  for s = 1, 4 do
    local score = heads[s]
    if score then
      local rank
      if s == 4 then
        rank = ranks[(pos[s] + 1) / 2]
      else
        rank = math.floor(score / 128) + aging[s]
      end
      if best == nil or rank < bestRank then
        best, bestRank = s, rank
      end
    end
  end
  if best == nil then
    break
  end
  local i = pos[best]
  local member = ready[best][i]
  local token = base + heads[best] % 128
  heads[best] = tonumber(ready[best][i + 3])
  members[#members + 1] = member
  tokens[#tokens + 1] = token
  -- As a string of its digits: Redis 7.0 prints a Lua number with
  -- %.17g, glibc's exact multi-precision path (BenchmarkClaim).
  batch[#batch + 1] = string.format('%d', token)
  batch[#batch + 1] = member
  if best == 4 then
    taken[#taken + 1] = member
  end
  pos[best] = i + 2
end
for s = 1, 3 do
  -- The members taken from a due set are its first ones: its range
  -- started at -inf, and the merge takes each set's members in order.
  local n = (pos[s] - 1) / 2
  if n > 0 then
    redis.call('ZREMRANGEBYRANK', dues[s], 0, n - 1)
  end
end
if #taken > 0 then
  redis.call('ZREM', window, unpack(taken))
  redis.call('ZREM', windowEnd, unpack(taken))
end
if #members > 0 then
  redis.call('ZADD', prepare, unpack(batch))
end

return {members, tokens, earliest({dueHigh, due, dueLow, window, later}) or false, earliest({prepare}) or false}
