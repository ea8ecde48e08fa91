-- defer: end a held lease of a timer that was not fired.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set
-- ARGV[1]  member  its last byte names its due set: "h" high, "l" low,
--                  anything else normal
-- ARGV[2]  token   the lease's Prepare score
-- ARGV[3]  at      integer Unix ms the timer is due again
--
-- If the member's Prepare score is not token, the lease was lost and
-- nothing changes. Else the member leaves Prepare and goes to its due
-- set with score at*128 + token % 128: no attempt was made, so the
-- attempt count stays as it was. A score the member already had there (it
-- was added again while leased) is replaced, as retry does.
--
-- Reply: 1 deferred, 0 lost.

local dueHigh, due, dueLow, prepare = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local member, token, at = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local dues = {dueHigh, due, dueLow}


local score = redis.call('ZSCORE', prepare, member)
if not score or tonumber(score) ~= token then
  return 0
end
redis.call('ZREM', prepare, member)
redis.call('ZADD', dues[level(member)], at * 128 + token % 128, member)
return 1
