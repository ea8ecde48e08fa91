-- ack: end leases that are still held, in one or more slots.
--
-- KEYS[1]  prepare  the first slot's Prepare set; KEYS[2], ...: the next
--                   slots', one key a slot (on a Redis Cluster a call
--                   holds one slot; package lua sends one call for the
--                   slots of a batch on one server, whose script overhead
--                   is then paid once)
-- ARGV[1]  count    how many pairs of the first slot follow
-- ARGV[2..] count member, token pairs; then the next slot's count and
--           pairs, and so on
--
-- Removes each member from its Prepare set only if its score still
-- equals its token: a lease that expired and was swept or claimed again
-- is left to its new owner.
--
-- Reply: {removed, earliest, ...}, a pair a slot, in the order of KEYS
--   removed   how many members were removed
--   earliest  the lowest score left in Prepare (the next lease end), or
--             false when it is empty: the worker need not sweep the slot
--             before then
--
-- Bounded by the number of pairs, which the caller caps at 1000 a call
-- (unpack takes a slot's held ones in one ZREM). The layout is checked
-- before anything is removed: a call refused removes nothing.

local firsts, counts = {}, {}
local at = 1
while at <= #ARGV do
  local count = tonumber(ARGV[at])
  if not count or count < 0 or count ~= math.floor(count) or at + 2 * count > #ARGV then
    return redis.error_reply('ERR ack: a slot needs a count and that many pairs')
  end
  firsts[#firsts + 1], counts[#counts + 1] = at + 1, count
  at = at + 1 + 2 * count
end
if #firsts ~= #KEYS then
  return redis.error_reply('ERR ack: one key a slot')
end

local reply = {}
for base = 0, #KEYS - 1 do
  local prepare = KEYS[base + 1]
  local held = {}
  local first, last = firsts[base + 1], firsts[base + 1] + 2 * counts[base + 1] - 2
  -- One ZMSCORE a chunk of MAX_UNPACK members, not a ZSCORE each.
  for from = first, last, 2 * MAX_UNPACK do
    local names = {}
    for i = from, math.min(from + 2 * MAX_UNPACK - 2, last), 2 do
      names[#names + 1] = ARGV[i]
    end
    local scores = redis.call('ZMSCORE', prepare, unpack(names))
    for j = 1, #names do
      if scores[j] and tonumber(scores[j]) == tonumber(ARGV[from + 2 * j - 1]) then
        held[#held + 1] = names[j]
      end
    end
  end
  local removed = 0
  if #held > 0 then
    removed = redis.call('ZREM', prepare, unpack(held))
  end
  reply[2 * base + 1], reply[2 * base + 2] = removed, earliest({prepare}) or false
end
return reply
