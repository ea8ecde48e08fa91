-- sweep: return expired leases of one slot.
--
-- KEYS[1]  dueHigh  the slot's due set of high priority
-- KEYS[2]  due      the slot's due set of normal priority
-- KEYS[3]  dueLow   the slot's due set of low priority
-- KEYS[4]  prepare  the slot's Prepare set
-- KEYS[5]  dead     the slot's Dead set
-- ARGV[1]  now         integer Unix ms
-- ARGV[2]  limit       how many leases to sweep at most (1..1000, for unpack)
-- ARGV[3]  attemptCap  1..127
-- ARGV[4]  upto        optional integer Unix ms, default now: the latest
--                      lease end taken (a reclaim passes the largest)
--
-- Takes up to limit members of Prepare whose lease ends at or before upto
-- (score <= upto*128+127), oldest first, out of Prepare. A member's last
-- byte names its due set: "h" high, "l" low, anything else normal. With
-- attempt = score % 128 + 1 each one
--   - goes to Dead with score now*128 + attempt when attempt >= attemptCap
--     (attempt saturates at 127), and leaves its due set if it was there;
--   - else goes back to its due set, due now: score now*128 + attempt,
--     unless it is already there (it was added again while leased: that
--     newer entry wins, and the member counts as returned all the same).
--
-- Reply: {returned, deadMembers, deadAttempts, prepareHead}
--   returned      how many members went back to (or stayed in) due sets
--   deadMembers   the members moved to Dead
--   deadAttempts  their attempt counts, in the same order
--   prepareHead   the lowest score left in Prepare, or nil when it is empty

local dueHigh, due, dueLow, prepare, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, limit, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local upto = tonumber(ARGV[4]) or now
local dues = {dueHigh, due, dueLow}


local expired = redis.call('ZRANGEBYSCORE', prepare, '-inf', upto * 128 + 127,
  'WITHSCORES', 'LIMIT', 0, limit)
local back, gone = {{}, {}, {}}, {{}, {}, {}}
local buried, deadMembers, deadAttempts = {}, {}, {}
local returned = 0
for i = 1, #expired - 1, 2 do
  local member = expired[i]
  local attempt = tonumber(expired[i + 1]) % 128 + 1
  local s = level(member)
  if attempt >= cap or attempt > 127 then
    if attempt > 127 then
      attempt = 127
    end
    buried[#buried + 1] = now * 128 + attempt
    buried[#buried + 1] = member
    deadMembers[#deadMembers + 1] = member
    deadAttempts[#deadAttempts + 1] = attempt
    gone[s][#gone[s] + 1] = member
  else
    back[s][#back[s] + 1] = now * 128 + attempt
    back[s][#back[s] + 1] = member
    returned = returned + 1
  end
end
if #expired > 0 then
  -- The expired members are Prepare's first ones: the range began at -inf.
  redis.call('ZREMRANGEBYRANK', prepare, 0, #expired / 2 - 1)
end
for s = 1, 3 do
  if #back[s] > 0 then
    -- NX: a member already in its due set keeps its entry.
    redis.call('ZADD', dues[s], 'NX', unpack(back[s]))
  end
  if #gone[s] > 0 then
    redis.call('ZREM', dues[s], unpack(gone[s]))
  end
end
if #buried > 0 then
  redis.call('ZADD', dead, unpack(buried))
end
return {returned, deadMembers, deadAttempts, earliest({prepare}) or false}
