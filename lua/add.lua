-- add: put timers in one slot's due sets.
--
-- KEYS[1]  dueHigh    the slot's due set of high priority
-- KEYS[2]  due        the slot's due set of normal priority
-- KEYS[3]  dueLow     the slot's due set of low priority
-- KEYS[4]  prepare    the slot's Prepare set (read in restore mode only)
-- KEYS[5]  dead       the slot's Dead set (read in restore mode only)
-- KEYS[6]  window     the slot's timers with a window, by due time
-- KEYS[7]  windowEnd  the same members, by the end of their window
-- ARGV[1]  mode     "set": add each member to its due set, or replace its
--                   score there; "restore": add only members in none of
--                   their due set, window, Prepare and Dead
-- ARGV[2]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[3]  prefix   wake message prefix, "<topic> <slot>"
-- ARGV[4..] member, score, end triples (score = due ms * 128 + attempt;
--           end = (due ms + window ms) * 128 + attempt, or 0 for a timer
--           without a window)
--
-- A member without a window goes in the due set its last byte names: "h"
-- high, "l" low, anything else normal. A member with one goes in window
-- (score) and windowEnd (end) instead, whatever its priority. In set
-- mode a member leaves the sets of the other kind, so a timer that gains
-- or loses its window is in one place.
--
-- Reply: {added, earliest}
--   added     how many members were new to their due set (or window)
--   earliest  the lowest score of the three due sets and window when
--             their earliest due ms moved earlier (they were all empty
--             before, or their lowest ms dropped); else nil. Then, if
--             channel is not "", the script also publishes "<prefix> <due
--             ms>" to channel.
--
-- Bounded by the number of triples, which the caller caps at 1000 (unpack
-- takes them all in at most five ZADDs). A member given twice takes its
-- last score.

local dueHigh, due, dueLow, prepare, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local window, windowEnd = KEYS[6], KEYS[7]
local mode, channel, prefix = ARGV[1], ARGV[2], ARGV[3]
if mode ~= 'set' and mode ~= 'restore' then
  return redis.error_reply('ERR add: mode must be set or restore')
end
local dues = {dueHigh, due, dueLow}
local waiting = {dueHigh, due, dueLow, window}

local before = earliest(waiting)
local hasWindow = redis.call('EXISTS', window) == 1
local batches = {{}, {}, {}, {}}
local ends, gone, windowed = {}, {{}, {}, {}}, {}
for i = 4, #ARGV - 2, 3 do
  local member, score, wend = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local s = level(member)
  local w = wend ~= '0'
  if mode == 'set'
      or (not redis.call('ZSCORE', dues[s], member)
        and not (hasWindow and redis.call('ZSCORE', window, member))
        and not redis.call('ZSCORE', prepare, member)
        and not redis.call('ZSCORE', dead, member)) then
    if w then
      local batch = batches[4]
      batch[#batch + 1] = score
      batch[#batch + 1] = member
      ends[#ends + 1] = wend
      ends[#ends + 1] = member
      gone[s][#gone[s] + 1] = member
    else
      local batch = batches[s]
      batch[#batch + 1] = score
      batch[#batch + 1] = member
      if hasWindow and mode == 'set' then
        windowed[#windowed + 1] = member
      end
    end
  end
end
local added = 0
for s = 1, 4 do
  if #batches[s] > 0 then
    added = added + redis.call('ZADD', waiting[s], unpack(batches[s]))
  end
end
if #ends > 0 then
  redis.call('ZADD', windowEnd, unpack(ends))
end
if mode == 'set' then
  -- A member is in one place: one with a window leaves its due set, one
  -- without leaves window and windowEnd.
  for s = 1, 3 do
    if #gone[s] > 0 then
      redis.call('ZREM', dues[s], unpack(gone[s]))
    end
  end
  if #windowed > 0 then
    redis.call('ZREM', window, unpack(windowed))
    redis.call('ZREM', windowEnd, unpack(windowed))
  end
end

local after = earliest(waiting)
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
