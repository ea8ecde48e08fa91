-- ack: end leases that are still held.
--
-- KEYS[1]  prepare  the slot's Prepare set
-- ARGV[1], ARGV[2], ...  member, token pairs
--
-- Removes each member from Prepare only if its score still equals its
-- token: a lease that expired and was swept or claimed again is left to
-- its new owner.
--
-- Reply: how many members were removed.
--
-- Bounded by the number of pairs, which the caller caps at 1000 (unpack
-- takes the held ones in one ZREM).

local prepare = KEYS[1]
local held = {}
for i = 1, #ARGV - 1, 2 do
  local score = redis.call('ZSCORE', prepare, ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    held[#held + 1] = ARGV[i]
  end
end
if #held == 0 then
  return 0
end
return redis.call('ZREM', prepare, unpack(held))
