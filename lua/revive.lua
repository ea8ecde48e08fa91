-- revive: move a dead job back to its due set.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  dead     the slot's Dead set
-- KEYS[5]  window   the slot's timers with a window, by due time
-- KEYS[6]  later    the slot's later buckets, by their lowest score
-- ARGV[1]  member   its last byte names its due set: "h" high, "l" low,
--                   anything else normal
-- ARGV[2]  score    its new due score, due ms * 128 (attempt 0)
-- ARGV[3]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[4]  prefix   wake message prefix, "<topic> <slot>"
--
-- Reply: {revived, earliest}
--   revived   1 if the member was in Dead and is now in its due set,
--             else 0
--   earliest  the lowest score of the three due sets, window and later
--             when the member's return moved their earliest due ms
--             earlier (as in add), else nil. Then, if channel is not "",
--             the script also publishes "<prefix> <due ms>" to channel.

local dueHigh, due, dueLow, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local window, later = KEYS[5], KEYS[6]
local member, score, channel, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local dues = {dueHigh, due, dueLow}
if redis.call('ZREM', dead, member) == 0 then
  return {0, false}
end

local waiting = {dueHigh, due, dueLow, window, later}
local before = earliest(waiting)
redis.call('ZADD', dues[level(member)], score, member)
local after = earliest(waiting)
local dueMs = math.floor(after / 128)
if before ~= nil and dueMs >= math.floor(before / 128) then
  return {1, false}
end
if channel ~= '' then
  redis.call('PUBLISH', channel, prefix .. ' ' .. string.format('%d', dueMs))
end
return {1, after}
