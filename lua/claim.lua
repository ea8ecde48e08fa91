-- claim: lease up to limit due timers of one slot.
--
-- KEYS[1]  store    the slot's Store set
-- KEYS[2]  prepare  the slot's Prepare set
-- ARGV[1]  now      integer Unix ms
-- ARGV[2]  limit    how many timers to lease at most (> 0)
-- ARGV[3]  lease    lease length in ms (> 0)
--
-- Moves the members of Store due at or before now (score <= now*128+127),
-- oldest first, to Prepare with score (now+lease)*128 + attempt: the
-- attempt is kept, and the new score is the lease token. limit must stay
-- within what unpack() takes (the caller caps it at 1000).
--
-- Reply: {members, tokens, storeHead, prepareHead}
--   members      the leased members, in Store order
--   tokens       their Prepare scores, in the same order
--   storeHead    the lowest score left in Store, or nil when it is empty
--   prepareHead  the lowest score in Prepare, or nil when it is empty

local store, prepare = KEYS[1], KEYS[2]
local now, limit, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local due = redis.call('ZRANGEBYSCORE', store, '-inf', now * 128 + 127,
  'WITHSCORES', 'LIMIT', 0, limit)
local base = (now + lease) * 128
local members, tokens, batch = {}, {}, {}
for i = 1, #due - 1, 2 do
  local member = due[i]
  local token = base + tonumber(due[i + 1]) % 128
  members[#members + 1] = member
  tokens[#tokens + 1] = token
  batch[#batch + 1] = token
  batch[#batch + 1] = member
end
if #members > 0 then
  -- The due members are Store's first #members: the range started at -inf.
  redis.call('ZREMRANGEBYRANK', store, 0, #members - 1)
  redis.call('ZADD', prepare, unpack(batch))
end

local s = redis.call('ZRANGE', store, 0, 0, 'WITHSCORES')
local p = redis.call('ZRANGE', prepare, 0, 0, 'WITHSCORES')
return {members, tokens, s[2] and tonumber(s[2]) or false, p[2] and tonumber(p[2]) or false}
