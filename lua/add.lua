-- add: put timers in one slot's due sets.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set (read in restore mode only)
-- KEYS[5]  dead     the slot's Dead set (read in restore mode only)
-- ARGV[1]  mode     "set": add each member to its due set, or replace its
--                   score there; "restore": add only members in none of
--                   their due set, Prepare and Dead
-- ARGV[2]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[3]  prefix   wake message prefix, "<topic> <slot>"
-- ARGV[4..] member, score pairs (score = due ms * 128 + attempt)
--
-- A member's last byte names its due set: "h" high, "l" low, anything
-- else normal.
--
-- Reply: {added, earliest}
--   added     how many members were new to their due set
--   earliest  the lowest score of the three due sets when their earliest
--             due ms moved earlier (they were all empty before, or their
--             lowest ms dropped); else nil. Then, if channel is not "", the
--             script also publishes "<prefix> <due ms>" to channel.
--
-- Bounded by the number of pairs, which the caller caps at 1000 (unpack
-- takes them all in at most three ZADDs). A member given twice takes its
-- last score.

local dueHigh, due, dueLow, prepare, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local mode, channel, prefix = ARGV[1], ARGV[2], ARGV[3]
if mode ~= 'set' and mode ~= 'restore' then
  return redis.error_reply('ERR add: mode must be set or restore')
end
local dues = {dueHigh, due, dueLow}

local before = earliest(dues)
local batches = {{}, {}, {}}
for i = 4, #ARGV - 1, 2 do
  local member, score = ARGV[i], ARGV[i + 1]
  local s = level(member)
  if mode == 'set'
      or (not redis.call('ZSCORE', dues[s], member)
        and not redis.call('ZSCORE', prepare, member)
        and not redis.call('ZSCORE', dead, member)) then
    local batch = batches[s]
    batch[#batch + 1] = score
    batch[#batch + 1] = member
  end
end
local added = 0
for s = 1, 3 do
  if #batches[s] > 0 then
    added = added + redis.call('ZADD', dues[s], unpack(batches[s]))
  end
end

local after = earliest(dues)
if after == nil then
  return {added, false}
end
local dueMs = math.floor(after / 128)
if before ~= nil and dueMs >= math.floor(before / 128) then
  return {added, false}
end
if channel ~= '' then
  redis.call('PUBLISH', channel, prefix .. ' ' .. string.format('%d', dueMs))
end
return {added, after}
