-- claim: lease up to limit due timers of one slot, by priority with aging.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set
-- ARGV[1]  now     integer Unix ms
-- ARGV[2]  limit   how many timers to lease at most (> 0)
-- ARGV[3]  lease   lease length in ms (> 0)
-- ARGV[4]  agingHigh    the aging offset of high priority, in ms (>= 0)
-- ARGV[5]  agingNormal  the aging offset of normal priority, in ms (>= 0)
-- ARGV[6]  agingLow     the aging offset of low priority, in ms (>= 0)
--
-- Reads up to limit members due at or before now (score <= now*128+127)
-- from each due set, oldest first, and merges them by rank = due ms +
-- the aging offset of the set; equal ranks go high, then normal, then low,
-- and members of one set keep its order. The first limit members of that
-- order move to Prepare with score (now+lease)*128 + attempt: the attempt
-- is kept, and the new score is the lease token. A member keeps its
-- priority suffix. limit must stay within what unpack() takes (the caller
-- caps it at 1000), so the script reads at most 3*limit members.
--
-- Reply: {members, tokens, dueHead, prepareHead}
--   members      the leased members, in the merged order
--   tokens       their Prepare scores, in the same order
--   dueHead      the lowest score left in the three due sets, or nil
--                when they are empty
--   prepareHead  the lowest score in Prepare, or nil when it is empty

local dueHigh, due, dueLow, prepare = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now, limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local aging = {tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
local dues = {dueHigh, due, dueLow}

local ready, pos = {}, {}
for s = 1, 3 do
  ready[s] = redis.call('ZRANGEBYSCORE', dues[s], '-inf', now * 128 + 127,
    'WITHSCORES', 'LIMIT', 0, limit)
  pos[s] = 1
end

local base = (now + lease) * 128
local members, tokens, batch = {}, {}, {}
while #members < limit do
  -- The head of each set's ready list with the lowest rank; on a tie the
  -- first set checked, the higher priority, keeps it.
  local best, bestRank = nil, nil
  for s = 1, 3 do
    local score = ready[s][pos[s] + 1]
    if score then
      local rank = math.floor(tonumber(score) / 128) + aging[s]
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
  local token = base + tonumber(ready[best][i + 1]) % 128
  members[#members + 1] = member
  tokens[#tokens + 1] = token
  batch[#batch + 1] = token
  batch[#batch + 1] = member
  pos[best] = i + 2
end
for s = 1, 3 do
  -- The members taken from a set are its first ones: its range started at
  -- -inf, and the merge takes each set's members in order.
  local taken = (pos[s] - 1) / 2
  if taken > 0 then
    redis.call('ZREMRANGEBYRANK', dues[s], 0, taken - 1)
  end
end
if #members > 0 then
  redis.call('ZADD', prepare, unpack(batch))
end

return {members, tokens, earliest(dues) or false, earliest({prepare}) or false}
