-- revive: move a dead job back to Store.
--
-- KEYS[1]  store    the slot's Store set
-- KEYS[2]  dead     the slot's Dead set
-- ARGV[1]  member
-- ARGV[2]  score    its new Store score, due ms * 128 (attempt 0)
-- ARGV[3]  channel  wake channel to PUBLISH to; "" for none
-- ARGV[4]  prefix   wake message prefix, "<topic> <slot>"
--
-- Reply: {revived, earliest}
--   revived   1 if the member was in Dead and is now in Store, else 0
--   earliest  Store's lowest score when the member's return moved the
--             earliest due ms earlier (as in add), else nil. Then, if
--             channel is not "", the script also publishes
--             "<prefix> <due ms>" to channel.

local store, dead = KEYS[1], KEYS[2]
local member, score, channel, prefix = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('ZREM', dead, member) == 0 then
  return {0, false}
end

local function head()
  local r = redis.call('ZRANGE', store, 0, 0, 'WITHSCORES')
  if r[2] then
    return tonumber(r[2])
  end
  return nil
end

local before = head()
redis.call('ZADD', store, score, member)
local after = head()
local due = math.floor(after / 128)
if before ~= nil and due >= math.floor(before / 128) then
  return {1, false}
end
if channel ~= '' then
  redis.call('PUBLISH', channel, prefix .. ' ' .. string.format('%d', due))
end
return {1, after}
