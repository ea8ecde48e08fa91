-- add: put timers in one slot's Store set.
--
-- KEYS[1]  store    the slot's Store set
-- KEYS[2]  prepare  the slot's Prepare set (read in restore mode only)
-- KEYS[3]  dead     the slot's Dead set (read in restore mode only)
-- ARGV[1]  mode     "set": add each member to Store, or replace its score;
--                   "restore": add only members in none of the three sets
-- ARGV[2]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[3]  prefix   wake message prefix, "<topic> <slot>"
-- ARGV[4..] member, score pairs (score = due ms * 128 + attempt)
--
-- Reply: {added, earliest}
--   added     how many members were new to Store
--   earliest  Store's lowest score when the earliest due ms moved earlier
--             (Store was empty before, or its lowest ms dropped); else nil.
--             Then, if channel is not "", the script also publishes
--             "<prefix> <due ms>" to channel.
--
-- Bounded by the number of pairs, which the caller caps at 1000 (unpack
-- takes them all in one ZADD). A member given twice takes its last score.

local store, prepare, dead = KEYS[1], KEYS[2], KEYS[3]
local mode, channel, prefix = ARGV[1], ARGV[2], ARGV[3]
if mode ~= 'set' and mode ~= 'restore' then
  return redis.error_reply('ERR add: mode must be set or restore')
end

local function head()
  local r = redis.call('ZRANGE', store, 0, 0, 'WITHSCORES')
  if r[2] then
    return tonumber(r[2])
  end
  return nil
end

local before = head()
local batch = {}
for i = 4, #ARGV - 1, 2 do
  local member, score = ARGV[i], ARGV[i + 1]
  if mode == 'set'
      or (not redis.call('ZSCORE', store, member)
        and not redis.call('ZSCORE', prepare, member)
        and not redis.call('ZSCORE', dead, member)) then
    batch[#batch + 1] = score
    batch[#batch + 1] = member
  end
end
local added = 0
if #batch > 0 then
  added = redis.call('ZADD', store, unpack(batch))
end

local after = head()
if after == nil then
  return {added, false}
end
local due = math.floor(after / 128)
if before ~= nil and due >= math.floor(before / 128) then
  return {added, false}
end
if channel ~= '' then
  redis.call('PUBLISH', channel, prefix .. ' ' .. string.format('%d', due))
end
return {added, after}
