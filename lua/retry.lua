-- retry: end a held lease after a failed attempt.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set
-- KEYS[5]  dead     the slot's Dead set
-- ARGV[1]  member       its last byte names its due set: "h" high, "l"
--                       low, anything else normal
-- ARGV[2]  token        the lease's Prepare score
-- ARGV[3]  retryAt      integer Unix ms the next attempt is due
-- ARGV[4]  maxAttempts  1..127
-- ARGV[5]  now          integer Unix ms
--
-- If the member's Prepare score is not token, the lease was lost and
-- nothing changes. Else attempt = token % 128 + 1 (the attempt count is
-- decided here, never read and written back by the caller); the member
-- leaves Prepare and
--   - when attempt >= maxAttempts, goes to Dead with score
--     now*128 + attempt (attempt saturates at 127) and leaves its due
--     set;
--   - else goes to its due set with score retryAt*128 + attempt.
--
-- Reply: 0 retried, 1 buried (moved to Dead), 2 lost.

local dueHigh, due, dueLow, prepare, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local member, token = ARGV[1], tonumber(ARGV[2])
local retryAt, maxAttempts, now = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local dues = {dueHigh, due, dueLow}


local score = redis.call('ZSCORE', prepare, member)
if not score or tonumber(score) ~= token then
  return 2
end
local attempt = token % 128 + 1
redis.call('ZREM', prepare, member)
if attempt >= maxAttempts or attempt > 127 then
  if attempt > 127 then
    attempt = 127
  end
  redis.call('ZADD', dead, now * 128 + attempt, member)
  redis.call('ZREM', dues[level(member)], member)
  return 1
end
redis.call('ZADD', dues[level(member)], retryAt * 128 + attempt, member)
return 0
