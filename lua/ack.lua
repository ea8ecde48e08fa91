-- ack: end leases that are still held.
--
-- KEYS[1]  prepare  the slot's Prepare set
-- ARGV[1], ARGV[2], ...  member, token pairs
--
-- Removes each member from Prepare only if its score still equals its
-- token: a lease that expired and was swept or claimed again is left to
-- its new owner.
--
-- Reply: {removed, earliest}
--   removed   how many members were removed
--   earliest  the lowest score left in Prepare (the next lease end), or
--             false when it is empty: the worker need not sweep the slot
--             before then
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
local removed = 0
if #held > 0 then
  removed = redis.call('ZREM', prepare, unpack(held))
end
return {removed, earliest({prepare}) or false}
