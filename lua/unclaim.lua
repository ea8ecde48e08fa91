-- unclaim: take back the leases of one claim whose reply was lost.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set
-- ARGV[1]  end     integer Unix ms: the lost claim's now + its lease, the
--                  time its tokens hold (token = end*128 + attempt)
-- ARGV[2]  at      integer Unix ms the timers are due again
--
-- A claim that ran but whose reply never reached its worker leaves
-- leases nobody holds: they would wait out the lease and come back with
-- an attempt counted that was never made. This moves every member of
-- Prepare whose score is end*128 + attempt (at most MAX_UNPACK of them,
-- what one claim takes) to its due set with score at*128 + attempt: the
-- attempt count stays as it was, as defer leaves it. A member already in
-- its due set (added again while leased) keeps that entry. The caller
-- makes sure no claim it holds the leases of has the same end.
--
-- Reply: how many members left Prepare.

local dueHigh, due, dueLow, prepare = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local finish, at = tonumber(ARGV[1]), tonumber(ARGV[2])
local dues = {dueHigh, due, dueLow}


local leased = redis.call('ZRANGEBYSCORE', prepare, finish * 128, finish * 128 + 127,
  'WITHSCORES', 'LIMIT', 0, MAX_UNPACK)
for i = 1, #leased - 1, 2 do
  local member = leased[i]
  redis.call('ZREM', prepare, member)
  redis.call('ZADD', dues[level(member)], 'NX', at * 128 + tonumber(leased[i + 1]) % 128, member)
end
return #leased / 2
